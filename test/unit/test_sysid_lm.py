"""The least-squares fit (``--method lm``, the default): recovery of known parameters,
confidence intervals, the latency profile's rule with it, and the CLI (``--method cma`` too)."""

import numpy as np
import pytest
from twin_helpers import arm_run, write_trajectory_bags
import yaml

from realm_ros.backends.mujoco.rollout import TwinRollout
from realm_ros.core import robot, sysid
from realm_ros.core.config import DynamicsParams

TRUE = DynamicsParams(friction=(0.4, 0.6, 0.35, 0.5, 0.2, 0.25, 0.1),
                      armature=(0.3, 0.4, 0.2, 0.35, 0.12, 0.1, 0.06))


def _data(latency_s=0.0, seeds=(2, 3), duration=3.0, noise=0.0):
    """Runs of MujocoWorld with TRUE dynamics (the "real" arm), optional encoder noise."""
    rng = np.random.default_rng(7)
    trajs = []
    for seed in seeds:
        targets = sysid.excitation_trajectory(sysid.ExcitationSpec(duration_s=duration), seed)
        q, dq = arm_run(TRUE, targets, latency_s)
        q = q + rng.normal(0.0, noise, q.shape)
        trajs.append(sysid.Trajectory(f's{seed}', robot.RESET_Q.copy(), np.zeros(7), 0.0,
                                      targets, np.zeros(len(targets)), q, dq, 1 / 15))
    return trajs


def _vector(p):
    return np.r_[p.friction, p.armature]


def test_least_squares_recovers_known_parameters_with_intervals():
    """From the centre of the box (0.055 N m, 0.087 kg m^2: 2-7x off every parameter), on the
    fixed residual of every window: exact on noise-free data (intervals ~0, the documented
    collapse); with 0.5 mrad noise within a few % and inside the reported intervals' scale."""
    trajs = _data()
    rollout = TwinRollout()
    result = sysid.fit(rollout, trajs, method='lm', window=15, lm_windows=0, generations=12)
    error = np.abs(_vector(result.params) / _vector(TRUE) - 1)
    assert error.max() < 1e-3, error
    assert result.intervals is not None and len(result.intervals) == 14
    assert max(result.intervals) < 1e-3, result.intervals
    assert 'LM' in result.stop_reason and 'maximum' not in result.stop_reason
    assert len(result.history) <= 13 and result.history[-1][4] < 1e-12
    noisy = _data(noise=5e-4)
    result = sysid.fit(rollout, noisy, method='lm', window=15, lm_windows=0, generations=12)
    error = np.abs(_vector(result.params) / _vector(TRUE) - 1)
    ci = np.asarray(result.intervals)
    assert np.all(np.isfinite(ci)) and np.all(ci > 1e-4), ci
    assert np.median(error) < 0.05 and np.all(error < 3 * ci + 0.01), (error, ci)


def test_windows_for_interval_scales_with_the_square_of_the_interval():
    # Intervals shrink as 1 / sqrt(data): 1.5 % on 24 windows needs 24 * 3 ** 2 for 0.5 %.
    assert sysid.windows_for_interval([0.01, 0.015, np.inf], 24, 0.005, 1000) == 216
    assert sysid.windows_for_interval([0.01, 0.015], 24, 0.005, 160) == 160  # at most all
    assert sysid.windows_for_interval([0.004, np.inf], 24, 0.005, 160) == 24  # already met
    assert sysid.windows_for_interval([0.015], 24, 0.0, 160) == 24  # target 0: off


def test_a_sample_of_windows_is_widened_to_the_interval_target():
    """On noisy data a fit on a sample of the windows scatters by its interval; with
    ``lm_interval_target`` one Gauss-Newton step on more windows lands where the fit on all of
    them converges (well inside the intervals) and narrows the intervals. Noise-free data
    (intervals ~0) add nothing."""
    noisy = _data(noise=5e-4)
    rollout = TwinRollout()
    every = sysid.fit(rollout, noisy, method='lm', window=15, lm_windows=0)
    sample = sysid.fit(rollout, noisy, method='lm', window=15, lm_windows=3,
                       lm_interval_target=0.0)
    widened = sysid.fit(rollout, noisy, method='lm', window=15, lm_windows=3,
                        lm_interval_target=1e-3)
    assert 'Gauss-Newton step on 6 windows' in widened.stop_reason, widened.stop_reason
    ci = np.asarray(every.intervals)
    assert np.all(np.asarray(widened.intervals) < np.asarray(sample.intervals))
    off_sample = np.abs(_vector(sample.params) / _vector(every.params) - 1)
    off_widened = np.abs(_vector(widened.params) / _vector(every.params) - 1)
    assert np.all(off_widened < 0.05 * ci) and off_sample.max() > 0.2 * ci.max(), (
        off_widened, off_sample, ci)
    exact = sysid.fit(rollout, _data(), method='lm', window=15, lm_windows=3,
                      lm_interval_target=1e-3)
    assert 'Gauss-Newton' not in exact.stop_reason


def test_a_fit_from_the_centre_starts_on_fewer_windows():
    """``lm_coarse_windows``: from the box's centre LM first converges on a few windows, then
    on all of them from there: the same answer (exact, noise-free data) for fewer candidates
    simulated on the full set."""
    trajs = _data()
    calls = []
    rollout = TwinRollout()
    simulate = rollout.simulate
    rollout.simulate = lambda p, t: calls.append((len(p), len(t))) or simulate(p, t)
    plain = sysid.fit(rollout, trajs, method='lm', window=15, lm_windows=0, lm_coarse_windows=0)
    full = sum(n for n, w in calls if w == 6)
    calls[:] = []
    coarse = sysid.fit(rollout, trajs, method='lm', window=15, lm_windows=0, lm_coarse_windows=2)
    assert 'on 2 windows, then' in coarse.stop_reason, coarse.stop_reason
    assert {w for _, w in calls} == {2, 6}
    assert sum(n for n, w in calls if w == 6) < full, calls
    np.testing.assert_allclose(_vector(coarse.params), _vector(plain.params), rtol=1e-4)
    np.testing.assert_allclose(_vector(coarse.params), _vector(TRUE), rtol=1e-3)


class FreeBatchTwin(TwinRollout):
    """The CPU twin flagged as a GPU evaluator is (``free_batch``: a batch costs the same at any
    size), so the least-squares fit takes its speculative path here."""

    free_batch = True


def test_speculative_jacobians_give_the_same_fit_in_fewer_calls():
    """With ``free_batch`` (WarpRollout) every trial step also simulates the Jacobian's columns
    around it; the fit is the same, and no evaluator call is spent on a Jacobian alone."""
    trajs = _data(seeds=(2,))
    calls = []

    def counted(rollout):
        simulate = rollout.simulate
        rollout.simulate = lambda p, t: calls.append(len(p)) or simulate(p, t)
        return rollout

    plain = sysid.fit(counted(TwinRollout()), trajs, method='lm', window=15, lm_windows=0)
    n_plain, n_jacobians = len(calls), sum(n == len(_vector(TRUE)) for n in calls)
    calls[:] = []
    ahead = sysid.fit(counted(FreeBatchTwin()), trajs, method='lm', window=15, lm_windows=0)
    np.testing.assert_allclose(_vector(ahead.params), _vector(plain.params), rtol=1e-9)
    assert [r[4] for r in ahead.history] == pytest.approx([r[4] for r in plain.history])
    assert n_jacobians >= 3 and len(calls) <= n_plain - n_jacobians + 1, (calls, n_plain)


def test_residual_windows_are_fixed_and_spread_over_every_trajectory():
    trajs = _data(seeds=(2, 3), duration=3.0)  # 3 windows of 15 steps each
    every = sysid.residual_windows(trajs, 15)
    assert len(every) == 6
    some = sysid.residual_windows(trajs, 15, max_windows=3)
    assert [w.name for w in some] == [w.name for w in sysid.residual_windows(trajs, 15, 3)]
    assert {w.name.split('@')[0] for w in some} == {'s2', 's3'}


def test_latency_profile_fits_zero_latency_in_its_main_fit():
    """The fast profile's rule: the main fit goes where the search says, 0 included (it used
    to start at one physics step or more, leaving 0 latency a short refinement)."""
    trajs = _data(latency_s=0.0)
    ident = sysid.identify(TwinRollout().with_latency, trajs,
                           sysid.FitOptions(method='lm', window=15, lm_windows=0),
                           sysid.ProfileOptions(max_latency_s=0.025))
    assert ident.latency_s == 0.0
    scout, main = ident.fit_log[:2]
    assert scout[0] == main[0] == 0.0 and main[2]  # the main fit: at 0, warm-started
    assert np.abs(_vector(ident.fit.params) / _vector(TRUE) - 1).max() < 1e-3
    assert ident.profile[0.0] < 1e-12 < min(v for k, v in ident.profile.items() if k)


@pytest.mark.slow
def test_latency_profile_with_least_squares_finds_a_delay():
    trajs = _data(latency_s=0.0125)
    ident = sysid.identify(TwinRollout().with_latency, trajs,
                           sysid.FitOptions(method='lm', window=15, lm_windows=0),
                           sysid.ProfileOptions(max_latency_s=0.025))
    assert ident.latency_s == pytest.approx(0.0125), ident.profile
    assert np.abs(_vector(ident.fit.params) / _vector(TRUE) - 1).max() < 1e-3


def test_fit_command_lm_default_and_method_cma(tmp_path, capsys):
    """``sysid fit`` fits by least squares unless told otherwise, writes the intervals into
    PARAMS.yaml's metadata and the report; ``--method cma`` still runs CMA-ES; bad input is
    one line and exit 2. ``--quiet`` (docs/cli.md) keeps the bar and the final table with the
    file written, and drops the progress lines."""
    from realm_ros.cli import main
    from realm_ros.core.config import sim_params_latency
    bags = write_trajectory_bags(tmp_path, _data(seeds=(2, 3, 4)))
    out = tmp_path / 'lm' / 'P.yaml'
    assert main(['sysid', 'fit', str(bags), '--out', str(out), '--latency', '0', '--holdout',
                 '1', '--lm-windows', '0', '--quiet']) == 0
    shown = capsys.readouterr()
    printed = shown.out
    assert 'LM iterations' in printed and '95 % CI' in printed
    assert f'wrote {out}' in printed and 'fitting on' not in printed, printed
    assert 'sysid fit' in shown.err and 'gen' in shown.err, shown.err  # the bar stays
    body = yaml.safe_load(out.read_text())
    assert set(body['confidence_95']) == {'friction', 'armature'}
    assert len(body['confidence_95']['armature']) == 7
    np.testing.assert_allclose(DynamicsParams.from_yaml(out).friction, TRUE.friction, rtol=1e-3)
    assert sim_params_latency(out) == 0.0
    report = yaml.safe_load((tmp_path / 'lm' / 'P_report' / 'rmse.json').read_text())
    assert max(report['rmse_rad']['holdout']['after']) < 1e-6
    assert len(report['confidence_95_relative']['friction']) == 7
    cma = tmp_path / 'cma' / 'P.yaml'
    assert main(['sysid', 'fit', str(bags), '--out', str(cma), '--latency', '0', '--method',
                 'cma', '--generations', '3', '--popsize', '4', '--minibatch', '2',
                 '--quiet']) == 0
    printed = capsys.readouterr().out
    assert ' generations' in printed and 'LM iterations' not in printed, printed
    assert 'confidence_95' not in yaml.safe_load(cma.read_text())
    for bad, word in ((['--lm-windows', '-1'], '--lm-windows'),
                      (['--lm-interval-target', '1.5'], 'lm_interval_target'),
                      (['--device', 'gpu', '--engine', 'mjx', '--method', 'lm'], '--method cma'),
                      (['--device', 'gpu', '--method', 'cma'], '--method lm')):
        try:  # refused when the arguments are parsed (argparse exits 2) or when checked
            code = main(['sysid', 'fit', str(bags), '--out', str(tmp_path / 'x.yaml'),
                         '--quiet'] + bad)
        except SystemExit as exc:
            code = exc.code
        assert code == 2, bad
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and word in err, err
    assert not (tmp_path / 'x.yaml').exists()
