"""Gripper tool-centre-point kinematics and damped least-squares IK, pure numpy.

The TCP is the twin's ``tcp`` site: the flange (``panda_link8``) rotated -pi/4 about its z axis
(the gripper mount) and offset :data:`TCP_OFFSET` m along the flange z axis (between the finger
pads). The fingers close along the TCP frame's y axis; the TCP z axis is the approach direction.
Frames: ``base_link`` (z up). Units: m, rad.

The forward kinematics is :func:`realm_ros.core.robot.link_poses` (one implementation, one
configuration or a batch), with the gripper mount as its tool. Two implementations of the rest
of the maths. The fast path (:func:`tcp_pose`, :func:`tcp_jacobian`,
:func:`solve_ik`) is what the scripted policy runs every control step: the eight link transforms
filled in at once from the DH table, the Jacobian's cross products on whole columns, the rotation
error in scalars, and the null-space projection ``(I - pinv(J) J) v`` applied as
``v - J^T (J J^T)^-1 J v`` in the same batched solve as the damped step (no SVD). The simple
path (:func:`tcp_pose_reference`, :func:`tcp_jacobian_reference`, :func:`solve_ik_reference`:
:func:`realm_ros.core.robot.forward_kinematics`, ``np.cross`` per joint, ``pinv``) is the
definition the fast path is tested against (``test/unit/test_kinematics.py``) and benchmarked
against (``bench/bench_episodes.py``). Both agree to about 1e-12 rad per solve.
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

_N = robot.NUM_ARM_JOINTS
_LOWER = robot.JOINT_LOWER + 1e-3
_UPPER = robot.JOINT_UPPER - 1e-3


def _link_poses(q: np.ndarray) -> np.ndarray:
    """Return the (9, 4, 4) poses of link1..link7, the flange and the TCP in ``base_link``
    (``robot.link_poses`` with the gripper mount as its tool; (B, 9, 4, 4) for (B, 7))."""
    return robot.link_poses(q, _MOUNT)


def _checked(q: ArrayLike) -> np.ndarray:
    joints = np.asarray(q, dtype=float)
    if joints.shape != (_N,):
        raise ValueError(f'q must have shape (7,), got {joints.shape}')
    return joints


def tcp_pose(q: ArrayLike) -> np.ndarray:
    """Return the 4x4 TCP pose in ``base_link`` at joint configuration ``q`` (7,)."""
    return _link_poses(_checked(q))[-1]


def tcp_jacobian(q: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Return (TCP pose 4x4, 6x7 geometric Jacobian: linear rows first, in ``base_link``)."""
    poses = _link_poses(_checked(q))
    return poses[-1], _jacobian(poses)


def _jacobian(poses: np.ndarray) -> np.ndarray:
    # Modified DH: joint i turns about z of frame i; column i = [z_i x (p - o_i); z_i].
    axes = poses[:_N, :3, 2]
    lever = poses[-1, :3, 3] - poses[:_N, :3, 3]
    jac = np.empty((6, _N))
    jac[0] = axes[:, 1] * lever[:, 2] - axes[:, 2] * lever[:, 1]
    jac[1] = axes[:, 2] * lever[:, 0] - axes[:, 0] * lever[:, 2]
    jac[2] = axes[:, 0] * lever[:, 1] - axes[:, 1] * lever[:, 0]
    jac[3:] = axes.T
    return jac


def tcp_pose_reference(q: ArrayLike) -> np.ndarray:
    """The simple path of :func:`tcp_pose` (link by link with ``robot.forward_kinematics``)."""
    return robot.forward_kinematics(q)[-1] @ _MOUNT


def tcp_jacobian_reference(q: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """The simple path of :func:`tcp_jacobian` (``np.cross`` per joint)."""
    poses = robot.forward_kinematics(q)
    tcp = poses[-1] @ _MOUNT
    p = tcp[:3, 3]
    jac = np.zeros((6, _N))
    for i in range(_N):
        axis = poses[i][:3, 2]  # modified DH: joint i turns about z of frame i
        jac[:3, i] = np.cross(axis, p - poses[i][:3, 3])
        jac[3:, i] = axis
    return tcp, jac


def down_rotation(yaw: float) -> np.ndarray:
    """Return a TCP orientation pointing straight down with the closing (y) axis at ``yaw``.

    Columns x, y, z: y = (cos yaw, sin yaw, 0), z = (0, 0, -1), x = y x z = (-sin, cos, 0).
    """
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[-s, c, 0.0], [c, s, 0.0], [0.0, 0.0, -1.0]])


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


def _rotation_error_fast(current: np.ndarray, desired: np.ndarray) -> tuple[float, float, float]:
    """:func:`_rotation_error` in Python scalars (the same formula, branch for branch)."""
    (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = (desired @ current.T).tolist()
    angle = math.acos(max(-1.0, min(1.0, (r00 + r11 + r22 - 1.0) / 2.0)))
    ax, ay, az = r21 - r12, r02 - r20, r10 - r01
    if angle < 1e-9:
        return 0.5 * ax, 0.5 * ay, 0.5 * az
    if math.pi - angle < 1e-6:
        x, y, z = _rotation_error(current, desired).tolist()
        return x, y, z
    scale = angle / (2.0 * math.sin(angle))
    return scale * ax, scale * ay, scale * az


def solve_ik(position: ArrayLike, rotation: np.ndarray, q_start: ArrayLike,
             q_rest: ArrayLike | None = None, iterations: int = 30,
             damping: float = 0.02, tolerance: float = 1e-4) -> tuple[np.ndarray, float]:
    """Return joints (7,) putting the TCP at ``position`` with ``rotation``, and the final error.

    Damped least squares from ``q_start``, with a null-space pull toward ``q_rest`` (keeps the
    elbow where the DROID reset pose has it) and joint limits enforced every iteration. The
    error is ``|dp| + 0.1 |drot|`` (m, with rad weighted 0.1 m/rad). It stops as soon as the
    error is below ``tolerance`` (a converged warm start costs one forward kinematics).

    The fast path of :func:`solve_ik_reference` (the same iteration; see the module docstring).
    """
    q = np.array(q_start, dtype=float)
    if q.shape != (_N,):
        raise ValueError(f'q_start must have shape (7,), got {q.shape}')
    rest = np.asarray(robot.RESET_Q if q_rest is None else q_rest, dtype=float)
    target = np.asarray(position, dtype=float)
    desired = np.asarray(rotation, dtype=float)
    damp = damping ** 2
    err_norm = math.inf
    lhs = np.empty((2, 6, 6))
    rhs = np.empty((2, 6, 1))
    diag = np.arange(6)
    for _ in range(iterations):
        poses = _link_poses(q)
        tcp = poses[-1]
        dp = target - tcp[:3, 3]
        dr = _rotation_error_fast(tcp[:3, :3], desired)
        err_norm = (math.sqrt(float(dp @ dp))
                    + 0.1 * math.sqrt(dr[0] * dr[0] + dr[1] * dr[1] + dr[2] * dr[2]))
        if err_norm < tolerance:
            break
        jac = _jacobian(poses)
        pull = 0.1 * (rest - q)
        # Damped step J^T (J J^T + d^2 I)^-1 e and the null-space pull
        # (I - J^T (J J^T)^-1 J) pull = (I - pinv(J) J) pull for a full-rank J, in one solve.
        np.matmul(jac, jac.T, out=lhs[1])
        lhs[0] = lhs[1]
        lhs[0, diag, diag] += damp
        rhs[0, :3, 0] = dp
        rhs[0, 3:, 0] = dr
        rhs[1, :, 0] = jac @ pull
        try:
            x = np.linalg.solve(lhs, rhs)
        except np.linalg.LinAlgError:  # a singular J: the simple path's pinv handles it
            null = np.eye(_N) - np.linalg.pinv(jac) @ jac
            x = np.linalg.solve(lhs[:1], rhs[:1])
            dq = jac.T @ x[0, :, 0] + null @ pull
        else:
            dq = jac.T @ (x[0, :, 0] - x[1, :, 0]) + pull
        step = float(np.max(np.abs(dq)))
        if step > 0.2:
            dq *= 0.2 / step
        q = np.minimum(np.maximum(q + dq, _LOWER), _UPPER)
    return q, err_norm


def solve_ik_reference(position: ArrayLike, rotation: np.ndarray, q_start: ArrayLike,
                       q_rest: ArrayLike | None = None, iterations: int = 30,
                       damping: float = 0.02, tolerance: float = 1e-4
                       ) -> tuple[np.ndarray, float]:
    """The simple path of :func:`solve_ik`: the same iteration with ``pinv`` and ``np.cross``."""
    q = np.asarray(q_start, dtype=float).copy()
    rest = np.asarray(robot.RESET_Q if q_rest is None else q_rest, dtype=float)
    target = np.asarray(position, dtype=float)
    err_norm = math.inf
    for _ in range(iterations):
        tcp, jac = tcp_jacobian_reference(q)
        err = np.concatenate([target - tcp[:3, 3], _rotation_error(tcp[:3, :3], rotation)])
        err_norm = float(np.linalg.norm(err[:3]) + 0.1 * np.linalg.norm(err[3:]))
        if err_norm < tolerance:
            break
        jjt = jac @ jac.T + damping ** 2 * np.eye(6)
        dq: np.ndarray = jac.T @ np.linalg.solve(jjt, err)
        null = np.eye(_N) - np.linalg.pinv(jac) @ jac
        dq += null @ (0.1 * (rest - q))
        step = float(np.max(np.abs(dq)))
        if step > 0.2:
            dq *= 0.2 / step
        q = np.clip(q + dq, robot.JOINT_LOWER + 1e-3, robot.JOINT_UPPER - 1e-3)
    return q, err_norm


def tcp_pose_batch(q: ArrayLike) -> np.ndarray:
    """Return the (B, 4, 4) TCP poses at joint configurations ``q`` (B, 7)."""
    joints = np.asarray(q, dtype=float)
    if joints.ndim != 2 or joints.shape[1] != _N:
        raise ValueError(f'q must have shape (B, 7), got {joints.shape}')
    return _link_poses(joints)[:, -1]


def _rotation_error_batch(current: np.ndarray, desired: np.ndarray) -> np.ndarray:
    """:func:`_rotation_error` for (B, 3, 3) rotations: (B, 3) rotation vectors."""
    r = desired @ np.swapaxes(current, 1, 2)
    angle = np.arccos(np.clip((r[:, 0, 0] + r[:, 1, 1] + r[:, 2, 2] - 1.0) / 2.0, -1.0, 1.0))
    axis = np.stack([r[:, 2, 1] - r[:, 1, 2], r[:, 0, 2] - r[:, 2, 0],
                     r[:, 1, 0] - r[:, 0, 1]], axis=1)
    small = angle < 1e-9
    flip = np.pi - angle < 1e-6
    sin = np.where(small | flip, 1.0, np.sin(angle))
    out = np.where(small[:, None], 0.5 * axis, (angle / (2.0 * sin))[:, None] * axis)
    for b in np.flatnonzero(flip & ~small):
        out[b] = _rotation_error(current[b], desired[b])
    return out


def solve_ik_batch(position: ArrayLike, rotation: ArrayLike, q_start: ArrayLike,
                   q_rest: ArrayLike | None = None, iterations: int = 30,
                   damping: float = 0.02, tolerance: float = 1e-4
                   ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`solve_ik` for B problems at once: (B, 3) positions, (B, 3, 3) rotations, (B, 7)
    starts and rests -> (B, 7) joints and (B,) final errors.

    The same iteration as :func:`solve_ik`, problem for problem: each one stops as soon as its
    own error is below ``tolerance`` (it is then left as it is while the others go on), so each
    row equals :func:`solve_ik` on that row (``test/unit/test_kinematics.py``: within 1e-9 rad). A
    row whose ``J J^T`` is singular takes :func:`solve_ik`'s pinv step for that iteration.
    """
    q = np.array(q_start, dtype=float)
    if q.ndim != 2 or q.shape[1] != _N:
        raise ValueError(f'q_start must have shape (B, 7), got {q.shape}')
    n = len(q)
    rest = np.broadcast_to(np.asarray(robot.RESET_Q if q_rest is None else q_rest,
                                      dtype=float), (n, _N))
    target = np.asarray(position, dtype=float).reshape(n, 3)
    desired = np.asarray(rotation, dtype=float).reshape(n, 3, 3)
    damp = damping ** 2
    err_norm = np.full(n, math.inf)
    live = np.arange(n)
    diag = np.arange(6)
    for _ in range(iterations):
        if not len(live):
            break
        ql = q[live]
        poses = _link_poses(ql)
        tcp = poses[:, -1]
        dp = target[live] - tcp[:, :3, 3]
        dr = _rotation_error_batch(tcp[:, :3, :3], desired[live])
        err = np.sqrt(np.sum(dp * dp, axis=1)) + 0.1 * np.sqrt(np.sum(dr * dr, axis=1))
        err_norm[live] = err
        going = err >= tolerance
        live, ql, poses, dp, dr = live[going], ql[going], poses[going], dp[going], dr[going]
        if not len(live):
            break
        axes = poses[:, :_N, :3, 2]
        lever = poses[:, -1:, :3, 3] - poses[:, :_N, :3, 3]
        jac = np.empty((len(live), 6, _N))
        jac[:, 0] = axes[..., 1] * lever[..., 2] - axes[..., 2] * lever[..., 1]
        jac[:, 1] = axes[..., 2] * lever[..., 0] - axes[..., 0] * lever[..., 2]
        jac[:, 2] = axes[..., 0] * lever[..., 1] - axes[..., 1] * lever[..., 0]
        jac[:, 3:] = np.swapaxes(axes, 1, 2)
        pull = 0.1 * (rest[live] - ql)
        jjt = jac @ np.swapaxes(jac, 1, 2)
        lhs = np.stack([jjt, jjt], axis=1)
        lhs[:, 0, diag, diag] += damp
        rhs = np.empty((len(live), 2, 6, 1))
        rhs[:, 0, :3, 0] = dp
        rhs[:, 0, 3:, 0] = dr
        rhs[:, 1, :, 0] = (jac @ pull[:, :, None])[:, :, 0]
        dq = np.empty((len(live), _N))
        try:
            x = np.linalg.solve(lhs, rhs)
        except np.linalg.LinAlgError:  # some J singular: row by row, solve_ik's way
            for k in range(len(live)):
                try:
                    xk = np.linalg.solve(lhs[k], rhs[k])
                    dq[k] = jac[k].T @ (xk[0, :, 0] - xk[1, :, 0]) + pull[k]
                except np.linalg.LinAlgError:
                    null = np.eye(_N) - np.linalg.pinv(jac[k]) @ jac[k]
                    xk = np.linalg.solve(lhs[k, :1], rhs[k, :1])
                    dq[k] = jac[k].T @ xk[0, :, 0] + null @ pull[k]
        else:
            dq = (np.swapaxes(jac, 1, 2) @ (x[:, 0] - x[:, 1]))[:, :, 0] + pull
        step = np.max(np.abs(dq), axis=1)
        big = step > 0.2
        dq[big] *= (0.2 / step[big])[:, None]
        q[live] = np.minimum(np.maximum(ql + dq, _LOWER), _UPPER)
    return q, err_norm
