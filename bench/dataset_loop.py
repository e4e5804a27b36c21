"""Run ``realm-ros dataset`` many times under the debug allocator; count crashes (issue 26).

Run: ``.venv/bin/python bench/dataset_loop.py --runs 200 [--out-dir D] [--kill-every K]``.

Each run writes a small dataset (two episodes of ``--steps`` steps, failures kept so the writer
always writes) in a fresh folder, with ``PYTHONMALLOC=debug`` (CPython's debug hooks: buffer
under/overflow and use-after-free checks on every Python-allocator block), ``-X faulthandler``
(a Python traceback of every thread on SIGSEGV/SIGABRT) and, with ``--glibc-checks``, glibc's
own heap checks for native code (MuJoCo, EGL, numpy): ``LD_PRELOAD=libc_malloc_debug.so.0
MALLOC_CHECK_=3`` (abort on the first inconsistency) and ``MALLOC_PERTURB_=165`` (freed memory
overwritten, so a use-after-free shows at once). A run that exits non-zero or prints
``free():``, ``corrupted``, ``Fatal Python error`` or ``Debug memory block`` is kept with its
stderr; the rest are deleted. ``--kill-every K`` also sends SIGKILL to every K-th run at a random
moment and then re-runs it with the same ``--out`` (the resume path) and checks the result loads.
Prints one line per failure and a summary (runs, clean, crashed, killed+resumed).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import random
import shutil
import subprocess
import sys
import time

MARKERS = ('free():', 'corrupted', 'Fatal Python error', 'Debug memory block', 'Segmentation')


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument('--runs', type=int, default=200)
    parser.add_argument('--steps', type=int, default=20)
    parser.add_argument('--out-dir', type=pathlib.Path, default=pathlib.Path('/tmp/dsloop'))
    parser.add_argument('--kill-every', type=int, default=0)
    parser.add_argument('--format', default=None, help='passed as --format when given')
    parser.add_argument('--glibc-checks', action='store_true',
                        help="also glibc's malloc checks (libc_malloc_debug) for native code")
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONMALLOC='debug', MUJOCO_GL=os.environ.get('MUJOCO_GL', 'egl'))
    if args.glibc_checks:
        env.update(LD_PRELOAD='libc_malloc_debug.so.0', MALLOC_CHECK_='3', MALLOC_PERTURB_='165')
    rng = random.Random(0)
    crashed, killed, resumed_ok, durations = [], 0, 0, []
    start = time.monotonic()
    for i in range(args.runs):
        out = args.out_dir / f'run{i:03d}'
        shutil.rmtree(out, ignore_errors=True)
        cmd = [sys.executable, '-X', 'faulthandler', '-m', 'realm_ros.cli', 'dataset',
               '--out', str(out), '--episodes', '2', '--max-steps', str(args.steps),
               '--keep-failures', '--quiet']
        if args.format:
            cmd += ['--format', args.format]
        t0 = time.monotonic()
        kill = args.kill_every and i % args.kill_every == args.kill_every - 1
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        if kill:
            try:
                proc.wait(timeout=rng.uniform(2.0, 8.0))
            except subprocess.TimeoutExpired:
                proc.kill()
        stdout, stderr = proc.communicate()
        killed += int(kill and proc.returncode == -9)  # a run may finish before its kill
        durations.append(time.monotonic() - t0)
        bad = (proc.returncode not in (0, -9)) or any(m in stderr for m in MARKERS)
        if kill and proc.returncode == -9:
            again = subprocess.run(cmd, env=env, capture_output=True, text=True)
            stderr += again.stderr
            bad = bad or again.returncode != 0 or any(m in again.stderr for m in MARKERS)
            problems = ['resumed run failed'] if again.returncode else []
            if not problems and (args.format or 'v3.0') == 'v3.0':
                from realm_ros.io.lerobot import check_dataset, read_info
                problems = check_dataset(out)
                if read_info(out)['total_episodes'] != 2:
                    problems.append('resumed dataset does not hold 2 episodes')
            if problems:
                stderr += '\n'.join(problems)
                bad = True
            resumed_ok += int(not problems)
        if bad:
            crashed.append(i)
            (args.out_dir / f'run{i:03d}.stderr').write_text(stderr)
            print(f'run {i}: rc {proc.returncode}: {stderr.strip().splitlines()[-1:]}',
                  flush=True)
        else:
            shutil.rmtree(out, ignore_errors=True)
        if (i + 1) % 20 == 0:
            print(f'{i + 1} runs, {len(crashed)} crashed, {time.monotonic() - start:.0f} s',
                  flush=True)
    durations.sort()
    print(f'dataset loop: {args.runs} runs, {args.runs - len(crashed)} clean, '
          f'{len(crashed)} crashed {crashed}, {killed} killed and {resumed_ok} resumed; '
          f'median {durations[len(durations) // 2]:.1f} s a run, '
          f'{time.monotonic() - start:.0f} s in all (PYTHONMALLOC=debug, -X faulthandler'
          f'{", glibc malloc checks" if args.glibc_checks else ""})')
    return 1 if crashed else 0


if __name__ == '__main__':
    sys.exit(main())
