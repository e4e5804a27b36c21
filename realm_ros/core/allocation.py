"""Rankings decided with the fewest episodes: adaptive allocation and a fixed design's power.

A lab's real episodes cost minutes of a person and an arm. ``paired-eval --until-decided P``
spends them where they decide the ranking, and ``realm-ros metrics --power`` says how many a
fixed (uniform) design would need for the same confidence (docs/deciding-rankings.md).

The model (pure, no I/O):

* Each policy's score is its **mean episode progression** over a balanced task mix (policy i's
  k-th episode runs task ``tasks[k % len(tasks)]``), so every policy is averaged over the same
  tasks in the same proportions.
* The uncertainty of a mean is a **Bayesian bootstrap** (Rubin 1981): Dirichlet(1, ..., 1)
  weights over the policy's observed progressions plus two pseudo-observations, 0 and 1 (the
  bounds of a progression). The pseudo-observations keep a policy whose first episodes all
  scored the same from looking certain (with n zeros its posterior mean is about 1/(n + 2),
  as a Beta(1, 1) prior on a rate would give).
* The ranking orders policies by posterior mean; an **adjacent pair** (a above b) is decided at
  ``P`` when ``P(mean_a > mean_b) >= P`` over the posterior draws (ties count half). The ranking
  is decided when every adjacent pair is.
* **Allocation**: after ``min_per_policy`` episodes each, the next episode goes to the adjacent
  pair least certain of its order, and within it to the policy whose mean is most uncertain
  (largest posterior variance). ``uniform`` allocation (round-robin over policies, the fixed
  design) stops by the same rule, so the two spend episodes under one criterion.

Stopping as soon as the criterion holds is a sequential test: the probability of a wrong order
is larger than ``1 - P`` per look. ``bench/bench_until_decided.py`` measures the actual rate of
wrong rankings of both allocations over simulated evaluations; it is not assumed.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from typing import Callable, Mapping, Sequence

import numpy as np

from realm_ros.core import perturbations
from realm_ros.core.errors import ConfigError, DataError
from realm_ros.core.evaluation import EvalConfig, derive_seed
from realm_ros.core.types import EpisodeSpec

#: Pseudo-observations added to every policy's progressions (the bounds of a progression).
PRIOR_OBSERVATIONS = (0.0, 1.0)
#: Allocation rules :class:`AdaptiveRanking` knows.
ALLOCATIONS = ('adaptive', 'uniform')


@dataclasses.dataclass(frozen=True)
class RankingState:
    """Where a ranking stands: its order, each adjacent pair's probability, and whether decided.

    Attributes:
        order: policies from best to worst by posterior mean progression.
        means: ``{policy: posterior mean}``.
        pair_probability: ``P(order[k] above order[k + 1])`` for each adjacent pair, in order.
        target: the probability every adjacent pair must reach.
        episodes: ``{policy: episodes observed}``.
    """

    order: tuple[str, ...]
    means: Mapping[str, float]
    pair_probability: tuple[float, ...]
    target: float
    episodes: Mapping[str, int]

    @property
    def decided(self) -> bool:
        """Whether every adjacent pair is ordered with probability at least :attr:`target`."""
        return all(p >= self.target for p in self.pair_probability)

    @property
    def total_episodes(self) -> int:
        return int(sum(self.episodes.values()))

    def as_dict(self) -> dict[str, object]:
        return {
            'order': list(self.order),
            'means': {k: float(v) for k, v in self.means.items()},
            'adjacent_pairs': [
                {'above': a, 'below': b, 'probability': float(p)}
                for a, b, p in zip(self.order, self.order[1:], self.pair_probability)],
            'target': self.target,
            'decided': self.decided,
            'episodes': dict(self.episodes),
            'total_episodes': self.total_episodes,
        }


def check_target(target: float, name: str = 'until_decided') -> float:
    """Return ``target`` if it is a probability in (0.5, 1); else raise :class:`ConfigError`."""
    if not (isinstance(target, (int, float)) and math.isfinite(target) and 0.5 < target < 1.0):
        raise ConfigError(f'{name} must be a probability in (0.5, 1), got {target!r}')
    return float(target)


def posterior_means(scores: Sequence[float], draws: int, rng: np.random.Generator) -> np.ndarray:
    """Return ``draws`` Bayesian-bootstrap draws of the mean of ``scores`` (with the prior)."""
    values, counts = np.unique(np.concatenate([np.asarray(scores, dtype=float),
                                               PRIOR_OBSERVATIONS]), return_counts=True)
    # Dirichlet(1, ..., 1) weights summed over equal values are Dirichlet(counts): drawn as
    # normalised Gamma(count) variables, one per distinct value (a progression has few).
    gammas = rng.gamma(counts.astype(float), size=(draws, values.size))
    return (gammas @ values) / gammas.sum(axis=1)


def ranking_state(scores: Mapping[str, Sequence[float]], target: float, draws: int = 4000,
                  seed: int = 0) -> RankingState:
    """Return the :class:`RankingState` of per-policy progressions ``scores``.

    Raises:
        DataError: fewer than two policies, or a progression outside [0, 1] or not finite.
        ConfigError: ``target`` not in (0.5, 1).
    """
    check_target(target)
    if len(scores) < 2:
        raise DataError(f'a ranking needs at least two policies, got {len(scores)}')
    for policy, values in scores.items():
        arr = np.asarray(values, dtype=float)
        if arr.size and (not np.all(np.isfinite(arr)) or arr.min() < 0.0 or arr.max() > 1.0):
            raise DataError(f'policy {policy!r}: progressions must lie in [0, 1], got '
                            f'{arr.tolist()}')
    rng = np.random.default_rng(seed)
    names = list(scores)
    samples = np.stack([posterior_means(scores[p], draws, rng) for p in names], axis=1)
    means = samples.mean(axis=0)
    # Ties in the point estimate keep the caller's order (stable), so a report is repeatable.
    idx = sorted(range(len(names)), key=lambda i: -means[i])
    probs = []
    for a, b in zip(idx, idx[1:]):
        diff = samples[:, a] - samples[:, b]
        probs.append(float(np.mean(diff > 0) + 0.5 * np.mean(diff == 0)))
    return RankingState(
        order=tuple(names[i] for i in idx), means={p: float(m) for p, m in zip(names, means)},
        pair_probability=tuple(probs), target=float(target),
        episodes={p: len(scores[p]) for p in names})


@dataclasses.dataclass(frozen=True)
class Request:
    """The next episode to run: which policy, on which task, with its per-(policy, task) index."""

    policy: str
    task: str
    index: int


class AdaptiveRanking:
    """Chooses episodes one at a time until the ranking is decided or the budget is spent.

    Usage: ``while (req := ranking.next()) is not None: ranking.record(req, progression)``.

    Args:
        policies: the policies to rank (at least two).
        tasks: the task mix; each policy cycles through it in order.
        target: ``P``, the probability every adjacent pair must reach.
        budget: at most this many episodes in all.
        min_per_policy: episodes per policy before the ranking may stop or adapt (default: one
            per task, and at least 2).
        allocation: ``'adaptive'`` or ``'uniform'`` (round-robin; the fixed design).
        draws: posterior draws per decision.
        seed: seeds the posterior draws (the choice of episodes is then deterministic given the
            outcomes).
    """

    def __init__(self, policies: Sequence[str], tasks: Sequence[str], target: float,
                 budget: int, min_per_policy: int = 0, allocation: str = 'adaptive',
                 draws: int = 2000, seed: int = 0) -> None:
        self.target = check_target(target)
        if len(set(policies)) != len(policies) or len(policies) < 2:
            raise ConfigError(f'until_decided needs at least two distinct policies, got '
                              f'{list(policies)}')
        if not tasks:
            raise ConfigError('until_decided needs at least one task')
        if allocation not in ALLOCATIONS:
            raise ConfigError(f'allocation must be one of {ALLOCATIONS}, got {allocation!r}')
        self.policies = list(policies)
        self.tasks = list(tasks)
        self.min_per_policy = max(min_per_policy or len(self.tasks), 2)
        if budget < self.min_per_policy * len(self.policies):
            raise ConfigError(
                f'budget {budget} is below the {self.min_per_policy} episodes per policy the '
                f'ranking needs before it can stop ({self.min_per_policy * len(self.policies)} '
                f'for {len(self.policies)} policies)')
        self.budget = int(budget)
        self.allocation = allocation
        self.draws = int(draws)
        self.seed = int(seed)
        self.scores: dict[str, list[float]] = {p: [] for p in self.policies}
        self._pending: dict[str, int] = {p: 0 for p in self.policies}
        self._turn = 0
        self.state = ranking_state(self.scores, self.target, self.draws, self.seed)

    def _request(self, policy: str) -> Request:
        k = len(self.scores[policy]) + self._pending[policy]
        task = self.tasks[k % len(self.tasks)]
        return Request(policy=policy, task=task, index=k // len(self.tasks))

    @property
    def spent(self) -> int:
        return sum(len(v) for v in self.scores.values())

    @property
    def finished(self) -> bool:
        """Whether the ranking is decided (after the minimum) or the budget is spent."""
        if self.spent >= self.budget:
            return True
        if min(len(v) for v in self.scores.values()) < self.min_per_policy:
            return False
        return self.state.decided

    def next(self) -> Request | None:
        """Return the next episode to run, or ``None`` when :attr:`finished`."""
        if self.finished:
            return None
        behind = [p for p in self.policies if len(self.scores[p]) < self.min_per_policy]
        if self.allocation == 'uniform' or behind:
            pool = behind or self.policies
            policy = min(pool, key=lambda p: (len(self.scores[p]),
                                               (self.policies.index(p) - self._turn)
                                               % len(self.policies)))
            self._turn = (self.policies.index(policy) + 1) % len(self.policies)
            return self._request(policy)
        return self._request(self._most_informative())

    def _most_informative(self) -> str:
        state = self.state
        open_pairs = [(p, k) for k, p in enumerate(state.pair_probability) if p < self.target]
        _, k = min(open_pairs)
        pair = (state.order[k], state.order[k + 1])
        rng = np.random.default_rng(self.seed + self.spent + 1)
        spread = {p: float(np.var(posterior_means(self.scores[p], self.draws, rng)))
                  for p in pair}
        # The larger variance gains most from one more episode; a tie goes to fewer episodes.
        return max(pair, key=lambda p: (spread[p], -len(self.scores[p])))

    def record(self, request: Request, progression: float) -> RankingState:
        """Add the finished episode's progression and return the new :class:`RankingState`."""
        if not (math.isfinite(progression) and 0.0 <= progression <= 1.0):
            raise DataError(f'progression must lie in [0, 1], got {progression!r}')
        self.scores[request.policy].append(float(progression))
        self.state = ranking_state(self.scores, self.target, self.draws, self.seed)
        return self.state


def run_until_decided(ranking: AdaptiveRanking,
                      episode: Callable[[Request], float]) -> RankingState:
    """Drive ``ranking`` with ``episode(request) -> progression`` until it is finished."""
    while (request := ranking.next()) is not None:
        ranking.record(request, episode(request))
    return ranking.state


@dataclasses.dataclass(frozen=True)
class PowerRow:
    """Episodes per policy a fixed design needs to order one adjacent pair at ``target``."""

    above: str
    below: str
    difference: float
    episodes_per_policy: int | None  # None: the pilot shows no difference to detect

    def as_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def fixed_design_power(pilot: Mapping[str, Sequence[float]], target: float,
                       cap: int = 100_000) -> list[PowerRow]:
    """Return, per adjacent pair of the pilot's ranking, the episodes per policy a fixed design
    needs so that ``P(order) >= target`` at the pilot's means and spreads.

    Normal approximation of the difference of two means: with per-episode variances
    ``s_a^2, s_b^2`` (the pilot's, with the same two pseudo-observations as the posterior, so a
    constant pilot still has a spread) and difference ``d``, a design of ``n`` episodes each
    orders the pair with probability ``Phi(d / sqrt((s_a^2 + s_b^2) / n))``, so
    ``n = ceil(z_P^2 (s_a^2 + s_b^2) / d^2)``. The design's total is ``n`` times the number of
    policies, with ``n`` the largest over the pairs.

    Raises:
        DataError: fewer than two policies, or a policy with no pilot episodes.
    """
    check_target(target, 'power')
    if len(pilot) < 2:
        raise DataError(f'power needs at least two policies, got {len(pilot)}')
    stats = {}
    for policy, values in pilot.items():
        if len(values) == 0:
            raise DataError(f'policy {policy!r} has no pilot episodes')
        arr = np.concatenate([np.asarray(values, dtype=float), PRIOR_OBSERVATIONS])
        stats[policy] = (float(np.mean(values)), float(np.var(arr, ddof=1)))
    order = sorted(pilot, key=lambda p: -stats[p][0])
    z = statistics.NormalDist().inv_cdf(target)
    rows = []
    for a, b in zip(order, order[1:]):
        d = stats[a][0] - stats[b][0]
        variance = stats[a][1] + stats[b][1]
        n = None if d <= 0 else min(cap, max(1, math.ceil(z * z * variance / (d * d))))
        rows.append(PowerRow(above=a, below=b, difference=d, episodes_per_policy=n))
    return rows


# -- a paired evaluation's plan, chosen as it goes (``paired-eval --until-decided P``) --------


def evaluation_cells(config: EvalConfig) -> list[tuple[str, str]]:
    """Return the runnable (task, perturbation) cells of ``config``: the mix each policy cycles."""
    return [(t, c) for t in config.tasks for c in config.perturbations
            if not perturbations.skip_reason(t, c)]


def default_budget(config: EvalConfig) -> int:
    """The pair budget when none is given: four times the fixed plan's pairs."""
    return 4 * config.episodes_per_cell * len(evaluation_cells(config)) * len(config.policies)


def decided_ranking(config: EvalConfig, seed: int = 0) -> AdaptiveRanking:
    """Return the :class:`AdaptiveRanking` of ``config`` (its ``until_decided`` and budget).

    Its "tasks" are the indices of :func:`evaluation_cells`, so a policy cycles through every
    runnable (task, perturbation) cell; :func:`spec_for` turns a request into the pair's spec.
    """
    cells = evaluation_cells(config)
    labels = [e.label for e in config.policy_entries()]
    return AdaptiveRanking(labels, [str(i) for i in range(len(cells))], config.until_decided,
                           budget=config.budget or default_budget(config),
                           allocation=config.allocation, seed=seed)


def spec_for(config: EvalConfig, request: Request,
             sampler: Callable[[str, int], dict] | None = None) -> EpisodeSpec:
    """Return the pair spec of ``request``: the fixed plan's seed and pair id for the same
    (task, perturbation, index, policy), so a fixed run and an adaptive run share episodes."""
    task, code = evaluation_cells(config)[int(request.task)]
    seed = derive_seed(config.seed, task, code, request.index)
    return EpisodeSpec(
        task=task, seed=seed, policy=request.policy, perturbation=code,
        intensity=config.intensity, max_steps=config.max_steps,
        pair_id=f'{task}/{code}/{request.index}/{request.policy}',
        initial_state=sampler(task, seed) if sampler is not None else {})


__all__ = [
    'ALLOCATIONS', 'AdaptiveRanking', 'PRIOR_OBSERVATIONS', 'PowerRow', 'RankingState',
    'Request', 'check_target', 'decided_ranking', 'default_budget', 'evaluation_cells',
    'fixed_design_power', 'posterior_means', 'ranking_state', 'run_until_decided', 'spec_for',
]
