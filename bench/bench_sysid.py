"""Benchmark sysid fits with latency estimation, fast against simple, side by side.

20 trajectories x 10 s from the digital real (``config/dynamics/sysid_demo.yaml``: 8 ms latency,
0.5 mrad encoder noise), generated in-process without ROS, 14 parameters, CMA-ES, 2 rollout
threads. The simple path is ``sysid.identify(..., profile='full')`` (a full fit from scratch at
every latency visited, what ``realm-ros sysid fit`` did before); the fast path is the default
``profile='fast'``. Both on the same data in one run; prints wall time, generations, the
latency, parameter errors against the truth and between the two paths, and appends every
figure to ``bench/results/bench.jsonl``.

Run: ``.venv/bin/python bench/bench_sysid.py`` (``--only fast`` skips the simple path;
``--save-data FILE.npz`` writes the trajectories for ``bench_sysid_gpu.py``).
"""

from __future__ import annotations

import os

# Single-threaded BLAS: the matrices are tiny (IK, 6x6 solves), and on a shared CPU BLAS
# threads spin and multiply the cost (measured: 71 ms per 6x6 solve at load 20).
os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')

import argparse
import json
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from benchlib import Recorder  # noqa: E402

from realm_ros.core import sysid  # noqa: E402
from realm_ros.core.config import DigitalRealDynamics  # noqa: E402

DEMO_DYNAMICS = os.path.join(os.path.dirname(__file__), '..', 'config',
                             'dynamics/sysid_demo.yaml')
FIELDS = ('q0', 'dq0', 'targets', 'gripper', 'measured', 'measured_dq', 'target0')


def digital_real_trajectories(n: int, duration: float, dynamics: str,
                              seed: int = 1) -> list[sysid.Trajectory]:
    """Execute ``n`` excitation trajectories on the digital real (no ROS) and return them."""
    from realm_ros.backends.digital_real import DigitalRealWorld
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.types import Action, ActionMode, EpisodeSpec

    hidden = DigitalRealDynamics.from_yaml(dynamics)
    world = DigitalRealWorld(WorldConfig(backend='digital_real', cameras=(), camera_rate_hz=0.0),
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


def save_trajectories(path: str, trajs: list[sysid.Trajectory]) -> None:
    arrays = {f'{i}_{k}': np.asarray(getattr(t, k)) for i, t in enumerate(trajs) for k in FIELDS}
    arrays.update({f'{i}_gripper0': np.asarray(t.gripper0) for i, t in enumerate(trajs)})
    np.savez(path, n=len(trajs), **arrays)


def load_trajectories(path: str) -> list[sysid.Trajectory]:
    data = np.load(path)
    return [sysid.Trajectory(f'bench_{i}', gripper0=float(data[f'{i}_gripper0']), dt=1 / 15,
                             **{k: data[f'{i}_{k}'] for k in FIELDS})
            for i in range(int(data['n']))]


def vector(params) -> np.ndarray:
    return np.r_[params.friction, params.armature]


def run_identify(trajs, profile: str, args) -> tuple[sysid.IdentifyResult, float, dict]:
    from realm_ros.backends.mujoco.rollout import TwinRollout

    base = TwinRollout(nthread=args.threads)
    options = sysid.FitOptions(generations=args.generations, popsize=args.popsize,
                               minibatch=args.minibatch, window=args.window, seed=0)
    t, cpu = time.perf_counter(), time.process_time()
    ident = sysid.identify(base.with_latency, trajs, options,
                           sysid.ProfileOptions(profile=profile))
    timing = dict(base.timing, cpu_s=time.process_time() - cpu)
    return ident, time.perf_counter() - t, timing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--trajectories', type=int, default=20)
    parser.add_argument('--duration', type=float, default=10.0)
    parser.add_argument('--generations', type=int, default=80)
    parser.add_argument('--popsize', type=int, default=12)
    parser.add_argument('--minibatch', type=int, default=12)
    parser.add_argument('--window', type=int, default=15, help='control steps per window')
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--only', choices=('fast', 'full'), default=None)
    parser.add_argument('--dynamics', default=DEMO_DYNAMICS)
    parser.add_argument('--data', default='', help='read the trajectories (npz) instead')
    parser.add_argument('--save-data', default='', help='write the trajectories (npz)')
    parser.add_argument('--save-params', default='',
                        help='write the parameters of each path (JSON, for bench_sysid_gpu.py)')
    args = parser.parse_args()

    rec = Recorder('sysid')
    t = time.perf_counter()
    trajs = (load_trajectories(args.data) if args.data else
             digital_real_trajectories(args.trajectories, args.duration, args.dynamics))
    if args.save_data:
        save_trajectories(args.save_data, trajs)
    print(f'[sysid] data: {len(trajs)} trajectories x {args.duration:g} s '
          f'({sum(tr.steps for tr in trajs)} control steps) from the digital real in '
          f'{time.perf_counter() - t:.1f} s')
    import cma  # noqa: F401 - import time (seconds) is not part of the fit
    hidden = DigitalRealDynamics.from_yaml(args.dynamics)
    truth = vector(hidden.joint_params())
    profiles = [args.only] if args.only else ['full', 'fast']
    results: dict[str, tuple] = {}
    for profile in profiles:
        ident, wall, timing = run_identify(trajs, profile, args)
        results[profile] = (ident, wall)
        err = np.abs(vector(ident.fit.params) / truth - 1)
        print(f'[sysid] {profile}: {wall:.1f} s, {ident.generations} generations in '
              f'{len(ident.fit_log)} fits ' + ', '.join(
                  f'{1e3 * lat:.1f} ms x {g}{" (warm)" if warm else ""}'
                  for lat, g, warm, _ in ident.fit_log)
              + f'; {len(ident.searches)} searches; latency {1e3 * ident.latency_s:.2f} ms '
              f'(true {1e3 * hidden.latency_s:.2f}); profile, mrad^2 per step: '
              + ', '.join(f'{1e3 * k:.1f} ms {1e6 * v:.3g}' for k, v in ident.profile.items()))
        print(f'[sysid] {profile}: process CPU time {timing["cpu_s"]:.1f} s (all threads; on '
              f'an idle machine wall ~ CPU / threads), rollout {timing["rollout"]:.1f} s wall, '
              f'FK precompute '
              f'{timing["fk_precompute"]:.2f} s; max / median parameter error vs truth '
              f'{100 * err.max():.1f} / {100 * np.median(err):.1f} %')
        extra = {'cpu_s': timing['cpu_s'], 'generations': ident.generations,
                 'fits': len(ident.fit_log),
                 'latency_s': ident.latency_s, 'true_latency_s': hidden.latency_s,
                 'max_error_vs_truth': float(err.max()),
                 'median_error_vs_truth': float(np.median(err)),
                 'params': vector(ident.fit.params).tolist(), 'trajectories': len(trajs),
                 'duration_s': args.duration, 'popsize': args.popsize,
                 'minibatch': args.minibatch, 'window': args.window, 'threads': args.threads}
        if profile == 'fast' and 'full' in results:
            simple_ident, simple_wall = results['full']
            diff = np.abs(vector(ident.fit.params) / vector(simple_ident.fit.params) - 1)
            rec.figure('identify wall time, fast profile', wall, 's', simple_wall,
                       'full profile (simple path), same data, same run', '< 60 s on 2 cores',
                       max_param_diff_vs_simple=float(diff.max()),
                       same_latency=ident.latency_s == simple_ident.latency_s, **extra)
            same = ident.latency_s == simple_ident.latency_s
            print(f'[sysid] fast vs simple: same latency {same}, parameter difference max '
                  f'{100 * diff.max():.1f} %, median '
                  f'{100 * np.median(diff):.1f} %; generations {ident.generations} vs '
                  f'{simple_ident.generations}')
        else:
            rec.figure(f'identify wall time, {profile} profile', wall, 's', goal=(
                '< 60 s on 2 cores' if profile == 'fast' else ''), **extra)
    if args.save_params:
        pathlib.Path(args.save_params).write_text(json.dumps(
            {k: {'params': vector(v[0].fit.params).tolist(), 'latency_s': v[0].latency_s,
                 'wall_s': v[1]} for k, v in results.items()}))


if __name__ == '__main__':
    main()
