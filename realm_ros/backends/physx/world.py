"""The kit-less PhysX twin: a :class:`~realm_ros.core.world.World` on ``ovphysx`` (CPU mode).

``ovphysx`` is the PhysX that Isaac Sim and Isaac Lab drive, without Omniverse Kit. The scene,
mirror, control law and parameter mapping are :class:`~realm_ros.backends.physx.twin.PhysxTwin`'s;
this module adds the engine: an ovstage Stage populated from the exported USD, ovphysx tensor
views per articulation and per free body, and ``step_sync``. Cameras: MuJoCo's OpenGL rasteriser
draws the PhysX state (kit-less PhysX has no renderer); Isaac Sim's RTX images differ in
lighting, shadows and materials.
"""

from __future__ import annotations

import os
import pathlib
from typing import Any, Mapping
import warnings

import numpy as np

from realm_ros.backends.physx.twin import PhysxTwin
from realm_ros.core.errors import BackendUnavailable, ConfigError

try:
    import ovphysx
    from ovphysx import PhysX
    from ovphysx.types import TensorType
    import ovstage
except ImportError as err:  # pragma: no cover - exercised only without ovphysx
    raise BackendUnavailable(
        'the PhysX twin needs ovphysx (pip install "realm_ros[physx]" ovphysx; x86_64 Linux '
        f'with AVX, glibc >= 2.35): {err}') from err

_SCHEMAS_REGISTERED = False


#: PhysX CPU worker threads (process-wide, before the first engine). 0 runs the solver on the
#: calling thread: measured here (2 shared cores) 1709 physics steps/s for the arm against
#: 202 with 1 worker and 53 with 2, because workers spin and fight other processes for cores.
THREADS_ENV = 'REALM_ROS_PHYSX_THREADS'


def configure_threads() -> None:
    """Apply :data:`THREADS_ENV` (default 0) before the first ``PhysX()`` of the process."""
    from ovphysx.types import GlobalConfigKey
    try:
        ovphysx.set_global_config(GlobalConfigKey.NUM_THREADS,
                                  int(os.environ.get(THREADS_ENV, '0')))
    except RuntimeError:
        pass  # an engine exists already: the process keeps its first setting


def register_schemas() -> None:
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
        return np.atleast_1d(self.buffers[key][0].astype(float))

    def write(self, key: str, values: np.ndarray, index: Any = None) -> None:
        buf = self.buffers[key]
        if index is not None:
            self.views[key].read(buf)
            buf[0, index] = values
        else:
            buf[0] = np.reshape(values, buf[0].shape)
        self.views[key].write(buf)

    def destroy(self) -> None:
        for view in self.views.values():
            view.destroy()
        self.views.clear()


class KitlessEngine:
    """ovphysx in CPU mode over an attached ovstage Stage populated from the USD file.

    The engine interface both PhysX worlds use (the Isaac Sim one is ``backends/isaac``):
    ``articulation(root_joint, prim)`` and ``rigid_body(prim)`` return views with
    ``read(key)`` / ``write(key, values, index=None)`` / ``dof_names`` / ``destroy()`` over the
    keys q, dq, target, force, armature, friction, root (articulations; rad, N m, kg m^2;
    root pose x y z qx qy qz qw) and pose, vel, mass, inertia (rigid bodies, world frame;
    kg, kg m^2 row-major 3x3); ``step(dt)``;
    ``close()``.
    """

    name = 'ovphysx (CPU)'

    def __init__(self, usd_path: pathlib.Path, label: str) -> None:
        register_schemas()
        if not PhysX.get_cpu_mode():
            PhysX.set_cpu_mode(True)  # process-wide and sticky; set before the first instance
            configure_threads()
        self._physx: PhysX | None = PhysX()
        self._stage = ovstage.Stage(label)
        try:
            ovstage.population.open_usd(self._stage, str(usd_path), ordinal=1,
                                        domains=ovstage.PopulationDomain.ALL)
            self._stage.advance_write_floor(ordinal=1).wait()
            self._engine.wait_task(self._engine.attach_ovstage(self._stage, read_ordinal=1))
            self._engine.wait_all()
            self._engine.warmup()
            self._engine.wait_all()
        except Exception:
            self.close()
            raise
        self._views: list[_Bindings] = []

    def articulation(self, root_joint: str, prim: str) -> _Bindings:
        del prim
        view = _Bindings(self._engine, root_joint, {
            'q': TensorType.ARTICULATION_DOF_POSITION,
            'dq': TensorType.ARTICULATION_DOF_VELOCITY,
            'target': TensorType.ARTICULATION_DOF_POSITION_TARGET,
            'force': TensorType.ARTICULATION_DOF_ACTUATION_FORCE,
            'armature': TensorType.ARTICULATION_DOF_ARMATURE,
            'friction': TensorType.ARTICULATION_DOF_FRICTION_PROPERTIES,
            'root': TensorType.ARTICULATION_ROOT_POSE,
        })
        self._views.append(view)
        return view

    def rigid_body(self, prim: str) -> _Bindings:
        view = _Bindings(self._engine, prim, {'pose': TensorType.RIGID_BODY_POSE,
                                             'vel': TensorType.RIGID_BODY_VELOCITY,
                                             'mass': TensorType.RIGID_BODY_MASS,
                                             'inertia': TensorType.RIGID_BODY_INERTIA})
        self._views.append(view)
        return view

    @property
    def _engine(self) -> PhysX:
        """The PhysX instance; after :meth:`close` there is none."""
        if self._physx is None:
            raise RuntimeError('this PhysX engine is closed')
        return self._physx

    def step(self, dt: float) -> None:
        self._engine.step_sync(dt)

    def close(self) -> None:
        for view in getattr(self, '_views', []):
            view.destroy()
        self._views = []
        if self._physx is not None:
            if self._stage is not None and self._physx.is_stage_attached(self._stage):
                self._physx.wait_task(self._physx.detach_ovstage())
            if self._stage is not None:
                self._stage.destroy()
            self._physx.destroy()
        self._physx = None
        self._stage = None


class PhysxWorld(PhysxTwin):
    """The twin on kit-less PhysX (``backend: physx``)."""

    name = 'physx'

    def _make_engine(self, usd_path: pathlib.Path, label: str) -> Any:
        return KitlessEngine(usd_path, label)


__all__ = ['KitlessEngine', 'PhysxWorld', 'ovphysx']
