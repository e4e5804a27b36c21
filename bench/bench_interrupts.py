"""Ctrl-C at random moments of ``paired-eval`` and ``sweep``, N of each (issue 37).

Each interrupt must end the run within 2 s with the one "interrupted: ... re-run the same
command to resume" line and no traceback, and the resume after it must lose nothing and
duplicate nothing; a last run finishes the plan. The runs are the ones
``test/e2e/test_interrupts.py`` interrupts 6 times each. Prints and records (bench/results)
the clean count of each command and the slowest exit.

    PYTHONPATH=. ROS_DOMAIN_ID=151 .venv/bin/python bench/bench_interrupts.py [--n 50]
"""

from __future__ import annotations

import argparse
import pathlib
import random
import subprocess
import sys
import tempfile

from benchlib import ROOT, Recorder

sys.path.insert(0, str(ROOT / 'test' / 'helpers'))
sys.path.insert(0, str(ROOT / 'test' / 'e2e'))

from interrupts import check_records, command, interrupt, records  # noqa: E402
from test_interrupts import PAIRED, START_S, SWEEP  # noqa: E402

#: (command, its arguments, the span of Ctrl-C moments in s, episodes planned)
RUNS = {'paired-eval': (PAIRED, (START_S, 9.0), 16), 'sweep': (SWEEP, (START_S, 4.5), 32)}


def bench(name: str, n: int, seed: int, recorder: Recorder) -> int:
    """Interrupt ``name`` ``n`` times (a fresh folder whenever a run finished the plan)."""
    args, span, planned = RUNS[name]
    rng = random.Random(seed)
    clean, slowest, mid_run, folders = 0, 0.0, 0, 1
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / f'run{folders}'
        before: list = []
        for k in range(n):
            result = interrupt(command(name, out, *args), rng.uniform(*span))
            after = records(out)
            problems = result.problems + check_records(before, after)
            mid_run += result.returncode == 130
            slowest = max(slowest, result.exit_s if not result.finished_first else 0.0)
            clean += not problems
            print(f'{name} #{k + 1}: Ctrl-C at {result.delay_s:.2f} s, ended in '
                  f'{result.exit_s:.2f} s, exit {result.returncode}, {len(after)} records'
                  + (f'; PROBLEMS {problems}: {result.stderr[-800:]}' if problems else ''),
                  flush=True)
            before = after
            if len(after) >= planned:  # the plan is done: start again in a fresh folder
                folders += 1
                out, before = pathlib.Path(tmp) / f'run{folders}', []
        done = subprocess.run(command(name, out, *args), capture_output=True, text=True,
                              timeout=600)
        final = records(out)
        complete = done.returncode == 0 and not check_records(before, final) and len(
            {(r['pair_id'], r.get('role') or r.get('world')) for r in final}) == planned
    recorder.figure(f'{name}: clean Ctrl-C of {n}', clean, 'interrupts', goal=f'{n} of {n}',
                    mid_run=mid_run, slowest_exit_s=round(slowest, 3), folders=folders,
                    last_resume_complete=complete)
    print(f'{name}: {clean} of {n} clean ({mid_run} mid-run, the rest after the plan was '
          f'done), slowest exit {slowest:.2f} s; the last resume finished the plan: {complete}')
    return clean + int(complete) - n - 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--n', type=int, default=50, help='interrupts of each command')
    parser.add_argument('--seed', type=int, default=37)
    parser.add_argument('--only', choices=tuple(RUNS), default=None)
    args = parser.parse_args()
    recorder = Recorder('interrupts')
    failed = 0
    for name in RUNS if args.only is None else (args.only,):
        failed += bench(name, args.n, args.seed, recorder) != 0
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
