"""A valid target at each joint's limit from the start pose: how far past the limit does it go?

Run: ``python bench/limit_approach.py [--no-digital-real]``; with ``PYTHONPATH`` pointing at
another checkout (e.g. main before issue 26) it measures that code (it uses only interfaces
both have). Prints one line per world:

* twin (MuJoCo, in process): for each joint and side, the target = the start pose with that
  joint at its limit, held 60 control steps; the worst excursion past the limit (rad, > 0 =
  past);
* digital real (a ``digital_real`` process, FR3, lockstep, behind the franka bridge): a valid
  ramp toward each limit (0.5 x the velocity limit per step, then held, 45 steps); worst
  excursion and how many targets the bridge refused.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]


def twin() -> float:
    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.core import robot
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.types import Action, EpisodeSpec
    world = MujocoWorld(WorldConfig(camera_rate_hz=0.0, cameras=()))
    worst = -np.inf
    for j in range(7):
        for limit, sign in ((robot.JOINT_UPPER[j], 1.0), (robot.JOINT_LOWER[j], -1.0)):
            target = world.reset(EpisodeSpec(task='empty', seed=0)).joints.position.copy()
            target[j] = limit
            for _ in range(60):
                world.apply(Action(arm=target, gripper=0.0))
                worst = max(worst, sign * (world.step().joints.position[j] - limit))
    world.close()
    return worst


def digital_real() -> tuple[float, int, int]:
    sys.path.insert(0, str(ROOT / 'test' / 'helpers'))
    from rostest import run_process

    from realm_ros.backends.franka import make_bridge_world
    from realm_ros.core import robot
    from realm_ros.core.config import FrankaBridgeConfig, WorldConfig
    from realm_ros.core.errors import CommandRejected
    from realm_ros.core.types import Action, EpisodeSpec
    arm = robot.arm_spec('fr3')
    lower = np.maximum(arm.lower, robot.JOINT_LOWER)
    upper = np.minimum(arm.upper, robot.JOINT_UPPER)
    step = 0.5 * arm.velocity / 15
    worst, refused, total = -np.inf, 0, 0
    log = pathlib.Path(tempfile.mkdtemp(prefix='limit_approach_')) / 'digital_real.log'
    with run_process(['digital_real', '--ros-args', '-r', '__ns:=/limit_approach',
                      '-p', 'arm_id:=fr3', '-p', 'lockstep:=true'], log):
        world = make_bridge_world(
            WorldConfig(backend='franka', cameras=(), camera_rate_hz=0.0, lockstep=True),
            bridge=FrankaBridgeConfig(arm_id='fr3', gripper='width_topic',
                                      namespace='/limit_approach', digital_real=True))
        try:
            for j in range(7):
                for limit, sign in ((upper[j], 1.0), (lower[j], -1.0)):
                    target = world.reset(EpisodeSpec(task='empty', seed=0)).joints.position
                    target = target.copy()
                    target[j] = limit
                    for _ in range(45):
                        now = world._target_q
                        total += 1
                        try:
                            world.apply(Action(arm=now + np.clip(target - now, -step, step),
                                               gripper=0.0))
                        except CommandRejected:
                            refused += 1
                        q = world.step().joints.position
                        worst = max(worst, sign * (q[j] - limit))
        finally:
            world.close()
    return worst, refused, total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--no-digital-real', action='store_true')
    args = parser.parse_args()
    print(f'twin: worst excursion past a joint limit {twin():+.4f} rad')
    if not args.no_digital_real:
        worst, refused, total = digital_real()
        print(f'digital real (fr3, bridge, lockstep): worst excursion past a joint limit '
              f'{worst:+.4f} rad; {refused}/{total} targets refused')
    return 0


if __name__ == '__main__':
    sys.exit(main())
