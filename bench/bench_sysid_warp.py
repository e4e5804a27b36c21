"""Benchmark the least-squares sysid fit on MuJoCo Warp (GPU) beside the CPU twin, same data.

Per dynamics file (as ``bench_sysid.py``: 0 ms noise-free and the demo's 8 ms with 0.5 mrad
noise), 20 trajectories x 10 s from the digital real (CPU), 16 fitted and 4 held out:

1. the rollouts checked against the CPU twin (``TwinRollout``): the same 24 windows at the
   true parameters and latency, largest difference (MuJoCo Warp runs in float32);
2. per fit (``--fits``): ``batched`` (``core/sysid/lsq_batch.identify_batched``: the scout,
   one latency search, then LM at the searched latency and its neighbours in lockstep, one
   call per iteration for all) and ``sequential`` (``sysid.identify`` with ``--method lm``,
   the fast profile's walk), on ``WarpRollout`` (``fd_step`` 1e-3 for float32), twice: the
   first run includes compiling the kernels and capturing the graphs, the second is the
   compiled figure;
3. the same fit on the CPU twin (2 threads) in the same run.

Prints wall times, the latency, parameters within 5 % / 1 %, held-out RMSE (CPU twin) and the
GPU-vs-CPU parameter difference, and appends the figures to ``bench/results/bench.jsonl``.
Needs ``mujoco-warp``, ``warp-lang`` and an NVIDIA GPU. Run:
``python3 bench/bench_sysid_warp.py [--skip-cpu]``.
"""

from __future__ import annotations

import os

os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from bench_sysid import (  # noqa: E402
    DEMO_DYNAMICS,
    digital_real_trajectories,
    held_out_rmse,
    vector,
)
from benchlib import Recorder  # noqa: E402

from realm_ros.core import sysid  # noqa: E402
from realm_ros.core.config import DigitalRealDynamics  # noqa: E402
from realm_ros.core.sysid.lsq_batch import identify_batched  # noqa: E402


def fit(make_evaluator, train, fd_step: float, lm_windows: int, batched: bool = False,
        groups=None):
    """``batched``: :func:`lsq_batch.identify_batched` (every latency's LM in lockstep) on
    ``groups`` (a ``simulate_groups``), else ``sysid.identify``'s sequential profile."""
    options = sysid.FitOptions(method='lm', generations=12, window=15, lm_windows=lm_windows,
                               lm=dataclasses.replace(sysid.LeastSquaresOptions(),
                                                      fd_step=fd_step))
    t = time.perf_counter()
    if batched:
        ident = identify_batched(groups, train, options, sysid.ProfileOptions())
    else:
        ident = sysid.identify(make_evaluator, train, options, sysid.ProfileOptions())
    return ident, time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--dynamics', nargs='+', default=[
        DEMO_DYNAMICS.replace('sysid_demo.yaml', 'sysid_demo_ideal.yaml'), DEMO_DYNAMICS])
    parser.add_argument('--lm-windows', type=int, default=24)
    parser.add_argument('--fd-step', type=float, default=1e-3)
    parser.add_argument('--skip-cpu', action='store_true')
    parser.add_argument('--fits', nargs='+', default=['batched', 'sequential'],
                        choices=('batched', 'sequential'),
                        help='batched: every latency in lockstep (lsq_batch); sequential: '
                             "sysid.identify's profile walk")
    args = parser.parse_args()

    from realm_ros.backends.mujoco.rollout import TwinRollout
    from realm_ros.backends.mujoco.warp_rollout import WarpRollout

    rec = Recorder('sysid_warp')
    t = time.perf_counter()
    gpu = WarpRollout()
    print(f'[warp] model and Warp init {time.perf_counter() - t:.1f} s', flush=True)
    for dynamics in args.dynamics:
        label = pathlib.Path(dynamics).stem
        hidden = DigitalRealDynamics.from_yaml(dynamics)
        truth = vector(hidden.joint_params())
        trajs = digital_real_trajectories(20, 10.0, dynamics)
        train, held = trajs[:16], trajs[16:]
        lat = sysid.latency_candidates(240.0, 0.05)[1 if hidden.latency_s else 0]
        pool = sysid.residual_windows(train, 15, args.lm_windows)
        t = time.perf_counter()
        g = gpu.with_latency(lat).simulate([hidden.joint_params()], pool)
        first = time.perf_counter() - t
        c = TwinRollout(latency_s=lat).simulate([hidden.joint_params()], pool)
        diff = max(float(np.abs(a - b).max()) for a, b in zip(g, c))
        print(f'[warp] {label}: rollouts vs CPU twin, {len(pool)} windows at the truth: max '
              f'|q_gpu - q_cpu| {1e3 * diff:.4f} mrad (first call {first:.1f} s)', flush=True)
        rec.figure(f'warp rollout vs CPU twin, {label}', diff, 'rad', goal='<< noise 5e-4')
        for how in args.fits:
            batched = how == 'batched'
            for run in ('first', 'compiled'):
                before = dict(gpu.timing)
                ident, wall = fit(gpu.with_latency, train, args.fd_step, args.lm_windows,
                                  batched, gpu.simulate_vectors)
                spent = {k: gpu.timing[k] - before[k] for k in gpu.timing}
                err = np.abs(vector(ident.fit.params) / truth - 1)
                rmse = held_out_rmse(held, ident, 2)
                calls = ident.fit.timing.get('calls')
                print(f'[warp] {label} gpu lm {how} ({run}): {wall:.2f} s wall (' + ', '.join(
                    f'{k} {v:.2f}' for k, v in spent.items()) + f'); {ident.generations} LM '
                    f'iterations in {len(ident.fit_log)} fits'
                    + (f', {int(calls)} calls' if calls else '')
                    + f'; latency {1e3 * ident.latency_s:.2f} ms; within 5 % '
                    f'{int((err < 0.05).sum())}/14, 1 % {int((err < 0.01).sum())}/14, worst '
                    f'{100 * err.max():.3g} %; held-out RMSE (CPU twin) {1e3 * rmse:.3f} mrad',
                    flush=True)
            gpu_params = vector(ident.fit.params)
            rec.figure(f'identify wall time, warp lm {how} compiled, {label}', wall, 's',
                       goal='< 2 s once compiled', latency_s=ident.latency_s,
                       within_5pct=int((err < 0.05).sum()), max_error_vs_truth=float(err.max()),
                       heldout_rmse_rad=rmse, params=gpu_params.tolist(), calls=calls,
                       timing={k: round(v, 3) for k, v in spent.items()})
        if args.skip_cpu:
            continue
        # What a user runs without a GPU: the sequential profile on the CPU twin.
        cpu = TwinRollout(nthread=2)
        cpu_ident, cpu_wall = fit(cpu.with_latency, train, 1e-6, args.lm_windows)
        cerr = np.abs(vector(cpu_ident.fit.params) / truth - 1)
        apart = np.abs(gpu_params / vector(cpu_ident.fit.params) - 1)
        print(f'[warp] {label} cpu lm sequential (2 threads): {cpu_wall:.2f} s wall; latency '
              f'{1e3 * cpu_ident.latency_s:.2f} ms; within 5 % {int((cerr < 0.05).sum())}'
              f'/14, worst {100 * cerr.max():.3g} %; last GPU fit vs CPU parameters apart at '
              f'most {100 * apart.max():.3g} %', flush=True)
        rec.figure(f'identify wall time, cpu lm, {label}', cpu_wall, 's',
                   same_latency=cpu_ident.latency_s == ident.latency_s,
                   max_param_diff_gpu_cpu=float(apart.max()))


if __name__ == '__main__':
    main()
