"""Ctrl-C at random moments of a ``realm-ros`` run, as a terminal sends it (issue 37).

:func:`interrupt` starts the command in its own process group, waits a given time, sends SIGINT
to the group (what Ctrl-C does to the foreground job) and times the exit. :func:`check_records`
holds the folder's ``episodes.jsonl`` to "the resume after each loses nothing and duplicates
nothing". Used by ``test/e2e/test_interrupts.py`` (a few interrupts) and
``bench/bench_interrupts.py`` (50).
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

#: The one line an interrupted run ends with.
INTERRUPTED = 'interrupted: '
#: A run must end this soon after Ctrl-C, s.
EXIT_WITHIN_S = 2.0


@dataclasses.dataclass
class Interrupt:
    """One Ctrl-C: when it came, how the run ended and what it printed."""

    delay_s: float
    exit_s: float
    returncode: int
    stderr: str
    finished_first: bool  # the run had ended before the signal

    @property
    def problems(self) -> list[str]:
        """What is wrong with how the run ended (empty: a clean interrupt)."""
        if self.finished_first:
            return [] if self.returncode == 0 else [f'ended {self.returncode} before Ctrl-C']
        out = []
        if self.exit_s > EXIT_WITHIN_S:
            out.append(f'took {self.exit_s:.2f} s to end')
        if any(word in self.stderr for word in ('Traceback', 'RCLError', 'Exception')):
            out.append('a traceback after Ctrl-C')
        if self.returncode == 0:
            return out  # Ctrl-C in the last moments of cleanup: the run finished (kept all)
        if self.returncode != 130:
            out.append(f'exit code {self.returncode}')
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        hits = [k for k, line in enumerate(lines) if line.startswith(INTERRUPTED)]
        if len(hits) != 1:
            out.append(f'{len(hits)} "interrupted" lines')
        elif hits[0] != len(lines) - 1:
            out.append(f'lines after the "interrupted" line: {lines[hits[0] + 1:]}')
        return out


def interrupt(argv: list[str], delay_s: float, env: dict[str, str] | None = None,
              kill_after_s: float = 60.0) -> Interrupt:
    """Run ``argv``, send Ctrl-C (SIGINT to its process group) after ``delay_s``, time the end."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=env if env is not None else dict(os.environ),
                            start_new_session=True)
    time.sleep(delay_s)
    finished = proc.poll() is not None
    sent = time.monotonic()
    if not finished:
        os.killpg(proc.pid, signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=kill_after_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
    return Interrupt(delay_s, time.monotonic() - sent, proc.returncode, err, finished)


def records(out: pathlib.Path) -> list[dict]:
    """The whole lines of ``out/episodes.jsonl`` (a line cut by a kill is left out)."""
    path = out / 'episodes.jsonl'
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def check_records(before: list[dict], after: list[dict]) -> list[str]:
    """What a resume lost or duplicated: every earlier record kept, no episode scored twice."""
    problems = []
    if after[:len(before)] != before:
        problems.append('a finished record was lost or changed')
    keys = [(r['pair_id'], r.get('role') or r.get('world')) for r in after
            if r.get('outcome') != 'infra_failure']
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        problems.append(f'episodes recorded twice: {twice}')
    return problems


def command(name: str, out: pathlib.Path, *args: str) -> list[str]:
    """``realm-ros NAME --out OUT ARGS`` with this interpreter (the tree on PYTHONPATH)."""
    return [sys.executable, '-m', 'realm_ros.cli', name, '--out', str(out), *args]
