"""What every PhysX-driven twin shares, kit-less (``ovphysx``) or inside Isaac Sim.

* :class:`HybridImpedance`: the DROID/Polymetis law on PhysX. The joint-space part
  ``Kq (q_d - q) - Kqd dq`` runs in the PhysX joint drives authored in the USD (implicit, at
  the physics rate, like MuJoCo's joint actuators); the Cartesian part
  ``J^T Kx J (q_d - q) - J^T Kxd J dq`` is computed here every physics step from the twin's
  kinematics (:func:`realm_ros.core.robot.flange_jacobian`, J at the flange) and applied as
  joint effort. The total per joint is clipped to the Panda effort limits. MuJoCo realises the
  Cartesian part with site actuators, equal to first order in ``q_d - q``; here it is the
  Polymetis formula itself.
* :func:`physx_dof_properties`: :class:`DynamicsParams` (MuJoCo units) -> PhysX per-DOF values.
  Since PhysX 5.6 / ovphysx 0.7 joint friction is an *effort* (``staticFrictionEffort`` and
  ``dynamicFrictionEffort``, N m), so MuJoCo's ``frictionloss`` maps one to one (static =
  dynamic: Coulomb friction); armature is kg m^2 in both; viscous damping N m s/rad.
  REALM's identified values (DESIGN section 4) were PhysX's *older* unitless
  ``jointFriction`` coefficient (Isaac Sim 4.x), which scales the joint's constraint force,
  so they are no N m values and must not be copied across.
* :class:`LatencyQueue`: an actuation delay counted in physics steps, as in the MuJoCo twin.
"""

from __future__ import annotations

import collections
from typing import Iterator

import numpy as np

from realm_ros.core import robot
from realm_ros.core.config import DynamicsParams


class HybridImpedance:
    """Cartesian terms of the hybrid joint impedance law, to add to the joint drives."""

    def __init__(self) -> None:
        self.kx = np.diag(robot.KX)
        self.kxd = np.diag(robot.KXD)

    def extra_torque(self, q: np.ndarray, dq: np.ndarray, q_d: np.ndarray) -> np.ndarray:
        """Return ``J^T Kx J (q_d - q) - J^T Kxd J dq`` clipped so drive + extra <= effort.

        The drive's share (``Kq (q_d - q) - Kqd dq``) is estimated from the same state to
        clip the total, N m.
        """
        jac = robot.flange_jacobian(q)
        extra = jac.T @ (self.kx @ (jac @ (q_d - q)) - self.kxd @ (jac @ dq))
        drive = robot.KQ * (q_d - q) - robot.KQD * dq
        total = np.clip(drive + extra, -robot.EFFORT_LIMIT, robot.EFFORT_LIMIT)
        return total - drive


def batched_flange_jacobian(q: np.ndarray) -> np.ndarray:
    """Return (N, 6, 7) flange Jacobians for (N, 7) configurations (``robot.flange_jacobian``
    vectorised over N, from the same modified-DH table)."""
    q = np.asarray(q, dtype=float)
    n = q.shape[0]
    poses = robot.link_poses(q)  # (N, 8, 4, 4): link1..link7, flange
    origins, axes = poses[:, :, :3, 3].transpose(1, 0, 2), poses[:, :, :3, 2].transpose(1, 0, 2)
    tip = origins[-1]
    jac = np.zeros((n, 6, robot.NUM_ARM_JOINTS))
    for i in range(robot.NUM_ARM_JOINTS):
        jac[:, :3, i] = np.cross(axes[i], tip - origins[i])
        jac[:, 3:, i] = axes[i]
    return jac


def batched_extra_torque(q: np.ndarray, dq: np.ndarray, q_d: np.ndarray) -> np.ndarray:
    """:meth:`HybridImpedance.extra_torque` for (N, 7) arrays at once, N m."""
    jac = batched_flange_jacobian(q)
    e = np.einsum('nij,nj->ni', jac, q_d - q)
    v = np.einsum('nij,nj->ni', jac, dq)
    extra = np.einsum('nji,nj->ni', jac, robot.KX * e - robot.KXD * v)
    drive = robot.KQ * (q_d - q) - robot.KQD * dq
    total = np.clip(drive + extra, -robot.EFFORT_LIMIT, robot.EFFORT_LIMIT)
    return total - drive


def physx_dof_properties(params: DynamicsParams) -> dict[str, np.ndarray]:
    """Return per-arm-joint PhysX values: armature kg m^2, friction (static, dynamic, viscous).

    Units of the tensor API (radians): friction efforts N m, viscous N m s/rad.
    """
    friction = np.asarray(params.friction, dtype=float)
    return {
        'armature': np.asarray(params.armature, dtype=float),
        'friction': np.column_stack([friction, friction, np.asarray(params.damping, float)]),
    }


class LatencyQueue:
    """Targets delayed by a whole number of physics steps (0 = applied at once)."""

    def __init__(self, steps: int) -> None:
        self.steps = int(steps)
        self._pending: collections.deque = collections.deque()

    def clear(self) -> None:
        self._pending.clear()

    def push(self, q_d: np.ndarray, g: float) -> bool:
        """Queue a target; return True if it has no delay (the caller applies it now)."""
        if self.steps == 0:
            return True
        self._pending.append([self.steps, q_d, g])
        return False

    def due(self) -> Iterator[tuple[np.ndarray, float]]:
        """Age the queue by one physics step and yield the targets released by it."""
        while self._pending and self._pending[0][0] <= 1:
            _, q_d, g = self._pending.popleft()
            yield q_d, g
        for item in self._pending:
            item[0] -= 1
