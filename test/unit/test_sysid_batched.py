"""The batched least-squares identification (core/sysid/lsq_batch.py) on a toy evaluator.

The toy is analytic (no MuJoCo, milliseconds): per window step ``q = f * sin(t) + a * t^2 +
0.05 * delay * cos(3 t)`` per joint, ``t`` the window's targets, ``f``/``a`` friction and
armature, ``delay`` the latency in physics steps, so the latency term cannot be absorbed by the
parameters and the residual is smallest at the true latency. It checks the lockstep LM
(every latency from the box's centre, the best few on to xtol) against the truth and against
``sysid.identify``'s sequential profile on the same toy; the MuJoCo Warp evaluator that this
fit is for runs in ``bench/bench_sysid_warp.py`` (a GPU).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from realm_ros.core import sysid
from realm_ros.core.config import DynamicsParams
from realm_ros.core.sysid.lsq_batch import BatchedLeastSquares, identify_batched

PHYSICS_HZ = 240.0
TRUTH = DynamicsParams(friction=(0.8, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1),
                       armature=(0.3, 0.25, 0.2, 0.15, 0.1, 0.08, 0.05),
                       damping=(0.0,) * 7)


def vector(p: DynamicsParams) -> np.ndarray:
    return np.r_[p.friction, p.armature]


def toy_q(params: DynamicsParams, targets: np.ndarray, latency_s: float) -> np.ndarray:
    return toy_batch(vector(params)[None], targets, latency_s)[0]


def toy_batch(vectors: np.ndarray, targets: np.ndarray, latency_s: float) -> np.ndarray:
    """(P, K, 7) toy joint positions of (P, 14) candidates on one window's (K, 7) targets."""
    f = vectors[:, None, :7]
    a = vectors[:, None, 7:14]
    delay = round(latency_s * PHYSICS_HZ)
    return f * np.sin(targets) + a * targets ** 2 + 0.05 * delay * np.cos(3 * targets)


def trajectories(latency_s: float, n: int = 4, steps: int = 60, noise: float = 0.0,
                 seed: int = 0) -> list[sysid.Trajectory]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        targets = rng.uniform(-1.5, 1.5, (steps, 7))
        measured = toy_q(TRUTH, targets, latency_s) + rng.normal(0, noise, (steps, 7))
        out.append(sysid.Trajectory(name=f'toy{i}', q0=targets[0], dq0=np.zeros(7),
                                    gripper0=0.0, targets=targets, gripper=np.zeros(steps),
                                    measured=measured, measured_dq=np.zeros((steps, 7)),
                                    dt=1 / 15))
    return out


class ToyGroups:
    """A ``simulate_groups`` over the toy, counting calls (what a GPU pays for)."""

    def __init__(self) -> None:
        self.calls = 0
        self.rollouts = 0

    def __call__(self, groups, windows):
        self.calls += 1
        out = []
        for lat, vectors in groups:
            self.rollouts += len(vectors) * len(windows)
            out.append([toy_batch(vectors, w.targets, lat) for w in windows])
        return out


class ToyEvaluator(sysid.BatchEvaluator):
    """The same toy as a CPU ``BatchEvaluator`` for ``sysid.identify``."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.timing: dict[str, float] = {}

    def least_squares(self):
        from mujoco import minimize
        return minimize.least_squares

    def simulate(self, params, trajectories):
        vectors = np.array([vector(p) for p in params])
        return [toy_batch(vectors, w.targets, self.latency_s) for w in trajectories]


OPTIONS = sysid.FitOptions(method='lm', generations=12, window=15, lm_windows=12)


@pytest.mark.parametrize('true_steps', [0, 3, 7])
def test_batched_fit_finds_the_latency_and_the_parameters(true_steps):
    latency = 0.0 if true_steps == 0 else true_steps / PHYSICS_HZ
    toy = ToyGroups()
    ident = identify_batched(toy, trajectories(latency), OPTIONS, sysid.ProfileOptions())
    assert ident.latency_s == pytest.approx(latency)
    err = np.abs(vector(ident.fit.params) / vector(TRUTH) - 1)
    assert err.max() < 1e-4, err
    # Every latency (13) in lockstep, then 3: one call per round, plus the final score.
    assert toy.calls <= OPTIONS.generations + 2, toy.calls
    assert ident.fit.intervals is not None and len(ident.fit.intervals) == 14
    assert set(ident.profile) == {lat for lat, *_ in ident.fit_log if lat in ident.profile}


def test_batched_fit_agrees_with_the_sequential_profile_on_noisy_data():
    data = trajectories(3 / PHYSICS_HZ, noise=0.01, seed=1)
    batched = identify_batched(ToyGroups(), data, OPTIONS, sysid.ProfileOptions())
    sequential = sysid.identify(ToyEvaluator, data, OPTIONS, sysid.ProfileOptions())
    assert batched.latency_s == sequential.latency_s == pytest.approx(3 / PHYSICS_HZ)
    apart = np.abs(vector(batched.fit.params) / vector(sequential.fit.params) - 1)
    assert apart.max() < 0.01, apart
    # Same residual windows: the batched optimum is no worse than the sequential one.
    windows = sysid.residual_windows(data, OPTIONS.window, OPTIONS.lm_windows)

    def cost(ident):
        sim = ToyEvaluator(ident.latency_s).simulate([ident.fit.params], windows)
        return float(sysid.loss(sim, windows)[0])

    assert cost(batched) <= cost(sequential) * (1 + 1e-6)


def test_a_rejected_step_raises_the_damping_and_is_not_taken():
    data = trajectories(0.0, n=2)
    windows = sysid.residual_windows(data, 15, 4)
    toy = ToyGroups()
    lm = dataclasses.replace(sysid.LeastSquaresOptions(), fd_step=1e-6)
    solver = BatchedLeastSquares(toy, windows, [0.0], lm)
    [problem] = solver.start({0: np.full(14, 0.5)})
    start_cost = problem.cost
    solver.run([problem], 1)
    # One round: either accepted (lower cost) or rejected (x kept, damping up): never worse.
    assert problem.cost <= start_cost
    if problem.cost == start_cost:
        assert problem.mu >= lm.mu_min
    solver.run([problem], 11)
    assert problem.cost < 1e-12 * start_cost or problem.done
