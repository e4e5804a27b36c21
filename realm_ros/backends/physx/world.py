"""The kit-less PhysX twin: a :class:`~realm_ros.core.world.World` on ``ovphysx`` (CPU mode).

The scene is the MuJoCo twin's, exported to USD (:mod:`realm_ros.backends.usd_export`) from the
compiled model, so both engines see the same world. PhysX simulates everything that moves
(arm, gripper, objects, drawers, the switch). A MuJoCo copy of the scene is kept as a
*kinematic mirror*: after every control step the PhysX state (joint positions, object poses) is
written into it, and the task's own scene code reads it. That way the resets (seeded initial
states, perturbations), the privileged state, the rubric and the cameras run through the same
code as the MuJoCo twin. Cameras: MuJoCo's OpenGL rasteriser draws the PhysX state (kit-less
PhysX has no renderer); Isaac Sim's RTX images differ in lighting, shadows and materials.

Not mapped yet (said where it matters): B-HOBJ's object mass and damping change and the digital
real's hidden object mass/friction scales reach the mirror, not PhysX.
"""

from __future__ import annotations

import dataclasses
import pathlib
import tempfile
from typing import Any, Mapping

import numpy as np

from realm_ros.backends import usd_export
from realm_ros.backends.mujoco import model as mjcf
from realm_ros.backends.mujoco.world import MujocoWorld
from realm_ros.backends.physx.common import HybridImpedance, LatencyQueue, physx_dof_properties
from realm_ros.core import control, robot
from realm_ros.core.config import DynamicsParams, WorldConfig, sim_params_latency
from realm_ros.core.errors import BackendUnavailable, ConfigError
from realm_ros.core.types import Action, ActionMode, EpisodeSpec, JointState, Observation
from realm_ros.core.world import World

try:
    import warnings

    import mujoco
    import ovphysx
    from ovphysx import PhysX
    from ovphysx.types import TensorType
    import ovstage
except ImportError as err:  # pragma: no cover - exercised only without ovphysx
    raise BackendUnavailable(
        'the PhysX twin needs ovphysx (pip install "realm_ros[physx]"; x86_64 Linux with AVX, '
        f'glibc >= 2.35): {err}') from err

_SCHEMAS_REGISTERED = False


def _register_schemas() -> None:
    """Register the PhysX USD schemas with ovstage once per process, before any population."""
    global _SCHEMAS_REGISTERED
    if _SCHEMAS_REGISTERED:
        return
    from ovphysx.samples.python_samples.schema_support import physx_schema_paths

    if not ovstage.population.available():
        raise BackendUnavailable('ovstage population bridge is unavailable')
    ovstage.population.register_usd_schemas([str(p) for p in physx_schema_paths()])
    _SCHEMAS_REGISTERED = True


class _Bindings:
    """Tensor views on one articulation (or one rigid body), float32 buffers reused."""

    def __init__(self, physx: Any, pattern: str, types: Mapping[str, int]) -> None:
        self.views = {}
        self.buffers = {}
        with warnings.catch_warnings():
            # Tensor bindings are deprecated for new code in ovphysx 0.6 in favour of session
            # reads/writes; they remain the shortest per-step NumPy path in 0.7.
            warnings.simplefilter('ignore', DeprecationWarning)
            for key, tensor_type in types.items():
                view = physx.create_tensor_binding(pattern=pattern, tensor_type=tensor_type)
                if view.count != 1:
                    raise ConfigError(f'PhysX: {pattern!r} matched {view.count} objects, not 1')
                self.views[key] = view
                self.buffers[key] = np.zeros(view.shape, dtype=np.float32)
        first = next(iter(self.views.values()))
        self.dof_names = (list(first.dof_names) if 'q' in self.views else [])

    def read(self, key: str) -> np.ndarray:
        self.views[key].read(self.buffers[key])
        return self.buffers[key][0].astype(float)

    def write(self, key: str, values: np.ndarray, index: Any = None) -> None:
        buf = self.buffers[key]
        if index is not None:
            self.views[key].read(buf)
            buf[0, index] = values
        else:
            buf[0] = values
        self.views[key].write(buf)

    def destroy(self) -> None:
        for view in self.views.values():
            view.destroy()
        self.views.clear()


class PhysxWorld(World):
    """The twin on kit-less PhysX; same control law, parameters and scene code as MuJoCo's."""

    name = 'physx'

    def __init__(
        self,
        config: WorldConfig,
        dynamics: DynamicsParams | None = None,
        latency_s: float | None = None,
        joint_noise_std: float = 0.0,
    ) -> None:
        self._config = config
        if latency_s is None:
            latency_s = (sim_params_latency(config.sim_params_file) if config.sim_params_file
                         else 0.0)
        if latency_s < 0 or joint_noise_std < 0:
            raise ConfigError('latency_s and joint_noise_std must be >= 0')
        self.latency_s = float(latency_s)
        self._latency = LatencyQueue(int(round(latency_s * config.physics_hz)))
        self._noise_std = joint_noise_std
        self._dynamics = dynamics
        if dynamics is None and config.sim_params_file:
            self._dynamics = DynamicsParams.from_yaml(config.sim_params_file)
        self._dt = 1.0 / config.physics_hz
        self._substeps = config.substeps
        self._law = HybridImpedance()
        self._rng = np.random.default_rng(config.seed)
        self._tmp = tempfile.TemporaryDirectory(prefix='realm_physx_')
        self._physx: Any = None
        self._stage: Any = None
        self._bindings: list[_Bindings] = []
        # The MuJoCo mirror: scene spec, seeded resets, rubric, renderer (no dynamics of its own).
        self._mirror = MujocoWorld(dataclasses.replace(config, backend='mujoco'),
                                   dynamics=DynamicsParams(), latency_s=0.0)
        self._task: str | None = None
        self._build(config.task)

    # -- construction -----------------------------------------------------------------------

    def _build(self, task: str) -> None:
        self._teardown_physx()
        mirror = self._mirror
        if task != mirror._task:  # noqa: SLF001 - the mirror rebuilds its model for the task
            mirror.reset(EpisodeSpec(task=task or 'empty'))
        self.model = mirror.model
        stage, self.layout = usd_export.export_model(
            self.model, self._config.physics_hz,
            (self._config.camera_width, self._config.camera_height))
        path = pathlib.Path(self._tmp.name) / f'{task or "empty"}.usda'
        stage.GetRootLayer().Export(str(path))
        self.usd_path = path
        _register_schemas()
        if not PhysX.get_cpu_mode():
            PhysX.set_cpu_mode(True)  # process-wide and sticky; set before the first instance
        self._physx = PhysX()
        self._stage = ovstage.Stage(f'realm_{task or "empty"}')
        ovstage.population.open_usd(self._stage, str(path), ordinal=1,
                                    domains=ovstage.PopulationDomain.ALL)
        self._stage.advance_write_floor(ordinal=1).wait()
        self._physx.wait_task(self._physx.attach_ovstage(self._stage, read_ordinal=1))
        self._physx.wait_all()
        self._physx.warmup()
        self._physx.wait_all()
        self._bind()
        self._task = task
        if self._dynamics is not None:
            self.set_dynamics(self._dynamics)
        self._reset_state(self._mirror._scene.reset_q() if self._mirror._scene  # noqa: SLF001
                          else robot.RESET_Q.copy())

    def _bind(self) -> None:
        """Create tensor views: one per articulation, one per free body."""
        art_types = {
            'q': TensorType.ARTICULATION_DOF_POSITION,
            'dq': TensorType.ARTICULATION_DOF_VELOCITY,
            'target': TensorType.ARTICULATION_DOF_POSITION_TARGET,
            'vtarget': TensorType.ARTICULATION_DOF_VELOCITY_TARGET,
            'force': TensorType.ARTICULATION_DOF_ACTUATION_FORCE,
            'armature': TensorType.ARTICULATION_DOF_ARMATURE,
            'friction': TensorType.ARTICULATION_DOF_FRICTION_PROPERTIES,
            'root': TensorType.ARTICULATION_ROOT_POSE,
        }
        self._arts: dict[str, _Bindings] = {}
        for base in self.layout.articulation_bases:
            root_joint = self.layout.articulation_bases[base].rsplit('/', 1)[0] + \
                '/joints/root_fixed'
            self._arts[base] = _Bindings(self._physx, root_joint, art_types)
        self._bindings = list(self._arts.values())
        self.arm = self._arts['panda_link0']
        names = self.arm.dof_names
        self._arm_idx = np.array([names.index(n) for n in robot.JOINT_NAMES])
        self._finger_idx = np.array([names.index(f'{s}_finger_joint')
                                     for s in ('left', 'right')])
        self._bodies: dict[str, _Bindings] = {}
        for name, path in self.layout.free_bodies.items():
            self._bodies[name] = _Bindings(self._physx, path, {
                'pose': TensorType.RIGID_BODY_POSE, 'vel': TensorType.RIGID_BODY_VELOCITY})
        self._bindings += list(self._bodies.values())

    def _teardown_physx(self) -> None:
        for b in self._bindings:
            b.destroy()
        self._bindings = []
        if self._physx is not None:
            if self._stage is not None and self._physx.is_stage_attached(self._stage):
                self._physx.wait_task(self._physx.detach_ovstage())
            if self._stage is not None:
                self._stage.destroy()
            self._physx.destroy()
        self._physx = None
        self._stage = None

    # -- World interface --------------------------------------------------------------------

    @property
    def control_dt(self) -> float:
        return 1.0 / self._config.control_hz

    @property
    def time(self) -> float:
        return self._step_count_physics * self._dt

    @property
    def config(self) -> WorldConfig:
        return self._config

    def set_dynamics(self, params: DynamicsParams) -> None:
        """Write per-joint friction (N m), armature (kg m^2), damping (N m s/rad) into PhysX."""
        self._dynamics = params
        props = physx_dof_properties(params)
        self.arm.write('armature', props['armature'], self._arm_idx)
        self.arm.write('friction', props['friction'], self._arm_idx)

    def dynamics(self) -> DynamicsParams:
        """Return the per-joint dynamics PhysX holds now (read back from the engine)."""
        armature = self.arm.read('armature')[self._arm_idx]
        friction = self.arm.read('friction')[self._arm_idx]
        return DynamicsParams(friction=tuple(friction[:, 1]), armature=tuple(armature),
                              damping=tuple(friction[:, 2]))

    def reset(self, spec: EpisodeSpec) -> Observation:
        task = '' if spec.task in ('', 'empty') else spec.task
        if task != self._task:
            self._build(task)
        # The mirror samples the seeded initial state and perturbations with the twin's code.
        self._mirror.reset(spec)
        self._rng = np.random.default_rng(spec.seed)
        data = self._mirror.data
        reset_q = data.qpos[self._mirror._arm_qpos].copy()  # noqa: SLF001
        self._reset_state(reset_q)
        return self.observe()

    def _reset_state(self, reset_q: np.ndarray) -> None:
        """Put PhysX in the mirror's state: arm at ``reset_q``, objects and fixtures placed."""
        m, d = self._mirror.model, self._mirror.data
        mujoco.mj_kinematics(m, d)
        for base, art in self._arts.items():
            b = m.body(base).id
            art.write('root', np.r_[d.xpos[b], d.xquat[b][1:], d.xquat[b][0]])
            q = art.read('q')
            for i, name in enumerate(art.dof_names):
                q[i] = d.qpos[m.joint(name).qposadr[0]]
            art.write('q', q)
            art.write('dq', np.zeros_like(q))
            art.write('target', q)
            art.write('force', np.zeros_like(q))
        q = self.arm.read('q')
        q[self._arm_idx] = reset_q
        q[self._finger_idx] = mjcf.FINGER_TRAVEL
        self.arm.write('q', q)
        self.arm.write('target', q)
        for name, body in self._bodies.items():
            adr = m.joint(f'{name}_free').qposadr[0] if mujoco.mj_name2id(
                m, mujoco.mjtObj.mjOBJ_JOINT, f'{name}_free') >= 0 else None
            if adr is None:
                j = m.body_jntadr[m.body(name).id]
                adr = m.jnt_qposadr[j]
            pos, quat = d.qpos[adr:adr + 3], d.qpos[adr + 3:adr + 7]
            body.write('pose', np.r_[pos, quat[1:], quat[0]])
            body.write('vel', np.zeros(6))
        self._latency.clear()
        self._target_q = reset_q.copy()
        self._target_g = 0.0
        self._write_target(self._target_q, self._target_g)
        self._step_count = 0
        self._step_count_physics = 0
        self._sync_mirror()

    def apply(self, action: Action) -> Action:
        q_meas = self.arm.read('q')[self._arm_idx]
        q_d, g = control.action_to_target(action, q_meas)
        if self._latency.push(q_d, g):
            self._target_q, self._target_g = q_d, g
            self._write_target(q_d, g)
        return Action(arm=q_d, gripper=g, mode=ActionMode.POSITION)

    def _write_target(self, q_d: np.ndarray, g: float) -> None:
        target = self.arm.read('target')
        target[self._arm_idx] = q_d
        target[self._finger_idx] = mjcf.FINGER_TRAVEL * (1.0 - g)
        self.arm.write('target', target)

    def step(self) -> Observation:
        self.step_physics(self._substeps)
        self._step_count += 1
        self._sync_mirror()
        return self.observe()

    def step_physics(self, n: int) -> None:
        """Advance ``n`` physics steps: release delayed targets, add the Cartesian torques."""
        force = np.zeros(len(self.arm.dof_names))
        for _ in range(n):
            for q_d, g in self._latency.due():
                self._target_q, self._target_g = q_d, g
                self._write_target(q_d, g)
            q = self.arm.read('q')[self._arm_idx]
            dq = self.arm.read('dq')[self._arm_idx]
            force[self._arm_idx] = self._law.extra_torque(q, dq, self._target_q)
            self.arm.write('force', force)
            self._physx.step_sync(self._dt)
            self._step_count_physics += 1

    def _sync_mirror(self) -> None:
        """Write the PhysX state into the MuJoCo mirror (for scene code, rubric, cameras)."""
        m, d = self._mirror.model, self._mirror.data
        for art in self._arts.values():
            q, dq = art.read('q'), art.read('dq')
            for i, name in enumerate(art.dof_names):
                j = m.joint(name)
                d.qpos[j.qposadr[0]] = q[i]
                d.qvel[j.dofadr[0]] = dq[i]
        for name, body in self._bodies.items():
            j = m.body_jntadr[m.body(name).id]
            adr, dadr = m.jnt_qposadr[j], m.jnt_dofadr[j]
            pose = body.read('pose')
            d.qpos[adr:adr + 7] = np.r_[pose[:3], pose[6], pose[3:6]]
            vel = body.read('vel')  # world frame; MuJoCo's free joint: angular in body frame
            rot = np.zeros(9)
            mujoco.mju_quat2Mat(rot, d.qpos[adr + 3:adr + 7])
            d.qvel[dadr:dadr + 6] = np.r_[vel[:3], rot.reshape(3, 3).T @ vel[3:]]
        d.time = self.time
        mujoco.mj_forward(m, d)

    def joint_state(self) -> JointState:
        """Return the measured arm and gripper state (PhysX), with sensor noise if configured."""
        q = self.arm.read('q')
        dq = self.arm.read('dq')
        arm_q = q[self._arm_idx]
        if self._noise_std:
            arm_q = arm_q + self._rng.normal(0.0, self._noise_std, size=arm_q.shape)
        width = float(np.sum(q[self._finger_idx]))
        gripper = float(np.clip(1.0 - width / robot.GRIPPER_MAX_WIDTH, 0.0, 1.0))
        effort = self.arm.read('force')[self._arm_idx] + robot.KQ * (
            self._target_q - q[self._arm_idx]) - robot.KQD * dq[self._arm_idx]
        return JointState(position=arm_q, velocity=dq[self._arm_idx].copy(),
                          effort=np.clip(effort, -robot.EFFORT_LIMIT, robot.EFFORT_LIMIT),
                          gripper=gripper, stamp=self.time)

    def observe(self, render: bool = True) -> Observation:
        mirrored = self._mirror.observe(render=render)
        return dataclasses.replace(mirrored, joints=self.joint_state(), step=self._step_count)

    def render(self) -> dict[str, np.ndarray]:
        return self._mirror.render()

    def camera_fovy(self, name: str) -> float:
        return self._mirror.camera_fovy(name)

    def privileged_state(self) -> Mapping[str, Any]:
        return self._mirror.privileged_state()

    @property
    def target(self) -> tuple[np.ndarray, float]:
        """The target in force: (q_d rad, gripper g)."""
        return self._target_q.copy(), self._target_g

    def close(self) -> None:
        self._teardown_physx()
        self._mirror.close()
        self._tmp.cleanup()


__all__ = ['PhysxWorld', 'ovphysx']
