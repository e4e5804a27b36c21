"""The PhysX twin, engine-independent: scene export, mirror, control law, resets, rubric.

:class:`PhysxTwin` is everything a PhysX-driven twin does that is not the app: it exports the
MuJoCo twin's compiled scene to USD (:mod:`realm_ros.backends.usd_export`), keeps a MuJoCo
*kinematic mirror* of the scene for the task code (seeded initial states, perturbations,
privileged state, rubric) and the OpenGL cameras, runs the DROID hybrid impedance law
(:class:`~realm_ros.backends.physx.common.HybridImpedance`) and the actuation latency, and maps
:class:`DynamicsParams` to PhysX. Subclasses supply the engine (``_make_engine``):

* :class:`realm_ros.backends.physx.world.PhysxWorld`: kit-less ``ovphysx``, runs here;
* :class:`realm_ros.backends.isaac.world.IsaacWorld`: Isaac Sim 6.x (RTX labs).

After every control step the engine's state (joint positions, object poses) is written into the
mirror and the task's scene code reads it, so both engines are scored by the same code as the
MuJoCo twin. B-HOBJ's object mass and scene joint damping changes are copied into PhysX at
reset (free objects' masses and inertias; drawer and switch damping); not mapped yet: the mass of
articulated fixtures (drawers) and the digital real's hidden object scales (PhysX is not used as
the digital real).
"""

from __future__ import annotations

import dataclasses
import pathlib
import tempfile
from typing import Any, Mapping

import mujoco
import numpy as np

from realm_ros.backends import usd_export
from realm_ros.backends.mujoco import model as mjcf
from realm_ros.backends.mujoco.actuation import gripper_ctrl
from realm_ros.backends.mujoco.world import MujocoWorld
from realm_ros.backends.physx.common import HybridImpedance, LatencyQueue, physx_dof_properties
from realm_ros.core import control, robot, tasks
from realm_ros.core.config import DynamicsParams, WorldConfig
from realm_ros.core.errors import InfrastructureError
from realm_ros.core.types import Action, ActionMode, EpisodeSpec, JointState, Observation
from realm_ros.core.world import World, twin_arguments


class PhysxTwin(World):
    """A twin on PhysX; same control law, parameters and scene code as the MuJoCo twin."""

    name = 'physx'

    def __init__(
        self,
        config: WorldConfig,
        dynamics: DynamicsParams | None = None,
        latency_s: float | None = None,
        joint_noise_std: float = 0.0,
    ) -> None:
        self._config = config
        self._dynamics, self.latency_s = twin_arguments(config, dynamics, latency_s,
                                                        joint_noise_std)
        self._latency = LatencyQueue(int(round(self.latency_s * config.physics_hz)))
        self._noise_std = joint_noise_std
        self._dt = 1.0 / config.physics_hz
        self._substeps = config.substeps
        self._law = HybridImpedance()
        self._rng = np.random.default_rng(config.seed)
        self._tmp = tempfile.TemporaryDirectory(prefix='realm_physx_')
        self._engine: Any = None
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
            mirror.reset(EpisodeSpec(task=task or tasks.EMPTY))
        self.model = mirror.model
        stage, self.layout = usd_export.export_model(
            self.model, self._config.physics_hz,
            (self._config.camera_width, self._config.camera_height))
        path = pathlib.Path(self._tmp.name) / f'{task or tasks.EMPTY}.usda'
        stage.GetRootLayer().Export(str(path))
        self.usd_path = path
        self._engine = self._make_engine(path, f'realm_{task or tasks.EMPTY}')
        self._bind()
        self._task = task
        if self._dynamics is not None:
            self.set_dynamics(self._dynamics)
        self._reset_state(self._mirror._scene.reset_q() if self._mirror._scene  # noqa: SLF001
                          else robot.RESET_Q.copy())

    def _make_engine(self, usd_path: pathlib.Path, label: str) -> Any:
        """Return the PhysX engine over ``usd_path`` (see ``world.KitlessEngine``)."""
        raise NotImplementedError

    def _bind(self) -> None:
        """Create views: one per articulation, one per free body."""
        self._arts: dict[str, Any] = {}
        for base, link in self.layout.articulation_bases.items():
            art_prim = link.rsplit('/', 1)[0]
            self._arts[base] = self._engine.articulation(f'{art_prim}/joints/root_fixed',
                                                         art_prim)
        self.arm = self._arts['panda_link0']
        names = list(self.arm.dof_names)
        self._arm_idx = np.array([names.index(n) for n in robot.JOINT_NAMES])
        self._finger_idx = np.array([names.index(f'{s}_finger_joint')
                                     for s in ('left', 'right')])
        self._bodies = {name: self._engine.rigid_body(path)
                        for name, path in self.layout.free_bodies.items()}
        # Reference masses: perturbations (B-HOBJ) scale the mirror's masses; PhysX follows.
        self._mass0 = {name: (self._group_mass(name), body.read('mass').copy(),
                              body.read('inertia').copy())
                       for name, body in self._bodies.items()}

    def _group_mass(self, name: str) -> float:
        """Return the mirror's mass of free body ``name`` and the bodies welded to it, kg."""
        m = self._mirror.model
        root = m.body(name).id
        return float(sum(m.body_mass[b] for b in range(m.nbody) if m.body_rootid[b] == root))

    def _apply_object_physics(self) -> None:
        """Copy the mirror's object masses and scene joint damping (B-HOBJ) into PhysX."""
        for name, body in self._bodies.items():
            mass0, physx_mass, physx_inertia = self._mass0[name]
            ratio = self._group_mass(name) / mass0 if mass0 > 0 else 1.0
            body.write('mass', physx_mass * ratio)
            body.write('inertia', physx_inertia * ratio)
        m = self._mirror.model
        for base, art in self._arts.items():
            if base == 'panda_link0':
                continue  # the arm's damping is set_dynamics'
            friction = art.read('friction')
            for i, name in enumerate(art.dof_names):
                friction[i, 2] = m.dof_damping[m.joint(name).dofadr[0]]
            art.write('friction', friction)

    def _teardown_physx(self) -> None:
        if self._engine is not None:
            self._engine.close()
        self._engine = None

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
        task = '' if tasks.is_empty(spec.task) else spec.task
        if task != self._task:
            self._build(task)
        # The mirror samples the seeded initial state and perturbations with the twin's code.
        self._mirror.reset(spec)
        self._rng = np.random.default_rng(spec.seed)
        data = self._mirror.data
        reset_q = data.qpos[self._mirror._arm_qpos].copy()  # noqa: SLF001
        self._apply_object_physics()
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
        target[self._finger_idx] = gripper_ctrl(g)
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
            self._engine.step(self._dt)
            self._step_count_physics += 1

    def _sync_mirror(self) -> None:
        """Write the PhysX state into the MuJoCo mirror (for scene code, rubric, cameras).

        Raises:
            InfrastructureError: PhysX returned a non-finite state (the scene blew up); the
                episode is recorded as an infrastructure failure, not scored.
        """
        m, d = self._mirror.model, self._mirror.data
        for art in self._arts.values():
            q, dq = art.read('q'), art.read('dq')
            if not (np.all(np.isfinite(q)) and np.all(np.isfinite(dq))):
                raise InfrastructureError(f'PhysX articulation state is not finite at t = '
                                          f'{self.time:.3f} s: {q.tolist()}')
            for i, name in enumerate(art.dof_names):
                j = m.joint(name)
                d.qpos[j.qposadr[0]] = q[i]
                d.qvel[j.dofadr[0]] = dq[i]
        for name, body in self._bodies.items():
            j = m.body_jntadr[m.body(name).id]
            adr, dadr = m.jnt_qposadr[j], m.jnt_dofadr[j]
            pose = body.read('pose')
            if not np.all(np.isfinite(pose)) or np.any(np.abs(pose[:3]) > 100.0):
                raise InfrastructureError(f'PhysX body {name!r} left the scene at t = '
                                          f'{self.time:.3f} s: pose {pose.tolist()}')
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
        gripper = control.gripper_closure(width)
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

