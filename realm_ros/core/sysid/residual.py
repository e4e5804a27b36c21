"""What system identification could not fit: the structure of the twin's held-out residual.

The residual of one replay is r = q_twin - q_measured per control step and joint, rad. A twin
that models the arm leaves the sensor noise: white, uncorrelated with the motion, at the noise
floor. What is left above that floor, and how it is shaped, says which effect lies outside the
twin's model (docs/sysid.md, "What the fit could not fit"):

* **RMSE with an interval**: per joint, before and after the fit, with a 95 % moving-block
  bootstrap interval over steps (blocks of ``block`` steps, 1 s, so the residual's
  autocorrelation is kept inside a block).
* **Noise floor**: std(r[k+1] - r[k]) / sqrt(2) per joint, the white part of the residual, an
  upper bound of the sensor noise (a smooth residual adds little to it).
* **Correlation with sign(velocity)** (dry friction whose shape or asymmetry the twin's
  Coulomb term cannot take), **with acceleration** (inertia, compliance, an inner-loop lag) and
  the **bias** (mean / RMSE: a configuration-dependent offset such as gravity sag).
* **Whiteness**: the residual's autocorrelation at lags 1..``lags``; the Ljung-Box statistic
  Q = n (n + 2) sum rho_k^2 / (n - k) against its chi-square 95 % point (white if below).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

from realm_ros.core.sysid.data import Trajectory

#: chi-square 95 % points for 1..20 degrees of freedom (the Ljung-Box test's threshold).
_CHI2_95 = (3.841, 5.991, 7.815, 9.488, 11.070, 12.592, 14.067, 15.507, 16.919, 18.307,
            19.675, 21.026, 22.362, 23.685, 24.996, 26.296, 27.587, 28.869, 30.144, 31.410)
#: |correlation| above which a residual is said to follow a motion quantity.
STRUCTURE_CORRELATION = 0.3
#: After-fit RMSE this many times the noise floor (its interval's low end) = not fitted.
ABOVE_FLOOR = 1.5


@dataclasses.dataclass(frozen=True)
class ResidualAnalysis:
    """Per-joint figures of the held-out residual, rad unless named; 7 values each."""

    rmse_before: list[float]
    rmse_before_ci: list[list[float]]
    rmse_after: list[float]
    rmse_after_ci: list[list[float]]
    noise_floor: list[float]
    corr_velocity_sign: list[float]
    corr_acceleration: list[float]
    bias: list[float]
    autocorrelation: list[list[float]]
    ljung_box: list[float]
    ljung_box_95: float
    steps: int
    findings: list[str]

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return dataclasses.asdict(self)


def _block_bootstrap_rmse(r: np.ndarray, block: int, n_resamples: int,
                          rng: np.random.Generator) -> np.ndarray:
    """Return (n_resamples, 7) RMSEs of moving-block resamples of the (n, 7) residual."""
    n = len(r)
    block = max(1, min(block, n))
    starts = np.arange(n - block + 1)
    per_block = np.array([np.mean(r[s:s + block] ** 2, axis=0) for s in starts])
    picks = rng.integers(0, len(starts), size=(n_resamples, max(1, n // block)))
    return np.sqrt(per_block[picks].mean(axis=1))


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation, 0 where either side is constant."""
    sa, sb = np.std(a), np.std(b)
    if sa < 1e-15 or sb < 1e-15:
        return 0.0
    return float(np.mean((a - a.mean()) * (b - b.mean())) / (sa * sb))


def analyse_residual(simulated: Sequence[np.ndarray], trajectories: Sequence[Trajectory], *,
            noise_std: float | None = None, block: int = 15, lags: int = 10,
            n_resamples: int = 1000, seed: int = 0) -> ResidualAnalysis:
    """Analyse the residual of candidates 0 (before) and 1 (after) of ``simulated``.

    Args:
        simulated: per trajectory, a (2, K, 7) array: the twin before and after the fit.
        trajectories: the recorded runs (held out from the fit).
        noise_std: the sensor noise if known (a ``--truth`` file), rad; else the floor is
            estimated from the residual.
        block: bootstrap block length, steps; lags: autocorrelation lags for the whiteness test.
    """
    before = np.concatenate([s[0] - t.measured for s, t in zip(simulated, trajectories)])
    after = np.concatenate([s[1] - t.measured for s, t in zip(simulated, trajectories)])
    velocity = np.concatenate([t.measured_dq for t in trajectories])
    acceleration = np.concatenate([np.gradient(t.measured_dq, t.dt, axis=0)
                                   for t in trajectories])
    rng = np.random.default_rng(seed)
    ci = {}
    for name, r in (('before', before), ('after', after)):
        boot = _block_bootstrap_rmse(r, block, n_resamples, rng)
        ci[name] = np.quantile(boot, [0.025, 0.975], axis=0).T.tolist()
    # The white part of the residual, from first differences inside each trajectory.
    diffs = np.concatenate([np.diff(s[1] - t.measured, axis=0)
                            for s, t in zip(simulated, trajectories) if t.steps > 1])
    floor = np.std(diffs, axis=0) / np.sqrt(2.0)
    if noise_std is not None and noise_std > 0:
        floor = np.full(7, noise_std)
    n = len(after)
    lags = max(1, min(lags, n - 2, len(_CHI2_95)))
    centred = after - after.mean(axis=0)
    var = np.sum(centred ** 2, axis=0)
    acf = np.array([[float(np.sum(centred[k:, j] * centred[:-k, j]) / var[j]) if var[j] > 0
                     else 0.0 for k in range(1, lags + 1)] for j in range(7)])
    ljung = n * (n + 2) * np.sum(acf ** 2 / (n - np.arange(1, lags + 1)), axis=1)
    rmse_after = np.sqrt(np.mean(after ** 2, axis=0))
    analysis = ResidualAnalysis(
        rmse_before=np.sqrt(np.mean(before ** 2, axis=0)).tolist(),
        rmse_before_ci=ci['before'], rmse_after=rmse_after.tolist(), rmse_after_ci=ci['after'],
        noise_floor=floor.tolist(),
        corr_velocity_sign=[_corr(after[:, j], np.sign(velocity[:, j])) for j in range(7)],
        corr_acceleration=[_corr(after[:, j], acceleration[:, j]) for j in range(7)],
        bias=(after.mean(axis=0) / np.maximum(rmse_after, 1e-15)).tolist(),
        autocorrelation=acf.tolist(), ljung_box=ljung.tolist(),
        ljung_box_95=_CHI2_95[lags - 1], steps=n, findings=[])
    return dataclasses.replace(analysis, findings=findings(analysis))


def findings(a: ResidualAnalysis) -> list[str]:
    """Return one sentence per effect the residual shows to lie outside the twin's model."""
    joints = range(len(a.rmse_after))

    def which(test: Any) -> str:
        return ', '.join(f'q{j + 1}' for j in joints if test(j))

    out = []
    # Structure is read only where something is left: a residual at the floor is the sensor
    # (its small colour there comes from the recording, not from the arm).
    left = [a.rmse_after_ci[j][0] > ABOVE_FLOOR * a.noise_floor[j] for j in joints]
    above = which(lambda j: left[j])
    if above:
        out.append(f'above the noise floor after the fit ({above}): the twin does not model '
                   'all of the arm')
    else:
        out.append('at the noise floor on every joint: nothing left that the data resolve')
    sign = which(lambda j: left[j] and abs(a.corr_velocity_sign[j]) > STRUCTURE_CORRELATION)
    if sign:
        out.append(f'follows sign(velocity) ({sign}): friction whose shape or asymmetry '
                   "MuJoCo's symmetric dry friction cannot take (e.g. Gaz et al.'s sigmoid)")
    acc = which(lambda j: left[j] and abs(a.corr_acceleration[j]) > STRUCTURE_CORRELATION)
    if acc:
        out.append(f'follows acceleration ({acc}): inertia, joint compliance or an inner-loop '
                   'lag the fitted armature and whole-step latency do not express')
    bias = which(lambda j: left[j] and abs(a.bias[j]) > 0.5)
    if bias:
        out.append(f'biased (mean > half the RMSE; {bias}): a configuration-dependent offset '
                   'such as gravity sag through a compliant joint')
    coloured = which(lambda j: left[j] and a.ljung_box[j] > a.ljung_box_95)
    if coloured:
        out.append(f'not white (Ljung-Box above its 95 % point; {coloured}): slow, '
                   'state-dependent error, not sensor noise')
    return out
