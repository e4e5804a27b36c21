"""Metric functions on hand-computed cases and their edge cases."""

import numpy as np
import pytest

from realm_ros.core import metrics
from realm_ros.core.errors import DataError


def test_pearson_hand_computed():
    sim, real = [0.1, 0.5, 0.9], [0.2, 0.3, 0.7]
    # centred: sim (-0.4, 0, 0.4), real (-0.2, -0.1, 0.3): r = 0.2 / (0.5657 * 0.3742)
    expected = 0.2 / (np.sqrt(0.32) * np.sqrt(0.14))
    assert metrics.pearson_r(sim=sim, real=real) == pytest.approx(expected)
    assert metrics.pearson_r(sim=[1, 2, 3], real=[3, 2, 1]) == pytest.approx(-1.0)


def test_pearson_constant_vectors():
    assert metrics.pearson_r(sim=[0.5, 0.5, 0.5], real=[0.2, 0.2, 0.2]) == 1.0
    assert metrics.pearson_r(sim=[0.5, 0.5, 0.5], real=[0.1, 0.2, 0.3]) == 0.0
    assert metrics.pearson_r(sim=[0.1, 0.2, 0.3], real=[0.4, 0.4, 0.4]) == 0.0


def test_mmrv_hand_computed():
    # Fully reversed: v = (0.2, 0.1, 0.2), mean 1/6.
    assert metrics.mmrv(sim=[0.1, 0.2, 0.3], real=[0.3, 0.2, 0.1]) == pytest.approx(0.5 / 3)
    assert metrics.mmrv(sim=[0.1, 0.2, 0.3], real=[0.2, 0.5, 0.9]) == 0.0


def test_mmrv_is_not_symmetric_magnitudes_come_from_real():
    a, b = [0.0, 1.0, 2.0], [0.0, 0.5, 0.45]
    assert metrics.mmrv(sim=a, real=b) == pytest.approx(2 * 0.05 / 3)
    assert metrics.mmrv(sim=b, real=a) == pytest.approx(2 * 1.0 / 3)


def test_mmrv_ties_in_sim_count_for_the_policy_better_on_real():
    assert metrics.mmrv(sim=[0.5, 0.5], real=[0.2, 0.8]) == pytest.approx(0.3)
    assert metrics.mmrv(sim=[0.2, 0.8], real=[0.5, 0.5]) == pytest.approx(0.0)


def test_gap_rmsd_success_progression():
    assert metrics.mean_abs_gap(sim=[0.1, 0.5], real=[0.3, 0.2]) == pytest.approx(0.25)
    assert metrics.rmsd_vs_default([0.5, 0.2], [0.8, 0.6]) == pytest.approx(
        np.sqrt((0.09 + 0.16) / 2))
    assert metrics.success_rate([1.0, 0.4, 1.0, 0.0]) == 0.5
    assert metrics.mean_progression([1.0, 0.4, 1.0, 0.0]) == pytest.approx(0.6)


@pytest.mark.parametrize('fn', [metrics.pearson_r, metrics.mmrv, metrics.mean_abs_gap,
                                metrics.agreement])
def test_bad_input_raises_clear_errors(fn):
    with pytest.raises(DataError, match='pair up'):
        fn(sim=[0.1, 0.2], real=[0.1, 0.2, 0.3])
    with pytest.raises(DataError, match='NaN'):
        fn(sim=[0.1, float('nan')], real=[0.1, 0.2])
    if fn is not metrics.mean_abs_gap:
        with pytest.raises(DataError, match='at least 2'):
            fn(sim=[0.1], real=[0.1])


def test_metric_roles_must_be_named():
    with pytest.raises(TypeError):
        metrics.mmrv([0.1, 0.2], [0.2, 0.1])  # positional roles are refused


def test_bootstrap_ci_contains_mean_and_degenerates():
    values = np.r_[np.ones(30), np.zeros(10)]
    lo, hi = metrics.bootstrap_ci(values, seed=1)
    assert lo < 0.75 < hi and 0.5 < lo and hi < 0.95
    assert metrics.bootstrap_ci([0.4, 0.4, 0.4]) == (pytest.approx(0.4), pytest.approx(0.4))
    with pytest.raises(DataError):
        metrics.bootstrap_ci([])


def test_bradley_terry_orders_and_splits_ties():
    outcomes = {}
    for seed in range(10):
        outcomes[('t', seed)] = {'good': 1.0, 'mid': 0.6, 'bad': 0.2 if seed % 2 else 0.6}
    ranking = metrics.bradley_terry(outcomes, n_resamples=100)
    assert [r.policy for r in ranking] == ['good', 'mid', 'bad']
    by_name = {r.policy: r for r in ranking}
    # mid vs bad: 5 wins and 5 ties -> 7.5 of 10; good wins all 20 of its comparisons.
    assert by_name['good'].win_rate == 1.0
    assert by_name['mid'].win_rate == pytest.approx((0 + 7.5) / 20)
    assert all(r.ci_low <= r.score <= r.ci_high for r in ranking)
    assert sum(r.score for r in ranking) == pytest.approx(0.0, abs=1e-9)


def test_bradley_terry_all_ties_gives_equal_scores_and_errors():
    ties = {k: {'a': 0.5, 'b': 0.5} for k in range(4)}
    ranking = metrics.bradley_terry(ties, n_resamples=20)
    assert [r.score for r in ranking] == pytest.approx([0.0, 0.0], abs=1e-9)
    with pytest.raises(DataError, match='two policies'):
        metrics.bradley_terry({0: {'a': 1.0}})
    with pytest.raises(DataError, match='nothing to compare'):
        metrics.bradley_terry({0: {'a': 1.0}, 1: {'b': 0.0}})


def test_agreement_intervals_on_a_hand_case():
    """Two policies, two starts: a resample is (0, 0), (1, 1) with probability 1/4 each, or one
    of each (1/2). Real: A 1, 1; B 0, 0. Sim: A 1, 0; B 0, 0. Gap 0 / 0.5 / 0.25; at (1, 1)
    the sim ties A and B, so r = 0 (one side constant) and MMRV = 0.5 (A's swap, magnitude 1)."""
    ci = metrics.agreement_intervals(sim=[[1.0, 0.0], [0.0, 0.0]],
                                     real=[[1.0, 1.0], [0.0, 0.0]], seed=3)
    assert ci['mean_abs_gap'] == [0.0, 0.5]
    assert ci['mmrv'] == [0.0, 0.5]
    assert ci['pearson_r'] == [0.0, 1.0]
    assert ci['resamples'] == 2000 and ci['confidence'] == 0.95


def test_agreement_intervals_identical_starts_give_zero_width_and_missing_are_skipped():
    sim = [[0.8, 0.8, 0.8], [0.2, 0.2, 0.2]]
    real = [[0.9, 0.9, 0.9], [0.1, 0.1, 0.1]]
    ci = metrics.agreement_intervals(sim=sim, real=real)
    assert ci['mean_abs_gap'] == pytest.approx([0.1, 0.1])
    assert ci['pearson_r'] == [1.0, 1.0] and ci['mmrv'] == [0.0, 0.0]
    # A missing episode (NaN): resamples without any of B's episodes are skipped.
    ci = metrics.agreement_intervals(sim=[[0.8, 0.8], [0.2, np.nan]],
                                     real=[[0.9, 0.9], [0.1, np.nan]], n_resamples=400)
    assert 250 < ci['resamples'] < 350  # P(start 1 drawn twice) = 1/4
    assert ci['mean_abs_gap'] == pytest.approx([0.1, 0.1])


@pytest.mark.parametrize('sim, real, match', [
    ([[1.0, 0.0]], [[1.0, 0.0]], 'at least 2 policies'),
    ([[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0]], 'one shape'),
    ([[1.0, np.nan], [0.0, 1.0]], [[1.0, np.nan], [np.nan, np.nan]], 'at least one paired'),
    ([[1.0, np.inf], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]], 'inf'),
])
def test_agreement_intervals_refuse_bad_input(sim, real, match):
    with pytest.raises(DataError, match=match):
        metrics.agreement_intervals(sim=sim, real=real)
