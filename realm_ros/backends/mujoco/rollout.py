"""Batched twin rollouts for system identification: a whole CMA-ES population in one call.

Every (candidate, trajectory) pair is one rollout of ``mujoco.rollout.rollout`` with its own
``MjModel`` copy (``dof_frictionloss``/``dof_armature`` of the candidate), so the C thread pool
runs the population without any Python per candidate or per step. The controls per physics
step are exactly what :class:`MujocoWorld` writes when a target is applied: both go through
``actuation.py`` (target writing and the latency rule), held for ``physics_hz / control_hz``
substeps. FK is computed once per control step per trajectory and shared by all candidates and
all latencies (:meth:`TwinRollout.with_latency` shares the model, threads and caches).

The model is the arm alone (no table, objects or cameras) with contacts disabled. It is
dynamically identical to the world's model for the arm as long as the arm touches nothing: the
arm's own geoms never collide with each other (contype 2 / conaffinity 1) and excitation
trajectories keep the gripper above the table (``core.sysid.Workspace``).
``test/unit/test_sysid.py`` checks that a rollout equals :class:`MujocoWorld` stepping.
"""

from __future__ import annotations

import copy
import time
from typing import Sequence

import mujoco  # noqa: I001 - after core so a missing mujoco fails with the backend's message
from mujoco import rollout as mj_rollout
import numpy as np

from realm_ros.backends.mujoco import model as mjcf
from realm_ros.backends.mujoco.actuation import ArmActuation, delay_steps
from realm_ros.core import robot
from realm_ros.core.config import DynamicsParams
from realm_ros.core.sysid import BatchEvaluator, Trajectory

STATE_SPEC = mujoco.mjtState.mjSTATE_FULLPHYSICS
CONTROL_SPEC = (mujoco.mjtState.mjSTATE_CTRL | mujoco.mjtState.mjSTATE_MOCAP_POS
                | mujoco.mjtState.mjSTATE_MOCAP_QUAT)


class TwinRollout(BatchEvaluator):
    """Simulate candidate dynamics on recorded trajectories with ``mujoco.rollout``."""

    def __init__(self, physics_hz: float = robot.PHYSICS_HZ, control_hz: float = robot.CONTROL_HZ,
                 nthread: int = 2, latency_s: float = 0.0) -> None:
        """Build the arm-only model.

        Args:
            latency_s: actuation delay to replay, s (0 = the twin as it is), by the twin's
                latency rule (``actuation.delay_steps``).
        """
        self.physics_hz = physics_hz
        self.substeps = int(round(physics_hz / control_hz))
        self.latency_s = float(latency_s)
        self.delay_steps = delay_steps(latency_s, physics_hz)
        xml = mjcf.build_mjcf(physics_hz=physics_hz, with_table=False, cameras=())
        self.model = mujoco.MjModel.from_xml_string(xml)
        # Nothing on the arm-only model can collide (see the module docstring); skipping
        # collision detection saves about a sixth of each step.
        self.model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
        self.nthread = max(1, nthread)
        self.datas = [mujoco.MjData(self.model) for _ in range(self.nthread)]
        self.act = ArmActuation(self.model)
        self.nstate = mujoco.mj_stateSize(self.model, STATE_SPEC)
        self.ncontrol = mujoco.mj_stateSize(self.model, CONTROL_SPEC)
        # Offset of qpos in the full-physics state: [time, qpos, qvel, act, ...].
        self._qpos_offset = 1
        self._models: list = []
        # Per trajectory (keyed by identity; the entry keeps it alive so the id is not reused):
        # its initial state and one control row per target, shared by every latency.
        self._cache: dict[int, tuple[Trajectory, np.ndarray, np.ndarray, np.ndarray]] = {}
        self._siblings: dict[float, TwinRollout] = {self.latency_s: self}
        self.timing = {'rollout': 0.0, 'fk_precompute': 0.0, 'models': 0.0}

    def with_latency(self, latency_s: float) -> TwinRollout:
        """Return an evaluator replaying ``latency_s`` that shares this one's model, threads,
        candidate models, caches and timing (one FK precompute per trajectory for all
        latencies)."""
        sibling = self._siblings.get(float(latency_s))
        if sibling is None:
            sibling = copy.copy(self)
            sibling.latency_s = float(latency_s)
            sibling.delay_steps = delay_steps(latency_s, self.physics_hz)
            self._siblings[sibling.latency_s] = sibling
        return sibling

    def least_squares(self):
        """Return ``mujoco.minimize.least_squares`` (the solver of ``sysid``'s ``'lm'`` fit)."""
        from mujoco import minimize
        return minimize.least_squares

    # -- per-trajectory precompute ----------------------------------------------------------

    def control_rows(self, targets: np.ndarray, gripper: np.ndarray) -> np.ndarray:
        """Return one control vector (``CONTROL_SPEC``) per target row, as the twin writes it."""
        t = time.perf_counter()
        m = self.model
        out = np.zeros((len(targets), self.ncontrol))
        scratch = mujoco.MjData(m)
        for k in range(len(targets)):
            scratch.ctrl[:] = 0.0
            self.act.write_target(scratch, targets[k], float(gripper[k]))
            mujoco.mj_getState(m, scratch, out[k], CONTROL_SPEC)
        self.timing['fk_precompute'] += time.perf_counter() - t
        return out

    def initial_state(self, traj: Trajectory) -> np.ndarray:
        """Return the full-physics state at the recorded start of ``traj`` (time 0)."""
        data = mujoco.MjData(self.model)
        self.act.set_arm_state(data, traj.q0, traj.dq0, traj.gripper0)
        state = np.empty(self.nstate)
        mujoco.mj_getState(self.model, data, state, STATE_SPEC)
        return state

    def _prepared(self, traj: Trajectory) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return (initial state, control rows of the targets, control row of target0)."""
        entry = self._cache.get(id(traj))
        if entry is None or entry[0] is not traj:
            if len(self._cache) > 20000:
                self._cache.clear()
            rows = self.control_rows(np.vstack([np.asarray(traj.target0)[None], traj.targets]),
                                     np.r_[traj.gripper0, traj.gripper])
            entry = (traj, self.initial_state(traj), rows[1:], rows[0])
            self._cache[id(traj)] = entry
        return entry[1], entry[2], entry[3]

    def controls(self, traj: Trajectory) -> np.ndarray:
        """Return the (K * substeps, ncontrol) control vectors of ``traj``, per physics step:
        each target's row held for ``substeps``, the whole sequence ``delay_steps`` late (the
        target in force before the first step, ``target0``, holds meanwhile)."""
        _, rows, held = self._prepared(traj)
        out = np.repeat(rows, self.substeps, axis=0)
        if self.delay_steps:
            out = np.concatenate([np.repeat(held[None], self.delay_steps, axis=0),
                                  out[:-self.delay_steps]])
        return out

    # -- batch simulation -------------------------------------------------------------------

    def _candidate_models(self, params: Sequence[DynamicsParams]) -> list:
        while len(self._models) < len(params):
            self._models.append(copy.copy(self.model))
        for model, p in zip(self._models, params):
            self.act.set_dynamics(model, p)
        return self._models[:len(params)]

    def batch_inputs(self, trajectories: Sequence[Trajectory]) -> tuple[np.ndarray, np.ndarray]:
        """Return the (T, nstate) initial states and (T, K_max * substeps, ncontrol) controls
        of ``trajectories``; shorter ones are padded by holding their last control."""
        k_max = max(traj.steps for traj in trajectories)
        init = np.stack([self._prepared(traj)[0] for traj in trajectories])
        ctrl = np.empty((len(trajectories), k_max * self.substeps, self.ncontrol))
        for i, traj in enumerate(trajectories):
            c = self.controls(traj)
            ctrl[i, :len(c)] = c
            ctrl[i, len(c):] = c[-1]
        return init, ctrl

    def simulate(self, params: Sequence[DynamicsParams],
                 trajectories: Sequence[Trajectory]) -> list[np.ndarray]:
        """Return per trajectory a (P, K, 7) array of joint positions after each control step.

        Trajectories of different lengths are padded by holding their last control; the
        padding is cut from the result.
        """
        t = time.perf_counter()
        models = self._candidate_models(params)
        self.timing['models'] += time.perf_counter() - t
        n_p, n_t = len(params), len(trajectories)
        init, ctrl = self.batch_inputs(trajectories)
        k_max = ctrl.shape[1] // self.substeps
        # Rollout index = p * T + t: every candidate replays every trajectory.
        control = np.broadcast_to(ctrl[None], (n_p,) + ctrl.shape).reshape(
            n_p * n_t, k_max * self.substeps, self.ncontrol)
        initial = np.broadcast_to(init[None], (n_p,) + init.shape).reshape(n_p * n_t, -1)
        batch_models = [models[p] for p in range(n_p) for _ in range(n_t)]
        t = time.perf_counter()
        state, _ = mj_rollout.rollout(
            batch_models, self.datas, np.ascontiguousarray(initial),
            np.ascontiguousarray(control), control_spec=CONTROL_SPEC,
            initial_warmstart=np.zeros((n_p * n_t, self.model.nv)), persistent_pool=True)
        self.timing['rollout'] += time.perf_counter() - t
        qpos = state[:, self.substeps - 1::self.substeps,
                     self._qpos_offset + self.act.arm_qpos]
        qpos = qpos.reshape(n_p, n_t, k_max, robot.NUM_ARM_JOINTS)
        return [qpos[:, i, :traj.steps] for i, traj in enumerate(trajectories)]
