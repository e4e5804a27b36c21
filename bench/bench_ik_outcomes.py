"""The scripted ladder's episode results with the fast IK and with the simple reference path.

Run: ``.venv/bin/python bench/bench_ik_outcomes.py [--seeds 3] [--max-steps 300]``.

Every task x skill (0-3) x action configuration (closed loop; H=10 chunks, 8 executed; the same
as joint velocities) x seed runs in the twin through core alone, once with
``ScriptedPolicy(ik='reference')`` and once with ``ik='fast'``. Prints every episode whose
outcome, progression, stages or length differ, the count, and the wall time of each path, and
appends the count to ``bench/results/bench.jsonl``. The speed figures are in
``bench_episodes.py``; this is the correctness side (docs/performance.md).
"""

from __future__ import annotations

import os

os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')

import argparse
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from benchlib import Recorder  # noqa: E402

from realm_ros.backends.mujoco.world import MujocoWorld  # noqa: E402
from realm_ros.core import tasks  # noqa: E402
from realm_ros.core.config import WorldConfig  # noqa: E402
from realm_ros.core.episode import run_episode  # noqa: E402
from realm_ros.core.policy import standard_chain  # noqa: E402
from realm_ros.core.types import EpisodeSpec  # noqa: E402
from realm_ros.policies.scripted import ScriptedPolicy  # noqa: E402

CONFIGS = ({}, {'horizon': 10, 'execute': 8},
           {'horizon': 10, 'execute': 8, 'action_space': 'joint_velocity'})


def results(ik: str, seeds: int, max_steps: int) -> dict[tuple, tuple]:
    out = {}
    for task in tasks.TASKS:
        world = MujocoWorld(WorldConfig(task=task, cameras=(), camera_rate_hz=0.0))
        for skill in range(4):
            for k, config in enumerate(CONFIGS):
                for seed in range(seeds):
                    policy = standard_chain(ScriptedPolicy(skill=skill, ik=ik, **config))
                    r = run_episode(world, policy, EpisodeSpec(task=task, seed=seed,
                                                               max_steps=max_steps))
                    out[(task, skill, k, seed)] = (r.outcome.name, r.progression, r.steps,
                                                   r.stages_reached)
        world.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, default=3)
    parser.add_argument('--max-steps', type=int, default=300)
    args = parser.parse_args()
    rec = Recorder('ik_outcomes')
    walls, runs = {}, {}
    for ik in ('reference', 'fast'):
        start = time.perf_counter()
        runs[ik] = results(ik, args.seeds, args.max_steps)
        walls[ik] = time.perf_counter() - start
    differ = [key for key in runs['fast'] if runs['fast'][key] != runs['reference'][key]]
    for key in differ:
        print(f'[ik_outcomes] {key} (task, skill, config, seed): reference '
              f'{runs["reference"][key][:3]} -> fast {runs["fast"][key][:3]}')
    outcome_differ = [key for key in differ
                      if runs['fast'][key][:2] != runs['reference'][key][:2]]
    print(f'[ik_outcomes] {len(runs["fast"])} episodes, {len(differ)} differ at all, '
          f'{len(outcome_differ)} in outcome or progression; wall reference '
          f'{walls["reference"]:.1f} s, fast {walls["fast"]:.1f} s')
    rec.figure('scripted ladder episodes whose outcome or progression differ, fast vs '
               'reference IK', len(outcome_differ), 'episodes', None, '', '0',
               episodes=len(runs['fast']), differ_at_all=len(differ),
               wall_reference_s=walls['reference'], wall_fast_s=walls['fast'],
               seeds=args.seeds, max_steps=args.max_steps)


if __name__ == '__main__':
    main()
