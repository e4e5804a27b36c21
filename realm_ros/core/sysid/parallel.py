"""The latency profile in parallel: one CMA-ES per latency, all in one simulator call per
generation (for a GPU, where a larger batch costs little more time than a small one).

:func:`identify_parallel` runs an independent CMA-ES (same options, same start) at every
candidate latency; each generation draws one minibatch of windows and asks the evaluator for
every (latency, candidate, window) rollout at once (:func:`simulate_groups`). At the end every
latency's estimate is scored on the fixed windows (:func:`latency.scoring_windows`) at its own
latency, and the best wins: the profile of the module docstring of ``latency.py``, with a fit at
every latency instead of a walk. Per latency, the generations are exactly those of
:func:`optimise.fit` with the same options (same minibatches, same seeds), which
``test/unit/test_sysid.py`` checks on the CPU.
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

import numpy as np

from realm_ros.core.config import DynamicsParams
from realm_ros.core.errors import DataError
from realm_ros.core.sysid.data import Trajectory, loss, window_pool
from realm_ros.core.sysid.latency import (
    IdentifyResult,
    MakeEvaluator,
    ProfileOptions,
    latency_candidates,
    scoring_windows,
)
from realm_ros.core.sysid.optimise import CmaEs, FitOptions, FitResult, Generation, on_plateau
from realm_ros.core.sysid.space import ParamSpace

Groups = Sequence[tuple[float, Sequence[DynamicsParams]]]


def simulate_groups(make_evaluator: MakeEvaluator, groups: Groups,
                    trajectories: Sequence[Trajectory]) -> list[list[np.ndarray]]:
    """Return per group (latency s, candidates) the evaluator's per-window (P, K, 7) arrays.

    An evaluator with a ``simulate_groups`` method (the MJX one) does all groups in one batch;
    otherwise one :meth:`BatchEvaluator.simulate` call per group.
    """
    first = make_evaluator(groups[0][0])
    batched = getattr(first, 'simulate_groups', None)
    if batched is not None:
        return batched(groups, trajectories)
    return [make_evaluator(lat).simulate(list(params), trajectories) for lat, params in groups]


def identify_parallel(
    make_evaluator: MakeEvaluator,
    trajectories: Sequence[Trajectory],
    options: FitOptions,
    profile: ProfileOptions | None = None,
    latencies: Sequence[float] | None = None,
    space: ParamSpace = ParamSpace(),
    progress: Callable[[str, Generation], None] | None = None,
) -> IdentifyResult:
    """Fit at every latency at once (CMA-ES only) and return the best by the profile rule.

    Args:
        latencies: the latencies to fit, s (default: every :func:`latency_candidates`).
    """
    t_start = time.perf_counter()
    profile = profile or ProfileOptions()
    if options.method != 'cmaes':
        raise DataError('the parallel latency profile runs CMA-ES only')
    lats = list(latencies) if latencies is not None else latency_candidates(
        profile.physics_hz, profile.max_latency_s)
    pool = window_pool(trajectories, options.window)
    steps_per = np.mean([w.steps for w in pool])
    rng = np.random.default_rng(options.seed)
    es = [CmaEs(np.full(14, 0.5), options) for _ in lats]
    histories: list[list] = [[] for _ in lats]
    reasons: list[str | None] = [None] * len(lats)
    simulate_s = 0.0
    for gen in range(options.generations):
        active = [i for i, r in enumerate(reasons) if r is None]
        if not active:
            break
        points = {i: es[i].ask() for i in active}
        batch = ([pool[j] for j in rng.choice(len(pool), options.minibatch, replace=False)]
                 if options.minibatch < len(pool) else pool)
        # Latencies that stopped stay in the batch (their estimate repeated, results unused):
        # a batch of constant shape reuses one compiled function on a GPU.
        groups = [(lats[i], [space.from_unit(x) for x in points[i] + [es[i].estimate]])
                  if i in points else (lats[i], [space.from_unit(es[i].estimate)]
                                       * (options.popsize + 1))
                  for i in range(len(lats))]
        t = time.perf_counter()
        sims = simulate_groups(make_evaluator, groups, batch)
        simulate_s += time.perf_counter() - t
        for i in active:
            sim = sims[i]
            values = loss(sim, batch) / (len(batch) * steps_per)
            es[i].tell(points[i], values[:-1])
            row = (gen, (gen + 1) * options.popsize, float(values[:-1].min()),
                   float(np.median(values[:-1])), float(values[-1]),
                   time.perf_counter() - t_start)
            histories[i].append(row)
            if progress is not None:
                progress(f'{1e3 * lats[i]:.1f} ms', Generation(
                    *row, step=es[i].step, estimate=space.from_unit(es[i].estimate)))
            reasons[i] = es[i].stop()
            if reasons[i] is None and on_plateau(histories[i], options.plateau):
                reasons[i] = f'plateau (< 1 % better over {options.plateau} generations)'
    scoring = scoring_windows(trajectories, seed=options.seed)
    estimates = [space.from_unit(e.estimate) for e in es]
    t = time.perf_counter()
    sims = simulate_groups(make_evaluator, [(lat, [p]) for lat, p in zip(lats, estimates)],
                           scoring)
    simulate_s += time.perf_counter() - t
    steps = sum(w.steps for w in scoring)
    scores = [float(loss(sim, scoring)[0] / steps) for sim in sims]
    best = int(np.argmin(scores))
    total = time.perf_counter() - t_start
    timing = {'total': total, 'simulate': simulate_s, 'bookkeeping': total - simulate_s}
    result = FitResult(params=estimates[best], history=histories[best],
                       stop_reason=reasons[best] or f'{options.generations} generations',
                       timing=timing)
    return IdentifyResult(
        fit=result, latency_s=lats[best], searches=[],
        profile={lat: s for lat, s in zip(lats, scores)},
        fit_log=[(lat, len(h), False, total) for lat, h in zip(lats, histories)],
        seconds=total)
