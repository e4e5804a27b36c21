"""Adaptive allocation until a ranking is decided, and a fixed design's power (pure)."""

from __future__ import annotations

import numpy as np
import pytest

from realm_ros.core import allocation
from realm_ros.core.errors import ConfigError, DataError


def test_posterior_keeps_uncertainty_of_constant_scores():
    rng = np.random.default_rng(0)
    draws = allocation.posterior_means([0.0] * 8, 20000, rng)
    # n zeros plus the pseudo-observations 0 and 1: Dirichlet weight on 1 ~ Beta(1, n + 1).
    assert draws.mean() == pytest.approx(1 / 10, abs=0.005)
    assert draws.std() > 0.05


def test_ranking_state_orders_and_probabilities():
    state = allocation.ranking_state(
        {'a': [0.2] * 20, 'b': [0.9] * 20, 'c': [0.5] * 3}, target=0.95, seed=1)
    assert state.order == ('b', 'c', 'a')
    assert len(state.pair_probability) == 2
    assert all(0.5 < p <= 1.0 for p in state.pair_probability)
    assert state.episodes == {'a': 20, 'b': 20, 'c': 3}


def test_ranking_state_of_identical_policies_is_not_decided():
    state = allocation.ranking_state({'a': [0.5] * 30, 'b': [0.5] * 30}, target=0.9)
    assert state.pair_probability[0] == pytest.approx(0.5, abs=0.05)
    assert not state.decided


@pytest.mark.parametrize('bad', [0.5, 1.0, 0.2, float('nan'), 'x'])
def test_target_must_be_a_probability_above_half(bad):
    with pytest.raises(ConfigError, match='until_decided'):
        allocation.check_target(bad)


def test_bad_progressions_are_refused():
    with pytest.raises(DataError, match="policy 'a'"):
        allocation.ranking_state({'a': [1.5], 'b': [0.0]}, target=0.9)
    ranking = allocation.AdaptiveRanking(['a', 'b'], ['t'], 0.9, budget=10)
    with pytest.raises(DataError, match='progression'):
        ranking.record(ranking.next(), float('nan'))


def test_budget_below_the_minimum_is_refused():
    with pytest.raises(ConfigError, match='budget 3'):
        allocation.AdaptiveRanking(['a', 'b'], ['t1', 't2'], 0.9, budget=3)


def _simulate(means, allocation_rule, seed, budget=600, target=0.95):
    rng = np.random.default_rng(seed)
    ranking = allocation.AdaptiveRanking(list(means), ['t1', 't2'], target, budget=budget,
                                         allocation=allocation_rule, seed=seed)
    requests = []

    def episode(req):
        requests.append(req)
        return float(rng.random() < means[req.policy])  # a success-or-nothing episode

    state = allocation.run_until_decided(ranking, episode)
    return state, requests


def test_tasks_are_balanced_per_policy():
    _, requests = _simulate({'a': 0.9, 'b': 0.1}, 'adaptive', seed=3)
    for policy in ('a', 'b'):
        tasks = [r.task for r in requests if r.policy == policy]
        assert abs(tasks.count('t1') - tasks.count('t2')) <= 1
        assert tasks[:2] == ['t1', 't2']
        indices = [(r.task, r.index) for r in requests if r.policy == policy]
        assert len(set(indices)) == len(indices)  # no (task, index) twice


def test_adaptive_spends_episodes_on_the_close_pair():
    # a and b are far apart; b and c are close: the close pair should get the episodes.
    means = {'a': 0.95, 'b': 0.55, 'c': 0.35}
    state, requests = _simulate(means, 'adaptive', seed=5)
    counts = {p: sum(r.policy == p for r in requests) for p in means}
    assert state.decided
    assert state.order == ('a', 'b', 'c')
    assert counts['a'] < counts['b'] and counts['a'] < counts['c']


def test_adaptive_needs_fewer_episodes_than_uniform_on_average():
    means = {'a': 0.95, 'b': 0.6, 'c': 0.4}
    adaptive = [_simulate(means, 'adaptive', s)[0].total_episodes for s in range(8)]
    uniform = [_simulate(means, 'uniform', s)[0].total_episodes for s in range(8)]
    assert np.mean(adaptive) < np.mean(uniform)


def test_uniform_is_round_robin():
    _, requests = _simulate({'a': 0.9, 'b': 0.5, 'c': 0.1}, 'uniform', seed=2, budget=30)
    counts = [sum(r.policy == p for r in requests) for p in 'abc']
    assert max(counts) - min(counts) <= 1


def test_a_tie_exhausts_the_budget_and_says_so():
    state, requests = _simulate({'a': 0.5, 'b': 0.5}, 'adaptive', seed=0, budget=40)
    assert len(requests) == 40
    assert not state.decided


def test_fixed_design_power_matches_the_normal_approximation():
    pilot = {'hi': [1.0, 0.8, 0.9, 1.0], 'lo': [0.2, 0.4, 0.3, 0.1]}
    (row,) = allocation.fixed_design_power(pilot, 0.95)
    assert (row.above, row.below) == ('hi', 'lo')
    var = sum(np.var(np.concatenate([v, [0.0, 1.0]]), ddof=1) for v in pilot.values())
    d = np.mean(pilot['hi']) - np.mean(pilot['lo'])
    assert row.episodes_per_policy == int(np.ceil(1.6448536 ** 2 * var / d ** 2))


def test_fixed_design_power_is_checked_by_simulation():
    # The design of n per policy from the formula orders the pair in about P of repeated runs.
    rng = np.random.default_rng(0)
    p_hi, p_lo = 0.7, 0.5
    pilot = {'hi': list((rng.random(400) < p_hi).astype(float)),
             'lo': list((rng.random(400) < p_lo).astype(float))}
    (row,) = allocation.fixed_design_power(pilot, 0.9)
    n = row.episodes_per_policy
    wins = [(rng.random(n) < p_hi).mean() > (rng.random(n) < p_lo).mean() for _ in range(2000)]
    assert 0.85 < np.mean(wins) < 0.97


def test_power_of_equal_pilots_is_undefined():
    (row,) = allocation.fixed_design_power({'a': [0.5, 0.5], 'b': [0.5, 0.5]}, 0.9)
    assert row.episodes_per_policy is None
    with pytest.raises(DataError, match='no pilot'):
        allocation.fixed_design_power({'a': [], 'b': [0.5]}, 0.9)
