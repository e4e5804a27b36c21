"""The twin's batched rollouts on a GPU with MuJoCo Warp: a :class:`BatchEvaluator` for sysid.

Every (candidate, window) pair is one Warp world of the arm-only sysid model
(:class:`TwinRollout`'s, contacts off), with its own friction and armature (the model's
``dof_frictionloss`` / ``dof_armature`` / ``dof_damping`` batched per world). The controls per
physics step are the CPU twin's (``TwinRollout.batch_inputs``: the same target rows, FK of the
mocap target and latency shift), uploaded once per call; the physics steps of a call replay as
one captured CUDA graph (per world-count bucket and step count), so a call is one graph launch
plus two copies. The least-squares fit (``core/sysid/lsq.py``) runs on it unchanged: a Jacobian
is one call of 15 x windows worlds. MuJoCo Warp computes in float32, so its finite-difference
step must be larger than the CPU's (``LeastSquaresOptions.fd_step`` 1e-3 here, 1e-6 on the
CPU); ``bench/bench_sysid_warp.py`` checks rollouts and the fit against the CPU twin.

Needs ``mujoco-warp`` and ``warp-lang`` and an NVIDIA GPU; imported only by the bench.
"""

from __future__ import annotations

import copy
import time
from typing import Sequence

import numpy as np

from realm_ros.backends.mujoco.mjx_rollout import pow2_bucket, split_controls
from realm_ros.backends.mujoco.rollout import TwinRollout
from realm_ros.core import robot
from realm_ros.core.config import DynamicsParams
from realm_ros.core.errors import BackendUnavailable
from realm_ros.core.sysid import BatchEvaluator, Trajectory


class _Batch:
    """Device model, data, input/output buffers and the captured graph for one world count
    and step count."""

    def __init__(self, owner: WarpRollout, nworld: int, nsteps: int) -> None:
        wp, mjw = owner.wp, owner.mjw
        mjm = owner.cpu.model
        self.nworld, self.nsteps = nworld, nsteps
        batched = {'dof_frictionloss': nworld, 'dof_armature': nworld, 'dof_damping': nworld}
        self.m = mjw.put_model(mjm, batch_sizes=batched)
        self.d = mjw.make_data(mjm, nworld=nworld, nconmax=1, njmax=owner.njmax)
        d = self.d
        nu, nm, nq = mjm.nu, mjm.nmocap, mjm.nq
        self.ctrl = wp.zeros((nsteps, nworld, nu), dtype=d.ctrl.dtype)
        self.mocap_pos = wp.zeros((nsteps, nworld, nm), dtype=d.mocap_pos.dtype)
        self.mocap_quat = wp.zeros((nsteps, nworld, nm), dtype=d.mocap_quat.dtype)
        substeps = owner.cpu.substeps
        self.nout = nsteps // substeps
        self.qpos = wp.zeros((self.nout, nworld, nq), dtype=d.qpos.dtype)
        # Compile the kernels with one uncaptured run (not capturable), then capture.
        t = time.perf_counter()
        self._steps(owner)
        wp.synchronize()
        with wp.ScopedCapture() as capture:
            self._steps(owner)
        self.graph = capture.graph
        owner.timing['compile'] += time.perf_counter() - t

    def _steps(self, owner: WarpRollout) -> None:
        wp, mjw = owner.wp, owner.mjw
        substeps = owner.cpu.substeps
        for s in range(self.nsteps):
            wp.copy(self.d.ctrl, self.ctrl[s])
            if self.d.mocap_pos.shape[1]:
                wp.copy(self.d.mocap_pos, self.mocap_pos[s])
                wp.copy(self.d.mocap_quat, self.mocap_quat[s])
            mjw.step(self.m, self.d)
            if (s + 1) % substeps == 0:
                wp.copy(self.qpos[(s + 1) // substeps - 1], self.d.qpos)

    def replay(self, owner: WarpRollout) -> None:
        """Run the ``nsteps`` physics steps: one launch of the captured graph."""
        owner.wp.capture_launch(self.graph)


class WarpRollout(BatchEvaluator):
    """Simulate candidate dynamics on recorded windows with MuJoCo Warp on the GPU."""

    #: A call costs about the same for 1 or 512 worlds (``sysid.lsq`` then evaluates the
    #: Jacobian's columns with every trial step).
    free_batch = True

    def __init__(self, physics_hz: float = robot.PHYSICS_HZ,
                 control_hz: float = robot.CONTROL_HZ, latency_s: float = 0.0,
                 njmax: int = 64, device: str | None = None) -> None:
        try:
            import mujoco_warp as mjw
            import warp as wp
        except ImportError as exc:
            raise BackendUnavailable(f'the Warp sysid rollout needs mujoco-warp and warp-lang '
                                     f'({exc})') from exc
        self.wp, self.mjw = wp, mjw
        wp.init()
        self.device = device
        self.cpu = TwinRollout(physics_hz, control_hz, nthread=1, latency_s=latency_s)
        self.njmax = njmax
        self.latency_s = self.cpu.latency_s
        self._batches: dict[tuple[int, int], _Batch] = {}
        self._siblings: dict[float, WarpRollout] = {self.latency_s: self}
        self.timing = {'compile': 0.0, 'upload': 0.0, 'run': 0.0, 'download': 0.0}

    def with_latency(self, latency_s: float) -> WarpRollout:
        """Return an evaluator replaying ``latency_s`` that shares this one's device batches
        (graphs), CPU precompute and timing."""
        sibling = self._siblings.get(float(latency_s))
        if sibling is None:
            sibling = copy.copy(self)
            sibling.cpu = self.cpu.with_latency(latency_s)
            sibling.latency_s = sibling.cpu.latency_s
            self._siblings[sibling.latency_s] = sibling
        return sibling

    def least_squares(self):
        """Return ``mujoco.minimize.least_squares`` (LM runs on the host; rollouts here)."""
        return self.cpu.least_squares()

    def simulate(self, params: Sequence[DynamicsParams],
                 trajectories: Sequence[Trajectory]) -> list[np.ndarray]:
        """Return per trajectory a (P, K, 7) array of joint positions after each control step
        (as :meth:`TwinRollout.simulate`)."""
        return self.simulate_groups([(self.latency_s, params)], trajectories)[0]

    def simulate_groups(self, groups: Sequence[tuple[float, Sequence[DynamicsParams]]],
                        trajectories: Sequence[Trajectory]) -> list[list[np.ndarray]]:
        """Return per group (latency s, candidates) :meth:`simulate`'s result, every group in
        one batch of worlds (a latency only changes the controls, which are per world)."""
        wp = self.wp
        cpu = self.cpu
        m = cpu.model
        n_t = len(trajectories)
        inputs = [self.cpu.with_latency(lat).batch_inputs(trajectories) for lat, _ in groups]
        init = inputs[0][0]
        ctrl = np.concatenate([np.broadcast_to(c[None], (len(p),) + c.shape)
                               for (_, c), (_, p) in zip(inputs, groups)])  # (P, T, S, nc)
        params = [p for _, group in groups for p in group]
        n_p = len(params)
        nsteps = ctrl.shape[2]
        n = n_p * n_t
        nworld = pow2_bucket(max(n, 32))
        key = (nworld, nsteps)
        if key not in self._batches:
            self._batches[key] = _Batch(self, nworld, nsteps)
        batch = self._batches[key]
        t = time.perf_counter()
        # World index = p * T + t, padded by repeating the last world.
        index = np.minimum(np.arange(nworld), n - 1)
        p_of, t_of = index // n_t, index % n_t
        arm = cpu.act.arm_dof
        for field, name in (('dof_frictionloss', 'friction'), ('dof_armature', 'armature'),
                            ('dof_damping', 'damping')):
            values = np.tile(getattr(m, field), (nworld, 1)).astype(np.float32)
            values[:, arm] = np.array([getattr(params[p], name) for p in p_of])
            getattr(batch.m, field).assign(values)
        self.mjw.reset_data(batch.m, batch.d)
        qpos = init[t_of, 1:1 + m.nq]
        qvel = init[t_of, 1 + m.nq:1 + m.nq + m.nv]
        batch.d.qpos.assign(qpos.astype(np.float32))
        batch.d.qvel.assign(qvel.astype(np.float32))
        c, pos, quat = split_controls(cpu, ctrl[p_of, t_of].transpose(1, 0, 2))
        batch.ctrl.assign(np.ascontiguousarray(c, dtype=np.float32))
        if m.nmocap:
            batch.mocap_pos.assign(np.ascontiguousarray(pos, dtype=np.float32))
            batch.mocap_quat.assign(np.ascontiguousarray(quat, dtype=np.float32))
        self.timing['upload'] += time.perf_counter() - t
        t = time.perf_counter()
        batch.replay(self)
        wp.synchronize()
        self.timing['run'] += time.perf_counter() - t
        t = time.perf_counter()
        out = batch.qpos.numpy()[:, :n][:, :, cpu.act.arm_qpos].astype(np.float64)
        self.timing['download'] += time.perf_counter() - t
        out = out.transpose(1, 0, 2).reshape(n_p, n_t, batch.nout, robot.NUM_ARM_JOINTS)
        result, first = [], 0
        for _, group in groups:
            block = out[first:first + len(group)]
            result.append([block[:, i, :traj.steps] for i, traj in enumerate(trajectories)])
            first += len(group)
        return result
