"""Recorded runs, the windows cut from them, the loss, and the simulator interface.

* :class:`Trajectory`: one recorded run (initial state, targets, measured positions).
* :func:`windows`: cuts runs into short windows that start from recorded states (multiple
  shooting: each window is simulated on its own, so errors do not accumulate over a run).
* :class:`BatchEvaluator`: what a backend implements to simulate many (parameters, window)
  pairs at once.
* :func:`loss`: sum over windows and steps of ||q_real - q_sim||^2 (rad^2); :func:`joint_rmse`.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Any, Callable, Sequence

import numpy as np

from realm_ros.core.config import DynamicsParams
from realm_ros.core.errors import ConfigError, DataError


@dataclasses.dataclass(frozen=True)
class Trajectory:
    """One recorded run, aligned to control steps.

    Attributes:
        name: where it came from (bag name, window index).
        q0, dq0: (7,) measured joint position (rad) and velocity (rad/s) when the first target
            was applied.
        gripper0: measured gripper g in [0, 1] at that time.
        targets: (K, 7) absolute joint targets, rad, one per control step.
        gripper: (K,) gripper commands g in [0, 1].
        measured: (K, 7) measured joint positions one control period after each target, rad.
        measured_dq: (K, 7) measured joint velocities at the same times, rad/s (for windows).
        dt: control period, s.
        target0: (7,) the joint target in force before the first step, rad (what an actuation
            delay holds at the start); None = ``q0``.
    """

    name: str
    q0: np.ndarray
    dq0: np.ndarray
    gripper0: float
    targets: np.ndarray
    gripper: np.ndarray
    measured: np.ndarray
    measured_dq: np.ndarray
    dt: float
    target0: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.target0 is None:
            object.__setattr__(self, 'target0', np.asarray(self.q0, dtype=float))
        k = len(self.targets)
        if k == 0:
            raise DataError(f'trajectory {self.name}: no control steps')
        for name, shape in (('q0', (7,)), ('dq0', (7,)), ('target0', (7,)), ('targets', (k, 7)),
                            ('gripper', (k,)), ('measured', (k, 7)), ('measured_dq', (k, 7))):
            value = np.asarray(getattr(self, name), dtype=float)
            if value.shape != shape:
                raise DataError(f'trajectory {self.name}: {name} has shape {value.shape}, '
                                f'expected {shape}')
            if not np.all(np.isfinite(value)):
                raise DataError(f'trajectory {self.name}: {name} contains NaN or inf')

    @property
    def steps(self) -> int:
        return len(self.targets)


def windows(trajectories: Sequence[Trajectory], length: int) -> list[Trajectory]:
    """Cut each trajectory into consecutive windows of ``length`` steps (remainder dropped).

    Each window starts from the measured state at its start, so windows can be simulated
    independently (short rollouts, random minibatches per generation).
    """
    out = []
    for traj in trajectories:
        for start in range(0, traj.steps - length + 1, length):
            if start == 0:
                q0, dq0, target0 = traj.q0, traj.dq0, traj.target0
                g0 = traj.gripper0
            else:
                q0, dq0 = traj.measured[start - 1], traj.measured_dq[start - 1]
                target0 = traj.targets[start - 1]
                g0 = float(traj.gripper[start - 1])
            sl = slice(start, start + length)
            out.append(Trajectory(
                name=f'{traj.name}@{start}', q0=q0, dq0=dq0, gripper0=g0,
                targets=traj.targets[sl], gripper=traj.gripper[sl], measured=traj.measured[sl],
                measured_dq=traj.measured_dq[sl], dt=traj.dt, target0=target0))
    return out


def window_pool(trajectories: Sequence[Trajectory], length: int) -> list[Trajectory]:
    """Return what a fit simulates: :func:`windows` of ``length`` steps, or the whole
    trajectories when ``length`` is 0.

    Raises:
        DataError: no window of ``length`` steps fits in the trajectories.
    """
    pool = windows(trajectories, length) if length > 0 else list(trajectories)
    if not pool:
        raise DataError(f'no window of {length} steps fits in the trajectories')
    return pool


class BatchEvaluator(abc.ABC):
    """Simulates many (parameters, trajectory) pairs at once; implemented by a backend."""

    #: Seconds spent in the simulator and in precomputing controls (for the timing report).
    timing: dict[str, float]

    def least_squares(self) -> Callable[..., Any]:
        """Return the bounded least-squares solver the ``'lm'`` fit runs (the signature of
        ``mujoco.minimize.least_squares``). A backend provides it: core imports no simulator
        package, and mujoco ships the solver.

        Raises:
            ConfigError: this backend has none (fit with CMA-ES instead).
        """
        raise ConfigError(f'{type(self).__name__} offers no least-squares solver; fit with '
                          '--method cma')

    @abc.abstractmethod
    def simulate(self, params: Sequence[DynamicsParams],
                 trajectories: Sequence[Trajectory]) -> list[np.ndarray]:
        """Return, per trajectory, a (P, K, 7) array of simulated joint positions, rad.

        Row ``[p, k]`` is the position one control period after target ``k`` was applied with
        ``params[p]``, starting from the trajectory's recorded initial state.
        """


def loss(simulated: Sequence[np.ndarray], trajectories: Sequence[Trajectory]) -> np.ndarray:
    """Return the (P,) loss sum_traj sum_k ||q_real - q_sim||^2, rad^2, per candidate."""
    total = np.zeros(len(simulated[0]))
    for sim, traj in zip(simulated, trajectories):
        total += np.sum((sim - traj.measured[None]) ** 2, axis=(1, 2))
    return total


def joint_rmse(simulated: Sequence[np.ndarray], trajectories: Sequence[Trajectory],
               candidate: int = 0) -> np.ndarray:
    """Return the (7,) per-joint RMSE, rad, of one candidate over all steps of all trajectories."""
    sq = np.zeros(7)
    n = 0
    for sim, traj in zip(simulated, trajectories):
        sq += np.sum((sim[candidate] - traj.measured) ** 2, axis=0)
        n += traj.steps
    return np.sqrt(sq / max(n, 1))
