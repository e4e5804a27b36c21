"""The fit: least squares (Levenberg-Marquardt, :mod:`.lsq`, the default of ``realm-ros sysid
fit``), CMA-ES (package ``cma``, REALM's choice) or simulated annealing (SIMPLER's baseline).

``method='lm'`` hands the whole fit to :func:`.lsq.least_squares_fit` (a fixed residual, no
generations). The two population optimisers have the same two verbs, ``ask`` (the
candidates of one generation, unit-cube coordinates) and ``tell`` (their losses), and one
loop, :func:`fit`, drives either: per
generation it draws one random minibatch of windows, simulates every candidate plus the current
estimate on it in one :meth:`BatchEvaluator.simulate` call, and tells the optimiser the losses.
Progress goes to an optional callback (the CLI draws a bar with it); nothing here prints.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Callable, Sequence

import numpy as np

from realm_ros.core.config import DynamicsParams, check_minimums, check_step_size
from realm_ros.core.errors import ConfigError
from realm_ros.core.sysid.data import BatchEvaluator, Trajectory, loss, window_pool
from realm_ros.core.sysid.lsq import (
    LeastSquaresFit,
    LeastSquaresOptions,
    least_squares_fit,
    residual_windows,
    widest_interval,
    windows_for_interval,
)
from realm_ros.core.sysid.space import ParamSpace

METHODS = ('lm', 'cmaes', 'anneal')


@dataclasses.dataclass(frozen=True)
class FitOptions:
    """How :func:`fit` searches.

    Attributes:
        method: ``'lm'`` (least squares, :mod:`.lsq`), ``'cmaes'`` or ``'anneal'``
            (``popsize`` proposals per iteration around the current point). For ``'lm'``
            ``generations`` caps the LM iterations and ``popsize``, ``minibatch``, ``sigma0``,
            ``diagonal``, ``tolx``, ``plateau`` do not apply.
        seed: seeds the minibatches and the optimiser.
        generations: most generations.
        popsize: candidates per generation.
        minibatch: windows simulated per generation (all candidates share them).
        window: control steps per window (<= 0: whole trajectories).
        sigma0: initial step size, unit-cube units.
        diagonal: separable CMA-ES (``CMA_diagonal``): the parameters are nearly separable per
            joint and the diagonal model learns faster with few generations.
        tolx: stop when CMA-ES's step size falls below this (unit-cube units; 2e-3 is about
            1.6 % in parameter value).
        plateau: stop when the median loss of the estimate over the last ``plateau``
            generations is less than 1 % below the median of the ``plateau`` before (minibatch
            noise makes single values useless for this); 0 = off; checked from generation
            3 * ``plateau`` on.
        lm_windows: lm: windows of ``window`` steps in the fixed residual, spread evenly over
            the trajectories (0 = every window). Each LM iteration simulates 15 candidates on
            all of them, so this sets the fit's cost (see :mod:`.lsq`).
        lm_interval_target: lm: the widest 95 % interval (relative half-width, 0.005 =
            +- 0.5 %) the fit must reach. The ``lm_windows`` windows are a sample of the data,
            so on noisy data the estimate scatters by its interval (+- 0.5-1.5 % on 24 windows
            of the demo's 0.5 mrad data: a 1 % tolerance is then a coin toss per parameter);
            when wider, one Gauss-Newton step from the fit on as many windows as
            :func:`.lsq.windows_for_interval` says (up to every window) brings it there. On
            noise-free data the intervals are ~0 and nothing is added. 0 = off.
        lm_coarse_windows: lm, from the box's centre (no ``initial``): fit on this many
            windows first, then on the ``lm_windows`` from there (0 = off; the latency
            profile's warm-started fits skip it).
        lm: lm: the solver's tolerances (:class:`.lsq.LeastSquaresOptions`; its ``max_iter``
            is replaced by ``generations``).
    """

    method: str = 'cmaes'
    seed: int = 0
    generations: int = 60
    popsize: int = 12
    minibatch: int = 12
    window: int = 15
    sigma0: float = 0.2
    diagonal: bool = True
    tolx: float = 2e-3
    plateau: int = 10
    lm_windows: int = 24
    lm_interval_target: float = 0.005
    lm_coarse_windows: int = 8
    lm: LeastSquaresOptions = LeastSquaresOptions()

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ConfigError(f'unknown sysid method {self.method!r}; choose one of '
                              f'{", ".join(METHODS)}')
        check_minimums(self, {'popsize': 2, 'generations': 1, 'minibatch': 1, 'lm_windows': 0,
                              'lm_coarse_windows': 0})
        check_step_size(self)
        if not 0.0 <= self.lm_interval_target < 1.0:
            raise ConfigError(f'FitOptions.lm_interval_target must be in [0, 1) (relative '
                              f'half-width, 0.005 = 0.5 %), got {self.lm_interval_target}')


@dataclasses.dataclass(frozen=True)
class Generation:
    """One generation, as :func:`fit` reports it to its ``progress`` callback.

    Losses are per window and step (rad^2) on that generation's minibatch.
    """

    index: int
    evaluations: int
    best: float
    median: float
    estimate_loss: float
    elapsed_s: float
    step: float
    estimate: DynamicsParams


@dataclasses.dataclass
class FitResult:
    """Outcome of :func:`fit`.

    ``history`` has one row per generation: (generation, evaluations, best minibatch loss,
    median minibatch loss, loss of the current estimate on the minibatch, elapsed s). Losses
    are per window and step (rad^2), so minibatch sizes compare. An LM fit has one row per
    iteration, its three losses the same (the fixed residual's).

    ``intervals`` (LM only): per parameter ``[friction_1..7, armature_1..7]`` the 95 %
    confidence half-width relative to the value (0.01 = +- 1 %; :mod:`.lsq`: they collapse to
    ~0 on noise-free data and are optimistic, the residuals being correlated); None without.
    """

    params: DynamicsParams
    history: list[tuple[int, int, float, float, float, float]]
    stop_reason: str
    timing: dict[str, float]
    intervals: tuple[float, ...] | None = None


class CmaEs:
    """CMA-ES in the unit cube; its distribution mean is the estimate (it averages out the
    minibatch noise)."""

    def __init__(self, x0: np.ndarray, options: FitOptions) -> None:
        import cma  # here, not at module level: it takes seconds to import and only fit needs it
        # A private generator (the stream cma's 'seed' would give numpy's global one), so
        # several CMA-ES in one process (the parallel profile) sample independently.
        randn = np.random.RandomState(options.seed + 1).randn
        self._es = cma.CMAEvolutionStrategy(x0, options.sigma0, {
            'bounds': [0.0, 1.0], 'popsize': options.popsize, 'seed': np.nan, 'randn': randn,
            'verbose': -9, 'CMA_diagonal': options.diagonal, 'tolx': options.tolx,
            'tolfun': 0.0, 'tolflatfitness': 1000, 'maxiter': options.generations})

    def ask(self) -> list[np.ndarray]:
        return list(self._es.ask())

    def tell(self, points: list[np.ndarray], values: np.ndarray) -> None:
        self._es.tell(points, values.tolist())

    @property
    def estimate(self) -> np.ndarray:
        return np.asarray(self._es.mean)

    @property
    def step(self) -> float:
        return float(self._es.sigma)

    def stop(self) -> str | None:
        """Return why CMA-ES stops (its own criteria, not the generation count), or None."""
        stop = self._es.stop()
        if stop and 'maxiter' not in stop:
            return ', '.join(f'{k}={v}' for k, v in stop.items())
        return None


class Anneal:
    """Simulated annealing (SIMPLER's baseline): ``popsize`` Gaussian proposals around the
    current point, the best accepted by the Metropolis rule; temperature and step shrink
    geometrically over ``generations``."""

    def __init__(self, x0: np.ndarray, options: FitOptions, rng: np.random.Generator) -> None:
        self._options = options
        self._rng = rng
        self._current = x0.copy()
        self._temp0: float | None = None
        self._step = options.sigma0
        self._gen = 0

    def ask(self) -> list[np.ndarray]:
        step, n = self._step, self._options.popsize
        return [np.clip(self._current + self._rng.normal(0, step, self._current.shape), 0, 1)
                for _ in range(n)]

    def tell(self, points: list[np.ndarray], values: np.ndarray, current: float) -> None:
        """``values`` of ``points``; ``current``: the current point's loss, same minibatch."""
        last = max(self._options.generations - 1, 1)
        k = int(np.argmin(values))
        if self._temp0 is None:
            self._temp0 = max(float(np.std(values)), 1e-12)
        temp = self._temp0 * (0.02 ** (self._gen / last))
        delta = values[k] - current
        if delta < 0 or self._rng.random() < math.exp(-delta / temp):
            self._current = points[k]
        self._step = max(self._options.sigma0 * (0.1 ** (self._gen / last)), 1e-3)
        self._gen += 1

    @property
    def estimate(self) -> np.ndarray:
        return self._current

    @property
    def step(self) -> float:
        return self._step

    def stop(self) -> str | None:
        return None


def fit(
    evaluator: BatchEvaluator,
    trajectories: Sequence[Trajectory],
    options: FitOptions | None = None,
    *,
    space: ParamSpace = ParamSpace(),
    initial: DynamicsParams | None = None,
    progress: Callable[[Generation], None] | None = None,
    **option_fields,
) -> FitResult:
    """Minimise :func:`loss` over friction and armature.

    Each generation evaluates the whole population (and the current estimate) on the same
    random minibatch of ``options.minibatch`` windows, one simulator call per generation.
    Stops after ``options.generations``, when CMA-ES's own criteria say so (``tolx``), or on a
    plateau (see :class:`FitOptions`).

    Args:
        options: the search; ``option_fields`` (e.g. ``generations=20``) override its fields.
        initial: starting estimate (default: the centre of the log-scaled box, friction
            0.055 N m and armature 0.087 kg m^2; the twin's default friction 0 sits on the
            lower bound, a poor start for CMA-ES). A warm start from an earlier fit.
        progress: called after every generation.

    Raises:
        ConfigError: unknown method or bad sizes.
        DataError: no window fits in the trajectories.
    """
    options = dataclasses.replace(options or FitOptions(), **option_fields)
    if options.method == 'lm':
        return fit_least_squares(evaluator, trajectories, options, space=space,
                                 initial=initial, progress=progress)
    pool = window_pool(trajectories, options.window)
    steps_per = np.mean([w.steps for w in pool])
    rng = np.random.default_rng(options.seed)
    x0 = space.to_unit(initial) if initial is not None else np.full(14, 0.5)
    optimiser = (CmaEs(x0, options) if options.method == 'cmaes'
                 else Anneal(x0, options, rng))
    timing = {'total': 0.0, 'simulate': 0.0}
    history: list[tuple[int, int, float, float, float, float]] = []
    t_start = time.perf_counter()
    stop_reason = f'{options.generations} generations'
    for gen in range(options.generations):
        points = optimiser.ask()
        batch = ([pool[i] for i in rng.choice(len(pool), options.minibatch, replace=False)]
                 if options.minibatch < len(pool) else pool)
        t = time.perf_counter()
        candidates = [space.from_unit(x) for x in points + [optimiser.estimate]]
        sims = evaluator.simulate(candidates, batch)
        timing['simulate'] += time.perf_counter() - t
        values = loss(sims, batch) / (len(batch) * steps_per)
        if isinstance(optimiser, Anneal):
            optimiser.tell(points, values[:-1], float(values[-1]))
        else:
            optimiser.tell(points, values[:-1])
        row = (gen, (gen + 1) * options.popsize, float(values[:-1].min()),
               float(np.median(values[:-1])), float(values[-1]), time.perf_counter() - t_start)
        history.append(row)
        if progress is not None:
            progress(Generation(*row, step=optimiser.step,
                                estimate=space.from_unit(optimiser.estimate)))
        reason = optimiser.stop()
        if reason is None and isinstance(optimiser, CmaEs) and on_plateau(history,
                                                                          options.plateau):
            reason = f'plateau (< 1 % better over {options.plateau} generations)'
        if reason is not None:
            stop_reason = reason
            break
    timing['total'] = time.perf_counter() - t_start
    timing['bookkeeping'] = timing['total'] - timing['simulate']
    for key, value in getattr(evaluator, 'timing', {}).items():
        timing[f'simulate.{key}'] = value
    return FitResult(params=space.from_unit(optimiser.estimate), history=history,
                     stop_reason=stop_reason, timing=timing)


def fit_least_squares(
    evaluator: BatchEvaluator,
    trajectories: Sequence[Trajectory],
    options: FitOptions,
    *,
    space: ParamSpace = ParamSpace(),
    initial: DynamicsParams | None = None,
    progress: Callable[[Generation], None] | None = None,
) -> FitResult:
    """:func:`fit` with ``method='lm'``: :func:`.lsq.least_squares_fit` on the fixed windows
    :func:`.lsq.residual_windows` (``options.window`` steps, ``options.lm_windows`` of them),
    at most ``options.generations`` iterations, from ``initial`` (default: the box's centre);
    then, while its widest 95 % interval is above ``options.lm_interval_target``, one
    Gauss-Newton step on the windows :func:`.lsq.windows_for_interval` asks for."""
    pool = residual_windows(trajectories, options.window, options.lm_windows)
    x0 = space.to_unit(initial) if initial is not None else np.full(14, 0.5)
    t_start = time.perf_counter()
    before = dict(getattr(evaluator, 'timing', {}))
    offset = {'iterations': 0, 'evaluations': 0}

    def report(i: int, evaluations: int, value: float, elapsed: float, x: np.ndarray) -> None:
        if progress is not None:
            progress(Generation(i + offset['iterations'], evaluations + offset['evaluations'],
                                value, value, value, elapsed, step=0.0,
                                estimate=space.from_unit(x)))

    lm = dataclasses.replace(options.lm, max_iter=options.generations)
    history: list[tuple[int, int, float, float, float, float]] = []

    def merge(found: LeastSquaresFit) -> None:
        history.extend((row[0] + offset['iterations'], row[1] + offset['evaluations'])
                       + row[2:] for row in found.history)
        offset.update(iterations=len(history),
                      evaluations=offset['evaluations'] + found.evaluations)

    reason = ''
    coarse = options.lm_coarse_windows
    if initial is None and 0 < coarse < len(pool):
        # From the box's centre the first iterations only walk towards the optimum: they
        # take a third of the windows (the noise-free demo: 7 iterations on 24 windows
        # became 6 on 8 and 2 on 24).
        found = least_squares_fit(evaluator, residual_windows(trajectories, options.window,
                                                              coarse), x0, lm, space, report)
        merge(found)
        x0, reason = found.x, f'{found.stop_reason} on {coarse} windows, then '
    found = least_squares_fit(evaluator, pool, x0, lm, space, report)
    merge(found)
    reason += found.stop_reason
    available = len(window_pool(trajectories, options.window))
    wanted = windows_for_interval(found.intervals(space), len(pool), options.lm_interval_target,
                                  available)
    if wanted > len(pool):
        # The data resolve the parameters better than the sample of windows did: one
        # Gauss-Newton step on more of them (the problem is linear at this scale: a step of
        # about the interval from a converged fit).
        widest = 100 * widest_interval(found.intervals(space))
        pool = residual_windows(trajectories, options.window, wanted)
        found = least_squares_fit(evaluator, pool, found.x,
                                  dataclasses.replace(options.lm, max_iter=1), space, report)
        merge(found)
        reason += (f'; then one Gauss-Newton step on {len(pool)} windows (widest 95 % interval '
                   f'{widest:.2g} % on {options.lm_windows}, target '
                   f'{100 * options.lm_interval_target:.2g} %)')
    total = time.perf_counter() - t_start
    after = getattr(evaluator, 'timing', {})
    simulate = sum(after.get(k, 0.0) - before.get(k, 0.0) for k in after)
    timing = {'total': total, 'simulate': simulate, 'bookkeeping': total - simulate}
    return FitResult(params=space.from_unit(found.x), history=history,
                     stop_reason=reason, timing=timing,
                     intervals=tuple(float(v) for v in found.intervals(space)))


def on_plateau(history: Sequence[tuple], n: int) -> bool:
    """Return whether the estimate's loss stopped improving (see :class:`FitOptions`)."""
    if n <= 0 or len(history) < 3 * n:
        return False
    recent = np.median([row[4] for row in history[-n:]])
    before = np.median([row[4] for row in history[-2 * n:-n]])
    return bool(recent > 0.99 * before)
