"""Benchmark a system-identification fit: 20 trajectories of 10 s each, CMA-ES, 2 threads.

Run: ``.venv/bin/python bench/bench_sysid.py`` (data from the digital real, generated in-process
without ROS), or ``--bags DIR`` to fit recorded bags. Prints the fit's wall time and where it
goes (batched rollouts, FK precompute, CMA-ES bookkeeping), plus the machine's load, since the
CPU may be shared.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from realm_ros.backends.fake_franka import DigitalRealWorld
from realm_ros.backends.mujoco.rollout import TwinRollout
from realm_ros.core import sysid
from realm_ros.core.config import DigitalRealDynamics, WorldConfig
from realm_ros.core.types import Action, ActionMode, EpisodeSpec

DEMO_DYNAMICS = os.path.join(os.path.dirname(__file__), '..', 'config',
                             'dynamics/sysid_demo.yaml')


def digital_real_trajectories(n: int, duration: float, dynamics: str,
                              seed: int = 1) -> list[sysid.Trajectory]:
    """Execute ``n`` excitation trajectories on the digital real (no ROS) and return them."""
    hidden = DigitalRealDynamics.from_yaml(dynamics)
    world = DigitalRealWorld(WorldConfig(backend='fake', cameras=(), camera_rate_hz=0.0),
                             hidden=hidden)
    spec = sysid.ExcitationSpec(duration_s=duration)
    out = []
    for i in range(n):
        targets = sysid.excitation_trajectory(spec, seed * 1000 + i)
        obs = world.reset(EpisodeSpec(task='empty', seed=i))
        q0, dq0 = obs.joints.position, obs.joints.velocity
        q, dq = [], []
        for row in targets:
            world.apply(Action(arm=row, gripper=0.0, mode=ActionMode.POSITION))
            joints = world.step().joints
            q.append(joints.position)
            dq.append(joints.velocity)
        out.append(sysid.Trajectory(f'bench_{i}', q0, dq0, 0.0, targets, np.zeros(len(targets)),
                                    np.array(q), np.array(dq), 1 / 15))
    world.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--bags', default='', help='fit these bags instead')
    parser.add_argument('--trajectories', type=int, default=20)
    parser.add_argument('--duration', type=float, default=10.0)
    parser.add_argument('--generations', type=int, default=80)
    parser.add_argument('--popsize', type=int, default=12)
    parser.add_argument('--minibatch', type=int, default=12)
    parser.add_argument('--window', type=int, default=15, help='control steps per window')
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--latency', type=float, default=0.0)
    parser.add_argument('--dynamics', default=DEMO_DYNAMICS)
    args = parser.parse_args()

    t = time.perf_counter()
    if args.bags:
        from realm_ros.commands.sysid import find_bags
        from realm_ros.io.bags import read_run, run_to_trajectory
        trajs = [run_to_trajectory(read_run(b)) for b in find_bags([args.bags])]
        trajs = trajs[:args.trajectories]
    else:
        trajs = digital_real_trajectories(args.trajectories, args.duration, args.dynamics)
    prep_s = time.perf_counter() - t
    import cma  # noqa: F401 - import time (seconds) is not part of the fit
    evaluator = TwinRollout(nthread=args.threads, latency_s=args.latency)
    t = time.perf_counter()
    result = sysid.fit(evaluator, trajs, seed=0, generations=args.generations,
                       popsize=args.popsize, minibatch=args.minibatch, window=args.window,
                       progress=False)
    wall = time.perf_counter() - t
    truth = DigitalRealDynamics.from_yaml(args.dynamics).joint_params()
    err_f = np.abs(np.array(result.params.friction) / truth.friction - 1) * 100
    err_a = np.abs(np.array(result.params.armature) / truth.armature - 1) * 100
    steps = sum(tr.steps for tr in trajs)
    phys = (len(result.history) * (args.popsize + 1) * args.minibatch * args.window
            * evaluator.substeps)
    timing = result.timing
    print(f'machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, '
          f'load average {os.getloadavg()[0]:.2f} (shared CPU)')
    print(f'data: {len(trajs)} trajectories, {steps} control steps, prepared in {prep_s:.1f} s')
    print(f'fit: {wall:.1f} s wall, {len(result.history)} generations x {args.popsize} '
          f'(+1 mean) candidates x {args.minibatch} windows of {args.window} steps, '
          f'{args.threads} threads; stop: {result.stop_reason}')
    print(f'  rollout        {timing["simulate.rollout"]:6.2f} s '
          f'({phys / max(timing["simulate.rollout"], 1e-9):,.0f} physics steps/s)')
    print(f'  FK precompute  {timing["simulate.fk_precompute"]:6.2f} s')
    print(f'  model copies   {timing["simulate.models"]:6.2f} s')
    other_sim = (timing['simulate'] - timing['simulate.rollout']
                 - timing['simulate.fk_precompute'] - timing['simulate.models'])
    print(f'  batch assembly {other_sim:6.2f} s')
    print(f'  CMA bookkeeping{timing["bookkeeping"]:6.2f} s')
    print(f'friction error %: {np.round(err_f, 1).tolist()}')
    print(f'armature error %: {np.round(err_a, 1).tolist()}')


if __name__ == '__main__':
    main()
