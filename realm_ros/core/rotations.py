"""Rotation conventions shared by the URDF writer, the policies, the scenes and the task rules.

Quaternions are (w, x, y, z), MuJoCo's order. Roll, pitch, yaw are the URDF ``rpy`` convention,
which is also DROID's and GR00T's ``eef`` Euler convention: extrinsic (fixed-axes) x, y, z, i.e.
``R = Rz(yaw) @ Ry(pitch) @ Rx(roll)``, SciPy's ``Rotation.from_euler('xyz', ...)``. Angles in
rad.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike


def rpy_from_matrix(rotation: ArrayLike) -> tuple[float, float, float]:
    """Return roll, pitch, yaw (rad) of a 3x3 rotation matrix, ``R = Rz(yaw) Ry(pitch) Rx(roll)``.

    Pitch lies in [-pi/2, pi/2]; at gimbal lock (pitch = +-pi/2) roll is 0 and yaw takes the
    whole rotation about z.
    """
    m = np.asarray(rotation, dtype=float)
    pitch = math.atan2(-m[2, 0], math.hypot(m[0, 0], m[1, 0]))
    if abs(math.cos(pitch)) > 1e-9:
        roll = math.atan2(m[2, 1], m[2, 2])
        yaw = math.atan2(m[1, 0], m[0, 0])
    else:  # gimbal lock: put everything into yaw
        roll = 0.0
        yaw = math.atan2(-m[0, 1], m[1, 1])
    return roll, pitch, yaw


def matrix_from_rpy(rpy: Sequence[float]) -> np.ndarray:
    """Return the 3x3 rotation of roll, pitch, yaw (inverse of :func:`rpy_from_matrix`)."""
    r, p, y = rpy
    rx = np.array([[1, 0, 0], [0, math.cos(r), -math.sin(r)], [0, math.sin(r), math.cos(r)]])
    ry = np.array([[math.cos(p), 0, math.sin(p)], [0, 1, 0], [-math.sin(p), 0, math.cos(p)]])
    rz = np.array([[math.cos(y), -math.sin(y), 0], [math.sin(y), math.cos(y), 0], [0, 0, 1]])
    return rz @ ry @ rx


def matrix_from_quat(quat: Sequence[float]) -> np.ndarray:
    """Return the 3x3 rotation of a (w, x, y, z) quaternion (normalised first)."""
    w, x, y, z = np.asarray(quat, float) / np.linalg.norm(quat)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def quat_mul(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """Return the Hamilton product ``a * b`` of two (w, x, y, z) quaternions."""
    aw, ax, ay, az = np.asarray(a, dtype=float)
    bw, bx, by, bz = np.asarray(b, dtype=float)
    return np.array([aw * bw - ax * bx - ay * by - az * bz,
                     aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw])


def yaw_quat(yaw: float) -> list[float]:
    """Return the (w, x, y, z) quaternion of a rotation by ``yaw`` rad about z."""
    return [math.cos(yaw / 2.0), 0.0, 0.0, math.sin(yaw / 2.0)]
