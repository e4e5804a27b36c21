"""Benchmark the GPU sysid path (MuJoCo MJX on JAX) against the CPU rollouts, on one machine.

Needs ``mujoco-mjx`` and a JAX GPU backend (see docs/performance.md for the wheels that travel
to a GPU machine). Data: ``--data FILE.npz`` from ``bench_sysid.py --save-data`` (the same 20
trajectories x 10 s); ``--reference FILE.json`` (``{"simple": {"params": [14]}, "fast": ...}``,
e.g. from ``bench_sysid.py --save-params``) gives the CPU fits' parameters to compare with.
Prints and appends to bench/results/bench.jsonl. Modes:

* ``--device-fit 20x8/40x16/p32,...``: the whole fit on the device
  (``realm-ros sysid fit --device gpu``, ``mjx_fit.identify_on_device``) per schedule
  (phase A generations x windows / phase B generations x windows [/wW window steps]
  [/pP popsize]) and seed: wall time of the first fit of a shape in the process (tracing and
  compilation timed apart) and compiled, latency, parameters vs the CPU fits and the truth;
* ``--step-profile ITS/LS[/g],...``: time per batched physics step and max |dq| against the
  CPU per solver setting (Newton / line-search iterations; ``/g`` compiles with CUDA graphs,
  ``mjx_fit.GPU_COMPILER_OPTIONS``) and batch width;
* ``--write-bags DIR``: the data as bags for the CLI;
* default (the earlier design, ``identify_parallel`` with ``MjxRollout``): MJX vs CPU rollouts,
  the parallel profile per ``--configs``, the CPU fast profile with ``--cpu``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from bench_sysid import load_trajectories, vector  # noqa: E402
from benchlib import Recorder  # noqa: E402

from realm_ros.core import sysid  # noqa: E402


def step_profile(rec, trajs, configs: str, width_configs: str, widths: str,
                 threads: int, base_width: int = 512) -> None:
    """Per-physics-step time of the batched MJX rollout and its max |dq| against the CPU's,
    per solver setting (iterations/ls_iterations) and batch width (candidates x windows)."""
    import jax

    from realm_ros.backends.mujoco.mjx_rollout import MjxRollout
    from realm_ros.backends.mujoco.rollout import TwinRollout

    window, n_c, lat = 3, 16, 1 / 120
    space = sysid.ParamSpace()
    cands = [space.from_unit(np.random.default_rng(i).uniform(0.2, 0.8, size=14))
             for i in range(n_c)]
    pool = sysid.windows(trajs, window)
    cpu = TwinRollout(nthread=threads).with_latency(lat)
    ref_pool = pool[:512]
    t = time.perf_counter()
    ref = cpu.simulate(cands, ref_pool)
    print(f'[step] CPU reference {n_c} x {len(ref_pool)} windows of {window} steps: '
          f'{time.perf_counter() - t:.2f} s on {threads} threads', flush=True)
    runs = [(c, base_width) for c in configs.split(',')]
    runs += [(c, int(w)) for c in width_configs.split(',') if c for w in widths.split(',')
             if int(w) != base_width]
    from realm_ros.backends.mujoco.mjx_fit import GPU_COMPILER_OPTIONS

    for config, n_w in runs:
        its, ls = (int(v) for v in config.split('/')[:2])
        graphs = config.endswith('/g')
        gpu = MjxRollout(iterations=its, ls_iterations=ls).with_latency(lat)
        batch = [pool[i % len(pool)] for i in range(n_w)]
        args = gpu.inputs([(lat, cands)], batch)
        t = time.perf_counter()
        fn = jax.jit(gpu._batched).lower(*args).compile(
            dict(GPU_COMPILER_OPTIONS) if graphs else None)
        out = fn(*args)
        jax.block_until_ready(out)
        compile_s = time.perf_counter() - t
        times = []
        for _ in range(3):
            t = time.perf_counter()
            jax.block_until_ready(fn(*args))
            times.append(time.perf_counter() - t)
        out = np.asarray(out)
        steps = window * gpu.substeps
        per_step = min(times) / steps
        diff = float(max(np.abs(out[0, :, w, :window] - ref[w]).max()
                         for w in range(min(n_w, len(ref_pool)))))
        worlds = n_c * n_w
        tag = ' CUDA graphs' if graphs else ''
        print(f'[step] iterations {its} ls {ls}{tag} worlds {worlds}: {1e3 * per_step:.3f} ms per '
              f'physics step ({worlds * 1e-6 / per_step:.2f} M world-steps/s), compile '
              f'{compile_s:.1f} s, max |dq| vs CPU {diff:.2e} rad', flush=True)
        rec.figure(f'MJX step, iterations {its} ls_iterations {ls}{tag}, {worlds} worlds',
                   1e3 * per_step, 'ms per physics step', goal='', compile_s=compile_s,
                   max_dq_vs_cpu_rad=diff, worlds=worlds, window=window)


#: The digital real's hidden friction and armature (config/dynamics/sysid_demo.yaml).
TRUTH = np.r_[[0.40, 0.60, 0.35, 0.50, 0.20, 0.25, 0.10],
              [0.30, 0.40, 0.20, 0.35, 0.12, 0.10, 0.06]]


def parse_schedule(text: str, seed: int = 0):
    """``GAxMA/GBxMB[/wW][/pP]`` -> DeviceFitOptions (generations x minibatch per phase)."""
    from realm_ros.backends.mujoco.mjx_fit import DeviceFitOptions

    parts = text.split('/')
    (ga, ma), (gb, mb) = (tuple(int(v) for v in part.split('x')) for part in parts[:2])
    extra = {'window': 3, 'popsize': 16}  # /wW /pP override
    for part in parts[2:]:
        extra['window' if part[0] == 'w' else 'popsize'] = int(part[1:])
    return DeviceFitOptions(generations_a=ga, minibatch_a=ma, generations_b=gb, minibatch_b=mb,
                            seed=seed, **extra)


def device_fit(rec, trajs, schedules: str, reference: dict, repeats: int, seeds: str,
               solver: str = '') -> None:
    """The whole fit on the device (``realm-ros sysid fit --device gpu``), per schedule: wall
    time first (compiling, or loading the persistent cache) and compiled, per stage; latency;
    parameters against the CPU fits' and the truth."""
    from realm_ros.backends.mujoco.mjx_fit import (
        FIT_SOLVER,
        compiler_options,
        identify_on_device,
    )
    from realm_ros.backends.mujoco.mjx_rollout import MjxRollout, enable_compilation_cache

    cache = enable_compilation_cache()
    print(f'[fit] JAX compilation cache {cache}', flush=True)
    t = time.perf_counter()
    settings = dict(FIT_SOLVER)
    if solver:  # ITS/LS
        its, ls = (int(v) for v in solver.split('/'))
        settings.update(iterations=its, ls_iterations=ls)
    gpu = MjxRollout(**settings)
    print(f'[fit] solver {settings}', flush=True)
    print(f'[fit] MjxRollout (model on the device) {time.perf_counter() - t:.2f} s', flush=True)
    refs = {k: np.array(v['params']) for k, v in reference.items()}
    for schedule in schedules.split(','):
        for seed in (int(v) for v in seeds.split(',')):
            options = parse_schedule(schedule, seed)
            for attempt in range(repeats if seed == int(seeds.split(',')[0]) else 1):
                t = time.perf_counter()
                ident, timing = identify_on_device(gpu, trajs, options)
                wall = time.perf_counter() - t
                p = vector(ident.fit.params)
                extra = {'schedule': schedule, 'seed': seed, 'attempt': attempt,
                         'solver': settings, 'graphs': compiler_options() is not None,
                         'latency_s': ident.latency_s, 'params': p.tolist(),
                         'stages_s': {k: round(v, 3) for k, v in timing.items()},
                         'profile': {str(k): v for k, v in ident.profile.items()},
                         'options': dataclasses.asdict(options),
                         'max_error_vs_truth': float(np.max(np.abs(p / TRUTH - 1))),
                         'median_error_vs_truth': float(np.median(np.abs(p / TRUTH - 1)))}
                for name, ref in refs.items():
                    diff = np.abs(p / ref - 1)
                    extra[f'max_diff_vs_cpu_{name}'] = float(diff.max())
                    extra[f'median_diff_vs_cpu_{name}'] = float(np.median(diff))
                # A first call traces (or loads the exported stages) and compiles (or loads
                # the executables from JAX's cache); later calls in the process do neither.
                label = ('compiled' if 'phase_a.trace' not in timing else
                         'first call in this process, stages loaded from the caches'
                         if timing['trace'] < 1.0 else 'first call of this shape, traced')
                rec.figure(f'GPU identify on device ({schedule}), {label}', wall, 's',
                           reference.get('simple', {}).get('wall_s'),
                           'CPU simple path (full profile), 2 cores', '< 5 s compiled', **extra)
                print(f'[fit] {schedule} seed {seed} #{attempt}: {wall:.2f} s '
                      + ' '.join(f'{k} {v:.2f}' for k, v in timing.items())
                      + f'; latency {1e3 * ident.latency_s:.2f} ms; vs truth max '
                      f'{100 * extra["max_error_vs_truth"]:.1f} % median '
                      f'{100 * extra["median_error_vs_truth"]:.1f} %; '
                      + '; '.join(f'vs CPU {n} max {100 * extra[f"max_diff_vs_cpu_{n}"]:.1f} '
                                  f'% median {100 * extra[f"median_diff_vs_cpu_{n}"]:.1f} %'
                                  for n in refs)
                      + '; profile ' + ', '.join(f'{1e3 * k:.1f} ms: {1e6 * v:.3g}'
                                                 for k, v in ident.profile.items()),
                      flush=True)


def write_bags(trajs, folder: str) -> None:
    """Write ``trajs`` as rosbag2 bags that ``realm-ros sysid fit`` reads back to the same
    trajectories (joint states at the start and one control period after each command)."""
    import pathlib

    from realm_ros.io.bags import RunData, read_run, run_to_trajectory, write_run

    root = pathlib.Path(folder)
    root.mkdir(parents=True, exist_ok=False)
    for i, traj in enumerate(trajs):
        k = traj.steps
        t_cmd = 1.0 + traj.dt * np.arange(k)
        state_t = np.r_[1.0, 1.0 + traj.dt * np.arange(1, k + 1)]
        run = RunData(path=root / f'traj_{i:02d}', command_t=t_cmd, command_q=traj.targets,
                      command_gripper=traj.gripper, state_t=state_t,
                      state_q=np.vstack([traj.q0[None], traj.measured]),
                      state_dq=np.vstack([traj.dq0[None], traj.measured_dq]),
                      state_effort=np.zeros((k + 1, 7)),
                      state_gripper=np.r_[traj.gripper0, traj.gripper])
        write_run(run.path, run)
        back = run_to_trajectory(read_run(run.path))
        err = max(float(np.abs(back.measured - traj.measured).max()),
                  float(np.abs(back.targets - traj.targets).max()))
        if err > 1e-9:
            raise SystemExit(f'bag {run.path} reads back {err:.2e} rad off')
    print(f'wrote {len(trajs)} bags to {root}')


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
    parser.add_argument('--step-profile', default='',
                        help='only profile the step: solver settings "its/ls,..." at 8192 worlds')
    parser.add_argument('--width-configs', default='', help='settings also timed at --widths')
    parser.add_argument('--widths', default='128,2048', help='windows (x 16 candidates)')
    parser.add_argument('--base-width', type=int, default=512)
    parser.add_argument('--device-fit', default='',
                        help='only the on-device fit: schedules "GAxMA/GBxMB[/wW][/pP],..."')
    parser.add_argument('--solver', default='',
                        help='--device-fit solver "ITS/LS" instead of the fit\'s')
    parser.add_argument('--repeats', type=int, default=2)
    parser.add_argument('--seeds', default='0')
    parser.add_argument('--write-bags', default='', help='only write --data as bags here')
    args = parser.parse_args()
    if args.write_bags:
        write_bags(load_trajectories(args.data), args.write_bags)
        return
    if args.device_fit:
        reference = json.loads(open(args.reference).read()) if args.reference else {}
        device_fit(Recorder('sysid_gpu'), load_trajectories(args.data), args.device_fit,
                   reference, args.repeats, args.seeds, args.solver)
        return
    if args.step_profile:
        trajs = load_trajectories(args.data)
        step_profile(Recorder('sysid_gpu_step'), trajs, args.step_profile, args.width_configs,
                     args.widths, min(args.threads, 16), args.base_width)
        return
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
