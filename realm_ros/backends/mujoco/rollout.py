"""Batched twin rollouts for system identification: a whole CMA-ES population in one call.

Every (candidate, trajectory) pair is one rollout of ``mujoco.rollout.rollout`` with its own
``MjModel`` copy (``dof_frictionloss``/``dof_armature`` of the candidate), so the C thread pool
runs the population without any Python per candidate or per step. The controls per physics
step are exactly what :class:`MujocoWorld` writes when a target is applied (see
``MujocoWorld._write_target``): ``ctrl`` of ``act_q1..7`` = q_d, the gripper ctrl, zero for the
six Cartesian actuators, and the mocap pose of ``target_frame`` = FK(q_d) of site ``ee``; held
for ``physics_hz / control_hz`` substeps. FK is computed once per control step per trajectory
and shared by all candidates.

The model is the arm alone (no table, objects or cameras) with contacts disabled. It is
dynamically identical to the world's model for the arm as long as the arm touches nothing: the
arm's own geoms never collide with each other (contype 2 / conaffinity 1) and excitation
trajectories keep the gripper above the table (``core.sysid.Workspace``).
``test/test_sysid.py`` checks that a rollout equals :class:`MujocoWorld` stepping.
"""

from __future__ import annotations

import copy
import time
from typing import Sequence

import mujoco  # noqa: I001 - after core so a missing mujoco fails with the backend's message
from mujoco import rollout as mj_rollout
import numpy as np

from realm_ros.backends.mujoco import model as mjcf
from realm_ros.core import robot
from realm_ros.core.config import DynamicsParams
from realm_ros.core.sysid import BatchEvaluator, Trajectory

STATE_SPEC = mujoco.mjtState.mjSTATE_FULLPHYSICS
CONTROL_SPEC = (mujoco.mjtState.mjSTATE_CTRL | mujoco.mjtState.mjSTATE_MOCAP_POS
                | mujoco.mjtState.mjSTATE_MOCAP_QUAT)


class TwinRollout(BatchEvaluator):
    """Simulate candidate dynamics on recorded trajectories with ``mujoco.rollout``."""

    def __init__(self, physics_hz: float = 240.0, control_hz: float = robot.CONTROL_HZ,
                 nthread: int = 2, latency_s: float = 0.0) -> None:
        """Build the arm-only model.

        Args:
            latency_s: actuation delay to replay, s (0 = the twin as it is). Mirrors
                :class:`MujocoWorld` exactly: a target is released ``round(latency_s *
                physics_hz) - 1`` physics steps into its control period (at least 0).
        """
        self.substeps = int(round(physics_hz / control_hz))
        self.delay_steps = max(int(round(latency_s * physics_hz)) - 1, 0)
        xml = mjcf.build_mjcf(physics_hz=physics_hz, with_table=False, cameras=())
        self.model = mujoco.MjModel.from_xml_string(xml)
        # Nothing on the arm-only model can collide (see the module docstring); skipping
        # collision detection saves about a sixth of each step.
        self.model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
        self.datas = [mujoco.MjData(self.model) for _ in range(max(1, nthread))]
        self._kin = mujoco.MjData(self.model)
        m = self.model
        self._arm_qpos = np.array([m.joint(n).qposadr[0] for n in robot.JOINT_NAMES])
        self._arm_dof = np.array([m.joint(n).dofadr[0] for n in robot.JOINT_NAMES])
        self._finger_qpos = np.array([m.joint(f'{s}_finger_joint').qposadr[0]
                                      for s in ('left', 'right')])
        self._act_arm = np.array([m.actuator(n).id for n in mjcf.ARM_ACTUATORS])
        self._act_grip = m.actuator(mjcf.GRIPPER_ACTUATOR).id
        self._ee_site = m.site('ee').id
        self.nstate = mujoco.mj_stateSize(m, STATE_SPEC)
        self.ncontrol = mujoco.mj_stateSize(m, CONTROL_SPEC)
        # Offsets of qpos in the full-physics state: [time, qpos, qvel, act, ...].
        self._qpos_offset = 1
        self._models: list = []
        self._cache: dict[int, tuple[Trajectory, np.ndarray, np.ndarray]] = {}
        self.timing = {'rollout': 0.0, 'fk_precompute': 0.0, 'models': 0.0}

    # -- per-trajectory precompute ----------------------------------------------------------

    def controls(self, traj: Trajectory) -> np.ndarray:
        """Return the (K * substeps, ncontrol) control vectors of ``traj``, per physics step."""
        per_step = self._control_rows(traj.targets, traj.gripper)
        out = np.repeat(per_step, self.substeps, axis=0)
        if self.delay_steps:
            held = self._control_rows(traj.target0[None], np.array([traj.gripper0]))
            out = np.concatenate([np.repeat(held, self.delay_steps, axis=0),
                                  out[:-self.delay_steps]])
        return out

    def _control_rows(self, targets: np.ndarray, gripper: np.ndarray) -> np.ndarray:
        """Return one control vector per target row (FK of the target for the mocap)."""
        t = time.perf_counter()
        m, kin = self.model, self._kin
        out = np.zeros((len(targets), self.ncontrol))
        scratch = mujoco.MjData(m)
        quat = np.empty(4)
        for k in range(len(targets)):
            scratch.ctrl[:] = 0.0
            scratch.ctrl[self._act_arm] = targets[k]
            scratch.ctrl[self._act_grip] = mjcf.FINGER_TRAVEL * (1.0 - gripper[k])
            kin.qpos[self._arm_qpos] = targets[k]
            mujoco.mj_kinematics(m, kin)
            mujoco.mju_mat2Quat(quat, kin.site_xmat[self._ee_site])
            scratch.mocap_pos[0] = kin.site_xpos[self._ee_site]
            scratch.mocap_quat[0] = quat
            mujoco.mj_getState(m, scratch, out[k], CONTROL_SPEC)
        self.timing['fk_precompute'] += time.perf_counter() - t
        return out

    def initial_state(self, traj: Trajectory) -> np.ndarray:
        """Return the full-physics state at the recorded start of ``traj`` (time 0)."""
        data = mujoco.MjData(self.model)
        data.qpos[self._arm_qpos] = traj.q0
        data.qpos[self._finger_qpos] = mjcf.FINGER_TRAVEL * (1.0 - traj.gripper0)
        data.qvel[self._arm_dof] = traj.dq0
        state = np.empty(self.nstate)
        mujoco.mj_getState(self.model, data, state, STATE_SPEC)
        return state

    def _prepared(self, traj: Trajectory) -> tuple[np.ndarray, np.ndarray]:
        # Keyed by identity; the entry keeps the trajectory alive so its id is never reused
        # by another object while cached.
        entry = self._cache.get(id(traj))
        if entry is None or entry[0] is not traj:
            if len(self._cache) > 20000:
                self._cache.clear()
            entry = (traj, self.initial_state(traj), self.controls(traj))
            self._cache[id(traj)] = entry
        return entry[1], entry[2]

    # -- batch simulation -------------------------------------------------------------------

    def _candidate_models(self, params: Sequence[DynamicsParams]) -> list:
        while len(self._models) < len(params):
            self._models.append(copy.copy(self.model))
        for model, p in zip(self._models, params):
            model.dof_frictionloss[self._arm_dof] = p.friction
            model.dof_armature[self._arm_dof] = p.armature
            model.dof_damping[self._arm_dof] = p.damping
        return self._models[:len(params)]

    def simulate(self, params: Sequence[DynamicsParams],
                 trajectories: Sequence[Trajectory]) -> list[np.ndarray]:
        """Return per trajectory a (P, K, 7) array of joint positions after each control step.

        Trajectories of different lengths are padded by holding their last control; the
        padding is cut from the result.
        """
        t = time.perf_counter()
        models = self._candidate_models(params)
        self.timing['models'] += time.perf_counter() - t
        prepared = [self._prepared(traj) for traj in trajectories]
        n_p, n_t = len(params), len(trajectories)
        k_max = max(traj.steps for traj in trajectories)
        init = np.stack([state for state, _ in prepared])  # (T, nstate)
        ctrl = np.empty((n_t, k_max * self.substeps, self.ncontrol))
        for i, (_, c) in enumerate(prepared):
            ctrl[i, :len(c)] = c
            ctrl[i, len(c):] = c[-1]
        # Rollout index = p * T + t: every candidate replays every trajectory.
        control = np.broadcast_to(ctrl[None], (n_p,) + ctrl.shape).reshape(
            n_p * n_t, k_max * self.substeps, self.ncontrol)
        initial = np.broadcast_to(init[None], (n_p,) + init.shape).reshape(n_p * n_t, -1)
        batch_models = [models[p] for p in range(n_p) for _ in range(n_t)]
        t = time.perf_counter()
        state, _ = mj_rollout.rollout(
            batch_models, self.datas, np.ascontiguousarray(initial),
            np.ascontiguousarray(control), control_spec=CONTROL_SPEC,
            initial_warmstart=np.zeros((n_p * n_t, self.model.nv)))
        self.timing['rollout'] += time.perf_counter() - t
        qpos = state[:, self.substeps - 1::self.substeps, self._qpos_offset + self._arm_qpos]
        qpos = qpos.reshape(n_p, n_t, k_max, robot.NUM_ARM_JOINTS)
        return [qpos[:, i, :traj.steps] for i, traj in enumerate(trajectories)]
