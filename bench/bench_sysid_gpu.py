"""Benchmark the GPU sysid path (MuJoCo MJX on JAX) against the CPU rollouts, on one machine.

Needs ``mujoco-mjx`` and a JAX GPU backend (see docs/performance.md for the wheels that travel
to a GPU machine). Data: ``--data FILE.npz`` from ``bench_sysid.py --save-data`` (the same 20
trajectories x 10 s); ``--reference FILE.json`` from ``bench_sysid.py --save-params`` gives the
CPU paths' parameters to compare with. Prints and appends to bench/results/bench.jsonl:

1. MJX vs CPU rollouts on the same windows and candidates (max |dq|, rad);
2. the parallel latency profile on the GPU (``realm-ros sysid fit --device gpu``), per
   configuration: wall time with and without compilation, latency, parameters vs the CPU's;
3. the CPU fast profile on this machine's cores (``--threads``), for scale.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from bench_sysid import load_trajectories, vector  # noqa: E402
from benchlib import Recorder  # noqa: E402

from realm_ros.core import sysid  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--data', required=True)
    parser.add_argument('--reference', default='')
    parser.add_argument('--configs', default='15x12,5x32',
                        help='window steps x minibatch windows per generation, comma list')
    parser.add_argument('--generations', type=int, default=80)
    parser.add_argument('--popsize', type=int, default=12)
    parser.add_argument('--threads', type=int, default=os.cpu_count() or 2)
    parser.add_argument('--cpu', action='store_true', help='also the CPU fast profile')
    args = parser.parse_args()
    import jax

    from realm_ros.backends.mujoco.mjx_rollout import MjxRollout
    from realm_ros.backends.mujoco.rollout import TwinRollout
    from realm_ros.core.sysid.parallel import identify_parallel

    rec = Recorder('sysid_gpu')
    print(f'[sysid_gpu] jax {jax.__version__}, devices {jax.devices()}', flush=True)
    trajs = load_trajectories(args.data)
    reference = json.loads(open(args.reference).read()) if args.reference else {}
    ref = np.array(reference['fast']['params']) if 'fast' in reference else None

    # 1. Rollouts agree.
    gpu = MjxRollout()
    cpu = TwinRollout(nthread=min(args.threads, 16))
    pool = sysid.windows(trajs, 15)[:8]
    cands = [sysid.ParamSpace().from_unit(np.random.default_rng(i).uniform(size=14))
             for i in range(3)]
    for lat in (0.0, 1 / 120):
        a = gpu.with_latency(lat).simulate(cands, pool)
        b = cpu.with_latency(lat).simulate(cands, pool)
        diff = max(float(np.abs(x - y).max()) for x, y in zip(a, b))
        rec.figure(f'MJX vs CPU rollout max |dq|, latency {1e3 * lat:.1f} ms', diff, 'rad',
                   goal='<< the fit residual (about 1.4 mrad RMS)')
    # 2. The GPU fit, per configuration.
    for config in args.configs.split(','):
        window, minibatch = (int(v) for v in config.split('x'))
        options = sysid.FitOptions(generations=args.generations, popsize=args.popsize,
                                   minibatch=minibatch, window=window, seed=0)
        for attempt in ('first (with compilation)', 'second (compiled)'):
            gpu.timing.update(rollout=0.0, compile=0.0)
            t = time.perf_counter()
            ident = identify_parallel(gpu.with_latency, trajs, options)
            wall = time.perf_counter() - t
            p = vector(ident.fit.params)
            extra = {'window': window, 'minibatch': minibatch, 'popsize': args.popsize,
                     'generations': len(ident.fit.history), 'latency_s': ident.latency_s,
                     'compile_s': gpu.timing['compile'], 'rollout_s': gpu.timing['rollout'],
                     'params': p.tolist(), 'profile': {str(k): v for k, v in
                                                       ident.profile.items()}}
            if ref is not None:
                extra['max_param_diff_vs_cpu_fast'] = float(np.max(np.abs(p / ref - 1)))
                extra['cpu_fast_latency_s'] = reference['fast']['latency_s']
            rec.figure(f'GPU identify (parallel profile, {window}-step windows x {minibatch}) '
                       f'{attempt}', wall, 's',
                       reference.get('fast', {}).get('wall_s'), 'CPU fast profile, 2 cores',
                       '< 5 s', **extra)
            print(f'[sysid_gpu] latency {1e3 * ident.latency_s:.2f} ms, compile '
                  f'{gpu.timing["compile"]:.1f} s, rollouts {gpu.timing["rollout"]:.1f} s, '
                  f'max param diff vs CPU fast '
                  f'{100 * extra.get("max_param_diff_vs_cpu_fast", float("nan")):.1f} %',
                  flush=True)
    # 3. The CPU fast profile with this machine's cores.
    if args.cpu:
        base = TwinRollout(nthread=args.threads)
        options = sysid.FitOptions(generations=args.generations, popsize=args.popsize, seed=0)
        t = time.perf_counter()
        ident = sysid.identify(base.with_latency, trajs, options)
        wall = time.perf_counter() - t
        p = vector(ident.fit.params)
        rec.figure(f'CPU identify, fast profile, {args.threads} threads', wall, 's',
                   reference.get('fast', {}).get('wall_s'), 'CPU fast profile, 2 cores',
                   latency_s=ident.latency_s, params=p.tolist(),
                   max_param_diff_vs_cpu_fast=(float(np.max(np.abs(p / ref - 1)))
                                               if ref is not None else None))


if __name__ == '__main__':
    main()
