"""Least squares at several latencies at once: one Levenberg-Marquardt per latency, stepped in
lockstep so that every iteration of all of them is one batched rollout call.

For an evaluator whose call costs about the same whatever the batch (a GPU: MuJoCo Warp,
``free_batch``), what costs is the number of sequential calls, not the rollouts in them.
:func:`identify` of :mod:`.latency` walks the latency profile one fit after another (a scout,
the fit at the searched latency, then its neighbours, then a polish: 12-19 LM iterations in 3-5
fits, each iteration at least one call). :func:`identify_batched` runs

1. LM at every latency candidate at once, from the box's centre, for a few iterations (one
   call per iteration for all of them: every trial point is evaluated with its 14
   forward-difference columns, so an accepted step's Jacobian is already there);
2. the best few latencies by that residual go on to ``xtol`` together;
3. the fits are scored on the profile's fixed windows (one call) and the best wins,

so the whole identification is about ten calls, the first few with 13 x 15 x windows worlds.
Each latency's LM is the same algorithm as :func:`.lsq.least_squares_fit` (damped Gauss-Newton
in the unit cube with ``x_scale='jac'`` column scaling, the trial point projected into the
bounds, the damping grown on a rejected step and shrunk on an accepted one); it is written
here, not handed to ``mujoco.minimize``, because that solver owns its loop and takes one
problem at a time.

The evaluator is anything with ``simulate_groups(groups, windows)`` (``groups``: (latency s,
candidate parameters) pairs; :meth:`WarpRollout.simulate_groups`); :func:`groups_of` adapts a
CPU ``make_evaluator`` so that the same fit runs (and is tested) on the CPU twin.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Protocol, Sequence

import numpy as np

from realm_ros.core.config import DynamicsParams
from realm_ros.core.sysid.data import Trajectory, loss
from realm_ros.core.sysid.latency import (
    IdentifyResult,
    LatencyEstimate,
    ProfileOptions,
    latency_candidates,
    scoring_windows,
)
from realm_ros.core.sysid.lsq import LeastSquaresOptions, relative_intervals, residual_windows
from realm_ros.core.sysid.optimise import FitOptions, FitResult
from realm_ros.core.sysid.space import ParamSpace

#: (latency s, (P, 14) candidates ``[friction_1..7 N m, armature_1..7 kg m^2]``, damping 0)
#: pairs: arrays, not :class:`DynamicsParams` (a round of 13 latencies x 3 dampings x 15
#: columns is ~600 candidates; building and validating that many objects took longer than
#: the GPU's rollouts).
Groups = Sequence[tuple[float, np.ndarray]]


class SimulateGroups(Protocol):
    """Roll every (latency, candidates) group out on ``windows``: per group, per window, a
    (P, K, 7) array of joint positions after each control step
    (:meth:`WarpRollout.simulate_vectors`)."""

    def __call__(self, groups: Groups, windows: Sequence[Trajectory], /
                 ) -> list[list[np.ndarray]]: ...


def params_of(vectors: np.ndarray) -> list[DynamicsParams]:
    """Return the :class:`DynamicsParams` of (P, 14) candidate vectors (damping 0)."""
    return [DynamicsParams(friction=tuple(float(v) for v in row[:7]),
                           armature=tuple(float(v) for v in row[7:]), damping=(0.0,) * 7)
            for row in np.atleast_2d(vectors)]


def groups_of(make_evaluator: Callable[[float], object]) -> SimulateGroups:
    """Return a :class:`SimulateGroups` over a CPU ``make_evaluator(latency_s)`` (one
    ``simulate`` per group; a GPU evaluator's ``simulate_vectors`` batches them)."""

    def simulate_groups(groups: Groups,
                        windows: Sequence[Trajectory]) -> list[list[np.ndarray]]:
        return [make_evaluator(lat).simulate(params_of(v), windows)  # type: ignore[attr-defined]
                for lat, v in groups]

    return simulate_groups


def _physical(space: ParamSpace, u: np.ndarray) -> np.ndarray:
    """(P, 14) parameter values at unit-cube points ``u`` (P, 14) (:meth:`ParamSpace.from_unit`,
    vectorised)."""
    u = np.clip(np.asarray(u, dtype=float), 0.0, 1.0)
    return space.low * (space.high / space.low) ** u


@dataclasses.dataclass
class _Problem:
    """One latency's LM state (unit-cube coordinates)."""

    key: int
    x: np.ndarray
    r: np.ndarray | None = None
    jac: np.ndarray | None = None
    mu: float = 0.0
    scale: np.ndarray | None = None
    iterations: int = 0
    done: str = ''
    history: list[tuple[int, int, float, float, float, float]] = dataclasses.field(
        default_factory=list)

    @property
    def cost(self) -> float:
        return float(self.r @ self.r) if self.r is not None else float('inf')

    def predicted(self) -> float:
        """The cost the linearised problem at ``x`` reaches (Gauss-Newton to its minimum,
        bounds ignored): how low this latency's fit would go, before it gets there."""
        if self.r is None or self.jac is None:
            return float('inf')
        step = np.linalg.lstsq(self.jac, self.r, rcond=None)[0]
        rest = self.r - self.jac @ step
        return float(rest @ rest)


class BatchedLeastSquares:
    """Levenberg-Marquardt for several latencies in lockstep on one fixed set of windows."""

    def __init__(self, simulate_groups: SimulateGroups, windows: Sequence[Trajectory],
                 latencies: Sequence[float], options: LeastSquaresOptions,
                 space: ParamSpace = ParamSpace(), spread: int = 1) -> None:
        """``spread``: dampings tried per problem and round (1: classic LM, one trial; on a
        free batch 3 costs no more time and wastes no round on a rejected step)."""
        self.spread = max(1, spread)
        self.simulate_groups = simulate_groups
        self.windows = list(windows)
        self.latencies = list(latencies)
        self.options = options
        self.space = space
        self.measured = np.concatenate([w.measured.ravel() for w in self.windows])
        self.steps = sum(w.steps for w in self.windows)
        self.calls = 0
        self.evaluations = 0
        self.t_start = time.perf_counter()

    def _steps_at(self, x: np.ndarray) -> np.ndarray:
        h = self.options.fd_step
        return np.where(x + h > 1.0, -h, h)

    def _evaluate(self, points: list[tuple[int, np.ndarray]]) -> list[tuple[np.ndarray,
                                                                            np.ndarray]]:
        """Return per (problem key, x) the residual at x and the Jacobian there (forward
        differences), all in one call."""
        steps = [self._steps_at(x) for _, x in points]
        groups = [(self.latencies[key], _physical(self.space, np.vstack([x, x + np.diag(h)])))
                  for (key, x), h in zip(points, steps)]
        sims = self.simulate_groups(groups, self.windows)
        self.calls += 1
        out = []
        for (_, x), h, sim in zip(points, steps, sims):
            n_p = len(x) + 1
            self.evaluations += n_p
            flat = np.concatenate([s.reshape(n_p, -1) for s in sim], axis=1) - self.measured
            r = flat[0].astype(np.float64)
            jac = ((flat[1:] - flat[:1]) / h[:, None]).T.astype(np.float64)
            out.append((r, jac))
        return out

    def _trial(self, p: _Problem, mu: float) -> np.ndarray:
        """Return the trial point of ``p`` at damping ``mu``, projected into [0, 1]."""
        assert p.jac is not None and p.r is not None and p.scale is not None
        d = np.where(p.scale > 0, p.scale, 1.0)
        h = p.jac.T @ p.jac + mu * np.diag(d ** 2)
        g = p.jac.T @ p.r
        try:
            step = np.linalg.solve(h, -g)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(h, -g, rcond=None)[0]
        return np.clip(p.x + step, 0.0, 1.0)

    def _dampings(self, p: _Problem) -> list[float]:
        """The dampings tried this round: ``spread`` of them spaced by ``mu_factor ** 2``
        around the current one (from Gauss-Newton, 0: 0, ``mu_min``, upwards); below
        ``mu_min`` is Gauss-Newton."""
        o = self.options
        factor = o.mu_factor ** 2
        if p.mu <= 0.0:
            return [0.0] + [o.mu_min * factor ** i for i in range(self.spread - 1)]
        first = -((self.spread - 1) // 2)
        mus = [p.mu * factor ** (first + i) for i in range(self.spread)]
        return sorted({mu if mu >= o.mu_min else 0.0 for mu in mus})

    def _record(self, p: _Problem) -> None:
        value = p.cost / self.steps
        p.history.append((len(p.history), self.evaluations, value, value, value,
                          time.perf_counter() - self.t_start))

    def start(self, starts: dict[int, np.ndarray]) -> list[_Problem]:
        """Return problems at ``starts`` (latency index -> unit-cube x) with their residuals
        and Jacobians (one call)."""
        problems = [_Problem(key=k, x=np.clip(np.asarray(x, float), 0.0, 1.0))
                    for k, x in starts.items()]
        for p, (r, jac) in zip(problems, self._evaluate([(p.key, p.x) for p in problems])):
            p.r, p.jac = r, jac
            self._record(p)
        return problems

    def run(self, problems: list[_Problem], max_iter: int) -> None:
        """Iterate every problem until its step is below ``xtol`` or it has run ``max_iter``
        iterations (one call per round for all that are still running; each problem tries
        :meth:`_dampings` in that call and keeps the best trial that lowers its cost)."""
        o = self.options
        budget = {p.key: p.iterations + max_iter for p in problems}
        while True:
            active = [p for p in problems if not p.done]
            for p in active:
                if p.iterations >= budget[p.key]:
                    p.done = f'{p.iterations} iterations'
            active = [p for p in active if not p.done]
            if not active:
                return
            trials: list[tuple[_Problem, float, np.ndarray]] = []
            for p in active:
                assert p.jac is not None
                norms = np.linalg.norm(p.jac, axis=0)
                p.scale = norms if p.scale is None else np.maximum(p.scale, norms)
                trials += [(p, mu, self._trial(p, mu)) for mu in self._dampings(p)]
            results = self._evaluate([(p.key, t) for p, _, t in trials])
            for p in active:
                mine = [(mu, t, r, jac) for (q, mu, t), (r, jac) in zip(trials, results)
                        if q is p]
                p.iterations += 1
                tol = o.xtol * (o.xtol + float(np.linalg.norm(p.x)))
                mu, t, r, jac = min(mine, key=lambda m: float(m[2] @ m[2]))
                dx = float(np.linalg.norm(t - p.x))
                if float(r @ r) < p.cost:
                    p.x, p.r, p.jac = t, r, jac
                    p.mu = mu / o.mu_factor if mu > o.mu_min else 0.0
                    self._record(p)
                    if dx < tol:
                        p.done = 'norm(dx) < tol'
                else:
                    p.mu = max(max(m[0] for m in mine) * o.mu_factor, o.mu_min)
                    if max(float(np.linalg.norm(m[1] - p.x)) for m in mine) < tol:
                        p.done = 'no decrease at the smallest step'


def identify_batched(
    simulate_groups: SimulateGroups,
    trajectories: Sequence[Trajectory],
    options: FitOptions | None = None,
    profile: ProfileOptions | None = None,
    space: ParamSpace = ParamSpace(),
    prune_after: int = 3,
    keep: int = 3,
    spread: int = 3,
    prune_windows: int = 8,
    latencies: Sequence[float] | None = None,
) -> IdentifyResult:
    """Estimate the latency and fit friction and armature, every stage batched (see the module
    docstring). ``options``: ``window``, ``lm_windows``, ``lm`` (tolerances; its ``max_iter``
    replaced by ``generations``: the most iterations of one latency's LM) and ``seed``;
    ``profile``: ``max_latency_s``, ``physics_hz`` and ``search_windows``. ``prune_after``
    iterations at every latency on ``prune_windows`` of the windows (a GPU's call costs about
    in proportion to its worlds past a few thousand), then the ``keep`` best go on, on all
    ``lm_windows``; ``spread`` dampings per round (:class:`BatchedLeastSquares`).
    ``latencies``: fit at these only, s (one: a plain fit at a known latency); None: every
    candidate of :func:`~.latency.latency_candidates`."""
    t_start = time.perf_counter()
    options = options or FitOptions()
    profile = profile or ProfileOptions()
    candidates = (list(latencies) if latencies else
                  latency_candidates(profile.physics_hz, profile.max_latency_s))
    keep = min(keep, len(candidates))
    windows = residual_windows(trajectories, options.window, options.lm_windows)
    lm = dataclasses.replace(options.lm, max_iter=options.generations)
    solver = BatchedLeastSquares(simulate_groups, windows, candidates, lm, space, spread)

    # The profile's score: the same fixed windows as identify's.
    pool = scoring_windows(trajectories, max_windows=profile.search_windows, seed=options.seed)
    pool_steps = sum(w.steps for w in pool)

    def scores(params: Sequence[tuple[int, np.ndarray]]) -> list[float]:
        sims = simulate_groups([(candidates[k], _physical(space, u[None])) for k, u in params],
                               pool)
        solver.calls += 1
        return [float(loss(sim, pool)[0] / pool_steps) for sim in sims]

    # Every latency from the box's centre, in lockstep, for a few iterations on a few
    # windows; then only the best few on all the windows, to xtol.
    t = time.perf_counter()
    few = residual_windows(trajectories, options.window, min(prune_windows, options.lm_windows)
                           if prune_windows > 0 else options.lm_windows)
    scout = BatchedLeastSquares(simulate_groups, few, candidates, lm, space, spread)
    centre = np.full(len(space.low), 0.5)
    everyone = scout.start({k: centre for k in range(len(candidates))})
    scout.run(everyone, min(prune_after, options.generations))
    solver.calls += scout.calls
    solver.evaluations += scout.evaluations
    costs = [p.cost / scout.steps for p in everyone]
    searches = [LatencyEstimate(latency_s=candidates[int(np.argmin(costs))],
                                candidates_s=candidates, losses=costs,
                                params=space.from_unit(everyone[int(np.argmin(costs))].x),
                                seconds=time.perf_counter() - t)]
    # Ranked by where each linearised fit would end (the costs themselves, a few iterations
    # from the centre, rank the latencies poorly).
    ranked = sorted(everyone, key=lambda p: p.predicted())[:max(keep, 1)]
    log = [(candidates[p.key], p.iterations, False, time.perf_counter() - t) for p in everyone]
    t = time.perf_counter()
    kept = solver.start({p.key: p.x for p in ranked})
    rest = max(options.generations - min(prune_after, options.generations), 1)
    solver.run(kept, rest)
    for p in kept:
        log.append((candidates[p.key], p.iterations, True, time.perf_counter() - t))
    fitted = {p.key: p for p in kept}
    # Walk on while the best is at the edge of what was fitted (warm from it), within max_fits.
    while len(fitted) < profile.max_fits + keep:
        best = min(fitted.values(), key=lambda p: p.cost)
        wanted = [k for k in (best.key - 1, best.key + 1)
                  if 0 <= k < len(candidates) and k not in fitted]
        if not wanted:
            break
        t = time.perf_counter()
        batch = solver.start({k: best.x for k in wanted})
        solver.run(batch, rest)
        for p in batch:
            fitted[p.key] = p
            log.append((candidates[p.key], p.iterations, True, time.perf_counter() - t))
        if min(p.cost for p in batch) >= best.cost:
            break

    values = scores([(k, p.x) for k, p in sorted(fitted.items())])
    profile_losses = {candidates[k]: v for k, v in zip(sorted(fitted), values)}
    # The winner by the profile's score (identify's rule), not by the residual it was fit on.
    best_key = sorted(fitted)[int(np.argmin(values))]
    best_fit = fitted[best_key]
    total = time.perf_counter() - t_start
    assert best_fit.r is not None
    intervals = relative_intervals(best_fit.jac, best_fit.r, space)
    fit = FitResult(params=space.from_unit(best_fit.x), history=best_fit.history,
                    stop_reason=f'LM (batched): {best_fit.done}',
                    timing={'total': total, 'calls': float(solver.calls),
                            'evaluations': float(solver.evaluations)},
                    intervals=tuple(float(v) for v in intervals))
    return IdentifyResult(fit=fit, latency_s=candidates[best_key], searches=searches,
                          profile=profile_losses, fit_log=log, seconds=total)
