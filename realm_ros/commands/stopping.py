"""Ctrl-C on a long command: one line, no traceback, within 2 s (issue 37).

A command that owns threads (``paired-eval``'s node graph, a sweep's workers) lets
``KeyboardInterrupt`` reach :func:`realm_ros.cli.main`, which prints the command's one
``interrupted: ... re-run the same command to resume`` line (its :func:`interrupted` text) as
the last thing on the console. On the way out the command cleans up inside :func:`cleanup`:
a second Ctrl-C is ignored there (it would cut the cleanup short and print a traceback), and
after an interrupt an exception in another thread (a node callback cut off by the stop) goes to
the log instead of the console.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from typing import Any, Iterator

_LOG = logging.getLogger('realm_ros.stopping')


def _to_log(args: Any) -> None:
    """``threading.excepthook`` after an interrupt: the thread's error, to the log only."""
    _LOG.debug('thread %s ended by the interrupt: %r', getattr(args.thread, 'name', '?'),
               args.exc_value)


@contextlib.contextmanager
def cleanup(interrupted: bool) -> Iterator[None]:
    """Run a command's cleanup without being cut by a second Ctrl-C; once ``interrupted``,
    keep threads' errors off the console (the process is on its way out)."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    if interrupted:
        threading.excepthook = _to_log
    try:
        yield
    finally:
        if main and not interrupted:
            signal.signal(signal.SIGINT, previous)


def interrupted_line(out: Any, what: str = 'episodes') -> str:
    """The one line an interrupted run ends with."""
    return (f'interrupted: finished {what} are kept in {out}/episodes.jsonl; re-run the same '
            'command to resume')
