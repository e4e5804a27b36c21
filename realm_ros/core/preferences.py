"""Bradley-Terry strengths from pairwise preferences, with robust (sandwich) intervals.

RobotArena-infinity's second track (docs/arena.md): people compare two rollouts of the same
start and answer "A better / tie / B better"; the answers are fitted by the Bradley-Terry model

    P(i beats j) = sigma(theta_i - theta_j) = pi_i / (pi_i + pi_j),   pi_i = exp(theta_i),

by maximum likelihood on the **non-tie** comparisons (the log-likelihood is concave in theta),
with the robust sandwich covariance ``A^-1 B A^-1`` for the intervals: ``A`` the negative
Hessian of the log-likelihood at the estimate, ``B`` the sum of the outer products of the
per-comparison (or, with ``cluster`` ids, per-cluster) score vectors. Strengths are reported
with mean zero (only differences are identified); ``se`` and the intervals are those of the
mean-zero strengths.

Ties (``ties=``):
    * ``'drop'`` (default, RobotArena-infinity): ties are not used.
    * ``'half'``: a tie is half a win for each side (log-likelihood 0.5 log p + 0.5 log(1-p)).
    * ``'davidson'``: Davidson's (1970) tie model, P(i) = pi_i / D, P(j) = pi_j / D,
      P(tie) = nu sqrt(pi_i pi_j) / D, D = pi_i + pi_j + nu sqrt(pi_i pi_j), with log nu fitted
      jointly (reported as ``nu``); it needs at least one tie and one decided comparison.

When the maximum-likelihood estimate does not exist. Zermelo/Ford: it exists iff the "beat"
graph (an edge i -> j when i beat j; ties count both ways except under ``'drop'``) is strongly
connected. A policy that never wins (or never loses) has a strength that diverges to -inf
(+inf): the MLE is infinite, and no interval is meaningful. :func:`fit_preferences` with
``prior=0`` refuses that with :class:`NoEstimateError` naming the policies;
:func:`rank_preferences` then refits with ``prior`` virtual tied comparisons per pair of
policies that met (default :data:`DEFAULT_PRIOR` = 1, the same shrinkage as the rubric ranking
of :func:`realm_ros.core.metrics.bradley_terry`, whose prior of 0.5 virtual wins each way is one
tied game) and flags the result (``mle_exists`` False, ``note``). The sandwich then uses the
penalised Hessian for ``A`` and the data's scores only for ``B``.

A disconnected comparison graph (two groups of policies never compared with each other) leaves
the groups' relative strength unidentified, prior or not: :class:`DisconnectedError`.

Bootstrap intervals (``n_bootstrap > 0``): percentile intervals over refits on comparisons (or
clusters) resampled with replacement; resamples whose fit fails (disconnected, no estimate) are
counted in ``bootstrap_failed`` and left out.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from realm_ros.core.errors import DataError

TIE_MODELS = ('drop', 'half', 'davidson')
#: Virtual tied comparisons per met pair used when the MLE does not exist (rank_preferences).
DEFAULT_PRIOR = 1.0
#: Outcome values of a :class:`Comparison` (from the first policy's side).
FIRST_WINS, TIE, SECOND_WINS = 1.0, 0.5, 0.0


class DisconnectedError(DataError):
    """The comparison graph has more than one component: strengths are not identified."""


class NoEstimateError(DataError):
    """The maximum-likelihood strengths are infinite (a policy never wins or never loses)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Comparison:
    """One judgment: ``outcome`` 1 = ``first`` better, 0 = ``second`` better, 0.5 = tie."""

    first: str
    second: str
    outcome: float
    cluster: str = ''

    def __post_init__(self) -> None:
        if self.outcome not in (FIRST_WINS, TIE, SECOND_WINS):
            raise DataError(f'Comparison.outcome must be 1, 0.5 or 0, got {self.outcome!r}')
        if self.first == self.second:
            raise DataError(f'a comparison needs two different policies, got {self.first!r} '
                            'twice')


@dataclasses.dataclass(frozen=True, slots=True)
class PreferenceRow:
    """One policy's strength: log-strength ``score`` (mean zero), its sandwich standard error
    and interval, the bootstrap interval (NaN when not computed) and its record."""

    policy: str
    score: float
    se: float
    ci_low: float
    ci_high: float
    boot_low: float
    boot_high: float
    wins: int
    losses: int
    ties: int


@dataclasses.dataclass(frozen=True)
class PreferenceRanking:
    """A fitted ranking, best first, and how it was fitted."""

    rows: tuple[PreferenceRow, ...]
    ties: str
    prior: float
    mle_exists: bool
    note: str
    comparisons: int
    used: int
    confidence: float
    covariance: tuple[tuple[float, ...], ...]  # of the mean-zero scores, in ``policies`` order
    policies: tuple[str, ...]
    nu: float | None = None
    bootstrap: int = 0
    bootstrap_failed: int = 0

    def scores(self) -> dict[str, float]:
        """Return ``{policy: score}``."""
        return {r.policy: r.score for r in self.rows}

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (NaN as None)."""
        def clean(value: Any) -> Any:
            if isinstance(value, float) and not math.isfinite(value):
                return None
            if isinstance(value, (list, tuple)):
                return [clean(v) for v in value]
            if isinstance(value, dict):
                return {k: clean(v) for k, v in value.items()}
            return value
        out = dataclasses.asdict(self)
        out['rows'] = [dataclasses.asdict(r) for r in self.rows]
        return clean(out)


def _components(n: int, edges: Iterable[tuple[int, int]]) -> list[set[int]]:
    """Connected components of an undirected graph on 0..n-1."""
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in edges:
        parent[root(i)] = root(j)
    groups: dict[int, set[int]] = {}
    for i in range(n):
        groups.setdefault(root(i), set()).add(i)
    return list(groups.values())


def _strong_components(n: int, edges: Iterable[tuple[int, int]]) -> list[set[int]]:
    """Strongly connected components (reachability closure; n is a handful of policies)."""
    reach = np.eye(n, dtype=bool)
    for i, j in edges:
        reach[i, j] = True
    for k in range(n):  # Warshall
        reach |= reach[:, [k]] & reach[[k], :]
    both = reach & reach.T
    seen: set[int] = set()
    out = []
    for i in range(n):
        if i not in seen:
            group = set(np.flatnonzero(both[i]).tolist())
            seen |= group
            out.append(group)
    return out


def _existence_problem(policies: Sequence[str], beats: set[tuple[int, int]]) -> str:
    """Return '' if the beat graph is strongly connected, else which policies diverge."""
    n = len(policies)
    groups = _strong_components(n, beats)
    if len(groups) == 1:
        return ''
    names = [sorted(policies[i] for i in g) for g in groups]
    lines = []
    for group, labels in zip(groups, names):
        others = set(range(n)) - group
        lost = any((o, g) in beats for g in group for o in others)
        won = any((g, o) in beats for g in group for o in others)
        who = ', '.join(repr(x) for x in labels)
        rest = ', '.join(repr(policies[o]) for o in sorted(others))
        if not lost:
            lines.append(f'{who} never lost to {rest} (strength diverges to +inf)')
        elif not won:
            lines.append(f'{who} never beat {rest} (strength diverges to -inf)')
    return '; '.join(lines) or 'the beat graph is not strongly connected'


def _prepare(comparisons: Sequence[Comparison], ties: str
             ) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Return (policies, i, j, y, clusters) of the comparisons the tie model uses."""
    if ties not in TIE_MODELS:
        raise DataError(f'ties must be one of {list(TIE_MODELS)}, got {ties!r}')
    policies = sorted({c.first for c in comparisons} | {c.second for c in comparisons})
    if len(policies) < 2:
        raise DataError(f'a ranking needs comparisons of at least two policies, got '
                        f'{policies}')
    used = [c for c in comparisons if ties != 'drop' or c.outcome != TIE]
    index = {p: k for k, p in enumerate(policies)}
    first = np.array([index[c.first] for c in used], dtype=int)
    second = np.array([index[c.second] for c in used], dtype=int)
    y = np.array([c.outcome for c in used], dtype=float)
    return policies, first, second, y, [c.cluster for c in used]


def _check_identified(policies: Sequence[str], first: np.ndarray, second: np.ndarray,
                      y: np.ndarray, ties: str, prior: float) -> tuple[bool, str]:
    """Raise DisconnectedError; return (mle_exists, problem) for the data without prior."""
    n = len(policies)
    if first.size == 0:
        raise DataError('no comparison to fit' + (' (every one was a tie, and ties="drop" '
                                                  'leaves ties out)' if ties == 'drop' else ''))
    groups = _components(n, zip(first.tolist(), second.tolist()))
    if len(groups) > 1:
        parts = ' | '.join('{' + ', '.join(sorted(policies[i] for i in g)) + '}'
                           for g in groups)
        raise DisconnectedError(
            f'the comparison graph is disconnected: no policy of one group was ever compared '
            f'with one of another ({parts}), so their relative strength is not identified; '
            'compare across the groups or rank each group on its own')
    beats: set[tuple[int, int]] = set()
    for i, j, outcome in zip(first.tolist(), second.tolist(), y.tolist()):
        if outcome > TIE or (outcome == TIE and ties != 'drop'):
            beats.add((i, j))
        if outcome < TIE or (outcome == TIE and ties != 'drop'):
            beats.add((j, i))
    problem = _existence_problem(policies, beats)
    if ties == 'davidson':
        n_ties = int(np.sum(y == TIE))
        if n_ties == 0:
            raise NoEstimateError("Davidson's tie model needs at least one tie (nu -> 0); "
                                  "use ties='drop'")
        if n_ties == y.size:
            raise NoEstimateError("Davidson's tie model needs at least one decided comparison "
                                  '(every one was a tie: nu -> inf)')
    return not problem, problem


def _basis(n: int) -> np.ndarray:
    """(n, n-1) map from free parameters to mean-zero strengths (an orthonormal basis)."""
    centred = np.eye(n) - 1.0 / n
    u, _, _ = np.linalg.svd(centred)
    return u[:, :n - 1]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


class _Model:
    """Log-likelihood, per-comparison scores and Hessian in the free parameters."""

    def __init__(self, n: int, first: np.ndarray, second: np.ndarray, y: np.ndarray,
                 ties: str, prior: float) -> None:
        self.basis = _basis(n)
        x = np.zeros((first.size, n))
        x[np.arange(first.size), first] = 1.0
        x[np.arange(first.size), second] -= 1.0
        self.x = x @ self.basis  # (K, n-1)
        self.y = y
        self.ties = ties
        met = sorted({(min(i, j), max(i, j)) for i, j in zip(first.tolist(), second.tolist())})
        xp = np.zeros((len(met), n))
        for row, (i, j) in enumerate(met):
            xp[row, i], xp[row, j] = 1.0, -1.0
        self.xp = xp @ self.basis
        self.prior = float(prior)
        self.size = n - 1 + (ties == 'davidson')

    def _d(self, params: np.ndarray) -> np.ndarray:
        return self.x @ params[:self.basis.shape[1]]

    def _prior_terms(self, params: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Penalty: ``prior`` virtual tied comparisons (half win each) per met pair."""
        m = self.basis.shape[1]
        grad, hess = np.zeros(self.size), np.zeros((self.size, self.size))
        if self.prior <= 0:
            return 0.0, grad, hess
        d = self.xp @ params[:m]
        p = _sigmoid(d)
        value = self.prior * float(np.sum(0.5 * _log_sigmoid(d) + 0.5 * _log_sigmoid(-d)))
        grad[:m] = self.prior * self.xp.T @ (0.5 - p)
        hess[:m, :m] = -self.prior * (self.xp.T * (p * (1 - p))) @ self.xp
        return value, grad, hess

    def per_obs(self, params: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return (log-likelihood per comparison, score rows (K, size), Hessian (size, size))."""
        m = self.basis.shape[1]
        d = self._d(params)
        if self.ties != 'davidson':
            p = _sigmoid(d)
            ll = self.y * _log_sigmoid(d) + (1 - self.y) * _log_sigmoid(-d)
            scores = (self.y - p)[:, None] * self.x
            hess = -(self.x.T * (p * (1 - p))) @ self.x
            return ll, scores, hess
        tau = params[m]
        nu = math.exp(tau)
        e_plus, e_minus = np.exp(0.5 * d), np.exp(-0.5 * d)
        big = e_plus + e_minus + nu
        s, c = e_plus - e_minus, e_plus + e_minus
        a = np.where(self.y == FIRST_WINS, 0.5, np.where(self.y == SECOND_WINS, -0.5, 0.0))
        b = (self.y == TIE).astype(float)
        ll = a * d + b * tau - np.log(big)
        g_d = a - s / (2 * big)
        g_t = b - nu / big
        scores = np.hstack([g_d[:, None] * self.x, g_t[:, None]])
        h_dd = -((c / 4) / big - (s / (2 * big)) ** 2)
        h_tt = -(nu / big - (nu / big) ** 2)
        h_dt = (s / (2 * big)) * (nu / big)
        hess = np.zeros((self.size, self.size))
        hess[:m, :m] = (self.x.T * h_dd) @ self.x
        hess[:m, m] = hess[m, :m] = self.x.T @ h_dt
        hess[m, m] = float(np.sum(h_tt))
        return ll, scores, hess

    def objective(self, params: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Penalised log-likelihood, its gradient and Hessian."""
        ll, scores, hess = self.per_obs(params)
        pv, pg, ph = self._prior_terms(params)
        return float(ll.sum()) + pv, scores.sum(axis=0) + pg, hess + ph


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -x)


def _maximise(model: _Model, iterations: int = 200) -> np.ndarray:
    """Newton's method with step halving on the concave (penalised) log-likelihood."""
    params = np.zeros(model.size)
    value, grad, hess = model.objective(params)
    for _ in range(iterations):
        try:
            step = np.linalg.solve(-hess, grad)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(-hess, grad, rcond=None)[0]
        t = 1.0
        while t > 1e-8:
            candidate = params + t * step
            new_value, new_grad, new_hess = model.objective(candidate)
            if new_value >= value - 1e-12:
                break
            t *= 0.5
        params, value, grad, hess = candidate, new_value, new_grad, new_hess
        if np.max(np.abs(grad)) < 1e-10 or np.max(np.abs(t * step)) < 1e-12:
            break
    return params


def fit_preferences(comparisons: Sequence[Comparison], ties: str = 'drop', prior: float = 0.0,
                    confidence: float = 0.95, n_bootstrap: int = 0, seed: int = 0,
                    ) -> PreferenceRanking:
    """Fit Bradley-Terry strengths to ``comparisons`` (module docstring for the model).

    Args:
        comparisons: the judgments; ``cluster`` ids (e.g. the judge) make the sandwich and the
            bootstrap resample whole clusters; all '' = each comparison on its own.
        ties: ``'drop'``, ``'half'`` or ``'davidson'``.
        prior: virtual tied comparisons per pair of policies that met (0 = the pure MLE).
        confidence: of the sandwich (normal) and bootstrap (percentile) intervals.
        n_bootstrap: bootstrap refits (0 = none; ``boot_low``/``boot_high`` NaN).

    Raises:
        DisconnectedError: the comparison graph is disconnected.
        NoEstimateError: ``prior`` is 0 and the MLE is infinite (the message names who never
            wins or never loses); Davidson without ties or with only ties.
        DataError: fewer than two policies, nothing to fit, bad ``ties`` or ``confidence``.
    """
    if not 0.0 < confidence < 1.0:
        raise DataError(f'confidence must be in (0, 1), got {confidence}')
    if prior < 0 or not math.isfinite(prior):
        raise DataError(f'prior must be >= 0, got {prior}')
    comparisons = list(comparisons)
    policies, first, second, y, clusters = _prepare(comparisons, ties)
    exists, problem = _check_identified(policies, first, second, y, ties, prior)
    if not exists and prior == 0:
        raise NoEstimateError(f'no maximum-likelihood estimate: {problem}; fit with prior > 0 '
                              '(virtual ties) or collect comparisons the policy wins (loses)')
    n = len(policies)
    model = _Model(n, first, second, y, ties, prior)
    params = _maximise(model)
    _, scores, hess = model.per_obs(params)
    _, _, prior_hess = model._prior_terms(params)
    info = -(hess + prior_hess)
    if any(clusters):
        keys = {k: idx for idx, k in enumerate(dict.fromkeys(clusters))}
        summed = np.zeros((len(keys), model.size))
        np.add.at(summed, [keys[k] for k in clusters], scores)
    else:
        summed = scores
    meat = summed.T @ summed
    bread = np.linalg.pinv(info)
    cov_free = bread @ meat @ bread
    m = n - 1
    theta = model.basis @ params[:m]
    cov = model.basis @ cov_free[:m, :m] @ model.basis.T
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    z = _normal_quantile(0.5 + confidence / 2)
    boot = np.full((2, n), math.nan)
    failed = 0
    if n_bootstrap > 0:
        boot, failed = _bootstrap(comparisons, policies, ties, prior, confidence, n_bootstrap,
                                  seed)
    counts = _record(comparisons, policies)
    rows = [PreferenceRow(policy=p, score=float(theta[k]), se=float(se[k]),
                          ci_low=float(theta[k] - z * se[k]), ci_high=float(theta[k] + z * se[k]),
                          boot_low=float(boot[0, k]), boot_high=float(boot[1, k]),
                          wins=counts[p][0], losses=counts[p][1], ties=counts[p][2])
            for k, p in enumerate(policies)]
    note = '' if exists else (f'no maximum-likelihood estimate ({problem}); strengths shrunk by '
                              f'{prior:g} virtual tied comparison(s) per pair that met')
    return PreferenceRanking(
        rows=tuple(sorted(rows, key=lambda r: -r.score)), ties=ties, prior=float(prior),
        mle_exists=exists, note=note, comparisons=len(comparisons), used=int(y.size),
        confidence=confidence, covariance=tuple(tuple(float(v) for v in row) for row in cov),
        policies=tuple(policies),
        nu=float(math.exp(params[m])) if ties == 'davidson' else None,
        bootstrap=int(n_bootstrap), bootstrap_failed=failed)


def rank_preferences(comparisons: Sequence[Comparison], ties: str = 'drop',
                     confidence: float = 0.95, n_bootstrap: int = 0, seed: int = 0,
                     prior: float = DEFAULT_PRIOR) -> PreferenceRanking:
    """Return the MLE ranking, or, where the MLE is infinite, the one shrunk by ``prior``
    virtual tied comparisons per met pair, flagged (``mle_exists`` False and ``note``).

    Raises:
        DisconnectedError: the comparison graph is disconnected (no prior identifies that).
    """
    try:
        return fit_preferences(comparisons, ties, 0.0, confidence, n_bootstrap, seed)
    except DisconnectedError:
        raise
    except NoEstimateError as err:
        if 'Davidson' in str(err):
            raise
        return fit_preferences(comparisons, ties, prior, confidence, n_bootstrap, seed)


def _record(comparisons: Sequence[Comparison], policies: Sequence[str]
            ) -> dict[str, list[int]]:
    out = {p: [0, 0, 0] for p in policies}
    for c in comparisons:
        if c.outcome == TIE:
            out[c.first][2] += 1
            out[c.second][2] += 1
        else:
            winner, loser = (c.first, c.second) if c.outcome == FIRST_WINS else (c.second,
                                                                                 c.first)
            out[winner][0] += 1
            out[loser][1] += 1
    return out


def _bootstrap(comparisons: Sequence[Comparison], policies: Sequence[str], ties: str,
               prior: float, confidence: float, n: int, seed: int) -> tuple[np.ndarray, int]:
    """Percentile intervals of the scores over resampled comparisons (or clusters)."""
    rng = np.random.default_rng(seed)
    groups: dict[str, list[Comparison]] = {}
    if any(c.cluster for c in comparisons):
        for c in comparisons:
            groups.setdefault(c.cluster, []).append(c)
    else:
        groups = {str(k): [c] for k, c in enumerate(comparisons)}
    units = list(groups.values())
    samples, failed = [], 0
    for _ in range(n):
        pick = rng.integers(0, len(units), size=len(units))
        resampled = [c for k in pick for c in units[k]]
        try:
            fit = fit_preferences(resampled, ties, prior, confidence)
        except DataError:
            failed += 1
            continue
        scores = fit.scores()
        if set(scores) != set(policies):
            failed += 1
            continue
        samples.append([scores[p] for p in policies])
    if not samples:
        return np.full((2, len(policies)), math.nan), failed
    alpha = (1.0 - confidence) / 2.0
    arr = np.array(samples)
    return np.quantile(arr, [alpha, 1.0 - alpha], axis=0), failed


def _normal_quantile(q: float) -> float:
    return statistics.NormalDist().inv_cdf(q)


def comparisons_from_records(records: Iterable[Mapping[str, Any]]) -> list[Comparison]:
    """Return comparisons from judgment rows ``{'first', 'second', 'outcome', 'cluster'?}``."""
    return [Comparison(str(r['first']), str(r['second']), float(r['outcome']),
                       str(r.get('cluster', ''))) for r in records]
