"""Count physics blow-ups of the digital real over scripted-ladder episodes (no ROS).

Run: ``python bench/bench_digital_real_stability.py [--tasks a,b] [--skills 0,1,2,3]
[--episodes 8] [--world digital_real|mujoco]``.

Each episode is :func:`realm_ros.core.episode.run_episode` in :class:`DigitalRealWorld` (the
physics behind ``digital_real``) with the scripted ladder policy, as ``realm-ros ladder`` runs the
twin. A blow-up is any episode in which MuJoCo raised its ``Nan, Inf or huge value in QACC``
warning or its QVEL/QPOS twins (``mjWARN_BADQACC``/``BADQVEL``/``BADQPOS``: it then resets the
simulation) or the episode ended as an
infrastructure failure (the world clock ran backwards). Prints one line per blow-up and a total.
"""

from __future__ import annotations

import argparse
import sys
import time

import mujoco

from realm_ros.backends.digital_real import DigitalRealWorld
from realm_ros.backends.mujoco.world import MujocoWorld
from realm_ros.core import tasks
from realm_ros.core.config import WorldConfig
from realm_ros.core.episode import run_episode
from realm_ros.core.policy import standard_chain
from realm_ros.core.types import EpisodeOutcome, EpisodeSpec
from realm_ros.policies.scripted import SKILLS, ScriptedPolicy, skill_level

#: MuJoCo's instability warnings: it resets the simulation after each.
BAD_STATE = (mujoco.mjtWarning.mjWARN_BADQACC, mujoco.mjtWarning.mjWARN_BADQVEL,
             mujoco.mjtWarning.mjWARN_BADQPOS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--tasks', default='', help='comma-separated tasks (default: all ten)')
    parser.add_argument('--skills', default='0,1,2,3', help='comma-separated ladder rungs')
    parser.add_argument('--episodes', type=int, default=8, help='seeds per task and rung')
    parser.add_argument('--first-seed', type=int, default=0)
    parser.add_argument('--max-steps', type=int, default=400)
    parser.add_argument('--world', choices=('digital_real', 'mujoco'), default='digital_real',
                        help='digital_real = the digital real (default), mujoco = the twin')
    args = parser.parse_args()
    names = [t for t in args.tasks.split(',') if t] or list(tasks.TASKS)
    levels = [skill_level(s) for s in args.skills.split(',')]
    cls = DigitalRealWorld if args.world == 'digital_real' else MujocoWorld
    total = blowups = 0
    start = time.perf_counter()
    for name in names:
        world = cls(WorldConfig(backend=args.world, task=name, camera_rate_hz=0.0, cameras=()))
        for level in levels:
            for seed in range(args.first_seed, args.first_seed + args.episodes):
                policy = standard_chain(ScriptedPolicy(skill=level))
                result = run_episode(world, policy, EpisodeSpec(
                    task=name, seed=seed, policy=policy.label, max_steps=args.max_steps))
                # mj_resetData (the next reset) clears the counter: read it now.
                warnings = sum(int(world.data.warning[w].number) for w in BAD_STATE)
                total += 1
                if warnings or result.outcome == EpisodeOutcome.INFRA_FAILURE:
                    blowups += 1
                    print(f'BLOW-UP {name} {SKILLS[level].name} seed {seed}: {warnings} '
                          f'instability warning(s), outcome {result.outcome.value}', flush=True)
        world.close()
    wall = time.perf_counter() - start
    print(f'{args.world} world: {blowups} physics blow-up(s) in {total} ladder episodes '
          f'({len(names)} task(s) x rungs {args.skills} x {args.episodes} seeds from '
          f'{args.first_seed}; {wall:.0f} s)')
    return 1 if blowups else 0


if __name__ == '__main__':
    sys.exit(main())
