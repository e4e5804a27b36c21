"""The MuJoCo twin: a :class:`~realm_ros.core.world.World` over the model of ``model.py``.

One control step (1 / control_hz) is ``substeps`` physics steps holding the same target; the
DROID impedance law runs inside MuJoCo's actuators (see ``model.py``). Deterministic for a given
spec and seed: the only randomness is the task sampler's and the sensor-noise generator's, both
seeded from the spec.
"""

from __future__ import annotations

import copy
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from realm_ros.backends.mujoco import appearance, camera_rig, looks, perturb, visuals
from realm_ros.backends.mujoco import model as mjcf
from realm_ros.backends.mujoco.actuation import ArmActuation, PendingTargets, delay_steps
from realm_ros.backends.mujoco.derived import Derived, DerivedView
from realm_ros.backends.mujoco.render import FrameRenderer

# Scenes live in scenes.py; Scene, load_scene and sample_initial_state (core.backends'
# Backend.scene_sampler names it here) stay importable from this module.
from realm_ros.backends.mujoco.scenes import Scene, load_scene, sample_initial_state  # noqa: F401
from realm_ros.core import control, perturbations, tasks
from realm_ros.core.config import DynamicsParams, WorldConfig
from realm_ros.core.errors import BackendUnavailable
from realm_ros.core.types import Action, ActionMode, EpisodeSpec, JointState, Observation
from realm_ros.core.world import World, twin_arguments

try:
    import mujoco
except ImportError as err:  # pragma: no cover - exercised only without mujoco
    raise BackendUnavailable('the MuJoCo twin needs the "mujoco" package') from err


class MujocoWorld(World):
    """The twin. Also the physics of the digital real, which adds hidden dynamics."""

    name = 'mujoco'

    def __init__(
        self,
        config: WorldConfig,
        dynamics: DynamicsParams | None = None,
        latency_s: float | None = None,
        joint_noise_std: float = 0.0,
        object_mass_scale: float = 1.0,
        object_friction_scale: float = 1.0,
        look: appearance.Look | None = None,
        visual_match_dir: str | None = None,
    ) -> None:
        self._config = config
        #: How the pictures differ from the twin's own look (``appearance.py``): a hidden
        #: appearance (the digital real), a visual match (``visual_match_dir``), or none.
        self.look = look or looks.look_for(visual_match_dir=config.visual_match_dir
                                                if visual_match_dir is None else visual_match_dir)
        self._substeps = config.substeps
        self._dynamics, self.latency_s = twin_arguments(config, dynamics, latency_s,
                                                        joint_noise_std)
        self._delay = delay_steps(self.latency_s, config.physics_hz)
        self._noise_std = joint_noise_std
        self._mass_scale = object_mass_scale
        self._friction_scale = object_friction_scale
        self._renderer: FrameRenderer | None = None
        # Rendered images of the current physics state, keyed by ``_frame``: every frame is
        # rendered once however many callers ask (step, observe, a node's publisher).
        self._frame = 0
        self._frame_images: tuple[int, dict[str, np.ndarray]] | None = None
        self._last_render_time = -np.inf
        # After a batched step that handed back the derived quantities (load_step): the view
        # the observation reads them from, and what a host mj_forward needs to put them into
        # ``data`` when something else reads it (sync_data). None: ``data`` is whole.
        self._derived: DerivedView | None = None
        self._unsynced: tuple[Any, ...] | None = None
        self._visuals = config.camera_rate_hz > 0 and bool(config.cameras)
        self._scene: Scene | None = None
        self._task: str | None = None
        self._rng = np.random.default_rng(config.seed)
        self._step_count = 0
        self._instruction = ''
        self._variant = ''
        #: The perturbation applied at the last reset: code, intensity, seed, parameters.
        self.perturbation: dict[str, Any] = {}
        self._build(config.task)

    # -- construction -----------------------------------------------------------------------

    def _build(self, task: str, code: str = 'Default',
               params: Mapping[str, Any] | None = None) -> None:
        """(Re)build model and data for ``task``; called at start, when the task changes and
        when a perturbation changes the scene's geometry (``perturb.make_variant``)."""
        scene = perturb.make_variant(load_scene(task), code, params or {})
        self._variant = perturb.variant_key(code, params or {})
        body_xml, asset_xml = scene.mjcf()
        rig = self.look.rig(camera_rig.load_rig(self._config.camera_rig_file,
                                                uses=self._config.cameras))
        xml = mjcf.build_mjcf(
            physics_hz=self._config.physics_hz, scene_xml=body_xml + self.look.body_xml(),
            scene_assets=asset_xml + self.look.asset_xml(),
            image_size=(self._config.camera_width, self._config.camera_height),
            cameras=rig.exterior, wrist=rig.wrist, visuals=self._visuals,
            look_options={'shadows': rig.shadows is not False, 'antialias': rig.antialias})
        self._rig = rig
        self.model = mujoco.MjModel.from_xml_string(xml)
        self.look.dress(self.model)
        self.data = mujoco.MjData(self.model)
        self._scene = scene
        self._task = task
        self._act = ArmActuation(self.model)
        self._arm_qpos, self._arm_dof = self._act.arm_qpos, self._act.arm_dof
        self._finger_qpos = self._act.finger_qpos
        self._scale_objects()
        # Pristine copies: perturbations are applied from these at every reset, never compounded.
        self._pristine = perturb.snapshot(self.model)
        self._image_aug: Mapping[str, Any] | None = None
        self._image_apply: perturbations.ImageApplier | None = None
        if self._dynamics is not None:
            self.set_dynamics(self._dynamics)
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        if self._visuals:
            visuals.paint_textures(self.model)
        self._reset_sim(scene.reset_q(), {})

    def _scale_objects(self) -> None:
        """Apply the digital real's hidden object mass and friction scales to scene bodies."""
        if self._mass_scale == 1.0 and self._friction_scale == 1.0:
            return
        for b in self.object_bodies():
            self.model.body_mass[b] *= self._mass_scale
            self.model.body_inertia[b] *= self._mass_scale
        self.model.geom_friction[self.object_geoms(), 0] *= self._friction_scale

    def object_bodies(self) -> list[int]:
        """Return the ids of the scene's object bodies (not the arm, gripper, table, world)."""
        robot_bodies = {self.model.body(n).id for n in ('world', 'table', 'target_frame')}
        return [b for b in range(self.model.nbody) if b not in robot_bodies
                and not self.model.body(b).name.startswith(('panda_', 'gripper', 'left_',
                                                            'right_'))]

    def object_geoms(self) -> np.ndarray:
        """Return the ids of the geoms of :meth:`object_bodies`."""
        return np.flatnonzero(np.isin(self.model.geom_bodyid, self.object_bodies()))

    # -- World interface --------------------------------------------------------------------

    @property
    def control_dt(self) -> float:
        return 1.0 / self._config.control_hz

    @property
    def time(self) -> float:
        return float(self.data.time)

    @property
    def config(self) -> WorldConfig:
        return self._config

    def set_dynamics(self, params: DynamicsParams) -> None:
        """Write per-joint friction (N m), armature (kg m^2) and damping into the model."""
        self._dynamics = params
        self._act.set_dynamics(self.model, params)

    def dynamics(self) -> DynamicsParams:
        """Return the per-joint dynamics currently in the model."""
        return self._act.dynamics(self.model)

    def reset(self, spec: EpisodeSpec) -> Observation:
        task = '' if tasks.is_empty(spec.task) else spec.task
        params: Mapping[str, Any] = {}
        if spec.perturbation != perturbations.DEFAULT:
            params = perturbations.sample(task, spec.perturbation, spec.intensity, spec.seed)
        if task != self._task or perturb.variant_key(spec.perturbation, params) != self._variant:
            self._build(task, spec.perturbation, params)
        assert self._scene is not None
        self._rng = np.random.default_rng(spec.seed)
        state = dict(spec.initial_state) or self._scene.sample_initial_state(
            np.random.default_rng(spec.seed))
        if task:
            state = perturb.perturb_state(self._scene, state, spec.perturbation, params)
        self._perturb_model(spec.perturbation, params)
        self.perturbation = {'code': spec.perturbation, 'intensity': spec.intensity,
                             'seed': spec.seed, 'params': dict(params)}
        reset_q = np.asarray(state.get('reset_q', self._scene.reset_q()), dtype=float)
        self._reset_sim(reset_q, state)
        self._instruction = (spec.instruction or params.get('instruction', '')
                             or self._scene.instruction)
        # The image kind: the code's image applier and its parameters (None: images as is).
        self._image_apply = perturbations.get(spec.perturbation).image
        self._image_aug = params if self._image_apply is not None else None
        return self.observe()

    def _perturb_model(self, code: str, params: Mapping[str, Any]) -> None:
        """Restore the pristine model, then apply ``code``'s model applier (``perturb.py``)."""
        main = getattr(getattr(self._scene, 'task', None), 'obj', '')
        perturb.apply_model(self.model, self._pristine, code, params, main, self._arm_dof)

    def _reset_sim(self, reset_q: np.ndarray, state: Mapping[str, Any]) -> None:
        mujoco.mj_resetData(self.model, self.data)
        self._act.set_arm_state(self.data, reset_q, gripper=0.0)
        if self._scene is not None:
            self._scene.apply_initial_state(self.model, self.data, state)
        self._pending = PendingTargets(self._delay)
        self._target_q = reset_q.copy()
        self._target_g = 0.0
        self._write_target(self._target_q, self._target_g)
        mujoco.mj_forward(self.model, self.data)
        self._derived = self._unsynced = None
        self._step_count = 0
        self._frame += 1
        self._last_render_time = -np.inf

    def apply(self, action: Action) -> Action:
        q_meas = self.data.qpos[self._arm_qpos].copy()
        q_d, g = control.world_target(action, q_meas, self._target_q,
                                      self.data.qvel[self._arm_dof], self.control_dt, self._config)
        self.hold(q_d, g)
        return Action(arm=q_d, gripper=g, mode=ActionMode.POSITION)

    def hold(self, q_d: np.ndarray, g: float) -> None:
        """Put target ``(q_d, g)``, as :func:`control.world_target` made it, in force through
        the latency rule (the second half of :meth:`apply`; :func:`apply_all` makes the
        targets of many worlds at once)."""
        delay = self._command_delay()
        if delay:
            self._pending.push(q_d, g, delay)
        else:
            self._target_q, self._target_g = q_d, g
            self._write_target(q_d, g)

    def _command_delay(self) -> int:
        """Return how many physics steps the target being applied waits (the latency rule);
        a subclass may vary it per command (the digital real's latency jitter)."""
        return self._delay

    def _before_physics_step(self) -> None:
        """Hook run before every ``mj_step`` of :meth:`step_physics`, after the due target is
        written (the digital real's inner loop and friction); the twin does nothing."""

    def step(self) -> Observation:
        """Advance one control period; images are rendered when due at ``camera_rate_hz``."""
        self.step_physics(self._substeps)
        self._step_count += 1
        return self.observe(render=self._image_due())

    def _image_due(self) -> bool:
        rate = self._config.camera_rate_hz
        return rate > 0 and self.time - self._last_render_time >= 1.0 / rate - 1e-9

    def _release_due(self) -> None:
        """Write the latency-delayed target that falls due at this physics step, if any."""
        if self._pending:
            due = self._pending.due()
            if due is not None:
                self._target_q, self._target_g = due
                self._write_target(*due)

    def step_physics(self, n: int) -> None:
        """Advance ``n`` physics steps, releasing latency-delayed targets when they are due."""
        self.sync_data()
        for _ in range(n):
            self._release_due()
            self._before_physics_step()
            mujoco.mj_step(self.model, self.data)
        if n:
            self._frame += 1

    def period_controls(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return the (ctrl, mocap_pos, mocap_quat) rows of the next control period's physics
        steps, (substeps, ...) each, releasing latency-delayed targets as :meth:`step_physics`
        does, without stepping: a batched stepper (``batch.py``, ``mjx_sweep.py``) integrates
        them and hands the state back through :meth:`load_step`."""
        n = self._substeps
        d = self.data
        if not self._pending:  # nothing falls due this period: every row is the target now
            return (np.repeat(d.ctrl[None], n, axis=0), np.repeat(d.mocap_pos[None], n, axis=0),
                    np.repeat(d.mocap_quat[None], n, axis=0))
        ctrl = np.empty((n, self.model.nu))
        pos = np.empty((n,) + self.data.mocap_pos.shape)
        quat = np.empty((n,) + self.data.mocap_quat.shape)
        for k in range(n):
            self._release_due()
            ctrl[k], pos[k], quat[k] = self.data.ctrl, self.data.mocap_pos, self.data.mocap_quat
        return ctrl, pos, quat

    def load_step(self, before: tuple[np.ndarray, np.ndarray, float],
                  after: tuple[np.ndarray, np.ndarray, float],
                  derived: Derived | None = None, index: int = 0) -> Observation:
        """Take the state a batched stepper reached for :meth:`period_controls` and return the
        observation :meth:`step` would: ``before`` = (qpos, qvel, time) before the period's last
        physics step, ``after`` = after it. As after ``mj_step``, the derived quantities (body
        poses, contacts, actuator forces) are those of ``before`` and qpos/qvel/time
        ``after``'s.

        ``derived``: those derived quantities as the stepper computed them with this world's
        model, this world's being the batch's ``index``-th (``derived.py``: the fields the
        observation reads); the observation reads them
        there and ``data``'s own derived quantities are rebuilt (a host ``mj_forward`` of
        ``before``) only when something else needs them: a picture, :meth:`step_physics`,
        :meth:`sync_data`. None: rebuilt now."""
        d = self.data
        if derived is None:
            d.qpos[:], d.qvel[:], d.time = before[0], before[1], before[2]
            mujoco.mj_forward(self.model, d)
            self._derived = self._unsynced = None
        else:
            self._derived = derived.world(index, d.qpos)
            self._unsynced = (before, d.ctrl.copy(), d.mocap_pos.copy(), d.mocap_quat.copy())
        d.qpos[:], d.qvel[:], d.time = after[0], after[1], after[2]
        self._frame += 1
        self._step_count += 1
        return self.observe(render=self._image_due())

    def sync_data(self) -> None:
        """Make ``data`` whole after :meth:`load_step` took a stepper's derived quantities:
        rebuild them with a host ``mj_forward`` of the state before the last physics step
        (with that step's controls and target frame), then put the state after back, as
        ``load_step`` without them does. Nothing to do otherwise."""
        if self._unsynced is None:
            return
        (qpos, qvel, t), ctrl, mocap_pos, mocap_quat = self._unsynced
        d = self.data
        after = (d.qpos.copy(), d.qvel.copy(), float(d.time))
        now = (d.ctrl.copy(), d.mocap_pos.copy(), d.mocap_quat.copy())
        d.qpos[:], d.qvel[:], d.time = qpos, qvel, t
        d.ctrl[:], d.mocap_pos[:], d.mocap_quat[:] = ctrl, mocap_pos, mocap_quat
        mujoco.mj_forward(self.model, d)
        d.qpos[:], d.qvel[:], d.time = after
        d.ctrl[:], d.mocap_pos[:], d.mocap_quat[:] = now
        self._derived = self._unsynced = None

    def _write_target(self, q_d: np.ndarray, g: float) -> None:
        """Set the actuators' joint target and place the Cartesian target frame at FK(q_d)."""
        self._act.write_target(self.data, q_d, g)

    def target_pose(self, q_d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the flange pose (position m, quaternion wxyz) at joint configuration ``q_d``."""
        return self._act.target_pose(q_d)

    def joint_state(self) -> JointState:
        """Return the measured arm and gripper state (with the hidden sensor noise, if any)."""
        q = self.data.qpos[self._arm_qpos].copy()
        if self._noise_std:
            q = q + self._rng.normal(0.0, self._noise_std, size=q.shape)
        width = float(np.sum(self.data.qpos[self._finger_qpos]))
        gripper = control.gripper_closure(width)
        return JointState(
            position=q,
            velocity=self.data.qvel[self._arm_dof].copy(),
            effort=self._observed().qfrc_actuator[self._arm_dof].copy(),
            gripper=gripper,
            stamp=float(self.data.time))

    def observe(self, render: bool = True) -> Observation:
        """Return the observation of the current physics state.

        With ``render`` (and cameras on) its ``images`` are this state's frames, rendered when
        first read (:class:`FrameImages`): a policy that does not look at a step's images (the
        steps an action chunk runs open loop) costs no render.
        """
        images: Mapping[str, np.ndarray] = {}
        if render and self._config.camera_rate_hz > 0 and self._config.cameras:
            images = FrameImages(self, self._frame, self._config.cameras)
        return Observation(
            joints=self.joint_state(),
            images=images,
            instruction=self._instruction,
            step=self._step_count,
            privileged=self.privileged_state())

    def _observed_images(self) -> dict[str, np.ndarray]:
        """This state's images as a policy sees them (with a perturbation's augmentation)."""
        images = self.render()
        if self._image_apply is not None and self._image_aug is not None:
            images = {name: self._image_apply(image, self._image_aug)
                      for name, image in images.items()}
        return images

    def render(self) -> dict[str, np.ndarray]:
        """Return an (H, W, 3) uint8 RGB image per configured camera.

        Each physics state is rendered once: a second call before the next step returns the
        same images. Rendering runs on this world's own GL thread
        (:class:`~realm_ros.backends.mujoco.render.FrameRenderer`), so any thread may call it.
        """
        if not self._config.cameras:
            return {}
        if self._frame_images is not None and self._frame_images[0] == self._frame:
            return dict(self._frame_images[1])
        images = self.render_cameras(self._config.cameras)
        self._frame_images = (self._frame, images)
        self._last_render_time = self.time
        return dict(images)

    def render_cameras(self, names: Sequence[str], segmentation: bool = False
                       ) -> dict[str, np.ndarray]:
        """Return this state's frames of cameras ``names``, any of the model's (configured or
        not: e.g. a camera the policies do not read, for an image distance), as the world's
        look delivers them; not cached. ``segmentation``: MuJoCo's (geom id, type) render
        instead (:meth:`FrameRenderer.render`), without the look."""
        self.sync_data()
        if self._renderer is None:
            self._renderer = FrameRenderer(
                self.model, self._config.camera_width, self._config.camera_height,
                shadows=self._rig.shadows, reflections=self._rig.reflections)
        renderer, cameras = self._renderer, tuple(names)
        if segmentation:
            return renderer.render(self.data, cameras, segmentation=True)
        return self.look.finish(self, renderer.render(self.data, cameras),
                                lambda: renderer.render(self.data, cameras, segmentation=True))

    def camera_fovy(self, name: str) -> float:
        """Return camera ``name``'s vertical field of view, degrees."""
        return float(self.model.cam_fovy[self.model.camera(name).id])

    def privileged_state(self) -> Mapping[str, Any]:
        if self._scene is None:
            return {}
        return self._scene.privileged(self.model, self._observed())

    def _observed(self) -> Any:
        """What the observation reads the derived quantities from: the stepper's view after a
        :meth:`load_step` that took them, else ``data``."""
        return self.data if self._derived is None else self._derived

    @property
    def target(self) -> tuple[np.ndarray, float]:
        """The target in force: (q_d rad, gripper g)."""
        return self._target_q.copy(), self._target_g

    def copy_for_reset(self) -> 'MujocoWorld':
        """Return a copy of this world to be reset before use (``run_warp``'s worlds): its own
        model, latency queue and random state as a deep copy has them, but new data instead
        of a copy of this world's (the reset writes the state whole; copying an MjData copies
        its 20 MB arena), and this world's pristine snapshot read, not copied (read only). Its
        model is always its own: a reset writes the model too (a fixture's placement, the
        perturbation's parameters); copies sharing one model ended with the last reset's
        switch panel in every world."""
        memo: dict[int, Any] = {id(self._pristine): self._pristine}
        memo[id(self.model)] = model = copy.deepcopy(self.model)
        memo[id(self.data)] = mujoco.MjData(model)
        return copy.deepcopy(self, memo=memo)

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None


def apply_all(worlds: Sequence[MujocoWorld], arm: np.ndarray, gripper: np.ndarray,
              velocity: np.ndarray) -> None:
    """:meth:`MujocoWorld.apply` of row i (``arm`` (W, 7), ``gripper`` (W,), ``velocity`` (W,)
    bool: the row's mode) in ``worlds[i]``, the targets made in one array call per group of
    worlds that make them alike (``joint_margin_rad``, ``shape_targets``, control period:
    :func:`control.world_targets`, bit for bit ``apply``'s); each world then holds its own
    (:meth:`MujocoWorld.hold`: the latency rule, the target frame's forward kinematics). A row
    ``validate_action`` would refuse goes through ``apply``, which raises
    :class:`CommandRejected` with the reason."""
    groups: dict[tuple[float, bool, float], list[int]] = {}
    for i, w in enumerate(worlds):
        key = (w.config.joint_margin_rad, w.config.shape_targets, w.control_dt)
        groups.setdefault(key, []).append(i)
    arm, gripper = np.asarray(arm, dtype=float), np.asarray(gripper, dtype=float)
    velocity = np.asarray(velocity, dtype=bool)
    for idx in groups.values():
        group = [worlds[i] for i in idx]
        q_meas = np.array([w.data.qpos[w._arm_qpos] for w in group])
        q_prev = np.array([w._target_q for w in group])
        dq = np.array([w.data.qvel[w._arm_dof] for w in group])
        q_d, g, valid = control.world_targets(arm[idx], gripper[idx], velocity[idx], q_meas,
                                              q_prev, dq, group[0].control_dt, group[0].config)
        for k, (i, w) in enumerate(zip(idx, group)):
            if valid[k]:
                w.hold(q_d[k], float(g[k]))
            else:
                w.apply(Action(arm=arm[i].copy(), gripper=float(gripper[i]),
                               mode=ActionMode.VELOCITY if velocity[i] else ActionMode.POSITION))


class FrameImages(Mapping[str, np.ndarray]):
    """The camera images of one physics state of a :class:`MujocoWorld`, rendered on first read.

    Names and ``len`` are known without rendering; reading an image renders all of the
    state's cameras once (the world's frame cache). Reading after the world has stepped on is
    an error: that state can no longer be rendered.
    """

    def __init__(self, world: MujocoWorld, frame: int, names: tuple[str, ...]) -> None:
        self._world = world
        self._frame = frame
        self._names = tuple(names)
        self._images: dict[str, np.ndarray] | None = None

    def _load(self) -> dict[str, np.ndarray]:
        if self._images is None:
            if self._world._frame != self._frame:
                raise RuntimeError(
                    'camera images of an observation were first read after the world stepped '
                    'on; read them before the next step (or copy them with dict(obs.images))')
            self._images = self._world._observed_images()
        return self._images

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._names:
            raise KeyError(name)
        return self._load()[name]

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    @property
    def rendered(self) -> bool:
        """Whether the images have been rendered (someone read them)."""
        return self._images is not None
