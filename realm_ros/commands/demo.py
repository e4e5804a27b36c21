"""``realm-ros demo``: the embedded default end to end (what ``make demo`` runs).

1. Paired evaluation of the scripted ladder, digital real vs the MuJoCo twin with its
   *default* parameters.
2. System identification: excitation trajectories recorded on the digital real, friction and
   armature fitted by least squares (Levenberg-Marquardt).
3. The same evaluation with the *identified* twin; the real episodes are reused (a lab would
   not re-run the arm to re-check a re-identified twin).
4. The agreement before and after, side by side.

Each step is the public command a user would type (printed before it runs), and each output
folder can be inspected or resumed on its own. The console shows one progress bar per step,
warnings, errors and the tables; node logs are in each step's ``logs/`` (``--verbose``: on the
console too).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

from realm_ros.core.errors import RealmError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the demo's knobs (defaults finish in about ten minutes on 2 cores)."""
    parser.add_argument('--out', type=pathlib.Path, default=pathlib.Path('demo_out'),
                        help='output folder (resumable)')
    parser.add_argument('--tasks', nargs='+',
                        default=['pick_spoon', 'put_green_block_in_bowl', 'open_drawer'])
    parser.add_argument('--episodes-per-cell', type=int, default=4)
    parser.add_argument('--max-steps', type=int, default=300)
    parser.add_argument('--sysid-trajectories', type=int, default=5)
    parser.add_argument('--sysid-duration', type=float, default=8.0)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--verbose', action='store_true',
                        help="every node's log lines on the console (default: each step's "
                             'OUT/.../logs/, warnings and errors above the bars)')
    parser.add_argument(
        '--real-dynamics', default='',
        help='hidden dynamics YAML of the digital real, used by the evaluation and the sysid '
             'recording alike (default: config/dynamics/sysid_demo.yaml, whose joint friction '
             'is strong enough for the open-loop velocity ladder to show the twin gap)')


def _run(step: str, argv: list[str]) -> None:
    print(f'\n=== {step}\n$ realm-ros {" ".join(argv)}', flush=True)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, '-m', 'realm_ros.cli', *argv])
    if proc.returncode != 0:
        raise RealmError(f'step "{step}" failed (exit {proc.returncode}); its output is above. '
                         'Re-run `make demo` to resume: finished work is kept.')
    print(f'    ({time.monotonic() - start:.0f} s)', flush=True)


def run(args: argparse.Namespace) -> int:
    """Run the four steps and print the before/after agreement."""
    from realm_ros.graph import share_path

    out = args.out
    # The demo's whole graph lives on this machine: keep its DDS traffic off a lab's graph
    # (and off another demo running beside it) unless the user chose a domain.
    if 'ROS_DOMAIN_ID' not in os.environ:
        os.environ['ROS_DOMAIN_ID'] = str(1 + os.getpid() % 100)
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    print(f'ROS_DOMAIN_ID={os.environ["ROS_DOMAIN_ID"]}, discovery '
          f'{os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"]}', flush=True)
    dynamics = str(pathlib.Path(
        args.real_dynamics or share_path('config/dynamics/sysid_demo.yaml')).resolve())
    loud = ['--verbose'] if args.verbose else []
    common = [*loud, '--tasks', *args.tasks, '--episodes-per-cell', str(args.episodes_per_cell),
              '--max-steps', str(args.max_steps), '--seed', str(args.seed),
              '--real-dynamics', dynamics]
    _run('1/4 paired evaluation, twin with default parameters',
         ['paired-eval', '--out', str(out / 'before'), *common])
    bags = out / 'sysid' / 'bags'
    params = out / 'sysid' / 'params.yaml'
    if not params.exists() and bags.exists():
        # Bags without a fit: a recording that was cut short. Recording is cheap: redo it.
        shutil.rmtree(bags)
    if not bags.exists():
        _run('2/4 record excitation trajectories on the digital real',
             ['sysid', 'record', '--backend', 'digital_real', '--dynamics', dynamics,
              '--out', str(bags), '--trajectories', str(args.sysid_trajectories),
              '--duration', str(args.sysid_duration), '--seed', str(args.seed), *loud])
    if not params.exists():
        _run('3/4 identify the twin (actuation latency, least squares over friction and armature)',
             ['sysid', 'fit', str(bags), '--backend', 'mujoco', '--out', str(params),
              '--seed', str(args.seed)])
    _run('4/4 paired evaluation, twin with identified parameters (real episodes reused)',
         ['paired-eval', '--out', str(out / 'after'), *common, '--sim-params', str(params),
          '--reuse-real', str(out / 'before')])
    before = json.loads((out / 'before' / 'summary.json').read_text())
    after = json.loads((out / 'after' / 'summary.json').read_text())
    print('\n=== agreement of the twin with the digital real (per-policy mean progression)')
    print(f'{"":<34} {"Pearson r":>10} {"MMRV":>8} {"mean |gap|":>11}')
    for label, summary in (('before sysid (default twin)', before),
                           ('after sysid (identified twin)', after)):
        a = summary['agreement']
        print(f'{label:<34} {a["pearson_r"]:>10.3f} {a["mmrv"]:>8.3f} '
              f'{a["mean_abs_gap"]:>11.3f}')
    for task in sorted(before['agreement'].get('per_task', {})):
        b = before['agreement']['per_task'][task]
        c = after['agreement']['per_task'].get(task, {})
        print(f'  {task:<32} r {b["pearson_r"]:.3f} -> {c.get("pearson_r", float("nan")):.3f}'
              f'   gap {b["mean_abs_gap"]:.3f} -> {c.get("mean_abs_gap", float("nan")):.3f}')
    print(f'\nreports: {out / "before" / "report.html"}  {out / "after" / "report.html"}')
    return 0
