"""DROID control conventions and command validation (docs/interface.md).

Pure functions over numpy arrays. A world turns every accepted :class:`Action` into an absolute
joint target ``q_d`` (rad) and a gripper command ``g`` in [0, 1] with :func:`action_to_target`;
the impedance law underneath (the twin's actuators, libfranka on the real arm) tracks ``q_d``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from realm_ros.core import robot
from realm_ros.core.errors import CommandRejected
from realm_ros.core.types import Action, ActionMode

if TYPE_CHECKING:
    from realm_ros.core.config import WorldConfig

#: Targets within this distance (rad) outside the joint range are clipped, not rejected;
#: they come from float round trips and from limit-hugging policies.
LIMIT_TOLERANCE = 1e-3
#: Targets are kept this far inside each joint limit, rad (Polymetis keeps its joint limits 0.1
#: rad inside Franka's). A target at the limit would take the arm past it under its own
#: dynamics: 0.037 rad on the twin's joint 1 from the reset pose, a joint-limit reflex on a real
#: arm. ``WorldConfig.joint_margin_rad`` (twin) and ``SafetyConfig.position_margin_rad``
#: (bridge) set it per world.
POSITION_MARGIN_RAD = 0.1


def joint_bounds(margin: float = POSITION_MARGIN_RAD) -> tuple[np.ndarray, np.ndarray]:
    """Return the (lower, upper) bounds targets are clipped to: the limits shrunk by ``margin``."""
    return robot.JOINT_LOWER + margin, robot.JOINT_UPPER - margin


def velocity_to_target(q_measured: np.ndarray, velocity: np.ndarray,
                       margin: float = POSITION_MARGIN_RAD) -> np.ndarray:
    """Return DROID's joint-velocity target ``q + 0.2 v`` (rad), clipped to the joint limits
    shrunk by ``margin`` rad.

    ``v`` is unitless; if ``max|v| > 1`` it is scaled down uniformly first (DROID robot.py).
    Row by row over the last axis: one command (7,) or W worlds' (W, 7) at once.
    """
    v = np.asarray(velocity, dtype=float)
    peak = np.max(np.abs(v), axis=-1, keepdims=True, initial=0.0)
    v = np.where(peak > 1.0, v / np.where(peak > 1.0, peak, 1.0), v)
    target = np.asarray(q_measured, dtype=float) + robot.MAX_JOINT_DELTA * v
    return np.clip(target, *joint_bounds(margin))


def binarize_gripper(g: float, threshold: float = 0.5) -> float:
    """Return 1.0 (closed) if ``g > threshold`` else 0.0, as openpi and REALM clients do."""
    return 1.0 if g > threshold else 0.0


def gripper_width(g: float, max_width: float = robot.GRIPPER_MAX_WIDTH) -> float:
    """Return the finger opening in m for gripper command ``g`` (1 = closed)."""
    return max_width * (1.0 - float(np.clip(g, 0.0, 1.0)))


def gripper_closure(width: float, max_width: float = robot.GRIPPER_MAX_WIDTH) -> float:
    """Return gripper value g in [0, 1] (1 = closed) for a finger opening ``width`` in m.

    The inverse of :func:`gripper_width`, clipped to [0, 1] (a hand may report slightly beyond
    its nominal stroke).
    """
    return float(np.clip(1.0 - float(width) / max_width, 0.0, 1.0))


def beyond_limits(arm: np.ndarray) -> np.ndarray:
    """Return, per joint value (any shape ending in 7), whether a position target lies beyond
    the joint limits by more than :data:`LIMIT_TOLERANCE`."""
    return ((arm < robot.JOINT_LOWER - LIMIT_TOLERANCE)
            | (arm > robot.JOINT_UPPER + LIMIT_TOLERANCE))


def gripper_in_range(g: Any) -> Any:
    """Return whether gripper command(s) ``g`` lie in [0, 1] within :data:`LIMIT_TOLERANCE`."""
    return (g >= -LIMIT_TOLERANCE) & (g <= 1.0 + LIMIT_TOLERANCE)


def validate_action(action: Action) -> None:
    """Raise :class:`CommandRejected` unless ``action`` is finite, well-shaped and in range.

    Position targets must lie within the joint limits (plus :data:`LIMIT_TOLERANCE`); velocity
    commands must be finite (DROID rescales any magnitude); the gripper must be in [0, 1].
    """
    arm = np.asarray(action.arm, dtype=float)
    if arm.shape != (robot.NUM_ARM_JOINTS,):
        raise CommandRejected(f'arm command must have 7 values, got shape {arm.shape}')
    if not np.all(np.isfinite(arm)):
        raise CommandRejected(f'arm command contains NaN or inf: {arm.tolist()}')
    if not math.isfinite(action.gripper):
        raise CommandRejected(f'gripper command is not finite: {action.gripper}')
    if not gripper_in_range(action.gripper):
        raise CommandRejected(f'gripper command {action.gripper} outside [0, 1] (1 = closed)')
    if action.mode is ActionMode.POSITION:
        beyond = beyond_limits(arm)
        if np.any(beyond):
            bad = [
                f'{robot.JOINT_NAMES[i]}={arm[i]:.4f} not in '
                f'[{robot.JOINT_LOWER[i]:.4f}, {robot.JOINT_UPPER[i]:.4f}]'
                for i in np.flatnonzero(beyond)
            ]
            raise CommandRejected('position target beyond joint limits: ' + ', '.join(bad))


def action_to_target(action: Action, q_measured: np.ndarray,
                     margin: float = POSITION_MARGIN_RAD) -> tuple[np.ndarray, float]:
    """Validate ``action`` and return ``(q_d, g)``: absolute target (rad) and gripper in [0, 1].

    A valid target closer than ``margin`` rad to a joint limit is moved to the margin (the
    returned target says so: worlds return it from ``apply``).
    """
    validate_action(action)
    if action.mode is ActionMode.VELOCITY:
        q_d = velocity_to_target(q_measured, action.arm, margin)
    else:
        q_d = np.clip(np.asarray(action.arm, dtype=float), *joint_bounds(margin))
    return q_d, float(np.clip(action.gripper, 0.0, 1.0))


#: Twin target shaping near the joint limits: within ``LIMIT_ZONE_RAD`` of the margin a target
#: heading for the limit moves at most ``TARGET_VELOCITY_SCALE`` x the velocity limit (as the
#: bridge's ``safety.velocity_scale``), and a joint running toward a limit keeps its braking
#: distance v^2 / (2 BRAKE_ACCELERATION) (rad/s^2) free of targets.
LIMIT_ZONE_RAD = 0.5
TARGET_VELOCITY_SCALE = 0.9
BRAKE_ACCELERATION = 5.0


def shape_target(q_d: np.ndarray, q_previous: np.ndarray, dq_measured: np.ndarray, dt: float,
                 margin: float = POSITION_MARGIN_RAD) -> np.ndarray:
    """Return target ``q_d`` shaped so that the arm's own dynamics do not carry it past a limit.

    A simulated arm tracks a held target with an impedance law; a target that jumps (2.8 rad
    from the reset pose to joint 1's limit) swings the arm 0.13 rad past it. So, per joint
    heading for a limit: (1) a target within :data:`LIMIT_ZONE_RAD` of the limit's margin moves
    at most ``TARGET_VELOCITY_SCALE * velocity limit * dt`` per control step from
    ``q_previous``; (2) a joint moving toward a limit at ``v`` gets no target within its braking
    distance ``v^2 / (2 BRAKE_ACCELERATION)`` of the margin (never pulled back behind
    ``q_previous``); (3) the result stays inside the limits shrunk by ``margin``. Targets away
    from the limits pass unchanged (DROID's 0.2 rad velocity steps included).
    """
    lower, upper = joint_bounds(margin)
    prev = np.asarray(q_previous, dtype=float)
    q = np.clip(np.asarray(q_d, dtype=float), lower, upper)
    step = TARGET_VELOCITY_SCALE * robot.VELOCITY_LIMIT * dt
    toward_upper = (q > prev) & (q > upper - LIMIT_ZONE_RAD)
    toward_lower = (q < prev) & (q < lower + LIMIT_ZONE_RAD)
    q = np.where(toward_upper, np.minimum(q, prev + step), q)
    q = np.where(toward_lower, np.maximum(q, prev - step), q)
    v = np.asarray(dq_measured, dtype=float)
    brake = 2.0 * BRAKE_ACCELERATION
    q = np.minimum(q, np.maximum(upper - np.maximum(v, 0.0) ** 2 / brake,
                                 np.minimum(prev, upper)))
    q = np.maximum(q, np.minimum(lower + np.minimum(v, 0.0) ** 2 / brake,
                                 np.maximum(prev, lower)))
    return np.clip(q, lower, upper)


def world_target(action: Action, q_measured: np.ndarray, q_previous: np.ndarray,
                 dq_measured: np.ndarray, dt: float, config: WorldConfig
                 ) -> tuple[np.ndarray, float]:
    """A simulated world's target for ``action``: :func:`action_to_target` with the world's
    ``joint_margin_rad``, then :func:`shape_target` when ``config.shape_targets`` is set."""
    q_d, g = action_to_target(action, q_measured, config.joint_margin_rad)
    if config.shape_targets:
        q_d = shape_target(q_d, q_previous, dq_measured, dt, config.joint_margin_rad)
    return q_d, g


def world_targets(arm: np.ndarray, gripper: np.ndarray, velocity: np.ndarray,
                  q_measured: np.ndarray, q_previous: np.ndarray, dq_measured: np.ndarray,
                  dt: float, config: WorldConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`world_target` for W worlds at once: ``arm`` (W, 7), ``gripper`` (W,), ``velocity``
    (W,) bool (the row's mode), the rest (W, 7). Each row of ``(q_d, g)`` is world_target's
    for that row bit for bit (the same elementwise operations; ``test_batched.py``).

    Returns ``(q_d (W, 7), g (W,), valid (W,) bool)``: a row that :func:`validate_action`
    would refuse is not valid (its target is meaningless): give it to :func:`world_target`,
    which raises :class:`CommandRejected` with the reason.
    """
    arm = np.asarray(arm, dtype=float)
    g = np.asarray(gripper, dtype=float)
    velocity = np.asarray(velocity, dtype=bool)
    # validate_action's rules as a mask (a refused row is passed to world_target to raise).
    valid = np.all(np.isfinite(arm), axis=1) & np.isfinite(g) & gripper_in_range(g)
    valid &= velocity | ~np.any(beyond_limits(arm), axis=1)
    lower, upper = joint_bounds(config.joint_margin_rad)
    stepped = velocity_to_target(q_measured, arm, config.joint_margin_rad)
    q_d = np.where(velocity[:, None], stepped, np.clip(arm, lower, upper))
    if config.shape_targets:  # elementwise: the (W, 7) rows are shaped as one row each
        q_d = shape_target(q_d, q_previous, dq_measured, dt, config.joint_margin_rad)
    return q_d, np.clip(g, 0.0, 1.0), valid


def action_from_named(
    names: Sequence[str],
    values: Sequence[float],
    mode: ActionMode,
    current_gripper: float,
) -> Action:
    """Build an :class:`Action` from named values (a JointTrajectory point).

    ``names`` must contain each of the seven canonical arm joints exactly once, in any order,
    optionally plus :data:`robot.GRIPPER_JOINT`; without it the gripper keeps
    ``current_gripper``.

    Raises:
        CommandRejected: wrong names or count, duplicates, length mismatch.
    """
    names = list(names)
    values = list(values)
    if len(names) != len(values):
        raise CommandRejected(
            f'{len(names)} joint names but {len(values)} values in the command')
    if len(set(names)) != len(names):
        raise CommandRejected(f'duplicate joint names in command: {names}')
    expected = set(robot.JOINT_NAMES)
    allowed = expected | {robot.GRIPPER_JOINT}
    unknown = [n for n in names if n not in allowed]
    if unknown:
        raise CommandRejected(
            f'unknown joint name(s) {unknown}; expected {list(robot.JOINT_NAMES)} '
            f'and optionally {robot.GRIPPER_JOINT!r}')
    missing = [n for n in robot.JOINT_NAMES if n not in names]
    if missing:
        raise CommandRejected(f'command lacks joint(s) {missing}')
    index = {n: i for i, n in enumerate(names)}
    arm = np.array([values[index[n]] for n in robot.JOINT_NAMES], dtype=float)
    gripper = (float(values[index[robot.GRIPPER_JOINT]])
               if robot.GRIPPER_JOINT in index else float(current_gripper))
    return Action(arm=arm, gripper=gripper, mode=mode)


@dataclasses.dataclass(frozen=True, slots=True)
class ImpedanceGains:
    """Polymetis hybrid joint impedance gains: Kp = J^T Kx J + Kq, Kd = J^T Kxd J + Kqd."""

    kq: np.ndarray = dataclasses.field(default_factory=lambda: robot.KQ.copy())
    kqd: np.ndarray = dataclasses.field(default_factory=lambda: robot.KQD.copy())
    kx: np.ndarray = dataclasses.field(default_factory=lambda: robot.KX.copy())
    kxd: np.ndarray = dataclasses.field(default_factory=lambda: robot.KXD.copy())


def impedance_torque(
    q: np.ndarray,
    dq: np.ndarray,
    q_d: np.ndarray,
    jacobian: np.ndarray,
    gains: ImpedanceGains,
) -> np.ndarray:
    """Return the hybrid joint-impedance torque (N m), gravity compensated elsewhere.

    tau = (J^T Kx J + Kq)(q_d - q) - (J^T Kxd J + Kqd) dq, J the 6x7 end-effector Jacobian
    (linear rows first). This is the reference the twin's actuators are checked against.
    """
    kp = jacobian.T @ np.diag(gains.kx) @ jacobian + np.diag(gains.kq)
    kd = jacobian.T @ np.diag(gains.kxd) @ jacobian + np.diag(gains.kqd)
    return kp @ (np.asarray(q_d) - np.asarray(q)) - kd @ np.asarray(dq)


def joint_space_gains(q: np.ndarray, gains: ImpedanceGains | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Return the diagonals of DROID's joint-space stiffness and damping at configuration ``q``.

    Kp = J^T Kx J + Kq (N m/rad) and Kd = J^T Kxd J + Kqd (N m s/rad), J the flange Jacobian.
    A per-joint PD controller (a JointTrajectoryController on the effort interface) can match
    only these diagonals, and only near ``q``: the off-diagonal coupling is what it loses.
    """
    gains = gains or ImpedanceGains()
    jac = robot.flange_jacobian(q)
    kp = jac.T @ np.diag(gains.kx) @ jac + np.diag(gains.kq)
    kd = jac.T @ np.diag(gains.kxd) @ jac + np.diag(gains.kqd)
    return np.diag(kp).copy(), np.diag(kd).copy()
