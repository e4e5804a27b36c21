"""Two physics engines on one excitation: the PhysX twin, the MuJoCo twin, the digital real.

Run: ``.venv/bin/python bench/bench_physx.py [--duration 10] [--threads 2]``. Drives the same
sysid excitation trajectory (``core.sysid.excitation_trajectory``, 15 Hz position targets,
gripper open) through

* the MuJoCo twin (default dynamics, or ``--mujoco-params FILE``),
* the PhysX twin on kit-less ovphysx, CPU mode (default dynamics, or ``--physx-params FILE``),
* the PhysX twin given the digital real's own per-joint dynamics and latency (what
  identification can reach at best when the engine differs),
* the digital real (MuJoCo with hidden dynamics, ``realm_ros/data/digital_real_dynamics.yaml``),

and prints the per-joint RMS gap of measured positions (mrad) between pairs, then the speed of
both twins (control steps/s and physics steps/s, wall clock, this process). docs/isaac-and-physx.md
quotes its output with the machine it ran on.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

from realm_ros.core import robot
from realm_ros.core.config import DigitalRealDynamics, WorldConfig
from realm_ros.core.sysid import ExcitationSpec, excitation_trajectory
from realm_ros.core.types import Action, EpisodeSpec


def run(world, targets: np.ndarray) -> tuple[np.ndarray, float]:
    """Return the measured (K, 7) positions after each target and the wall time of the loop."""
    world.reset(EpisodeSpec())
    out = []
    start = time.perf_counter()
    for q_d in targets:
        world.apply(Action(q_d, 0.0))
        out.append(world.step().joints.position)
    return np.array(out), time.perf_counter() - start


def rms_mrad(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return 1000.0 * np.sqrt(np.mean(np.square(a - b), axis=0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--duration', type=float, default=10.0, help='trajectory length, s')
    parser.add_argument('--seed', type=int, default=0, help='excitation seed')
    parser.add_argument('--threads', type=int, default=0,
                        help='PhysX CPU worker threads (0 = solve on the calling thread)')
    parser.add_argument('--mujoco-params', default='', help='MuJoCo twin sim params YAML')
    parser.add_argument('--physx-params', default='', help='PhysX twin sim params YAML')
    parser.add_argument('--json', default='', help='also write the numbers here')
    args = parser.parse_args()

    os.environ['REALM_ROS_PHYSX_THREADS'] = str(args.threads)

    from realm_ros.backends.digital_real import DEFAULT_DYNAMICS_FILE, DigitalRealWorld
    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.backends.physx.world import PhysxWorld

    targets = excitation_trajectory(ExcitationSpec(duration_s=args.duration), seed=args.seed)
    base = WorldConfig(camera_rate_hz=0, cameras=())
    hidden = DigitalRealDynamics.from_yaml(DEFAULT_DYNAMICS_FILE)
    rows = {}
    timing = {}

    mj = MujocoWorld(WorldConfig(camera_rate_hz=0, cameras=(),
                                 sim_params_file=args.mujoco_params))
    rows['mujoco_twin'], timing['mujoco'] = run(mj, targets)
    mj.close()
    real = DigitalRealWorld(WorldConfig(backend='digital_real', camera_rate_hz=0, cameras=()),
                            hidden)
    rows['digital_real'], _ = run(real, targets)
    real.close()
    px = PhysxWorld(WorldConfig(camera_rate_hz=0, cameras=(), sim_params_file=args.physx_params))
    rows['physx_twin'], timing['physx'] = run(px, targets)
    px.close()
    oracle = PhysxWorld(base, dynamics=hidden.joint_params(), latency_s=hidden.latency_s)
    rows['physx_hidden_params'], _ = run(oracle, targets)
    oracle.close()

    pairs = {
        'physx twin vs mujoco twin': ('physx_twin', 'mujoco_twin'),
        'mujoco twin vs digital real': ('mujoco_twin', 'digital_real'),
        'physx twin vs digital real': ('physx_twin', 'digital_real'),
        "physx + real's dynamics vs digital real": ('physx_hidden_params', 'digital_real'),
    }
    steps = len(targets)
    substeps = base.substeps
    print(f'excitation seed {args.seed}, {args.duration:g} s ({steps} control steps); '
          f'{platform.processor() or platform.machine()}, {os.cpu_count()} cores visible, '
          f'PhysX threads {args.threads}')
    print('\nper-joint RMS gap of measured positions, mrad\n')
    print('| pair | ' + ' | '.join(f'j{i + 1}' for i in range(7)) + ' | mean |')
    print('|---|' + '---|' * 8)
    out = {'gap_mrad': {}, 'speed': {}}
    for label, (a, b) in pairs.items():
        gap = rms_mrad(rows[a], rows[b])
        out['gap_mrad'][label] = gap.tolist()
        print(f'| {label} | ' + ' | '.join(f'{v:.2f}' for v in gap) + f' | {gap.mean():.2f} |')
    print('\n| twin | control steps/s | physics steps/s | x real time |')
    print('|---|---|---|---|')
    for name, wall in timing.items():
        rate = steps / wall
        out['speed'][name] = rate
        print(f'| {name} | {rate:.1f} | {rate * substeps:.0f} | '
              f'{rate / robot.CONTROL_HZ:.2f} |')
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(out, f, indent=1)


if __name__ == '__main__':
    main()
