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
#: After Ctrl-C, how soon (s) and how often the interrupt is raised again while it has not
#: reached the command's cleanup (it was swallowed on the way).
AGAIN_S = 0.2


class CtrlC:
    """SIGINT as Python's ``KeyboardInterrupt``, made sure to land (``realm_ros.cli``).

    A Ctrl-C inside a C extension's import comes out as ``ImportError: initialization
    failed``, which a module importing an optional package (``except ImportError: mujoco =
    None``) swallows: the run would go on with half a library. So the interrupt remembers it
    came and is raised again every :data:`AGAIN_S` (SIGALRM) until the command's cleanup
    starts (:func:`cleanup`) or the CLI reports it (:meth:`landed`).
    """

    came = False
    #: Raise it again until it lands: while the commands load, and for a command that
    #: cleans up in :func:`cleanup` (one with ``interrupted(args)``); another command's own
    #: ``except KeyboardInterrupt`` cleanup must not be cut by a second one.
    repeat = True
    _done = False

    @classmethod
    def install(cls) -> dict[int, Any]:
        """Install the handlers (main thread); return the previous ones."""
        cls.came = cls._done = False
        cls.repeat = True
        return {signal.SIGINT: signal.signal(signal.SIGINT, cls._on_sigint),
                signal.SIGALRM: signal.signal(signal.SIGALRM, cls._on_again)}

    @classmethod
    def landed(cls) -> None:
        """The interrupt reached its handler (a cleanup, the CLI): stop raising it again."""
        cls._done = True
        signal.setitimer(signal.ITIMER_REAL, 0.0)

    @classmethod
    def _on_sigint(cls, signum: int, frame: object) -> None:
        del signum, frame
        cls.came = True
        if cls.repeat and not cls._done:
            signal.setitimer(signal.ITIMER_REAL, AGAIN_S, AGAIN_S)
        raise KeyboardInterrupt

    @classmethod
    def _on_again(cls, signum: int, frame: object) -> None:
        del signum, frame
        if cls.came and cls.repeat and not cls._done:
            raise KeyboardInterrupt


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
        if main:
            CtrlC.landed()
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
