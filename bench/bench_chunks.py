"""Does the twin predict the digital real? Scripted ladder with open-loop chunks, three worlds.

Run: ``.venv/bin/python bench/bench_chunks.py [--episodes 8] [--sim-params params.yaml]``.

Runs every (task, policy, seed) episode in-process (no ROS, no cameras) in

* ``twin``: the MuJoCo twin with its default parameters (friction 0, armature 0.1),
* ``real``: the digital real with its hidden dynamics (``--real-dynamics``, default the
  embedded ``realm_ros/data/digital_real_dynamics.yaml``),
* ``identified``: the twin with ``--sim-params`` (from ``realm-ros sysid fit``), if given,

and prints per-policy success rate and mean progression in each world, and the agreement of
each twin with the digital real over per-policy mean progression (``sim`` = twin, ``real`` =
digital real): Pearson r, MMRV, mean |gap|. Policies are the evaluator's entries
(``label=scripted:skill=N,horizon=H``), wrapped as ``policy_node`` wraps them
(``core.policy.standard_chain``, as policy_node); seeds are the paired
evaluator's (``derive_seed(seed, task, 'Default', k)``), so both worlds see the same scenes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault('MUJOCO_GL', 'egl')

from realm_ros.backends.digital_real import DigitalRealWorld  # noqa: E402
from realm_ros.backends.mujoco.world import MujocoWorld  # noqa: E402
from realm_ros.core import metrics  # noqa: E402
from realm_ros.core.config import WorldConfig  # noqa: E402
from realm_ros.core.episode import run_episode  # noqa: E402
from realm_ros.core.evaluation import PolicyEntry, derive_seed  # noqa: E402
from realm_ros.core.policy import make_policy, standard_chain  # noqa: E402
from realm_ros.core.types import EpisodeOutcome, EpisodeSpec  # noqa: E402

#: The open-loop velocity ladder (DROID's action space, chunks of 15, 8 executed).
DEFAULT_POLICIES = tuple(
    f'{name}=scripted:skill={level},horizon=15,action_space=joint_velocity'
    for level, name in enumerate(('expert', 'good', 'sloppy', 'poor')))


def _world(kind: str, task: str, args: argparse.Namespace) -> MujocoWorld:
    if kind == 'real':
        return DigitalRealWorld(WorldConfig(backend='digital_real', task=task, camera_rate_hz=0.0,
                                            cameras=(), dynamics_file=args.real_dynamics))
    params = args.sim_params if kind == 'identified' else ''
    return MujocoWorld(WorldConfig(task=task, camera_rate_hz=0.0, cameras=(),
                                   sim_params_file=params))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--tasks', default='pick_spoon,put_green_block_in_bowl,open_drawer')
    parser.add_argument('--policies', nargs='+', default=list(DEFAULT_POLICIES))
    parser.add_argument('--episodes', type=int, default=8, help='seeds per task and policy')
    parser.add_argument('--max-steps', type=int, default=300)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--real-dynamics', default='', help='digital real hidden dynamics YAML')
    parser.add_argument('--sim-params', default='', help='identified twin parameters YAML')
    args = parser.parse_args(argv)
    entries = [PolicyEntry.parse(p) for p in args.policies]
    task_names = [t for t in args.tasks.split(',') if t]
    kinds = ['twin', 'real'] + (['identified'] if args.sim_params else [])
    # scores[kind][label] = list of (success, progression) over tasks and seeds
    scores: dict[str, dict[str, list[tuple[bool, float]]]] = {
        k: {e.label: [] for e in entries} for k in kinds}
    per_task: dict[str, dict[str, dict[str, list[float]]]] = {}
    infra = 0
    start = time.monotonic()
    for task in task_names:
        per_task[task] = {k: {e.label: [] for e in entries} for k in kinds}
        for kind in kinds:
            world = _world(kind, task, args)
            for entry in entries:
                policy = standard_chain(make_policy(entry.policy, **dict(entry.args)))
                for k in range(args.episodes):
                    seed = derive_seed(args.seed, task, 'Default', k)
                    result = run_episode(world, policy, EpisodeSpec(
                        task=task, seed=seed, policy=entry.label, max_steps=args.max_steps))
                    if result.outcome is EpisodeOutcome.INFRA_FAILURE:
                        infra += 1  # never scored (the evaluator's rule)
                        print(f'{kind} {task} {entry.label} seed {seed}: {result.error}',
                              file=sys.stderr)
                        continue
                    scores[kind][entry.label].append((result.success, result.progression))
                    per_task[task][kind][entry.label].append(result.progression)
            world.close()
        print(f'{task}: done ({time.monotonic() - start:.0f} s)', file=sys.stderr, flush=True)
    labels = [e.label for e in entries]
    print(f'success rate / mean progression, {args.episodes} seeds x {len(task_names)} tasks '
          f'({", ".join(task_names)}) per cell, max {args.max_steps} steps\n')
    print('| policy | ' + ' | '.join(kinds) + ' |')
    print('|---|' + '---|' * len(kinds))
    means = {k: [] for k in kinds}
    for label in labels:
        cells = []
        for kind in kinds:
            runs = scores[kind][label]
            succ = sum(s for s, _ in runs) / len(runs)
            prog = sum(p for _, p in runs) / len(runs)
            means[kind].append(prog)
            cells.append(f'{succ:.2f} / {prog:.3f}')
        print(f'| {label} | ' + ' | '.join(cells) + ' |')
    print('\nagreement with the digital real (per-policy mean progression)\n')
    print('| twin | Pearson r | MMRV | mean abs gap |')
    print('|---|---|---|---|')
    for kind in kinds:
        if kind == 'real':
            continue
        sim, real = means[kind], means['real']
        print(f'| {kind} | {metrics.pearson_r(sim=sim, real=real):.3f} | '
              f'{metrics.mmrv(sim=sim, real=real):.3f} | '
              f'{metrics.mean_abs_gap(sim=sim, real=real):.3f} |')
    print('\nper task mean progression (' + ' / '.join(kinds) + ')\n')
    for task in task_names:
        cells = ', '.join(
            f'{label} ' + '/'.join(
                f'{sum(per_task[task][k][label]) / max(1, len(per_task[task][k][label])):.2f}'
                for k in kinds)
            for label in labels)
        print(f'  {task}: {cells}')
    print(f'\n({time.monotonic() - start:.0f} s; {infra} episodes ended as infrastructure '
          'failures and are not scored)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
