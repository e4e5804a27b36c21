"""Bradley-Terry from preferences (core/preferences.py) against an independent reference.

The reference is written separately from the module: scipy.optimize.minimize on the negative
log-likelihood with the first policy's strength fixed at 0 (another parametrisation than the
module's mean-zero basis), then the sandwich covariance from central finite differences (the
Hessian of the whole log-likelihood, the gradient of each comparison's term), mapped to
mean-zero strengths.
"""

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from realm_ros.core import metrics
from realm_ros.core.errors import DataError
from realm_ros.core.preferences import (
    DEFAULT_PRIOR,
    Comparison,
    DisconnectedError,
    NoEstimateError,
    fit_preferences,
    rank_preferences,
)


def _log_lik_terms(theta, data, ties, log_nu=None):
    """Per-comparison log-likelihood; theta indexed like ``names`` (full vector)."""
    out = []
    for i, j, y in data:
        d = theta[i] - theta[j]
        if ties == 'davidson':
            pi_i, pi_j = math.exp(theta[i]), math.exp(theta[j])
            nu = math.exp(log_nu)
            den = pi_i + pi_j + nu * math.sqrt(pi_i * pi_j)
            p = {1.0: pi_i / den, 0.0: pi_j / den, 0.5: nu * math.sqrt(pi_i * pi_j) / den}[y]
            out.append(math.log(p))
        else:
            p = 1.0 / (1.0 + math.exp(-d))
            out.append(y * math.log(p) + (1 - y) * math.log(1 - p))
    return np.array(out)


def _reference(comparisons, ties='drop', prior=0.0):
    """Return (names, mean-zero scores, their sandwich covariance[, nu]) the slow way."""
    names = sorted({c.first for c in comparisons} | {c.second for c in comparisons})
    index = {p: k for k, p in enumerate(names)}
    data = [(index[c.first], index[c.second], c.outcome) for c in comparisons
            if ties != 'drop' or c.outcome != 0.5]
    met = sorted({(min(i, j), max(i, j)) for i, j, _ in data})
    n = len(names)
    extra = 1 if ties == 'davidson' else 0

    def unpack(b):
        theta = np.concatenate([[0.0], b[:n - 1]])
        return theta, (b[n - 1] if extra else None)

    def penalty(theta):
        return sum(prior * (0.5 * math.log(1 / (1 + math.exp(-(theta[i] - theta[j]))))
                            + 0.5 * math.log(1 / (1 + math.exp(theta[i] - theta[j]))))
                   for i, j in met)

    def nll(b):
        theta, log_nu = unpack(b)
        return -(_log_lik_terms(theta, data, ties, log_nu).sum() + penalty(theta))

    res = minimize(nll, np.zeros(n - 1 + extra), method='BFGS', options={'gtol': 1e-11})
    b = res.x
    h = 1e-4
    k = b.size
    hess = np.zeros((k, k))
    for a in range(k):
        for c in range(k):
            ea, ec = np.eye(k)[a] * h, np.eye(k)[c] * h
            hess[a, c] = (nll(b + ea + ec) - nll(b + ea - ec) - nll(b - ea + ec)
                          + nll(b - ea - ec)) / (4 * h * h)
    grads = np.zeros((len(data), k))
    for a in range(k):
        e = np.eye(k)[a] * h
        up = _log_lik_terms(unpack(b + e)[0], data, ties, unpack(b + e)[1])
        down = _log_lik_terms(unpack(b - e)[0], data, ties, unpack(b - e)[1])
        grads[:, a] = (up - down) / (2 * h)
    bread = np.linalg.inv(hess)  # hess of the negative log-likelihood = information
    cov_b = bread @ (grads.T @ grads) @ bread
    jac = np.zeros((n, k))
    jac[1:, :n - 1] = np.eye(n - 1)
    centre = np.eye(n) - 1.0 / n
    theta = centre @ unpack(b)[0]
    cov = centre @ jac @ cov_b @ jac.T @ centre.T
    nu = math.exp(b[-1]) if extra else None
    return names, theta, cov, nu


def _ladder_comparisons(seed=0, n=120, ties_every=7):
    """Four policies of known strengths judged with noise; some ties."""
    rng = np.random.default_rng(seed)
    truth = {'expert': 1.5, 'good': 0.7, 'sloppy': -0.2, 'poor': -1.0}
    names = list(truth)
    out = []
    for k in range(n):
        a, b = rng.choice(4, size=2, replace=False)
        p = 1 / (1 + math.exp(-(truth[names[a]] - truth[names[b]])))
        outcome = 0.5 if k % ties_every == 0 else float(rng.random() < p)
        out.append(Comparison(names[a], names[b], outcome))
    return out


def _check_against_reference(comparisons, ties, prior=0.0):
    fit = fit_preferences(comparisons, ties=ties, prior=prior)
    names, theta, cov, nu = _reference(comparisons, ties, prior)
    assert list(fit.policies) == names
    scores = fit.scores()
    np.testing.assert_allclose([scores[p] for p in names], theta, atol=2e-6)
    np.testing.assert_allclose(np.array(fit.covariance), cov, atol=5e-5, rtol=1e-3)
    se = {r.policy: r.se for r in fit.rows}
    np.testing.assert_allclose([se[p] for p in names], np.sqrt(np.diag(cov)), rtol=1e-3)
    if nu is not None:
        assert fit.nu == pytest.approx(nu, rel=1e-4)
    return fit


@pytest.mark.parametrize('ties', ['drop', 'half', 'davidson'])
def test_mle_and_sandwich_equal_the_reference(ties):
    comparisons = _ladder_comparisons()
    fit = _check_against_reference(comparisons, ties)
    assert fit.mle_exists and fit.note == ''
    assert [r.policy for r in fit.rows] == ['expert', 'good', 'sloppy', 'poor']
    assert abs(sum(r.score for r in fit.rows)) < 1e-9
    n_ties = sum(c.outcome == 0.5 for c in comparisons)
    assert fit.used == len(comparisons) - (n_ties if ties == 'drop' else 0)
    for row in fit.rows:  # 95 % normal interval around the score
        assert row.ci_low == pytest.approx(row.score - 1.959964 * row.se, abs=1e-5)


def test_ties_change_the_fit_as_each_model_says():
    base = [Comparison('a', 'b', 1.0)] * 3 + [Comparison('a', 'b', 0.0)] * 2
    with_ties = base + [Comparison('a', 'b', 0.5)] * 5
    drop = fit_preferences(with_ties, ties='drop').scores()
    assert drop == pytest.approx(fit_preferences(base).scores())  # ties ignored
    # Half wins: 3 + 2.5 of 10 for a, so the odds are 5.5 : 4.5.
    half = fit_preferences(with_ties, ties='half').scores()
    assert half['a'] - half['b'] == pytest.approx(math.log(5.5 / 4.5), abs=1e-8)
    davidson = fit_preferences(with_ties, ties='davidson')
    # Davidson: pi_a / pi_b = wins_a / wins_b; nu = 2 ties / sqrt-weighted decided games.
    assert davidson.scores()['a'] - davidson.scores()['b'] == pytest.approx(math.log(1.5),
                                                                            abs=1e-7)
    assert davidson.nu == pytest.approx(5 / math.sqrt(3 * 2), rel=1e-6)
    assert [r.ties for r in davidson.rows] == [5, 5]


def test_davidson_nu_equals_closed_form_for_two_policies():
    # Two policies: the MLE is P(a) = w_a / N, P(b) = w_b / N, P(tie) = t / N, so
    # nu = P(tie) / sqrt(P(a) P(b)) = t / sqrt(w_a w_b).
    comparisons = ([Comparison('a', 'b', 1.0)] * 4 + [Comparison('a', 'b', 0.0)] * 1
                   + [Comparison('a', 'b', 0.5)] * 3)
    fit = fit_preferences(comparisons, ties='davidson')
    assert fit.nu == pytest.approx(3 / math.sqrt(4 * 1), rel=1e-7)
    assert fit.scores()['a'] - fit.scores()['b'] == pytest.approx(math.log(4), abs=1e-7)


def test_a_policy_that_never_wins_is_refused_without_a_prior_and_named():
    comparisons = [c for c in _ladder_comparisons(seed=3)
                   if not ('poor' in (c.first, c.second) and (
                       (c.first == 'poor' and c.outcome != 0.0)
                       or (c.second == 'poor' and c.outcome != 1.0)))]
    with pytest.raises(NoEstimateError, match="'poor' never beat 'expert', 'good', 'sloppy'"):
        fit_preferences(comparisons)
    # rank_preferences refits with the documented prior and flags it.
    ranked = rank_preferences(comparisons)
    assert not ranked.mle_exists and ranked.prior == DEFAULT_PRIOR
    assert "'poor' never beat" in ranked.note
    assert ranked.rows[-1].policy == 'poor' and math.isfinite(ranked.rows[-1].score)
    # The penalised estimate and its sandwich equal the reference's, prior included.
    _check_against_reference(comparisons, 'drop', prior=DEFAULT_PRIOR)


def test_a_policy_that_never_loses_is_named_too():
    comparisons = [Comparison('top', 'b', 1.0), Comparison('top', 'c', 1.0),
                   Comparison('b', 'c', 1.0), Comparison('c', 'b', 1.0)]
    with pytest.raises(NoEstimateError, match="'top' never lost to 'b', 'c'"):
        fit_preferences(comparisons)


def test_a_disconnected_comparison_graph_is_refused_even_with_a_prior():
    comparisons = [Comparison('a', 'b', 1.0), Comparison('b', 'a', 1.0),
                   Comparison('c', 'd', 1.0), Comparison('d', 'c', 1.0)]
    for call in (lambda: fit_preferences(comparisons), lambda: rank_preferences(comparisons),
                 lambda: fit_preferences(comparisons, prior=5.0)):
        with pytest.raises(DisconnectedError, match=r'disconnected.*\{a, b\} \| \{c, d\}'):
            call()


def test_ties_only_links_under_drop_is_disconnected_or_empty():
    only_ties = [Comparison('a', 'b', 0.5)] * 3
    with pytest.raises(DataError, match='every one was a tie'):
        fit_preferences(only_ties)
    assert fit_preferences(only_ties, ties='half').scores() == pytest.approx({'a': 0, 'b': 0})
    with pytest.raises(NoEstimateError, match='every one was a tie'):
        fit_preferences(only_ties, ties='davidson')
    with pytest.raises(NoEstimateError, match='at least one tie'):
        fit_preferences([Comparison('a', 'b', 1.0), Comparison('b', 'a', 1.0)], ties='davidson')


def test_bootstrap_intervals_cover_the_estimate_and_are_seeded():
    comparisons = _ladder_comparisons(seed=1)
    one = fit_preferences(comparisons, n_bootstrap=200, seed=4)
    two = fit_preferences(comparisons, n_bootstrap=200, seed=4)
    assert one.rows == two.rows
    for row in one.rows:
        assert row.boot_low < row.score < row.boot_high
        # Percentile bootstrap and sandwich agree roughly on a well-posed problem.
        assert (row.boot_high - row.boot_low) == pytest.approx(row.ci_high - row.ci_low, rel=0.4)
    assert one.bootstrap == 200 and one.bootstrap_failed < 20


def test_clusters_sum_scores_per_cluster_in_the_sandwich():
    comparisons = _ladder_comparisons(seed=2, n=60)
    plain = fit_preferences(comparisons)
    same = fit_preferences([Comparison(c.first, c.second, c.outcome, cluster=str(k))
                            for k, c in enumerate(comparisons)])
    np.testing.assert_allclose(plain.covariance, same.covariance, atol=1e-12)
    judges = fit_preferences([Comparison(c.first, c.second, c.outcome, cluster=str(k % 3))
                              for k, c in enumerate(comparisons)])
    assert judges.scores() == pytest.approx(plain.scores())
    assert not np.allclose(judges.covariance, plain.covariance)


def test_bad_input_is_refused():
    with pytest.raises(DataError, match='outcome must be 1, 0.5 or 0'):
        Comparison('a', 'b', 0.7)
    with pytest.raises(DataError, match='two different policies'):
        Comparison('a', 'a', 1.0)
    with pytest.raises(DataError, match='at least two policies'):
        fit_preferences([])
    with pytest.raises(DataError, match='ties must be one of'):
        fit_preferences([Comparison('a', 'b', 1.0)], ties='split')


def test_as_dict_is_json_ready():
    import json
    fit = fit_preferences(_ladder_comparisons(), n_bootstrap=0)
    text = json.dumps(fit.as_dict(), allow_nan=False)
    assert '"boot_low": null' in text


def test_rank_correlation_conventions():
    assert metrics.kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert metrics.kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    assert metrics.kendall_tau([1, 1, 1], [1, 1, 1]) == 1.0
    assert metrics.kendall_tau([1, 1, 1], [1, 2, 3]) == 0.0
    assert metrics.spearman_rho([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    with pytest.raises(DataError, match='at least 2'):
        metrics.kendall_tau([1], [1])
