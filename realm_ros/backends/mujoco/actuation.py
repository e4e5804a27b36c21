"""The twin's actuation, one home for the world and the batched rollouts.

What a joint target does to the MuJoCo model (``model.py``): ``ctrl`` of ``act_q1..7`` = q_d
(rad), the gripper's ctrl = finger opening (m) for command g, zero for the six Cartesian
actuators, and the mocap body ``target_frame`` placed at the flange pose FK(q_d) of site ``ee``
(the Cartesian part of DROID's impedance law pulls toward it). The same target is held for a
control period of ``physics_hz / control_hz`` physics steps.

The latency rule: a twin replaying an actuation delay ``latency_s`` releases a target
:func:`delay_steps` = ``round(latency_s * physics_hz) - 1`` physics steps (at least 0) into
its control period, so 0 and one physics step are the same twin. :class:`MujocoWorld` applies
it with :class:`PendingTargets`; :class:`TwinRollout` shifts its precomputed control rows by
the same number.
"""

from __future__ import annotations

import collections
import copy

import numpy as np

from realm_ros.backends.mujoco import model as mjcf
from realm_ros.core import robot
from realm_ros.core.config import DynamicsParams
from realm_ros.core.errors import BackendUnavailable

try:
    import mujoco
except ImportError as err:  # pragma: no cover - exercised only without mujoco
    raise BackendUnavailable('the MuJoCo twin needs the "mujoco" package') from err


def delay_steps(latency_s: float, physics_hz: float) -> int:
    """Return how many physics steps a target waits before it acts (the latency rule)."""
    return max(int(round(latency_s * physics_hz)) - 1, 0)


def gripper_ctrl(g: float) -> float:
    """Return the gripper actuator's ctrl (finger opening, m) for command g in [0, 1]."""
    return mjcf.FINGER_TRAVEL * (1.0 - g)


class ArmActuation:
    """Index maps of the arm in one model, target writing and the per-joint dynamics."""

    def __init__(self, model: mujoco.MjModel) -> None:
        self.model = model
        self.arm_qpos = np.array([model.joint(n).qposadr[0] for n in robot.JOINT_NAMES])
        self.arm_dof = np.array([model.joint(n).dofadr[0] for n in robot.JOINT_NAMES])
        self.finger_qpos = np.array([model.joint(f'{s}_finger_joint').qposadr[0]
                                     for s in ('left', 'right')])
        self.act_arm = np.array([model.actuator(n).id for n in mjcf.ARM_ACTUATORS])
        self.act_grip = model.actuator(mjcf.GRIPPER_ACTUATOR).id
        self.ee_site = model.site('ee').id
        self.mocap = model.body('target_frame').mocapid[0]
        self._kin = mujoco.MjData(model)  # scratch data for FK of targets

    def __deepcopy__(self, memo: dict) -> 'ArmActuation':
        """A copy with scratch data of its own, fresh rather than copied: ``target_pose``
        writes every joint it reads before each use (a copied MjData copies its 20 MB
        arena: 4 ms against 0.8 ms for a new one, with many worlds in one sweep batch)."""
        new = ArmActuation.__new__(ArmActuation)
        memo[id(self)] = new
        for name, value in self.__dict__.items():
            if name != '_kin':
                setattr(new, name, copy.deepcopy(value, memo))
        new._kin = mujoco.MjData(new.model)
        return new

    def target_pose(self, q_d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the flange pose (position m, quaternion wxyz) at joint configuration q_d."""
        self._kin.qpos[self.arm_qpos] = q_d
        mujoco.mj_kinematics(self.model, self._kin)
        quat = np.empty(4)
        mujoco.mju_mat2Quat(quat, self._kin.site_xmat[self.ee_site])
        return self._kin.site_xpos[self.ee_site].copy(), quat

    def write_target(self, data: mujoco.MjData, q_d: np.ndarray, g: float) -> None:
        """Set the actuators' joint target and place the Cartesian target frame at FK(q_d)."""
        data.ctrl[self.act_arm] = q_d
        data.ctrl[self.act_grip] = gripper_ctrl(g)
        pos, quat = self.target_pose(q_d)
        data.mocap_pos[self.mocap] = pos
        data.mocap_quat[self.mocap] = quat

    def set_dynamics(self, model: mujoco.MjModel, params: DynamicsParams) -> None:
        """Write per-joint friction (N m), armature (kg m^2) and damping into ``model``."""
        model.dof_frictionloss[self.arm_dof] = params.friction
        model.dof_armature[self.arm_dof] = params.armature
        model.dof_damping[self.arm_dof] = params.damping

    def dynamics(self, model: mujoco.MjModel) -> DynamicsParams:
        """Return the per-joint dynamics in ``model``."""
        return DynamicsParams(friction=tuple(model.dof_frictionloss[self.arm_dof]),
                              armature=tuple(model.dof_armature[self.arm_dof]),
                              damping=tuple(model.dof_damping[self.arm_dof]))

    def set_arm_state(self, data: mujoco.MjData, q: np.ndarray, dq: np.ndarray | None = None,
                      gripper: float = 0.0) -> None:
        """Place the arm at q (rad), dq (rad/s) and the fingers at the opening of command g."""
        data.qpos[self.arm_qpos] = q
        data.qpos[self.finger_qpos] = gripper_ctrl(gripper)
        if dq is not None:
            data.qvel[self.arm_dof] = dq


class PendingTargets:
    """Targets waiting out the actuation delay (the latency rule), released per physics step."""

    def __init__(self, delay: int) -> None:
        self.delay = delay
        self._queue: collections.deque = collections.deque()

    def __bool__(self) -> bool:
        return bool(self._queue)

    def push(self, q_d: np.ndarray, g: float, delay: int | None = None) -> None:
        """Queue a target that acts ``delay`` physics steps from now (default: ``self.delay``)."""
        self._queue.append([self.delay if delay is None else delay, q_d, g])

    def due(self) -> tuple[np.ndarray, float] | None:
        """Call once before each physics step: return the target that acts from this step on
        (the newest due one), or None; the others age by one step."""
        released = None
        while self._queue and self._queue[0][0] <= 0:
            _, q_d, g = self._queue.popleft()
            released = (q_d, g)
        for entry in self._queue:
            entry[0] -= 1
        return released
