"""The Isaac Sim twin: :class:`PhysxTwin` with Isaac Sim 6.x as the engine and RTX cameras.

NOT RUN: no machine this project has had can run Isaac Sim (it needs an RTX GPU, even
headless). Every Isaac Sim call below is checked against the 6.2 API manifest taken from the
wheels' ``config/python_api.md`` (``isaac_api_manifest.json``, ``test/unit/test_isaac_backend.py``
drives this module against objects built from that manifest), but the app itself has not been
launched. ``realm-ros doctor`` prints the command a lab runs to try it.

What it shares with the kit-less twin (:mod:`realm_ros.backends.physx`): the USD exported from
the MuJoCo twin's compiled model, the kinematic mirror (task code, resets, rubric), the DROID
hybrid impedance law (joint drives + Cartesian efforts every physics step), the parameter
mapping and the latency. What is Isaac's: the app (``SimulationApp``, headless), the stage
(``isaacsim.core.experimental.utils.stage.open_stage``), stepping
(``SimulationManager.setup_simulation(dt=1/physics_hz)`` then ``SimulationManager.step()`` per
physics step; on 5.x, ``isaacsim.core.api.World(physics_dt=...)`` and ``World.step``), the
state views (``isaacsim.core.experimental.prims.Articulation`` / ``RigidPrim``) and RTX images
(``isaacsim.sensors.experimental.rtx.CameraSensor``) at the USD cameras, which sit where the
MuJoCo twin's DROID rig is.

Rendering follows Isaac Lab: ``/app/player/playSimulations`` is off so that ``app.update()``
renders without advancing physics; physics advances only through ``SimulationManager.step``.
"""

from __future__ import annotations

import importlib
import pathlib
from typing import Any

import numpy as np

from realm_ros.backends.physx.twin import PhysxTwin
from realm_ros.core.config import DynamicsParams, WorldConfig
from realm_ros.core.errors import BackendUnavailable, ConfigError


def _np(value: Any) -> np.ndarray:
    """Return a float numpy copy of a warp array (Isaac's return type) or array-like."""
    return np.array(value.numpy() if hasattr(value, 'numpy') else value, dtype=float)


def launch_app(headless: bool = True, width: int = 1280, height: int = 720) -> Any:
    """Start Isaac Sim's ``SimulationApp`` (must precede every other Omniverse import)."""
    try:
        from isaacsim import SimulationApp
    except ImportError as err:
        raise BackendUnavailable(
            'Isaac Sim is not installed here (pip install "isaacsim[all,extscache]==6.2.0.0" '
            '--extra-index-url https://pypi.nvidia.com on Python 3.12 with an RTX GPU)'
        ) from err
    app = SimulationApp({'headless': headless, 'width': width, 'height': height})
    # Isaac Lab's setting: app.update() renders without stepping physics.
    app.set_setting('/app/player/playSimulations', False)
    return app


class _ArticulationView:
    """An Isaac ``Articulation`` read and written through the keys of the kit-less views."""

    def __init__(self, prims: Any, path: str) -> None:
        self.art = prims.Articulation(path)
        self.dof_names = list(self.art.dof_names)

    def read(self, key: str) -> np.ndarray:
        a = self.art
        if key == 'q':
            return _np(a.get_dof_positions())[0]
        if key == 'dq':
            return _np(a.get_dof_velocities())[0]
        if key == 'target':
            return _np(a.get_dof_position_targets())[0]
        if key == 'force':
            return _np(a.get_dof_efforts())[0]
        if key == 'armature':
            return _np(a.get_dof_armatures())[0]
        if key == 'friction':
            static, dynamic, viscous = a.get_dof_friction_properties()
            return np.stack([_np(static)[0], _np(dynamic)[0], _np(viscous)[0]], axis=-1)
        if key == 'root':
            pos, quat = a.get_world_poses()  # quaternion w, x, y, z
            p, q = _np(pos)[0], _np(quat)[0]
            return np.r_[p, q[1:], q[0]]
        raise KeyError(key)

    def write(self, key: str, values: np.ndarray, index: Any = None) -> None:
        a = self.art
        if index is not None:
            full = self.read(key)
            full[index] = values
            values = full
        values = np.asarray(values, dtype=float)
        if key == 'q':
            a.set_dof_positions(values[None])
        elif key == 'dq':
            a.set_dof_velocities(values[None])
        elif key == 'target':
            a.set_dof_position_targets(values[None])
        elif key == 'force':
            a.set_dof_efforts(values[None])
        elif key == 'armature':
            a.set_dof_armatures(values[None])
        elif key == 'friction':
            a.set_dof_friction_properties(static_frictions=values[None, :, 0],
                                          dynamic_frictions=values[None, :, 1],
                                          viscous_frictions=values[None, :, 2])
        elif key == 'root':
            a.set_world_poses(positions=values[None, :3],
                              orientations=np.r_[values[6], values[3:6]][None])
        else:
            raise KeyError(key)

    def destroy(self) -> None:
        self.art = None


class _RigidView:
    """An Isaac ``RigidPrim``: pose (x y z qx qy qz qw), velocity (linear, angular), mass,
    inertia (row-major 3x3)."""

    dof_names: list[str] = []

    def __init__(self, prims: Any, path: str) -> None:
        self.body = prims.RigidPrim(path)

    def read(self, key: str) -> np.ndarray:
        if key == 'pose':
            pos, quat = self.body.get_world_poses()
            q = _np(quat)[0]
            return np.r_[_np(pos)[0], q[1:], q[0]]
        if key == 'vel':
            lin, ang = self.body.get_velocities()
            return np.r_[_np(lin)[0], _np(ang)[0]]
        if key == 'mass':
            return _np(self.body.get_masses()).reshape(-1)[:1]
        if key == 'inertia':
            return _np(self.body.get_inertias()).reshape(-1)[:9]
        raise KeyError(key)

    def write(self, key: str, values: np.ndarray, index: Any = None) -> None:
        del index
        values = np.asarray(values, dtype=float)
        if key == 'pose':
            self.body.set_world_poses(positions=values[None, :3],
                                      orientations=np.r_[values[6], values[3:6]][None])
        elif key == 'vel':
            self.body.set_velocities(linear_velocities=values[None, :3],
                                     angular_velocities=values[None, 3:])
        elif key == 'mass':
            self.body.set_masses(values.reshape(1))
        elif key == 'inertia':
            self.body.set_inertias(values.reshape(1, 9))
        else:
            raise KeyError(key)

    def destroy(self) -> None:
        self.body = None


class IsaacEngine:
    """Isaac Sim as the PhysX engine of a :class:`PhysxTwin` (same interface as KitlessEngine).

    6.x: ``isaacsim.core.simulation_manager.SimulationManager``; 5.x (no ``setup_simulation``):
    ``isaacsim.core.api.World``.
    """

    name = 'Isaac Sim'

    def __init__(self, app: Any, usd_path: pathlib.Path, physics_hz: float) -> None:
        self.app = app
        stage_utils = importlib.import_module('isaacsim.core.experimental.utils.stage')
        app_utils = importlib.import_module('isaacsim.core.experimental.utils.app')
        self.prims = importlib.import_module('isaacsim.core.experimental.prims')
        ok, _ = stage_utils.open_stage(str(usd_path))
        if not ok:
            raise ConfigError(f'Isaac Sim could not open {usd_path}')
        manager = importlib.import_module('isaacsim.core.simulation_manager').SimulationManager
        self._world: Any = None  # isaacsim.core.api.World (5.x) or None (6.x manager)
        if hasattr(manager, 'setup_simulation'):  # 6.x
            manager.setup_simulation(dt=1.0 / physics_hz, device='cpu')
            app_utils.play()
            manager.initialize_physics()
            self._manager = manager
        else:  # 5.x spelling
            api = importlib.import_module('isaacsim.core.api')
            self._world = api.World(physics_dt=1.0 / physics_hz, rendering_dt=1.0 / physics_hz,
                                    stage_units_in_meters=1.0, backend='numpy', device='cpu')
            self._world.reset()
            self._manager = None
        self._dt = 1.0 / physics_hz

    def articulation(self, root_joint: str, prim: str) -> _ArticulationView:
        del prim
        return _ArticulationView(self.prims, root_joint)

    def rigid_body(self, prim: str) -> _RigidView:
        return _RigidView(self.prims, prim)

    def step(self, dt: float) -> None:
        if abs(dt - self._dt) > 1e-12:
            raise ConfigError(f'Isaac engine set up for dt {self._dt}, asked to step {dt}')
        if self._manager is not None:
            self._manager.step()
        else:
            self._world.step(render=False)

    def close(self) -> None:
        """The app outlives the engine (one SimulationApp per process)."""


class IsaacWorld(PhysxTwin):
    """The twin in Isaac Sim (``backend: isaac``); RTX images from the USD's DROID cameras."""

    name = 'isaac'

    def __init__(self, config: WorldConfig, dynamics: DynamicsParams | None = None,
                 latency_s: float | None = None, joint_noise_std: float = 0.0,
                 app: Any = None) -> None:
        self._app = app if app is not None else launch_app()
        self._sensors: dict[str, Any] = {}
        super().__init__(config, dynamics=dynamics, latency_s=latency_s,
                         joint_noise_std=joint_noise_std)

    def _make_engine(self, usd_path: pathlib.Path, label: str) -> IsaacEngine:
        del label
        self._sensors = {}
        return IsaacEngine(self._app, usd_path, self._config.physics_hz)

    def render(self) -> dict[str, np.ndarray]:
        """Return RTX RGB images (H, W, 3) uint8 from the USD cameras (the DROID rig)."""
        if not self._config.cameras:
            return {}
        rtx = importlib.import_module('isaacsim.sensors.experimental.rtx')
        self._app.update()  # render the current physics state (physics does not advance)
        images = {}
        for name in self._config.cameras:
            if name not in self._sensors:
                sensor = rtx.CameraSensor(self.layout.cameras[name])
                sensor.attach_annotators('rgb')
                self._sensors[name] = sensor
            data, _ = self._sensors[name].get_data('rgb')
            if data is None:
                raise BackendUnavailable(f'Isaac Sim camera {name!r} returned no rgb data')
            rgb = np.asarray(data.numpy() if hasattr(data, 'numpy') else data)[..., :3]
            size = (self._config.camera_width, self._config.camera_height)
            if rgb.shape[1::-1] != size:
                import cv2
                rgb = cv2.resize(rgb, size, interpolation=cv2.INTER_AREA)
            images[name] = rgb.astype(np.uint8)
        return images

    def observe(self, render: bool = True):
        import dataclasses

        from realm_ros.core import perturbations
        obs = super().observe(render=False)
        if render and self._config.camera_rate_hz > 0:
            images = self.render()
            aug = self._mirror._image_aug  # noqa: SLF001 - V-AUG drawn by the shared reset
            if aug is not None:
                images = {name: perturbations.augment_image(
                    image, aug['blur_sigma'], aug['contrast']) for name, image in images.items()}
            obs = dataclasses.replace(obs, images=images)
        return obs

    def close(self) -> None:
        super().close()
        self._sensors = {}


__all__ = ['IsaacEngine', 'IsaacWorld', 'launch_app']
