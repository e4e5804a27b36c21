"""Benchmark a system-identification fit: 20 trajectories of 10 s each, CMA-ES, 2 threads.

Run: ``.venv/bin/python bench/bench_sysid.py`` (data from the digital real, generated in-process
without ROS), or ``--bags DIR`` to fit recorded bags. By default the actuation latency is
estimated as ``realm-ros sysid fit`` does (``sysid.identify``); ``--latency S`` fits at a
given latency instead (``--latency 0`` = a twin without latency). Prints the wall time and
where it goes (batched rollouts, FK precompute, CMA-ES bookkeeping), plus the machine's load,
since the CPU may be shared.
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
    parser.add_argument('--latency', type=float, default=None,
                        help='fit at this latency, s (default: estimate it)')
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
    rollouts: dict[float, TwinRollout] = {}

    def make(latency_s: float) -> TwinRollout:
        return rollouts.setdefault(latency_s, TwinRollout(nthread=args.threads,
                                                          latency_s=latency_s))

    kwargs = dict(generations=args.generations, popsize=args.popsize,
                  minibatch=args.minibatch, window=args.window, progress=False)
    t = time.perf_counter()
    searches: list = []
    if args.latency is None:
        ident = sysid.identify(make, trajs, seed=0, **kwargs)
        result, latency, searches = ident.fit, ident.latency_s, ident.searches
        fits = ident.fits
        print('profile (latency ms: fitted loss mrad^2 per step): ' + ', '.join(
            f'{1e3 * k:.2f}: {1e6 * v:.3g}' for k, v in ident.profile.items()))
    else:
        latency, fits = args.latency, 1
        result = sysid.fit(make(latency), trajs, seed=0, **kwargs)
    wall = time.perf_counter() - t
    timing = {k: sum(r.timing[k] for r in rollouts.values()) for k in
              ('rollout', 'fk_precompute', 'models')}
    truth = DigitalRealDynamics.from_yaml(args.dynamics).joint_params()
    err_f = np.abs(np.array(result.params.friction) / truth.friction - 1) * 100
    err_a = np.abs(np.array(result.params.armature) / truth.armature - 1) * 100
    steps = sum(tr.steps for tr in trajs)
    substeps = next(iter(rollouts.values())).substeps
    search_s = sum(x.seconds for x in searches)
    print(f'machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, '
          f'load average {os.getloadavg()[0]:.2f} (shared CPU)')
    print(f'data: {len(trajs)} trajectories, {steps} control steps, prepared in {prep_s:.1f} s')
    print(f'identify: {wall:.1f} s wall, {fits} fit(s), {len(searches)} latency search(es) '
          f'({search_s:.1f} s); latency {1e3 * latency:.2f} ms (true '
          f'{1e3 * DigitalRealDynamics.from_yaml(args.dynamics).latency_s:.2f} ms)')
    print(f'last fit: {len(result.history)} generations x {args.popsize} (+1 mean) candidates '
          f'x {args.minibatch} windows of {args.window} steps, {args.threads} threads; stop: '
          f'{result.stop_reason}; {result.timing["total"]:.1f} s for that fit')
    print(f'  rollout        {timing["rollout"]:6.2f} s (all fits and searches; '
          f'{substeps} substeps per control step)')
    print(f'  FK precompute  {timing["fk_precompute"]:6.2f} s')
    print(f'  model copies   {timing["models"]:6.2f} s')
    print(f'  other (batch assembly, CMA bookkeeping) '
          f'{wall - sum(timing.values()):6.2f} s')
    print(f'friction error %: {np.round(err_f, 1).tolist()}')
    print(f'armature error %: {np.round(err_a, 1).tolist()}')


if __name__ == '__main__':
    main()
