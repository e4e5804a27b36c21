"""The twin's batched rollouts on a GPU with MuJoCo Warp: a :class:`BatchEvaluator` for sysid.

Every (candidate, window) pair is one Warp world of the arm-only sysid model
(:class:`TwinRollout`'s, contacts off), with its own friction and armature (the model's
``dof_frictionloss`` / ``dof_armature`` / ``dof_damping`` batched per world). The controls per
physics step are the CPU twin's (the same target rows and FK of the mocap target,
``TwinRollout._prepared``), uploaded once per set of windows; each physics step a kernel gathers
every world's control row on the device from its window and latency delay (the twin's latency
rule: the target in force before the window holds for ``delay`` steps). A call assigns only the
per-world parameters and (window, delay) pairs and replays one captured CUDA graph (per
world-count bucket, step count and window set: reset, start states, steps), so it is one graph
launch plus small copies. The least-squares fits (``core/sysid/lsq.py``; ``lsq_batch.py``, every
latency's LM in lockstep) run on it unchanged: a Jacobian is one call of 15 x windows
worlds. MuJoCo Warp computes in float32, so its finite-difference step must be larger than the
CPU's (``LeastSquaresOptions.fd_step`` 1e-3 here, 1e-6 on the CPU);
``bench/bench_sysid_warp.py`` checks rollouts and the fit against the CPU twin.

Needs ``mujoco-warp`` and ``warp-lang``; an NVIDIA GPU for speed (on Warp's CPU device the same
code runs without graphs, for tests); imported only by the bench and the batched fit.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import time
from typing import Sequence

import numpy as np

from realm_ros.backends.mujoco.rollout import TwinRollout
from realm_ros.core import robot
from realm_ros.core.config import DynamicsParams
from realm_ros.core.errors import BackendUnavailable
from realm_ros.core.sysid import BatchEvaluator, FitRequest, FitStrategy, Trajectory
from realm_ros.core.sysid.latency import IdentifyResult
from realm_ros.core.sysid.lsq_batch import identify_batched
from realm_ros.core.sysid.strategies import register


def _kernels(wp):
    """Build the two input kernels (Warp needs the module imported to define them)."""

    @wp.kernel
    def start_state(init_qpos: wp.array2d(dtype=wp.float32),
                    init_qvel: wp.array2d(dtype=wp.float32), win: wp.array(dtype=wp.int32),
                    qpos: wp.array2d(dtype=wp.float32), qvel: wp.array2d(dtype=wp.float32)):
        w = wp.tid()
        t = win[w]
        for i in range(qpos.shape[1]):
            qpos[w, i] = init_qpos[t, i]
        for i in range(qvel.shape[1]):
            qvel[w, i] = init_qvel[t, i]

    @wp.kernel
    def controls_at(table: wp.array3d(dtype=wp.float32), last: wp.array(dtype=wp.int32),
                    win: wp.array(dtype=wp.int32), delay: wp.array(dtype=wp.int32),
                    s: int, substeps: int, ctrl: wp.array2d(dtype=wp.float32),
                    mocap_pos: wp.array2d(dtype=wp.vec3), mocap_quat: wp.array2d(dtype=wp.quat)):
        # Row 0 of a window's table is the target in force before its first step (held while
        # the latency delays the first target), rows 1.. its targets, each for ``substeps``.
        w = wp.tid()
        t = win[w]
        j = s - delay[w]
        row = int(0)
        if j >= 0:
            row = wp.min(j // substeps, last[t]) + 1
        nu = ctrl.shape[1]
        for i in range(nu):
            ctrl[w, i] = table[t, row, i]
        for k in range(mocap_pos.shape[1]):
            c = nu + 3 * k
            mocap_pos[w, k] = wp.vec3(table[t, row, c], table[t, row, c + 1],
                                      table[t, row, c + 2])
        for k in range(mocap_quat.shape[1]):
            c = nu + 3 * mocap_pos.shape[1] + 4 * k
            mocap_quat[w, k] = wp.quat(table[t, row, c], table[t, row, c + 1],
                                       table[t, row, c + 2], table[t, row, c + 3])

    return start_state, controls_at


class _Windows:
    """A set of windows on the device: per window its start state and its control rows (the
    CPU twin's ``CONTROL_SPEC`` rows, :meth:`TwinRollout._prepared`), uploaded once."""

    def __init__(self, owner: WarpRollout, windows: Sequence[Trajectory]) -> None:
        wp, cpu = owner.wp, owner.cpu
        m = cpu.model
        prepared = [cpu._prepared(w) for w in windows]
        k_max = max(w.steps for w in windows)
        table = np.zeros((len(prepared), k_max + 1, cpu.ncontrol), dtype=np.float32)
        for i, (_, rows, held) in enumerate(prepared):
            table[i, 0] = held
            table[i, 1:1 + len(rows)] = rows
        init = np.stack([state for state, _, _ in prepared])
        self.k_max = k_max
        self.table = wp.array(table, dtype=wp.float32)
        self.last = wp.array(np.array([w.steps - 1 for w in windows], np.int32),
                             dtype=wp.int32)
        self.qpos = wp.array(init[:, 1:1 + m.nq].astype(np.float32), dtype=wp.float32)
        self.qvel = wp.array(init[:, 1 + m.nq:1 + m.nq + m.nv].astype(np.float32),
                             dtype=wp.float32)


class _Batch:
    """Device model, data and outputs and the captured graph for one world count and step
    count. A call assigns only the per-world parameters and the (window, delay) of every
    world; the graph resets the worlds, sets their start states and gathers each physics
    step's controls on the device from the batch's own window buffers, into which a new set
    of windows is copied (device to device), so one graph serves every set of windows."""

    def __init__(self, owner: WarpRollout, nworld: int, nsteps: int) -> None:
        wp, mjw = owner.wp, owner.mjw
        mjm = owner.cpu.model
        self.nworld, self.nsteps = nworld, nsteps
        batched = {'dof_frictionloss': nworld, 'dof_armature': nworld, 'dof_damping': nworld}
        self.m = mjw.put_model(mjm, batch_sizes=batched)
        self.d = mjw.make_data(mjm, nworld=nworld, nconmax=1, njmax=owner.njmax)
        self.win = wp.zeros(nworld, dtype=wp.int32)
        self.delay = wp.zeros(nworld, dtype=wp.int32)
        substeps = owner.cpu.substeps
        self.nout = nsteps // substeps
        self.qpos = wp.zeros((self.nout, nworld, mjm.nq), dtype=self.d.qpos.dtype)
        self.capacity = 0
        self.loaded: _Windows | None = None
        self.graph: object | None = None

    def _load(self, owner: WarpRollout, windows: _Windows) -> None:
        """Copy ``windows`` into the batch's buffers (grown, and the graph dropped, when a set
        has more windows than they hold)."""
        wp = owner.wp
        n = windows.table.shape[0]
        if n > self.capacity:
            shape = windows.table.shape
            self.table = wp.zeros((n,) + tuple(shape[1:]), dtype=wp.float32)
            self.last = wp.zeros(n, dtype=wp.int32)
            self.init_qpos = wp.zeros((n, windows.qpos.shape[1]), dtype=wp.float32)
            self.init_qvel = wp.zeros((n, windows.qvel.shape[1]), dtype=wp.float32)
            self.capacity, self.graph = n, None
        for dest, src in ((self.table, windows.table), (self.last, windows.last),
                          (self.init_qpos, windows.qpos), (self.init_qvel, windows.qvel)):
            wp.copy(dest, src)
        self.loaded = windows

    def _steps(self, owner: WarpRollout) -> None:
        wp, mjw = owner.wp, owner.mjw
        start_state, controls_at = owner.kernels
        substeps = owner.cpu.substeps
        d = self.d
        mjw.reset_data(self.m, d)
        wp.launch(start_state, dim=self.nworld,
                  inputs=[self.init_qpos, self.init_qvel, self.win, d.qpos, d.qvel])
        for s in range(self.nsteps):
            wp.launch(controls_at, dim=self.nworld,
                      inputs=[self.table, self.last, self.win, self.delay, s, substeps,
                              d.ctrl, d.mocap_pos, d.mocap_quat])
            mjw.step(self.m, d)
            if (s + 1) % substeps == 0:
                wp.copy(self.qpos[(s + 1) // substeps - 1], d.qpos)

    def run(self, owner: WarpRollout, windows: _Windows) -> None:
        """Run the ``nsteps`` physics steps on ``windows``: on a GPU one launch of the graph
        (captured on the first call of this batch, the kernels compiled before)."""
        wp = owner.wp
        if self.loaded is not windows:
            self._load(owner, windows)
        if not wp.get_device().is_cuda:
            self._steps(owner)
            return
        if self.graph is None:
            t = time.perf_counter()
            self._steps(owner)  # compiles the kernels (not capturable)
            wp.synchronize()
            with wp.ScopedCapture() as capture:
                self._steps(owner)
            self.graph = capture.graph
            owner.timing['compile'] += time.perf_counter() - t
        wp.capture_launch(self.graph)


def _content_key(windows: Sequence[Trajectory]) -> bytes:
    """Key a set of windows by what they hold (each fit cuts its windows anew: the same
    windows, other objects)."""
    h = hashlib.blake2b(digest_size=16)
    for w in windows:
        for part in (w.q0, w.dq0, w.targets, w.target0, w.gripper):
            h.update(np.ascontiguousarray(part, dtype=np.float64).tobytes())
        h.update(np.float64(w.gripper0).tobytes())
    return h.digest()


def bucket(n: int) -> int:
    """Return the world count for ``n`` rollouts: a power of two from 256 to 2048, then a
    multiple of 1024 (a fit's calls then share a few captured graphs, and padding stays
    under half a call's worlds)."""
    if n <= 2048:
        return max(256, 1 << max(0, int(n - 1).bit_length()))
    return -(-n // 1024) * 1024


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
        if device is None:
            if not wp.is_cuda_available():
                raise BackendUnavailable('the Warp sysid rollout found no CUDA GPU (MuJoCo Warp '
                                         "runs on Warp's CPU device only for tests: pass "
                                         "device='cpu'); fit on the CPU without --device gpu")
            device = 'cuda:0'
        self.device = device
        self.cpu = TwinRollout(physics_hz, control_hz, nthread=1, latency_s=latency_s)
        self.njmax = njmax
        self.latency_s = self.cpu.latency_s
        self.kernels = _kernels(wp)
        self._batches: dict[tuple[int, int], _Batch] = {}
        self._windows: dict[bytes, _Windows] = {}
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
        return self.simulate_vectors(
            [(lat, np.array([np.r_[p.friction, p.armature, p.damping] for p in params]))
             for lat, params in groups], trajectories)

    def simulate_vectors(self, groups: Sequence[tuple[float, np.ndarray]],
                         trajectories: Sequence[Trajectory]) -> list[list[np.ndarray]]:
        """:meth:`simulate_groups` with each group's candidates as a (P, 14) or (P, 21) array
        ``[friction_1..7, armature_1..7(, damping_1..7)]`` (damping 0 when left out): the
        batched fit's form (``core/sysid/lsq_batch.py``), no per-candidate objects."""
        with self.wp.ScopedDevice(self.device):
            return self._simulate_vectors(groups, trajectories)

    def _simulate_vectors(self, groups: Sequence[tuple[float, np.ndarray]],
                          trajectories: Sequence[Trajectory]) -> list[list[np.ndarray]]:
        cpu = self.cpu
        m = cpu.model
        n_t = len(trajectories)
        key_w = _content_key(trajectories)
        windows = self._windows.get(key_w)
        if windows is None:
            t = time.perf_counter()
            if len(self._windows) > 16:
                self._windows.clear()
            windows = self._windows[key_w] = _Windows(self, trajectories)
            self.timing['upload'] += time.perf_counter() - t
        vectors = np.concatenate([np.atleast_2d(v) for _, v in groups])
        if vectors.shape[1] == 14:
            vectors = np.hstack([vectors, np.zeros((len(vectors), 7))])
        delays = np.concatenate([np.full(len(v), cpu.with_latency(lat).delay_steps)
                                 for lat, v in groups]).astype(np.int32)
        n_p = len(vectors)
        nsteps = windows.k_max * cpu.substeps
        n = n_p * n_t
        nworld = bucket(n)
        key = (nworld, nsteps)
        if key not in self._batches:
            self._batches[key] = _Batch(self, nworld, nsteps)
        batch = self._batches[key]
        t = time.perf_counter()
        # World index = p * T + t, padded by repeating the last world.
        index = np.minimum(np.arange(nworld), n - 1)
        p_of, t_of = index // n_t, index % n_t
        arm = cpu.act.arm_dof
        for i, field in enumerate(('dof_frictionloss', 'dof_armature', 'dof_damping')):
            values = np.tile(getattr(m, field), (nworld, 1)).astype(np.float32)
            values[:, arm] = vectors[p_of, 7 * i:7 * i + 7]
            getattr(batch.m, field).assign(values)
        batch.win.assign(t_of.astype(np.int32))
        batch.delay.assign(delays[p_of])
        self.timing['upload'] += time.perf_counter() - t
        t = time.perf_counter()
        batch.run(self, windows)
        self.wp.synchronize()
        self.timing['run'] += time.perf_counter() - t
        t = time.perf_counter()
        out = batch.qpos.numpy()[:, :n][:, :, cpu.act.arm_qpos].astype(np.float64)
        self.timing['download'] += time.perf_counter() - t
        out = out.transpose(1, 0, 2).reshape(n_p, n_t, batch.nout, robot.NUM_ARM_JOINTS)
        result, first = [], 0
        for _, group in groups:
            size = len(np.atleast_2d(group))
            block = out[first:first + size]
            result.append([block[:, i, :traj.steps] for i, traj in enumerate(trajectories)])
            first += size
        return result


#: MuJoCo Warp computes in float32: the least-squares forward-difference step (unit-cube units)
#: must be well above its rounding (the CPU's 1e-6 is below it).
WARP_FD_STEP = 1e-3


def _warp_run(request: FitRequest) -> IdentifyResult:
    """The batched least-squares fit (``core/sysid/lsq_batch.py``) on a :class:`WarpRollout`."""
    lm = request.options.lm
    if lm.fd_step < WARP_FD_STEP:
        lm = dataclasses.replace(lm, fd_step=WARP_FD_STEP)
    options = dataclasses.replace(request.options, lm=lm)
    rollout = WarpRollout(physics_hz=request.profile.physics_hz)
    return identify_batched(rollout.simulate_vectors, request.trajectories, options,
                            request.profile, request.space, latencies=request.latencies)


WARP = register(FitStrategy(
    'warp', _warp_run, 'least squares at every latency in lockstep on MuJoCo Warp (a GPU)',
    kind='every latency in lockstep on MuJoCo Warp', methods=('lm',)))
