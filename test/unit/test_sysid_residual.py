"""``sysid.analyse_residual``: what the fit could not fit, on residuals of known structure."""

import numpy as np

from realm_ros.core import robot, sysid


def _case(residual, velocity, dt=1 / 15):
    """One trajectory whose twin replay differs from the measurement by ``residual``."""
    k = len(residual)
    measured = np.zeros((k, 7))
    traj = sysid.Trajectory('t', robot.RESET_Q.copy(), np.zeros(7), 0.0, np.zeros((k, 7)),
                            np.zeros(k), measured, velocity, dt)
    before = 10 * residual + 0.01
    return [np.stack([before, measured + residual])], [traj]


def test_white_noise_at_the_floor_shows_no_structure():
    rng = np.random.default_rng(0)
    t = np.arange(600)[:, None] / 15
    velocity = np.cos(2 * np.pi * 0.3 * t + np.arange(7)) * np.ones((1, 7))
    sims, trajs = _case(rng.normal(0, 5e-4, (600, 7)), velocity)
    a = sysid.analyse_residual(sims, trajs)
    assert np.allclose(a.noise_floor, 5e-4, rtol=0.15)
    assert np.allclose(a.rmse_after, 5e-4, rtol=0.1)
    assert all(lo < 5e-4 < hi for lo, hi in a.rmse_after_ci)
    assert np.all(np.abs(a.corr_velocity_sign) < 0.15) and np.all(np.abs(a.bias) < 0.2)
    assert sum(q > a.ljung_box_95 for q in a.ljung_box) <= 2  # 5 % false alarms per joint
    assert len(a.findings) == 1  # no structure is read at the floor
    assert a.findings[0].startswith('at the noise floor')
    assert all(lo > 5e-3 for lo, _ in a.rmse_before_ci)  # before: 10x plus 10 mrad


def test_friction_shaped_offset_and_coloured_residuals_are_named():
    rng = np.random.default_rng(1)
    t = np.arange(600)[:, None] / 15
    velocity = np.cos(2 * np.pi * 0.3 * t) * np.ones((1, 7))
    residual = 3e-3 * np.sign(velocity) + rng.normal(0, 5e-4, (600, 7))
    residual[:, 6] = 4e-3 + rng.normal(0, 5e-4, 600)  # q7: a constant sag
    sims, trajs = _case(residual, velocity)
    a = sysid.analyse_residual(sims, trajs, noise_std=5e-4)
    assert np.allclose(a.noise_floor, 5e-4)
    assert all(c > 0.9 for c in a.corr_velocity_sign[:6]) and abs(a.corr_velocity_sign[6]) < 0.2
    assert a.bias[6] > 0.9
    text = ' '.join(a.findings)
    assert 'above the noise floor after the fit (q1, q2, q3, q4, q5, q6, q7)' in text
    assert 'follows sign(velocity) (q1, q2, q3, q4, q5, q6)' in text
    assert 'biased' in text and 'q7' in text.split('biased')[1]
    assert 'not white' in text  # a square wave is not white
