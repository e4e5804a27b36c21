"""Gripper tool-centre-point kinematics and damped least-squares IK, pure numpy.

The TCP is the twin's ``tcp`` site: the flange (``panda_link8``) rotated -pi/4 about its z axis
(the gripper mount) and offset :data:`TCP_OFFSET` m along the flange z axis (between the finger
pads). The fingers close along the TCP frame's y axis; the TCP z axis is the approach direction.
Frames: ``base_link`` (z up). Units: m, rad.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from realm_ros.core import robot

#: Flange to TCP along the flange z axis, m (the twin's ``tcp`` site).
TCP_OFFSET = robot.TCP_OFFSET
_MOUNT = np.array([[math.cos(-math.pi / 4), -math.sin(-math.pi / 4), 0.0, 0.0],
                   [math.sin(-math.pi / 4), math.cos(-math.pi / 4), 0.0, 0.0],
                   [0.0, 0.0, 1.0, TCP_OFFSET],
                   [0.0, 0.0, 0.0, 1.0]])


def tcp_pose(q: ArrayLike) -> np.ndarray:
    """Return the 4x4 TCP pose in ``base_link`` at joint configuration ``q`` (7,)."""
    return robot.forward_kinematics(q)[-1] @ _MOUNT


def tcp_jacobian(q: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Return (TCP pose 4x4, 6x7 geometric Jacobian: linear rows first, in ``base_link``)."""
    poses = robot.forward_kinematics(q)
    tcp = poses[-1] @ _MOUNT
    p = tcp[:3, 3]
    jac = np.zeros((6, robot.NUM_ARM_JOINTS))
    for i in range(robot.NUM_ARM_JOINTS):
        axis = poses[i][:3, 2]  # modified DH: joint i turns about z of frame i
        jac[:3, i] = np.cross(axis, p - poses[i][:3, 3])
        jac[3:, i] = axis
    return tcp, jac


def down_rotation(yaw: float) -> np.ndarray:
    """Return a TCP orientation pointing straight down with the closing (y) axis at ``yaw``."""
    y_axis = np.array([math.cos(yaw), math.sin(yaw), 0.0])
    z_axis = np.array([0.0, 0.0, -1.0])
    x_axis = np.cross(y_axis, z_axis)
    return np.column_stack([x_axis, y_axis, z_axis])


def _rotation_error(current: np.ndarray, desired: np.ndarray) -> np.ndarray:
    """Return the rotation vector (rad, base frame) taking ``current`` to ``desired``."""
    r = desired @ current.T
    angle = math.acos(max(-1.0, min(1.0, (np.trace(r) - 1.0) / 2.0)))
    axis = np.array([r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]])
    if angle < 1e-9:
        return 0.5 * axis
    if math.pi - angle < 1e-6:
        # 180 degrees: the antisymmetric part vanishes; take the axis from the symmetric part.
        k = int(np.argmax(np.diag(r)))
        axis = r[:, k] + np.eye(3)[k]
        return angle * axis / np.linalg.norm(axis)
    return angle * axis / (2.0 * math.sin(angle))


def solve_ik(position: ArrayLike, rotation: np.ndarray, q_start: ArrayLike,
             q_rest: ArrayLike | None = None, iterations: int = 30,
             damping: float = 0.02, tolerance: float = 1e-4) -> tuple[np.ndarray, float]:
    """Return joints (7,) putting the TCP at ``position`` with ``rotation``, and the final error.

    Damped least squares from ``q_start``, with a null-space pull toward ``q_rest`` (keeps the
    elbow where the DROID reset pose has it) and joint limits enforced every iteration. The
    error is ``|dp| + 0.1 |drot|`` (m, with rad weighted 0.1 m/rad).
    """
    q = np.asarray(q_start, dtype=float).copy()
    rest = np.asarray(robot.RESET_Q if q_rest is None else q_rest, dtype=float)
    target = np.asarray(position, dtype=float)
    err_norm = math.inf
    for _ in range(iterations):
        tcp, jac = tcp_jacobian(q)
        err = np.concatenate([target - tcp[:3, 3], _rotation_error(tcp[:3, :3], rotation)])
        err_norm = float(np.linalg.norm(err[:3]) + 0.1 * np.linalg.norm(err[3:]))
        if err_norm < tolerance:
            break
        jjt = jac @ jac.T + damping ** 2 * np.eye(6)
        dq: np.ndarray = jac.T @ np.linalg.solve(jjt, err)
        null = np.eye(robot.NUM_ARM_JOINTS) - np.linalg.pinv(jac) @ jac
        dq += null @ (0.1 * (rest - q))
        step = float(np.max(np.abs(dq)))
        if step > 0.2:
            dq *= 0.2 / step
        q = np.clip(q + dq, robot.JOINT_LOWER + 1e-3, robot.JOINT_UPPER - 1e-3)
    return q, err_norm
