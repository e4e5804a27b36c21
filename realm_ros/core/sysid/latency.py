"""Actuation latency: a whole-physics-step search, and the latency profile of fits.

A delay and dry friction both make the arm lag, so they trade off, and a whole-step search
(:func:`estimate_latency`) is only as good as the friction/armature it runs at: at the twin's
defaults (no friction) it errs long, at a latency-free fit (which explains the lag with extra
friction) it errs short (measured: 20.8 ms and 0 or 8.3 ms for a true 8 ms). Alternating search
and fit stalls in that trade-off. So :func:`identify` profiles the loss over the latency with
fits: the best (latency, fit) pair by the loss of each fit at its own latency on one fixed set
of windows.

Two ways to build that profile, same rule, same answer within tolerance
(``test/unit/test_sysid.py`` and ``bench/bench_sysid.py`` compare them):

* ``profile='full'`` (the simple path): a full fit from scratch at every latency visited.
* ``profile='fast'`` (default): a short scout fit without latency only to place the search;
  a fit at the searched latency, warm-started from the scout, and a search again at that fit
  (moving the fit while the search disagrees); every neighbour that the walk visits gets a
  short fit warm-started from the best parameters known at that latency (every fit so far
  scored there; adjacent latencies have nearby optima), scored by the same rule. The walk
  continues while the loss falls and both neighbours of the winner are always fitted, so the
  winner is a local minimum of the profile.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Sequence

import numpy as np

from realm_ros.core import robot
from realm_ros.core.config import DynamicsParams, check_minimums, check_step_size
from realm_ros.core.errors import ConfigError
from realm_ros.core.sysid.data import BatchEvaluator, Trajectory, loss, window_pool
from realm_ros.core.sysid.lsq import widest_interval
from realm_ros.core.sysid.optimise import FitOptions, FitResult, Generation, fit

MakeEvaluator = Callable[[float], BatchEvaluator]


def latency_candidates(physics_hz: float, max_latency_s: float) -> list[float]:
    """Return the distinct actuation latencies (s) a twin at ``physics_hz`` can replay.

    The twin (``backends/mujoco/actuation.py``) releases a target ``round(latency_s *
    physics_hz) - 1`` physics steps into its control period, so 0 and one physics step are the
    same twin; the candidates are 0 and ``k / physics_hz`` for k = 2 ..
    round(max_latency_s * physics_hz) + 1.
    """
    top = int(round(max_latency_s * physics_hz)) + 1
    return [0.0] + [k / physics_hz for k in range(2, max(top, 1) + 1)]


@dataclasses.dataclass
class LatencyEstimate:
    """Outcome of :func:`estimate_latency`: the best candidate and the loss of every one.

    ``losses`` are per window step (rad^2), in the order of ``candidates_s``.
    """

    latency_s: float
    candidates_s: list[float]
    losses: list[float]
    params: DynamicsParams
    seconds: float

    @property
    def delay_steps(self) -> int:
        """Index of the best candidate (0 = no delay)."""
        return self.candidates_s.index(self.latency_s)


def scoring_windows(trajectories: Sequence[Trajectory], window: int = 15,
                    max_windows: int = 64, seed: int = 0) -> list[Trajectory]:
    """Return the fixed windows every latency is scored on (at most ``max_windows``)."""
    pool = window_pool(trajectories, window)
    if len(pool) > max_windows:
        rng = np.random.default_rng(seed)
        pool = [pool[i] for i in sorted(rng.choice(len(pool), max_windows, replace=False))]
    return pool


def score(evaluator: BatchEvaluator, pool: Sequence[Trajectory],
          params: Sequence[DynamicsParams]) -> np.ndarray:
    """Return the loss per window step (rad^2) of each of ``params`` on ``pool``."""
    steps = sum(w.steps for w in pool)
    return loss(evaluator.simulate(list(params), pool), pool) / steps


def estimate_latency(
    make_evaluator: MakeEvaluator,
    trajectories: Sequence[Trajectory],
    params: DynamicsParams,
    physics_hz: float = robot.PHYSICS_HZ,
    max_latency_s: float = 0.05,
    window: int = 15,
    max_windows: int = 64,
    seed: int = 0,
) -> LatencyEstimate:
    """Estimate the command-to-motion delay: a 1-D search over whole physics steps.

    Every candidate of :func:`latency_candidates` is replayed with the same ``params`` on the
    same windows (:func:`scoring_windows`, drawn with ``seed``, each starting from its recorded
    state); the candidate with the smallest :func:`loss` wins. A whole-step grid, not CMA-ES:
    the twin can only delay by whole physics steps, so the loss is a step function of the
    latency.

    Args:
        make_evaluator: returns a :class:`BatchEvaluator` that replays a given latency, s.
    """
    t0 = time.perf_counter()
    pool = scoring_windows(trajectories, window, max_windows, seed)
    candidates = latency_candidates(physics_hz, max_latency_s)
    batched = getattr(make_evaluator(candidates[0]), 'simulate_groups', None)
    if batched is not None:  # a GPU evaluator: every candidate in one batch
        steps = sum(w.steps for w in pool)
        sims = batched([(lat, [params]) for lat in candidates], pool)
        losses = [float(loss(sim, pool)[0] / steps) for sim in sims]
    else:
        losses = [float(score(make_evaluator(lat), pool, [params])[0]) for lat in candidates]
    best = candidates[int(np.argmin(losses))]
    return LatencyEstimate(latency_s=best, candidates_s=candidates, losses=losses,
                           params=params, seconds=time.perf_counter() - t0)


@dataclasses.dataclass(frozen=True)
class ProfileOptions:
    """How :func:`identify` walks the latency profile.

    Attributes:
        profile: ``'fast'`` or ``'full'`` (see the module docstring).
        physics_hz: the twin's physics rate, Hz (latencies are whole physics steps).
        max_latency_s: largest latency searched, s.
        max_fits: most fits at distinct latencies (the scout of the fast profile not counted).
        scout_generations: fast, CMA-ES/annealing: generations of the latency-free scout fit.
        main_generations: fast, CMA-ES/annealing: generations of the fit at the searched
            latency; ``main_sigma`` its initial step size, unit-cube units.
        refine_generations: fast, CMA-ES/annealing: generations of a warm-started fit at a
            neighbour; ``refine_sigma`` its initial step size, unit-cube units.
        lm_scout_iterations: fast, least squares: iterations of the scout (only to place the
            search; from the box's centre 4 iterations come within ~10 % of the optimum).
        lm_scout_windows: fast, least squares: windows of the scout's residual (at most
            ``FitOptions.lm_windows``; it only places the search, and an iteration costs 15
            candidates on its windows; 24 until issue 38b, the same search results).
        lm_refine_iterations: fast, least squares: iterations of a warm-started fit at a
            neighbour: one Gauss-Newton step from an adjacent latency's optimum (the problem is
            nearly linear there) scores it within a small fraction of the gap between
            latencies (7.7 or 8.0 against 1.8 mrad^2 per step on the demo's bags); the winner
            is polished to ``xtol`` anyway. 3 until issue 38b: the same latencies and
            parameters on the demo's bags (3 seeds), its noise-free twin and ``lab_franka``,
            for a fifth to a half less simulation. The fit at the searched latency runs to
            ``xtol`` (at most ``FitOptions.generations``).
        search_windows: windows of a latency search and of the profile's score (the fixed
            set of :func:`scoring_windows`).
    """

    profile: str = 'fast'
    physics_hz: float = robot.PHYSICS_HZ
    max_latency_s: float = 0.05
    max_fits: int = 4
    scout_generations: int = 45
    main_generations: int = 45
    main_sigma: float = 0.1
    refine_generations: int = 20
    refine_sigma: float = 0.1
    lm_scout_iterations: int = 4
    lm_scout_windows: int = 8
    lm_refine_iterations: int = 1
    search_windows: int = 64

    def __post_init__(self) -> None:
        if self.profile not in ('fast', 'full'):
            raise ConfigError(f'ProfileOptions.profile must be fast or full, got '
                              f'{self.profile!r}')
        if not 0.0 < self.max_latency_s <= 0.5:
            raise ConfigError(f'ProfileOptions.max_latency_s must be in (0, 0.5] s, got '
                              f'{self.max_latency_s}')
        check_minimums(self, {'max_fits': 2, 'scout_generations': 1, 'main_generations': 1,
                              'refine_generations': 1, 'lm_scout_iterations': 1,
                              'lm_refine_iterations': 1, 'search_windows': 1,
                              'lm_scout_windows': 1})
        check_step_size(self, 'main_sigma')
        check_step_size(self, 'refine_sigma')


#: The fits :func:`identify` runs: ``scout`` (latency-free, only to place the search),
#: ``main`` (at the searched latency), ``refine`` (a warm-started neighbour), ``full`` (a fit
#: from scratch, the full profile's), ``polish`` (the winner run on, :attr:`Fitter.polish`).
STAGES = ('scout', 'main', 'refine', 'full', 'polish')


class Fitter:
    """Fits at one latency for :func:`identify`; what each of :data:`STAGES` costs is the
    method's (:meth:`overrides`). The per-candidate strategy of the one latency profile:
    :class:`PopulationFitter` (CMA-ES, annealing) and :class:`LeastSquaresFitter`; the GPU fit
    (``backends/mujoco/mjx_fit.py``) fits every latency at once and is not one of these."""

    #: Whether :func:`identify` fits the winner again (stage ``polish``) when it came from a
    #: capped refinement or :meth:`unfinished` says so.
    polish = False

    def __init__(self, options: FitOptions, profile: ProfileOptions) -> None:
        self.options = options
        self.profile = profile

    def overrides(self, stage: str) -> dict:
        """Return the :class:`FitOptions` fields that ``stage`` changes."""
        raise NotImplementedError

    def unfinished(self, result: FitResult) -> bool:
        """Whether the winner ``result`` needs the ``polish`` stage though fully run."""
        return False

    def search_windows(self) -> int:
        """Windows of a latency search and of the profile's score."""
        return self.profile.search_windows

    def __call__(self, evaluator: BatchEvaluator, trajectories: Sequence[Trajectory],
                 initial: DynamicsParams | None, stage: str,
                 progress: Callable[[Generation], None] | None = None) -> FitResult:
        if stage not in STAGES:
            raise ConfigError(f'unknown fit stage {stage!r}; one of {", ".join(STAGES)}')
        return fit(evaluator, trajectories, self.options, initial=initial, progress=progress,
                   **self.overrides(stage))


class PopulationFitter(Fitter):
    """CMA-ES or annealing: stages are generation budgets and initial step sizes."""

    def overrides(self, stage: str) -> dict:
        p, g = self.profile, self.options.generations
        stages: dict[str, dict] = {
            'scout': {'generations': min(p.scout_generations, g)},
            'main': {'generations': min(p.main_generations, g), 'sigma0': p.main_sigma},
            'refine': {'generations': min(p.refine_generations, g), 'sigma0': p.refine_sigma},
            'full': {}, 'polish': {}}
        return stages[stage]


class LeastSquaresFitter(Fitter):
    """Levenberg-Marquardt: stages are iteration caps; the main fit runs to ``xtol``, and a
    winner that got only a capped refinement is polished by one (usually 1-2 iterations from
    there: a Jacobian costs 15 candidates on the residual's windows, not a generation count).
    Only the polish widens the residual to reach ``FitOptions.lm_interval_target`` (the
    profile compares latencies, for which the sample of windows is enough), so a winner whose
    intervals are wider than that is polished too."""

    polish = True

    def overrides(self, stage: str) -> dict:
        p, g = self.profile, self.options.generations
        narrow = {'lm_interval_target': 0.0}
        lm = self.options.lm_windows
        scout = min(p.lm_scout_windows, lm) if lm > 0 else p.lm_scout_windows
        return {'scout': {'generations': min(p.lm_scout_iterations, g), 'lm_windows': scout,
                          **narrow},
                'main': narrow, 'refine': {'generations': min(p.lm_refine_iterations, g),
                                           **narrow},
                'full': narrow, 'polish': {}}[stage]

    def unfinished(self, result: FitResult) -> bool:
        target = self.options.lm_interval_target
        return 0.0 < target < widest_interval(result.intervals)

    def search_windows(self) -> int:
        """As many as the residual (``lm_windows``), at most ``search_windows``: the searches
        ran 13 latencies on 64 windows, 2.3 Jacobians' worth each, a fifth of a profile's
        time (at a converged fit the loss is sharp in the latency: 1.8 mrad^2 per step at the
        true 8.33 ms against 7.7 and 8.0 at its neighbours on 24 windows)."""
        lm = self.options.lm_windows
        return min(self.profile.search_windows, lm) if lm > 0 else self.profile.search_windows


#: The fitter of each :data:`optimise.METHODS` entry.
FITTERS: dict[str, type[Fitter]] = {'lm': LeastSquaresFitter, 'cmaes': PopulationFitter,
                                    'anneal': PopulationFitter}


@dataclasses.dataclass
class IdentifyResult:
    """Outcome of :func:`identify`.

    ``fit`` is the best fit, at ``latency_s``. ``profile`` maps every latency that got a fit
    (s) to that fit's loss per window step (rad^2) on one fixed set of windows; ``searches``
    holds the latency searches in the order they ran; ``fit_log`` one line per fit (latency s,
    generations or LM iterations, warm-started, seconds); ``seconds`` the whole identification.
    Every strategy of :mod:`.strategies` returns one.
    """

    fit: FitResult
    latency_s: float
    searches: list[LatencyEstimate]
    profile: dict[float, float]
    fit_log: list[tuple[float, int, bool, float]] = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    #: Where the latency came from, when the strategy says it itself ('' = from the profile).
    source: str = ''
    #: Lines the strategy reports about its run (the device fit's timing), printed by the CLI.
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def fits(self) -> int:
        return len(self.profile)

    @property
    def generations(self) -> int:
        """Generations (LM: iterations) run by all fits together (the scout included)."""
        return sum(row[1] for row in self.fit_log)


def identify(
    make_evaluator: MakeEvaluator,
    trajectories: Sequence[Trajectory],
    options: FitOptions | None = None,
    profile: ProfileOptions | None = None,
    progress: Callable[[str, Generation], None] | None = None,
    fitter: Fitter | None = None,
    **option_fields,
) -> IdentifyResult:
    """Estimate the actuation latency and fit friction and armature with it replayed.

    The profile rule (both ways): fit at the latency a search suggests (0 included), walk to
    longer latencies while the fitted loss keeps falling, then to shorter ones while it
    falls; at most ``profile.max_fits`` fits. Every fit is scored by the loss of its
    parameters at its own latency on the same windows (:func:`scoring_windows`), so the
    profile compares like with like; the best fit wins.

    Args:
        options: the fits' search (:class:`FitOptions`; ``option_fields`` override fields).
        profile: the walk (:class:`ProfileOptions`); default the fast profile.
        progress: called per generation with a label (which fit) and the generation.
        fitter: the per-latency fit (default: :data:`FITTERS` of ``options.method``).
    """
    t_start = time.perf_counter()
    options = dataclasses.replace(options or FitOptions(), **option_fields)
    profile = profile or ProfileOptions()
    fitter = fitter or FITTERS[options.method](options, profile)
    candidates = latency_candidates(profile.physics_hz, profile.max_latency_s)
    pool = scoring_windows(trajectories, max_windows=fitter.search_windows(), seed=options.seed)
    fits: dict[int, tuple[FitResult, float]] = {}
    searches: list[LatencyEstimate] = []
    log: list[tuple[float, int, bool, float]] = []
    refined: set[int] = set()  # latencies whose fit is a capped refinement

    def run(k: int, stage: str, initial: DynamicsParams | None = None,
            label: str = '') -> FitResult:
        t = time.perf_counter()
        report = None if progress is None else (lambda g, s=label: progress(s, g))
        result = fitter(make_evaluator(candidates[k]), trajectories, initial, stage, report)
        log.append((candidates[k], len(result.history), initial is not None,
                    time.perf_counter() - t))
        return result

    def search(params: DynamicsParams) -> LatencyEstimate:
        searches.append(estimate_latency(make_evaluator, trajectories, params,
                                         profile.physics_hz, profile.max_latency_s,
                                         max_windows=fitter.search_windows(),
                                         seed=options.seed))
        return searches[-1]

    def scored(k: int, result: FitResult) -> float:
        value = float(score(make_evaluator(candidates[k]), pool, [result.params])[0])
        fits[k] = (result, value)
        return value

    def best_index() -> int:
        return min(fits, key=lambda i: fits[i][1])

    if profile.profile == 'full':
        def visit(k: int) -> float:
            result = run(k, 'full', label=f'fit at {1e3 * candidates[k]:.1f} ms')
            est = search(result.params)
            fits[k] = (result, est.losses[k])
            return fits[k][1]
        visit(0)
        start = max(searches[0].delay_steps, 1)  # 0 is fitted: the walk starts above it
    else:
        scout = run(0, 'scout', label='scout at 0 ms')
        # The main fit goes where the search says, 0 included (before, at least one step:
        # a latency-free arm then got only a short refinement).
        start = search(scout.params).delay_steps
        warm = scout.params
        # Fit, search again at the fit; move while the search disagrees (a poorly converged
        # scout misplaces the first search; a converged fit places it within a step).
        while start not in fits and len(fits) < profile.max_fits:
            main = run(start, 'main', warm, f'fit at {1e3 * candidates[start]:.1f} ms')
            scored(start, main)
            warm = main.params
            start = search(main.params).delay_steps
        start = best_index()

        known = [scout.params]

        def visit(k: int) -> float:
            # Start from the best point known at this latency: every fit so far (and the
            # scout) scored here, on the fixed windows. The fit at an adjacent latency is
            # usually best; after a fit that slid along the friction/latency trade-off, an
            # earlier one is.
            starts = known + [f.params for f, _ in fits.values()]
            values = score(make_evaluator(candidates[k]), pool, starts)
            result = run(k, 'refine', starts[int(np.argmin(values))],
                         f'refine at {1e3 * candidates[k]:.1f} ms')
            refined.add(k)
            return scored(k, result)

    k = start + (1 if profile.profile == 'fast' else 0)
    while k < len(candidates) and len(fits) < profile.max_fits:
        previous = fits[best_index()][1]
        if visit(k) >= previous:
            break
        k += 1
    k = best_index() - 1
    while k >= 0 and k not in fits and len(fits) < profile.max_fits:
        previous = fits[best_index()][1]
        if visit(k) >= previous:
            break
        k -= 1
    best = best_index()
    if fitter.polish and (best in refined or fitter.unfinished(fits[best][0])):
        # The winner got only a capped refinement, or its intervals are wider than asked: run
        # it on from where it is. Its result replaces the winner whatever it scores on the
        # profile's windows: at one latency the fit's own residual decides (comparing two fits
        # at the noise floor on other windows picks by noise: a 3-iteration refinement was
        # written over its converged polish that way, friction 1.3 % off).
        scored(best, run(best, 'polish', fits[best][0].params,
                         f'polish at {1e3 * candidates[best]:.1f} ms'))
    return IdentifyResult(fit=fits[best][0], latency_s=candidates[best], searches=searches,
                          profile={candidates[i]: v for i, (_, v) in sorted(fits.items())},
                          fit_log=log, seconds=time.perf_counter() - t_start)
