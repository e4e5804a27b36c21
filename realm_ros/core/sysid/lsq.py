"""The least-squares fit: Levenberg-Marquardt (``mujoco.minimize.least_squares``, which the
backend hands over: :meth:`BatchEvaluator.least_squares`) on a fixed residual,
finite-difference Jacobian columns batched through the evaluator.

The residual is ``q_sim - q_real`` (rad) of every step of a fixed set of windows (no random
minibatches: LM needs one function), in the log-scaled unit cube of :class:`ParamSpace` with
its bounds [0, 1]. One Jacobian is one :meth:`BatchEvaluator.simulate` call with 14 candidates
(one column each, forward differences), so the rollout threads run the columns in parallel.
``x_scale='jac'`` rescales the columns per iteration (friction and armature excite the arm
very unequally), and ``xtol`` about 1e-4 stops at the noise floor: on noisy data the steps
after that only move the estimate within its confidence interval (at mujoco's default 1e-8
the fit spends minutes there).

Confidence intervals: the Gauss-Newton covariance ``s^2 (J^T J)^-1`` at the optimum, ``s^2``
the residual variance per degree of freedom, as ``mujoco.sysid`` reports them. They assume
independent residuals; a window's steps are correlated (an error propagates), so they are
optimistic, and on noise-free data (residual ~0) they collapse to ~0.
"""

from __future__ import annotations

import dataclasses
import io
import re
import time
from typing import Callable, Sequence

import numpy as np

from realm_ros.core.config import check_minimums
from realm_ros.core.errors import ConfigError
from realm_ros.core.sysid.data import BatchEvaluator, Trajectory, window_pool
from realm_ros.core.sysid.space import ParamSpace

#: 95 % two-sided normal quantile: intervals are +- this many standard deviations.
Z95 = 1.959964


@dataclasses.dataclass(frozen=True)
class LeastSquaresOptions:
    """How :func:`least_squares_fit` runs.

    Attributes:
        max_iter: most LM iterations (one Jacobian each).
        xtol: stop when the step is below ``xtol * (xtol + |x|)`` (unit-cube units; 1e-4 is
            about 0.1 % in parameter value, below what noise lets one resolve).
        fd_step: forward-difference step, unit-cube units (1e-6: about 6e-6 relative in the
            parameter; the rollouts are deterministic, so no noise to step over).
        mu_min, mu_factor: LM's smallest non-zero damping and its growth factor. Every
            rejected trial step costs one residual evaluation (a full batch of windows), so
            these are coarser than mujoco's defaults (1e-6, 10 ** 0.1: from 0 to a damping
            of 1 took 60 trials, more than four Jacobians, measured); with ``x_scale='jac'``
            the damping of 1 is the scale of the normalised problem.
    """

    max_iter: int = 12
    xtol: float = 1e-4
    fd_step: float = 1e-6
    mu_min: float = 1e-2
    mu_factor: float = 10 ** 0.5

    def __post_init__(self) -> None:
        check_minimums(self, {'max_iter': 1})
        if not 0.0 < self.xtol < 1.0 or not 0.0 < self.fd_step < 0.1:
            raise ConfigError(f'LeastSquaresOptions: xtol and fd_step must be in (0, 1) and '
                              f'(0, 0.1), got {self.xtol}, {self.fd_step}')


def widest_interval(intervals: Sequence[float] | np.ndarray | None) -> float:
    """Return the widest finite relative 95 % half-width of ``intervals`` (0 without any)."""
    finite = [float(v) for v in (() if intervals is None else intervals) if np.isfinite(v)]
    return max(finite, default=0.0)


def windows_for_interval(intervals: Sequence[float] | np.ndarray | None, windows: int,
                         target: float,
                         available: int) -> int:
    """Return how many windows a fit needs for its widest 95 % interval to reach ``target``.

    Gauss-Newton intervals shrink as one over the square root of the data, so ``windows``
    windows with a widest half-width ``w`` need ``windows * (w / target) ** 2``; at most
    ``available``, and ``windows`` when ``w`` is already at most ``target`` (or the target is 0).
    """
    widest = widest_interval(intervals)
    if target <= 0.0 or widest <= target:
        return windows
    return int(min(available, np.ceil(windows * (widest / target) ** 2)))


def residual_windows(trajectories: Sequence[Trajectory], window: int,
                     max_windows: int = 0) -> list[Trajectory]:
    """Return the fixed windows of the residual: every window of ``window`` steps, or, with
    ``max_windows`` > 0 and more windows than that, ``max_windows`` spread evenly over them
    (deterministic: every trajectory contributes in turn)."""
    pool = window_pool(trajectories, window)
    if 0 < max_windows < len(pool):
        pick = np.linspace(0, len(pool) - 1, max_windows).round().astype(int)
        pool = [pool[i] for i in pick]
    return pool


@dataclasses.dataclass
class LeastSquaresFit:
    """What :func:`least_squares_fit` found, in unit-cube coordinates (the
    :class:`~realm_ros.core.sysid.optimise.FitResult` is built from it)."""

    x: np.ndarray
    cost: float            # sum of squared residuals at x, rad^2
    steps: int             # window steps in the residual
    iterations: int
    evaluations: int       # candidates simulated (every Jacobian column is one)
    stop_reason: str
    history: list[tuple[int, int, float, float, float, float]]
    jacobian: np.ndarray | None
    residual: np.ndarray

    def intervals(self, space: ParamSpace) -> np.ndarray:
        """Return the (14,) 95 % half-widths relative to each parameter value (0.01 = +- 1 %);
        inf where the data do not determine a parameter (a flat Jacobian column)."""
        return relative_intervals(self.jacobian, self.residual, space)


def relative_intervals(jac: np.ndarray | None, r: np.ndarray,
                       space: ParamSpace) -> np.ndarray:
    """95 % half-widths of the parameters relative to their values (see the module docstring).

    ``jac``: (m, 14) Jacobian of the residual ``r`` (m,) in unit-cube coordinates. In the
    log-scaled cube a unit-cube error du is a relative error ``log(high / low) * du``.
    """
    n = len(space.low)
    if jac is None:
        return np.full(n, np.inf)
    dof = max(r.size - n, 1)
    s2 = float(r @ r) / dof
    h = jac.T @ jac
    lam, v = np.linalg.eigh(h)
    # A numerically zero eigenvalue makes the parameters of its eigenvector undetermined.
    keep = lam > 1e-12 * max(lam.max(), 1e-300)
    with np.errstate(divide='ignore'):
        inv_lam = np.where(keep, 1.0 / np.where(keep, lam, 1.0), np.inf)
    weights = v ** 2
    var = np.where(weights[:, ~keep].max(axis=1, initial=0.0) > 1e-16, np.inf,
                   weights[:, keep] @ inv_lam[keep]) * s2
    return Z95 * np.sqrt(var) * np.log(space.high / space.low)


def least_squares_fit(
    evaluator: BatchEvaluator,
    pool: Sequence[Trajectory],
    x0: np.ndarray,
    options: LeastSquaresOptions = LeastSquaresOptions(),
    space: ParamSpace = ParamSpace(),
    progress: Callable[[int, int, float, float, np.ndarray], None] | None = None,
) -> LeastSquaresFit:
    """Minimise sum ||q_sim - q_real||^2 over the windows ``pool`` from ``x0`` (unit cube).

    Args:
        progress: called per iteration with (iteration, evaluations, loss per step rad^2,
            elapsed s, x).
    """
    solver = evaluator.least_squares()
    measured = np.concatenate([w.measured.ravel() for w in pool])
    steps = sum(w.steps for w in pool)
    count = {'evaluations': 0}
    t_start = time.perf_counter()
    last: dict[str, np.ndarray | None] = {'jac': None}

    def simulate(x: np.ndarray) -> np.ndarray:
        params = [space.from_unit(x[:, j]) for j in range(x.shape[1])]
        sims = evaluator.simulate(params, pool)
        count['evaluations'] += len(params)
        flat = np.concatenate([s.reshape(len(params), -1) for s in sims], axis=1)
        return (flat - measured[None]).T.astype(np.float64)

    def steps_at(x: np.ndarray) -> np.ndarray:
        # Forward differences, stepping inwards at the upper bound.
        return np.where(x.ravel() + options.fd_step > 1.0, -options.fd_step, options.fd_step)

    # An evaluator whose batch costs the same at any size (a GPU: ``free_batch``) gets the
    # Jacobian's columns at every point it is asked for, in the same call: LM takes most trial
    # steps, so the next Jacobian is then already there (half the calls).
    speculate = bool(getattr(evaluator, 'free_batch', False))
    ahead: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}

    def residual(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float).reshape(len(x0), -1)
        if not (speculate and x.shape[1] == 1):
            return simulate(x)
        h = steps_at(x)
        r_all = simulate(np.hstack([x, x + np.diag(h)]))
        ahead.clear()
        ahead[x.tobytes()] = (r_all[:, 1:], h)
        return r_all[:, :1]

    def jacobian(x: np.ndarray, r: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float).reshape(-1, 1)
        found = ahead.pop(x.tobytes(), None)
        if found is None:
            h = steps_at(x)
            rh = simulate(x + np.diag(h))
        else:
            rh, h = found
        jac = (rh - r.reshape(-1, 1)) / h[None]
        last['jac'] = jac
        return jac

    history: list[tuple[int, int, float, float, float, float]] = []

    def on_iteration(trace: list) -> None:
        log = trace[-1]
        value = 2.0 * float(log.objective) / steps  # the Quadratic norm is 0.5 ||r||^2
        row = (len(history), count['evaluations'], value, value, value,
               time.perf_counter() - t_start)
        history.append(row)
        if progress is not None:
            progress(row[0], row[1], value, row[5], np.asarray(log.candidate).ravel())

    text = io.StringIO()
    x, trace = solver(
        np.clip(np.asarray(x0, dtype=float), 0.0, 1.0), residual,
        bounds=(np.zeros(len(x0)), np.ones(len(x0))), jacobian=jacobian,
        xtol=options.xtol, gtol=1e-12, mu_min=options.mu_min, mu_factor=options.mu_factor,
        max_iter=options.max_iter, x_scale='jac',
        verbose=1, output=text, iter_callback=on_iteration)
    iterations = max(len(trace) - 1, 0)
    # mujoco prints why it stopped ('Terminated after N iterations: norm(dx) < tol. y: ...').
    found = re.search(r'iterations: (.*?)\.? y:', text.getvalue())
    reason = f'LM: {found.group(1)}' if found else 'LM: stopped'
    r = simulate(np.asarray(x, dtype=float).reshape(-1, 1))[:, 0]
    return LeastSquaresFit(x=np.asarray(x, dtype=float), cost=float(r @ r), steps=steps,
                           iterations=iterations, evaluations=count['evaluations'],
                           stop_reason=reason, history=history, jacobian=last['jac'],
                           residual=r)
