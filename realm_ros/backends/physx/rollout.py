"""Batched PhysX rollouts for system identification (``realm-ros sysid fit --backend physx``).

The arm-only twin (no table, objects or cameras, as ``backends/mujoco/rollout.py``) is exported
to USD and cloned ``envs`` times in one kit-less PhysX scene (``PhysX.clone``, spaced 3 m apart:
on the CPU, clones share one collision space). Every (candidate, trajectory) pair is one clone
with its own armature and friction; one ``step_sync`` advances all of them. The controller is
the PhysX twin's: joint drives carry ``Kq``/``Kqd`` and the Cartesian terms are added as joint
efforts every physics step (:class:`~realm_ros.backends.physx.common.HybridImpedance`); the
actuation delay is replayed as in :class:`~realm_ros.backends.mujoco.rollout.TwinRollout`.
"""

from __future__ import annotations

import pathlib
import tempfile
import time
from typing import Callable, Sequence
import warnings

import mujoco
import numpy as np

from realm_ros.backends import usd_export
from realm_ros.backends.mujoco import model as mjcf
from realm_ros.backends.physx.common import batched_extra_torque, physx_dof_properties
from realm_ros.backends.physx.world import (
    PhysX,
    TensorType,
    configure_threads,
    ovstage,
    register_schemas,
)
from realm_ros.core import robot
from realm_ros.core.config import DynamicsParams
from realm_ros.core.sysid import BatchEvaluator, Trajectory

SOURCE = '/World/panda_link0_articulation'


class PhysxRollout(BatchEvaluator):
    """Simulate candidate dynamics on recorded trajectories in cloned PhysX arms."""

    def __init__(self, physics_hz: float = robot.PHYSICS_HZ, control_hz: float = robot.CONTROL_HZ,
                 latency_s: float = 0.0, envs: int = 48) -> None:
        self.substeps = int(round(physics_hz / control_hz))
        self.delay_steps = max(int(round(latency_s * physics_hz)) - 1, 0)
        self.dt = 1.0 / physics_hz
        self.envs = int(envs)
        self.timing = {'rollout': 0.0, 'controller': 0.0, 'setup': 0.0}
        t = time.perf_counter()
        model = mujoco.MjModel.from_xml_string(
            mjcf.build_mjcf(physics_hz=physics_hz, with_table=False, cameras=()))
        stage, _ = usd_export.export_model(model, physics_hz)
        self._tmp = tempfile.TemporaryDirectory(prefix='realm_physx_rollout_')
        path = pathlib.Path(self._tmp.name) / 'arm.usda'
        stage.GetRootLayer().Export(str(path))
        register_schemas()
        if not PhysX.get_cpu_mode():
            PhysX.set_cpu_mode(True)
            configure_threads()
        self._physx: PhysX | None = PhysX()
        self._stage = ovstage.Stage('realm_sysid')
        ovstage.population.open_usd(self._stage, str(path), ordinal=1,
                                    domains=ovstage.PopulationDomain.ALL)
        self._stage.advance_write_floor(ordinal=1).wait()
        self._engine.wait_task(self._engine.attach_ovstage(self._stage, read_ordinal=1))
        targets = [f'/World/env{i}' for i in range(1, self.envs)]
        if targets:
            anchors: list[Sequence[float]] = [
                (3.0 * (i % 8), 3.0 * (i // 8), 0.0, 0.0, 0.0, 0.0, 1.0)
                for i in range(1, self.envs)]
            self._engine.clone(SOURCE, targets, anchor_transforms=anchors)
            self._engine.wait_all()
        self._engine.warmup()
        self._engine.wait_all()
        roots = [f'{p}/joints/root_fixed' for p in [SOURCE] + targets]
        self._views = {}
        self._buf = {}
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', DeprecationWarning)
            for key, tensor_type in (
                    ('q', TensorType.ARTICULATION_DOF_POSITION),
                    ('dq', TensorType.ARTICULATION_DOF_VELOCITY),
                    ('target', TensorType.ARTICULATION_DOF_POSITION_TARGET),
                    ('force', TensorType.ARTICULATION_DOF_ACTUATION_FORCE),
                    ('armature', TensorType.ARTICULATION_DOF_ARMATURE),
                    ('friction', TensorType.ARTICULATION_DOF_FRICTION_PROPERTIES)):
                view = self._engine.create_tensor_binding(prim_paths=roots,
                                                         tensor_type=tensor_type)
                self._views[key] = view
                self._buf[key] = np.zeros(view.shape, dtype=np.float32)
        names = list(self._views['q'].dof_names)
        self._arm = np.array([names.index(n) for n in robot.JOINT_NAMES])
        self._fingers = np.array([names.index(f'{s}_finger_joint') for s in ('left', 'right')])
        self.timing['setup'] += time.perf_counter() - t

    def _read(self, key: str) -> np.ndarray:
        self._views[key].read(self._buf[key])
        return self._buf[key].astype(float)

    def _write(self, key: str, values: np.ndarray) -> None:
        self._buf[key][:] = values
        self._views[key].write(self._buf[key])

    def simulate(self, params: Sequence[DynamicsParams],
                 trajectories: Sequence[Trajectory]) -> list[np.ndarray]:
        """Return per trajectory a (P, K, 7) array of joint positions after each control step."""
        pairs = [(p, t) for p in range(len(params)) for t in range(len(trajectories))]
        out = [np.zeros((len(params), traj.steps, robot.NUM_ARM_JOINTS))
               for traj in trajectories]
        for start in range(0, len(pairs), self.envs):
            chunk = pairs[start:start + self.envs]
            q = self._run([params[p] for p, _ in chunk], [trajectories[t] for _, t in chunk])
            for i, (p, t) in enumerate(chunk):
                out[t][p] = q[i, :trajectories[t].steps]
        return out

    def _run(self, params: list[DynamicsParams], trajs: list[Trajectory]) -> np.ndarray:
        n = len(trajs)
        k_max = max(tr.steps for tr in trajs)
        armature = self._read('armature')
        friction = self._read('friction')
        state = self._read('q')
        for i, p in enumerate(params):
            props = physx_dof_properties(p)
            armature[i, self._arm] = props['armature']
            friction[i, self._arm] = props['friction']
        self._write('armature', armature)
        self._write('friction', friction)
        q0 = state.copy()
        dq0 = np.zeros_like(state)
        for i, tr in enumerate(trajs):
            q0[i, self._arm] = tr.q0
            q0[i, self._fingers] = mjcf.FINGER_TRAVEL * (1.0 - tr.gripper0)
            dq0[i, self._arm] = tr.dq0
        self._write('q', q0)
        self._write('dq', dq0)
        # Per physics step: the target in force (the delayed schedule TwinRollout replays).
        total = k_max * self.substeps
        sched_q = np.empty((n, total, 7))
        sched_g = np.empty((n, total))
        for i, tr in enumerate(trajs):
            tq = np.vstack([tr.targets, np.repeat(tr.targets[-1:], k_max - tr.steps, 0)])
            tg = np.r_[tr.gripper, np.repeat(tr.gripper[-1:], k_max - tr.steps)]
            tq, tg = np.repeat(tq, self.substeps, 0), np.repeat(tg, self.substeps)
            if self.delay_steps:
                tq = np.vstack([np.repeat(np.asarray(tr.target0)[None], self.delay_steps, 0),
                                tq[:-self.delay_steps]])
                tg = np.r_[np.full(self.delay_steps, tr.gripper0), tg[:-self.delay_steps]]
            sched_q[i], sched_g[i] = tq, tg
        target = q0.copy()
        force = np.zeros_like(q0)
        result = np.zeros((self.envs, k_max, 7))
        for s in range(total):
            t = time.perf_counter()
            q, dq = self._read('q'), self._read('dq')
            target[:n, self._arm] = sched_q[:, s]
            target[:n, self._fingers] = (mjcf.FINGER_TRAVEL * (1.0 - sched_g[:, s]))[:, None]
            force[:n, self._arm] = batched_extra_torque(
                q[:n, self._arm], dq[:n, self._arm], sched_q[:, s])
            self._write('target', target)
            self._write('force', force)
            self.timing['controller'] += time.perf_counter() - t
            t = time.perf_counter()
            self._engine.step_sync(self.dt)
            self.timing['rollout'] += time.perf_counter() - t
            if (s + 1) % self.substeps == 0:
                result[:, s // self.substeps] = self._read('q')[:, self._arm]
        return result[:n]

    @property
    def _engine(self) -> PhysX:
        """The PhysX instance; after :meth:`close` there is none."""
        if self._physx is None:
            raise RuntimeError('this PhysX rollout is closed')
        return self._physx

    def close(self) -> None:
        for view in self._views.values():
            view.destroy()
        self._views = {}
        if self._physx is not None:
            self._physx.wait_task(self._physx.detach_ovstage())
            self._stage.destroy()
            self._physx.destroy()
            self._physx = None
        self._tmp.cleanup()


def evaluators(device: str, threads: int) -> Callable[[float], BatchEvaluator]:
    """The PhysX twin's ``Backend.sysid``: ``latency_s -> PhysxRollout`` (one per latency, the
    arm cloned per candidate; CPU only: ``device`` and ``threads`` unused)."""
    del device, threads
    rollouts: dict[float, BatchEvaluator] = {}

    def physx(latency_s: float) -> BatchEvaluator:
        if latency_s not in rollouts:
            rollouts[latency_s] = PhysxRollout(latency_s=latency_s)
        return rollouts[latency_s]
    return physx
