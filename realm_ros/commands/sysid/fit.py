"""``realm-ros sysid fit`` and ``realm-ros sysid eval``: the twin replays recorded bags.

``fit`` estimates the actuation latency (``sysid.identify``: the fast latency profile by
default, ``--profile full`` for the simple one), fits friction and armature by least squares
(``--method lm``, the default; ``--method cma`` for CMA-ES), and writes PARAMS.yaml plus a
report folder (``report.py``). ``--device gpu`` runs on a GPU: ``--engine warp`` (default)
least squares at every latency in lockstep on MuJoCo Warp (``backends/mujoco/warp_rollout.py``,
``core/sysid/lsq_batch.py``), ``--engine mjx`` the whole CMA-ES fit (every latency, the
population, the windows) in jitted MuJoCo MJX calls (``backends/mujoco/mjx_fit.py``).
The progress bar (tqdm) lives here, not in core.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import pathlib
import time
from typing import Any, Callable, cast

import numpy as np

from realm_ros import console
from realm_ros.commands.sysid.report import (
    print_residual,
    print_table,
    write_params,
    write_report,
)
from realm_ros.core import backends, robot, sysid
from realm_ros.core.config import DigitalRealDynamics, DynamicsParams, sim_params_latency
from realm_ros.core.errors import ConfigError, DataError


def find_bags(paths: list[str]) -> list[pathlib.Path]:
    """Return bag directories: each path is a bag or a directory of bags (sorted)."""
    bags = []
    for item in paths:
        path = pathlib.Path(item)
        if (path / 'metadata.yaml').exists() or path.suffix == '.mcap':
            bags.append(path)
        elif path.is_dir():
            found = sorted(p.parent for p in path.glob('*/metadata.yaml'))
            if not found:
                raise DataError(f'{path} holds no bags (no */metadata.yaml)')
            bags += found
        else:
            raise DataError(f'{path} is not a bag or a directory of bags')
    return bags


def read_trajectories(paths: list[str], namespace: str | None) -> tuple[list, list]:
    """Return (bag paths, one :class:`sysid.Trajectory` per bag)."""
    from realm_ros.io.bags import read_run, run_to_trajectory

    bags = find_bags(paths)
    return bags, [run_to_trajectory(read_run(b, namespace=namespace)) for b in bags]


def make_evaluators(device: str, threads: int,
                    backend: str = 'mujoco') -> Callable[[float], sysid.BatchEvaluator]:
    """Return ``latency_s -> evaluator`` for the chosen twin and device (one model per
    latency, shared caches): the backend's ``Backend.sysid`` function (the MuJoCo twin's
    rollouts on the CPU or MJX; kit-less PhysX, the arm cloned per candidate, CPU only)."""
    twin = backends.get(backend)
    if not twin.sysid:
        raise ConfigError(f'--backend {backend} has no sysid evaluator; choose one of '
                          f'{list(backends.FITTABLE)}')
    if device == 'gpu' and not twin.gpu_engines:
        raise ConfigError(f'--backend {backend} runs on the CPU only; drop --device gpu')
    target = twin.sysid
    module, function = target.split(':')
    evaluators = getattr(importlib.import_module(module), function)
    return cast(Callable[[float], sysid.BatchEvaluator], evaluators(device, threads))


class ProgressBar:
    """A bar per fit (:func:`console.bar`, kept with ``--quiet``), fed by ``sysid`` progress
    callbacks."""

    def __init__(self, total: int) -> None:
        self.total = total
        self._bar: Any = None
        self._label = ''

    def __call__(self, label: str, gen: sysid.Generation) -> None:
        if self._bar is None or label != self._label:
            self.close()
            self._bar = console.bar(self.total, f'sysid {label}', 'gen', leave=False)
            self._label = label
        self._bar.update(1)
        self._bar.set_postfix(loss=f'{gen.estimate_loss:.3g}', step=f'{gen.step:.3g}')

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def method_name(method: str | None, device: str, backend: str = 'mujoco',
                engine: str = 'warp') -> str:
    """Return the ``sysid.METHODS`` entry of ``--method``: default ``lm`` on the MuJoCo twin
    (CPU, or a GPU's MuJoCo Warp), ``cmaes`` on MJX (its fit is CMA-ES) and for PhysX (whose
    evaluator has no least-squares solver); ``cma`` is ``cmaes``."""
    if method is None:
        mjx = device == 'gpu' and engine == 'mjx'
        return 'cmaes' if mjx else backends.get(backend).sysid_method
    return 'cmaes' if method == 'cma' else method


def fit_command(args: argparse.Namespace) -> int:
    """Fit, write PARAMS.yaml and the report."""
    out = pathlib.Path(args.out)
    bags, trajs = read_trajectories(args.bags, args.namespace)
    holdout = args.holdout if args.holdout >= 0 else (
        max(1, round(0.2 * len(trajs))) if len(trajs) >= 2 else 0)
    if holdout >= len(trajs):
        raise ConfigError(f'--holdout {holdout} leaves no trajectory to fit ({len(trajs)} bags)')
    train, held = trajs[:len(trajs) - holdout], trajs[len(trajs) - holdout:]
    window = int(round(args.window * robot.CONTROL_HZ))
    if args.latency is not None and not 0.0 <= args.latency <= 0.5:
        raise ConfigError(f'--latency must be in [0, 0.5] s, got {args.latency}')
    if not 0.0 < args.max_latency <= 0.5:
        raise ConfigError(f'--max-latency must be in (0, 0.5] s, got {args.max_latency}')
    engine = getattr(args, 'engine', 'mjx')
    on_device = args.device == 'gpu' and bool(backends.get(args.backend).gpu_engines)
    args.method = method_name(args.method, args.device, args.backend, engine)
    make_evaluator = None
    if not on_device:
        make_evaluator = make_evaluators(args.device, args.threads, args.backend)
    elif engine == 'mjx' and args.method != 'cmaes':
        raise ConfigError(f'--device gpu --engine mjx runs CMA-ES only; use --method cma, not '
                          f'{args.method}')
    elif engine == 'warp' and args.method != 'lm':
        raise ConfigError(f'--device gpu --engine warp runs least squares only; use --method '
                          f'lm (or --engine mjx for CMA-ES), not {args.method}')
    if args.generations is None:
        args.generations = 12 if args.method == 'lm' else 80
    console.set_quiet(args.quiet)
    console.line(f'fitting on {len(train)} trajectories ({sum(t.steps for t in train)} '
                 f'steps), {len(held)} held out; method {args.method}, device {args.device}')
    options = sysid.FitOptions(method=args.method, seed=args.seed, generations=args.generations,
                               popsize=args.popsize, minibatch=args.minibatch, window=window,
                               lm_windows=args.lm_windows,
                               lm_interval_target=args.lm_interval_target)
    fixed = args.no_latency or args.latency is not None
    request = sysid.FitRequest(
        train, options, sysid.ProfileOptions(profile=args.profile, max_latency_s=args.max_latency),
        make_evaluator=make_evaluator,
        latencies=[0.0 if args.no_latency else float(args.latency)] if fixed else None,
        progress=None)
    # --device gpu: Warp's lockstep least squares or the MJX fit on the MuJoCo twin; a GPU
    # evaluator of another backend, every latency at once (a larger batch costs little); else
    # the --profile walk on the CPU.
    name = (('warp' if engine == 'warp' else 'device') if on_device
            else 'parallel' if args.device == 'gpu' else args.profile)
    strategy = sysid.fit_strategy(name)
    bar = ProgressBar(strategy.bar_total(request))
    request = dataclasses.replace(request, progress=bar)
    t0 = time.perf_counter()
    try:
        ident = sysid.profiled_fit(request, name)
        bar.close()  # clear the last fit's bar before the table lines (it was left drawn)
        for line in ident.notes:
            console.line(line)
        result, latency, searches = ident.fit, ident.latency_s, ident.searches
        if fixed:
            source = '--no-latency' if args.no_latency else 'given'
        else:
            unit = 'LM iterations' if args.method == 'lm' else 'generations'
            source = ident.source or (f'estimated ({ident.fits} fits, {strategy.kind}, '
                                      f'{ident.generations} {unit})')
        for latency_k, value in ident.profile.items():
            console.line(f'fit at latency {1e3 * latency_k:.2f} ms: loss {1e6 * value:.3g} '
                         'mrad^2 per step')
        for k, search in enumerate(searches):
            console.line(f'latency search {k + 1} ({search.seconds:.1f} s): best '
                         f'{1e3 * search.latency_s:.2f} ms; loss per step by candidate, ms: '
                         'mrad^2: ' + ', '.join(f'{1e3 * c:.1f}: {1e6 * v:.3g}'
                                                for c, v in zip(search.candidates_s,
                                                                search.losses)))
    finally:
        bar.close()
    fit_s = time.perf_counter() - t0
    console.result(f'actuation latency {1e3 * latency:.2f} ms ({source})')
    # The parameters first: the report below replays every bag whole and draws its figures
    # (about as long again as a fit at a given latency, measured), and a user waits for these.
    write_params(out, result.params, latency, source, bags[:len(train)], args,
                 result.intervals)
    # The report's rollouts run on the CPU whatever the fit's device (a handful of rollouts).
    cpu = make_evaluators('cpu', args.threads, args.backend)
    default = DynamicsParams()
    sets = {'train': train, 'holdout': held} if held else {'train': train}
    rmse: dict[str, dict[str, list[float]]] = {}
    sims: dict[str, list[np.ndarray]] = {}
    for label, group in sets.items():
        # "before" is the twin as it ran before sysid: default parameters, no latency.
        sim = [np.concatenate([b, a]) for b, a in zip(
            cpu(0.0).simulate([default], group), cpu(latency).simulate([result.params], group))]
        sims[label] = sim
        rmse[label] = {'before': sysid.joint_rmse(sim, group, 0).tolist(),
                       'after': sysid.joint_rmse(sim, group, 1).tolist()}
    report = out.parent / f'{out.stem}_report'
    hidden = DigitalRealDynamics.from_yaml(args.truth) if args.truth else None
    truth = hidden.joint_params() if hidden else None
    label = 'holdout' if held else 'train'
    residual = sysid.analyse_residual(
        sims[label], sets[label], seed=args.seed,
        noise_std=hidden.joint_noise_std if hidden is not None else None)
    write_report(report, result, rmse, sets, sims, fit_s, truth, latency, searches, residual)
    print_table(rmse, result, fit_s, truth)
    print_residual(residual, label)
    if hidden is not None:
        jitter = (f' + uniform [0, {1e3 * hidden.latency_jitter_s:.2f}] ms jitter'
                  if hidden.latency_jitter_s else '')
        print(f'latency: estimated {1e3 * latency:.2f} ms, true {1e3 * hidden.latency_s:.2f} ms'
              f'{jitter} (the twin replays whole physics steps: '
              f'{1e3 / robot.PHYSICS_HZ:.2f} ms each)')
        if hidden.structural:
            print('the true arm has structure the twin cannot express ('
                  + ', '.join(hidden.structural_effects()) + '): no parameter of the twin is '
                  'its "true" value, so the errors above compare like with unlike')
    print(f'wrote {out} and {report}/')
    return 0


def eval_command(args: argparse.Namespace) -> int:
    """Print the per-joint RMSE (mrad) of the twin with ``--params`` replaying the bags."""
    from realm_ros.backends.mujoco.rollout import TwinRollout

    _, trajs = read_trajectories(args.bags, args.namespace)
    params = DynamicsParams.from_yaml(args.params) if args.params else DynamicsParams()
    latency = args.latency
    if latency is None:
        latency = sim_params_latency(args.params) if args.params else 0.0
    sims = TwinRollout(latency_s=latency).simulate([params], trajs)
    rmse = sysid.joint_rmse(sims, trajs) * 1e3
    print(f'{len(trajs)} trajectories, params {args.params or "twin defaults"}, latency '
          f'{latency:.6g} s')
    print('joint RMSE, mrad: ' + ' '.join(f'{v:.3f}' for v in rmse) + f'  mean {rmse.mean():.3f}')
    return 0
