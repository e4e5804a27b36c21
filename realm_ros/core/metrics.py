"""Real-vs-sim agreement metrics as pure functions over arrays (docs/evaluation.md).

Conventions:
    * Every function that compares the two worlds takes ``sim`` and ``real`` as *keyword-named*
      roles; MMRV is not symmetric, so the roles are never implicit.
    * Inputs are 1-D arrays of per-policy (or per-condition) scores, paired by index.
    * Bad input (length mismatch, fewer than two entries where a ranking is needed, NaN or inf)
      raises :class:`ValueError` (:class:`~realm_ros.core.errors.DataError`) with the reason.

Definitions follow SIMPLER (Pearson r, MMRV), REALM (RMSD of progression under a perturbation)
and RobotArena-infinity (Bradley-Terry rankings from pairwise comparisons).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from realm_ros.core.errors import DataError
from realm_ros.core.registry import Registry


def _vector(values: ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise DataError(f'{name} must be a 1-D array of scores, got shape {arr.shape}')
    if not np.all(np.isfinite(arr)):
        raise DataError(f'{name} contains NaN or inf: {arr.tolist()}')
    return arr


def _pair(sim: ArrayLike, real: ArrayLike, minimum: int = 1) -> tuple[np.ndarray, np.ndarray]:
    s, r = _vector(sim, 'sim'), _vector(real, 'real')
    if s.shape != r.shape:
        raise DataError(f'sim and real must pair up: {s.size} sim vs {r.size} real scores')
    if s.size < minimum:
        raise DataError(f'need at least {minimum} paired scores, got {s.size}')
    return s, r


def pearson_r(*, sim: ArrayLike, real: ArrayLike) -> float:
    """Return the Pearson correlation of paired sim and real scores.

    Edge cases (SIMPLER's convention, where the textbook formula divides by zero):
    if the centred vectors are identical (e.g. both constant) r = 1; if exactly one of them is
    constant r = 0.

    Raises:
        DataError: length mismatch, fewer than 2 pairs, NaN/inf.
    """
    s, r = _pair(sim, real, minimum=2)
    sc, rc = s - s.mean(), r - r.mean()
    if np.allclose(sc, rc, atol=1e-12, rtol=0.0):
        return 1.0
    ns, nr = np.linalg.norm(sc), np.linalg.norm(rc)
    if ns < 1e-12 or nr < 1e-12:
        return 0.0
    return float(np.clip(sc @ rc / (ns * nr), -1.0, 1.0))


def mmrv(*, sim: ArrayLike, real: ArrayLike) -> float:
    """Return the Mean Maximum Rank Violation MMRV(sim, real) in [0, max|real_i - real_j|].

    For each policy i: v_i = max over j of |real_i - real_j| over the pairs whose strict order
    disagrees, ``(sim_i > sim_j) != (real_i > real_j)``; v_i = 0 if none. MMRV = mean of v_i.
    Magnitudes come from ``real``: a swap of two policies that are nearly equal on the real arm
    costs little. Not symmetric in its arguments. Ties are strict-order comparisons, so a sim
    tie between policies that differ on the real arm counts as a violation for the one that is
    better on the real arm.

    Raises:
        DataError: length mismatch, fewer than 2 policies, NaN/inf.
    """
    s, r = _pair(sim, real, minimum=2)
    sim_gt = s[:, None] > s[None, :]
    real_gt = r[:, None] > r[None, :]
    violation = sim_gt != real_gt
    magnitude = np.abs(r[:, None] - r[None, :])
    per_policy = np.max(np.where(violation, magnitude, 0.0), axis=1)
    return float(per_policy.mean())


def mean_abs_gap(*, sim: ArrayLike, real: ArrayLike) -> float:
    """Return mean |sim_i - real_i| (SIMPLER's real-sim gap), in the scores' units."""
    s, r = _pair(sim, real, minimum=1)
    return float(np.mean(np.abs(s - r)))


def rmsd_vs_default(perturbed: ArrayLike, default: ArrayLike) -> float:
    """Return REALM's RMSD of progression under a perturbation vs the default condition.

    ``perturbed`` and ``default`` pair up (model, task) cells: sqrt(mean((p - d)^2)).
    """
    p, d = _vector(perturbed, 'perturbed'), _vector(default, 'default')
    if p.shape != d.shape or p.size == 0:
        raise DataError(f'perturbed and default must pair up and be non-empty: '
                        f'{p.size} vs {d.size}')
    return float(np.sqrt(np.mean((p - d) ** 2)))


def kruskal_sim_real(*, sim: ArrayLike, real: ArrayLike) -> dict[str, float | int | str]:
    """Return the Kruskal-Wallis H test of sim vs real trial outcomes of one policy.

    SimplerEnv (``simpler_env/utils/metrics.py``, ``print_all_kruskal_results``) runs
    ``scipy.stats.kruskal(sim, real)`` per checkpoint on trial-by-trial outcomes and reports
    p = 1.0 ("all same") when the samples are identical. Edge cases here:

    * ``sim`` and ``real`` equal element by element (SimplerEnv's check): H = 0, p = 1, note
      'all same'. That includes every outcome being the same value, where scipy raises
      ``ValueError: All numbers are identical``.
    * every value identical across both samples but the samples of different lengths: H = 0,
      p = 1, note 'all numbers identical' (scipy would raise).
    * fewer than one value in either sample: H and p are NaN, note 'empty sample'.

    The samples need not pair up (an unordered test); non-finite values raise DataError.
    Returns ``{'statistic', 'pvalue', 'n_sim', 'n_real', 'note'}``.
    """
    s = np.asarray(sim, dtype=float).reshape(-1)
    r = np.asarray(real, dtype=float).reshape(-1)
    for name, arr in (('sim', s), ('real', r)):
        if not np.all(np.isfinite(arr)):
            raise DataError(f'{name} contains NaN or inf: {arr.tolist()}')
    out: dict[str, float | int | str] = {'n_sim': int(s.size), 'n_real': int(r.size)}
    if s.size == 0 or r.size == 0:
        return {**out, 'statistic': math.nan, 'pvalue': math.nan, 'note': 'empty sample'}
    if s.shape == r.shape and np.array_equal(s, r):
        return {**out, 'statistic': 0.0, 'pvalue': 1.0, 'note': 'all same'}
    both = np.concatenate([s, r])
    if np.all(both == both[0]):
        return {**out, 'statistic': 0.0, 'pvalue': 1.0, 'note': 'all numbers identical'}
    from scipy.stats import kruskal
    result = kruskal(s, r)
    return {**out, 'statistic': float(result.statistic), 'pvalue': float(result.pvalue),
            'note': ''}


def trials_from_rate(rate: float, n_trials: int) -> np.ndarray:
    """Return ``n_trials`` 0/1 outcomes with ``round(rate * n)`` ones (SimplerEnv's
    ``construct_unordered_trial_results``; NaN counts as 0)."""
    if n_trials < 1:
        raise DataError(f'n_trials must be >= 1, got {n_trials}')
    rate = 0.0 if math.isnan(rate) else float(rate)
    ones = int(np.round(n_trials * rate))
    return np.array([1.0] * ones + [0.0] * (n_trials - ones))


def success_rate(progressions: ArrayLike) -> float:
    """Return the fraction of episodes whose progression reached 1.0."""
    p = _vector(progressions, 'progressions')
    if p.size == 0:
        raise DataError('success_rate needs at least one episode')
    return float(np.mean(p >= 1.0 - 1e-9))


def mean_progression(progressions: ArrayLike) -> float:
    """Return the mean episode progression (REALM's task progression score)."""
    p = _vector(progressions, 'progressions')
    if p.size == 0:
        raise DataError('mean_progression needs at least one episode')
    return float(p.mean())


def wilson_interval(hits: int, n: int, z: float = 1.959964) -> list[float]:
    """Return the Wilson score interval (95 % by default) of a proportion ``hits / n``."""
    if n < 1:
        raise DataError('a proportion needs at least one trial')
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [max(0.0, centre - half), min(1.0, centre + half)]


def bootstrap_ci(
    values: ArrayLike,
    statistic: Callable[[np.ndarray], float] = np.mean,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Return a percentile bootstrap confidence interval of ``statistic`` over episodes.

    A single value (or identical values) gives a zero-width interval at that value.
    """
    v = _vector(values, 'values')
    if v.size == 0:
        raise DataError('bootstrap_ci needs at least one value')
    if not 0.0 < confidence < 1.0:
        raise DataError(f'confidence must be in (0, 1), got {confidence}')
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, v.size, size=(n_resamples, v.size))
    stats = np.array([statistic(v[row]) for row in idx]) if statistic is not np.mean \
        else v[idx].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(stats, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


@dataclasses.dataclass(frozen=True, slots=True)
class RankedPolicy:
    """One row of a Bradley-Terry ranking; ``score`` is log-strength, mean zero across policies."""

    policy: str
    score: float
    ci_low: float
    ci_high: float
    win_rate: float
    comparisons: int


def _pairwise_counts(
    outcomes: Mapping[Any, Mapping[str, float]], policies: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Return (wins, games): wins[i, j] = times i beat j (ties count 0.5 each)."""
    index = {p: k for k, p in enumerate(policies)}
    n = len(policies)
    wins = np.zeros((n, n))
    games = np.zeros((n, n))
    for scores in outcomes.values():
        present = [p for p in scores if p in index]
        for a_pos, a in enumerate(present):
            for b in present[a_pos + 1:]:
                i, j = index[a], index[b]
                sa, sb = float(scores[a]), float(scores[b])
                if not (math.isfinite(sa) and math.isfinite(sb)):
                    raise DataError(f'NaN or inf score for {a!r} or {b!r}')
                games[i, j] += 1
                games[j, i] += 1
                if sa > sb:
                    wins[i, j] += 1
                elif sb > sa:
                    wins[j, i] += 1
                else:
                    wins[i, j] += 0.5
                    wins[j, i] += 0.5
    return wins, games


def _fit_bradley_terry(wins: np.ndarray, games: np.ndarray, prior: float = 0.5,
                       iterations: int = 500) -> np.ndarray:
    """Return mean-zero log-strengths by Hunter's MM algorithm.

    ``prior`` adds that many virtual ties between every pair of policies that met, so a policy
    that won (or lost) everything gets a finite strength.
    """
    met = games > 0
    w = wins + prior * met
    g = games + 2 * prior * met
    strength = np.ones(wins.shape[0])
    total_wins = w.sum(axis=1)
    for _ in range(iterations):
        denom = (g / (strength[:, None] + strength[None, :])).sum(axis=1)  # g[i, i] = 0
        new = np.where(denom > 0, total_wins / np.maximum(denom, 1e-300), strength)
        new = new / np.exp(np.mean(np.log(np.maximum(new, 1e-300))))
        if np.max(np.abs(np.log(new) - np.log(strength))) < 1e-10:
            strength = new
            break
        strength = new
    log_s = np.log(strength)
    return log_s - log_s.mean()


def bradley_terry(
    outcomes: Mapping[Any, Mapping[str, float]],
    n_resamples: int = 500,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[RankedPolicy]:
    """Rank policies from pairwise comparisons on the same episode spec.

    Args:
        outcomes: ``{episode_spec_key: {policy: score}}``; every pair of policies with a score on
            the same key is one comparison; the higher score wins, equal scores split half-half.
        n_resamples: bootstrap resamples over episode specs for the confidence intervals.

    Returns:
        Policies sorted best first with log-strength scores (mean zero) and bootstrap CIs.

    Raises:
        DataError: fewer than two policies, no comparisons, NaN scores.
    """
    policies = sorted({p for scores in outcomes.values() for p in scores})
    if len(policies) < 2:
        raise DataError(f'a ranking needs at least two policies, got {policies}')
    keys = list(outcomes)
    wins, games = _pairwise_counts(outcomes, policies)
    if games.sum() == 0:
        raise DataError('no episode spec has scores from two policies: nothing to compare')
    scores = _fit_bradley_terry(wins, games)
    rng = np.random.default_rng(seed)
    fits = []
    for _ in range(n_resamples):
        pick = rng.integers(0, len(keys), size=len(keys))
        resampled = {k: outcomes[keys[i]] for k, i in enumerate(pick)}
        w, g = _pairwise_counts(resampled, policies)
        fits.append(_fit_bradley_terry(w, g, iterations=200))
    samples = np.array(fits)
    alpha = (1.0 - confidence) / 2.0
    lows = np.quantile(samples, alpha, axis=0)
    highs = np.quantile(samples, 1.0 - alpha, axis=0)
    played = games.sum(axis=1)
    ranked = [
        RankedPolicy(policy=p, score=float(scores[i]), ci_low=float(lows[i]),
                     ci_high=float(highs[i]),
                     win_rate=float(wins[i].sum() / played[i]) if played[i] else 0.0,
                     comparisons=int(played[i]))
        for i, p in enumerate(policies)
    ]
    return sorted(ranked, key=lambda r: -r.score)


@dataclasses.dataclass(frozen=True)
class Metric:
    """One real-vs-sim agreement figure over per-policy scores, defined once.

    ``summarize`` computes it into ``summary.json`` (``agreement``, ``per_task`` and their
    ``ci95``), and the paired-eval console table and ``report.html`` print it, all from this
    record (docs/extending.md, "A metric").

    Attributes:
        name: its key in ``summary.json``'s ``agreement`` (``pearson_r``).
        compute: ``compute(sim=, real=) -> float`` over paired per-policy scores.
        label: its name in the console's agreement line (``Pearson r``).
        short: its name in the console's per-task lines (``r``).
        title: its name in the report's agreement paragraph (default: ``label``).
        column: its report table column (default: ``label``), ``[95% CI]`` appended.
        format: format spec of its value and interval (``.3f``).
        better: ``higher`` or ``lower``: which way is closer agreement.
        interval: how its interval is drawn: ``paired_bootstrap`` (over starts,
            :func:`agreement_intervals`) or ``none``.
    """

    name: str
    compute: Callable[..., float]
    label: str
    short: str
    title: str = ''
    column: str = ''
    format: str = '.3f'
    better: str = 'higher'
    interval: str = 'paired_bootstrap'

    def __post_init__(self) -> None:
        if self.better not in ('higher', 'lower'):
            raise DataError(f'metric {self.name!r}: better must be higher or lower')
        if self.interval not in INTERVALS:
            raise DataError(f'metric {self.name!r}: interval must be one of {INTERVALS}')

    def text(self, value: float | None) -> str:
        """``value`` in this metric's format (``n/a`` for None or NaN)."""
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return 'n/a'
        return format(value, self.format)

    def with_interval(self, figures: Mapping[str, Any]) -> str:
        """``figures[name]`` and its ``ci95`` interval if it has one: ``0.912 [0.800, 0.990]``."""
        interval = (figures.get('ci95') or {}).get(self.name)
        text = self.text(figures[self.name])
        return f'{text} [{self.text(interval[0])}, {self.text(interval[1])}]' if interval \
            else text


#: How a metric's interval is drawn (:attr:`Metric.interval`).
INTERVALS = ('paired_bootstrap', 'none')

#: The agreement metrics by name, in the order tables print them.
METRICS: Registry[Metric] = Registry('metric', duplicate=DataError)


def register(metric: Metric) -> Metric:
    """Add ``metric`` to :data:`METRICS` (another metric of that name is an error)."""
    return METRICS.add(metric.name, metric)


register(Metric('pearson_r', pearson_r, 'Pearson r', 'r'))
register(Metric('mmrv', mmrv, 'MMRV', 'MMRV', title='MMRV(sim, real)', better='lower'))
register(Metric('mean_abs_gap', mean_abs_gap, 'mean |real - sim|', 'gap',
                column='mean |gap|', better='lower'))


@dataclasses.dataclass(frozen=True, slots=True)
class Agreement:
    """Agreement of sim and real per-policy scores: each of :data:`METRICS` by name."""

    figures: Mapping[str, float]
    n_policies: int

    def as_dict(self) -> dict[str, float | int]:
        """Return a JSON-ready dict: the figures in :data:`METRICS` order, then ``n_policies``."""
        return {**self.figures, 'n_policies': self.n_policies}


def agreement(*, sim: ArrayLike, real: ArrayLike) -> Agreement:
    """Return every :data:`METRICS` figure (Pearson r, MMRV(sim, real), the mean absolute gap,
    and any registered since) for paired policy scores."""
    s, r = _pair(sim, real, minimum=2)
    return Agreement({name: float(m.compute(sim=s, real=r)) for name, m in METRICS.items()},
                     n_policies=int(s.size))


def agreement_intervals(*, sim: ArrayLike, real: ArrayLike, n_resamples: int = 2000,
                        confidence: float = 0.95, seed: int = 0) -> dict[str, Any]:
    """Return paired-bootstrap intervals of :func:`agreement`'s three figures over starts.

    ``sim`` and ``real`` are (policies, starts) arrays of episode scores; column k of both is
    the same start (task, perturbation, seed), run by every policy in both worlds, so a
    resample draws starts with replacement and keeps every pairing: the per-policy means of a
    resample are compared as :func:`agreement` compares the observed ones. A missing episode
    is NaN; a resample in which some policy has no episode is skipped (``resamples`` counts
    those used). Percentile intervals, ``[low, high]`` per figure; with one start, or identical
    starts, the interval has zero width at the observed figure.

    Raises:
        DataError: shapes differ, fewer than 2 policies, a policy with no episode, inf, or a
            confidence outside (0, 1).
    """
    s, r = np.asarray(sim, dtype=float), np.asarray(real, dtype=float)
    if s.shape != r.shape or s.ndim != 2:
        raise DataError(f'sim and real must be (policies, starts) arrays of one shape, got '
                        f'{s.shape} and {r.shape}')
    if s.shape[0] < 2:
        raise DataError(f'need at least 2 policies, got {s.shape[0]}')
    if np.any(np.isinf(s)) or np.any(np.isinf(r)):
        raise DataError('sim or real contains inf')
    present = ~(np.isnan(s) | np.isnan(r))
    if not np.all(present.any(axis=1)):
        raise DataError('every policy needs at least one paired episode')
    if not 0.0 < confidence < 1.0:
        raise DataError(f'confidence must be in (0, 1), got {confidence}')
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, s.shape[1], size=(n_resamples, s.shape[1]))
    figures: dict[str, list[float]] = {name: [] for name, m in METRICS.items()
                                       if m.interval == 'paired_bootstrap'}
    used = 0
    for row in idx:
        counts = present[:, row].sum(axis=1)
        if np.any(counts == 0):
            continue
        used += 1
        sim_mean = np.where(present, s, 0.0)[:, row].sum(axis=1) / counts
        real_mean = np.where(present, r, 0.0)[:, row].sum(axis=1) / counts
        a = agreement(sim=sim_mean, real=real_mean)
        for name in figures:
            figures[name].append(a.figures[name])
    if not used:
        raise DataError('no resample had an episode of every policy: too few paired starts')
    alpha = (1.0 - confidence) / 2.0
    out: dict[str, Any] = {name: [float(v) for v in np.quantile(values, [alpha, 1.0 - alpha])]
                           for name, values in figures.items()}
    out['resamples'] = used
    out['confidence'] = confidence
    return out


def _rank_pair(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray] | float:
    """Two score vectors to rank, or the conventional value where one has no order."""
    x, y = _vector(a, 'a'), _vector(b, 'b')
    if x.shape != y.shape:
        raise DataError(f'a and b must pair up: {x.size} vs {y.size} scores')
    if x.size < 2:
        raise DataError(f'a rank correlation needs at least 2 paired scores, got {x.size}')
    constant_x, constant_y = np.ptp(x) < 1e-12, np.ptp(y) < 1e-12
    if constant_x and constant_y:
        return 1.0
    if constant_x or constant_y:
        return 0.0
    return x, y


def kendall_tau(a: ArrayLike, b: ArrayLike) -> float:
    """Return Kendall's tau-b between two rankings' scores (symmetric, in [-1, 1]).

    Pearson r's convention where the statistic is undefined: both constant -> 1, exactly one
    constant -> 0.

    Raises:
        DataError: length mismatch, fewer than 2 entries, NaN/inf.
    """
    pair = _rank_pair(a, b)
    if isinstance(pair, float):
        return pair
    from scipy.stats import kendalltau
    return float(kendalltau(*pair).statistic)


def spearman_rho(a: ArrayLike, b: ArrayLike) -> float:
    """Return Spearman's rank correlation of two rankings' scores (conventions as
    :func:`kendall_tau`)."""
    pair = _rank_pair(a, b)
    if isinstance(pair, float):
        return pair
    from scipy.stats import spearmanr
    return float(spearmanr(*pair).statistic)
