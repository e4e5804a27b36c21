"""Benchmark sysid fits side by side: least squares (the default) against CMA-ES, same data.

20 trajectories x 10 s from the digital real, generated in-process without ROS, per dynamics
file: ``config/dynamics/sysid_demo_ideal.yaml`` (0 latency, no noise) and
``config/dynamics/sysid_demo.yaml`` (8 ms latency, 0.5 mrad encoder noise); 16 fitted, 4 held
out; 14 parameters; latency searched (``sysid.identify``, fast profile); 2 rollout threads.
Paths (``--paths``): ``lm`` (``--method lm``, the default of ``realm-ros sysid fit``), ``cma``
(``--method cma``, the fast profile), ``cma-full`` (CMA-ES, ``--profile full``, the simple
path). Prints per path and data set the wall and CPU time, the latency, the parameters within
5 % and 1 % of the truth, the worst error, the held-out RMSE beside the encoder noise (the
floor), the load before and after, and appends every figure to ``bench/results/bench.jsonl``.

Run: ``.venv/bin/python bench/bench_sysid.py`` (``--paths cma,cma-full`` compares the two
CMA-ES profiles; ``--save-data FILE.npz`` writes the (last data set's) trajectories for
``bench_sysid_gpu.py``).
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


PATHS = {'lm': ('lm', 'fast'), 'cma': ('cmaes', 'fast'), 'cma-full': ('cmaes', 'full')}


def run_identify(trajs, path: str, args) -> tuple[sysid.IdentifyResult, float, dict]:
    from realm_ros.backends.mujoco.rollout import TwinRollout

    method, profile = PATHS[path]
    base = TwinRollout(nthread=args.threads)
    generations = args.generations or (12 if method == 'lm' else 80)
    options = sysid.FitOptions(method=method, generations=generations, popsize=args.popsize,
                               minibatch=args.minibatch, window=args.window, seed=0,
                               lm_windows=args.lm_windows)
    t, cpu = time.perf_counter(), time.process_time()
    ident = sysid.identify(base.with_latency, trajs, options,
                           sysid.ProfileOptions(profile=profile))
    timing = dict(base.timing, cpu_s=time.process_time() - cpu)
    return ident, time.perf_counter() - t, timing


def held_out_rmse(trajs, ident, threads: int) -> float:
    """Mean per-joint RMSE (rad) of the fitted twin at its latency on the held-out runs."""
    from realm_ros.backends.mujoco.rollout import TwinRollout

    sim = TwinRollout(nthread=threads, latency_s=ident.latency_s).simulate(
        [ident.fit.params], trajs)
    return float(sysid.joint_rmse(sim, trajs).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--trajectories', type=int, default=20)
    parser.add_argument('--holdout', type=int, default=4)
    parser.add_argument('--duration', type=float, default=10.0)
    parser.add_argument('--generations', type=int, default=None,
                        help='CMA-ES generations (default 80) / LM iterations (default 12)')
    parser.add_argument('--popsize', type=int, default=12)
    parser.add_argument('--minibatch', type=int, default=12)
    parser.add_argument('--lm-windows', type=int, default=24)
    parser.add_argument('--window', type=int, default=15, help='control steps per window')
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--paths', default='cma,lm',
                        help=f'comma-separated, of {", ".join(PATHS)}')
    parser.add_argument('--dynamics', nargs='+', default=[
        DEMO_DYNAMICS.replace('sysid_demo.yaml', 'sysid_demo_ideal.yaml'), DEMO_DYNAMICS])
    parser.add_argument('--data', default='', help='read the trajectories (npz) instead '
                                                   '(with one --dynamics file, its truth)')
    parser.add_argument('--save-data', default='', help='write the trajectories (npz)')
    parser.add_argument('--save-params', default='',
                        help='write the parameters of each path (JSON, for bench_sysid_gpu.py)')
    args = parser.parse_args()
    paths = args.paths.split(',')
    for path in paths:
        if path not in PATHS:
            parser.error(f'--paths: unknown path {path!r}; choose from {", ".join(PATHS)}')

    rec = Recorder('sysid')
    import cma  # noqa: F401 - import time (seconds) is not part of the fit
    saved: dict[str, dict] = {}
    for dynamics in args.dynamics:
        hidden = DigitalRealDynamics.from_yaml(dynamics)
        label = pathlib.Path(dynamics).stem
        t = time.perf_counter()
        trajs = (load_trajectories(args.data) if args.data else
                 digital_real_trajectories(args.trajectories, args.duration, dynamics))
        if args.save_data:
            save_trajectories(args.save_data, trajs)
        train, held = trajs[:len(trajs) - args.holdout], trajs[len(trajs) - args.holdout:]
        print(f'[sysid] {label}: {len(train)} + {len(held)} held-out trajectories x '
              f'{args.duration:g} s from the digital real in {time.perf_counter() - t:.1f} s '
              f'(latency {1e3 * hidden.latency_s:g} ms, noise '
              f'{1e3 * hidden.joint_noise_std:g} mrad)')
        truth = vector(hidden.joint_params())
        walls: dict[str, float] = {}
        for path in paths:
            load = os.getloadavg()[0]
            ident, wall, timing = run_identify(train, path, args)
            walls[path] = wall
            err = np.abs(vector(ident.fit.params) / truth - 1)
            rmse = held_out_rmse(held, ident, args.threads) if held else float('nan')
            print(f'[sysid] {label} {path}: {wall:.1f} s wall, {timing["cpu_s"]:.1f} s CPU, '
                  f'load {load:.1f} -> {os.getloadavg()[0]:.1f}; {ident.generations} '
                  f'{"LM iterations" if path == "lm" else "generations"} in '
                  f'{len(ident.fit_log)} fits (' + ', '.join(
                      f'{1e3 * lat:.1f} ms x {g}{" warm" if warm else ""}'
                      for lat, g, warm, _ in ident.fit_log)
                  + f'); latency {1e3 * ident.latency_s:.2f} ms (true '
                  f'{1e3 * hidden.latency_s:.2f}); within 5 % {int((err < 0.05).sum())}/14, '
                  f'within 1 % {int((err < 0.01).sum())}/14, worst {100 * err.max():.3g} % '
                  f'({"friction" if err.argmax() < 7 else "armature"}[{err.argmax() % 7}]); '
                  f'held-out RMSE {1e3 * rmse:.3f} mrad (noise floor '
                  f'{1e3 * hidden.joint_noise_std:.3f})')
            if ident.fit.intervals is not None:
                print(f'[sysid] {label} {path}: 95 % intervals, +-%: ' + ' '.join(
                    f'{100 * v:.2g}' for v in ident.fit.intervals))
            extra = {'data': label, 'path': path, 'cpu_s': timing['cpu_s'],
                     'load_before': load, 'generations': ident.generations,
                     'fits': len(ident.fit_log), 'latency_s': ident.latency_s,
                     'true_latency_s': hidden.latency_s, 'within_5pct': int((err < 0.05).sum()),
                     'within_1pct': int((err < 0.01).sum()), 'max_error_vs_truth': float(
                         err.max()), 'median_error_vs_truth': float(np.median(err)),
                     'heldout_rmse_rad': rmse, 'noise_rad': hidden.joint_noise_std,
                     'params': vector(ident.fit.params).tolist(),
                     'intervals': list(ident.fit.intervals or ()),
                     'trajectories': len(train), 'duration_s': args.duration,
                     'threads': args.threads}
            base = next((p for p in ('cma', 'cma-full') if p in walls and p != path), None)
            rec.figure(f'identify wall time, {path}, {label}', wall, 's',
                       walls.get(base) if base else None,
                       f'{base}, same data, same run' if base else '',
                       '<= 30 s (0.15 x the data) on 2 cores' if path == 'lm' else '', **extra)
            saved.setdefault(label, {})[PATHS[path][1] if path != 'lm' else 'lm'] = {
                'params': vector(ident.fit.params).tolist(), 'latency_s': ident.latency_s,
                'wall_s': wall}
    if args.save_params:
        pathlib.Path(args.save_params).write_text(json.dumps(saved[label]))


if __name__ == '__main__':
    main()
