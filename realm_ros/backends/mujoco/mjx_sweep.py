"""Whole-episode sweeps on a GPU: hundreds of twin worlds stepped in one MJX batch.

:class:`MjxStepper` is the physics of :func:`~realm_ros.backends.mujoco.batch.run_batch`: the
worlds of one group (same task, same scene geometry: the caller groups cells by
:func:`structure_key`) share one MJX model, whose fields that differ between worlds (B-HOBJ's
masses, damping, stiffness and effort ranges; identified dynamics) are stacked per world and
``vmap``-ed; one jitted call integrates every world's control period (``physics_hz /
control_hz`` physics steps, ``lax.scan``) from the control rows the host computed, and returns
the state before the period's last physics step and after it (what
:meth:`MujocoWorld.load_step` needs to reproduce ``mj_step``'s data). Policy, perturbations,
privileged state and scoring stay on the host, in the same code as the CPU path.

Deviations from the CPU twin, each forced by MJX 3.17 (``docs/performance.md`` measures what
they change):

* Friction cones are pyramidal (elliptic cones crash MJX 3.17 under JAX 0.11).
* The arm's collision cylinders (``link0``..``link7`` motors, ``gripper_base``) are capsules of
  the same radius and half-length: MJX has no cylinder-box collision, and the table, the
  fingers and most objects are boxes. Contact of those links with the scene is rare (the
  expert never touches the table with its links); the hemispherical caps reach ``radius``
  further along the axis.
* The integrator is ``implicitfast`` where the twin's scenes with free objects use
  ``implicit`` (MJX 3.17 has no ``implicit``); ``model.py`` chose ``implicit`` for the spoon's
  spin-up, and pick_spoon is refused here anyway (its ellipsoid).
* float32 and MJX's solver (its own iteration count, ``iterations`` / ``ls_iterations``).

Scenes that still need an unsupported pair (an object cylinder - mug, water bottle, the
switch's cap - or ellipsoid - the spoon - against a box) are refused by :func:`check_model`
with the pair named: rotate_mug, pick_water_bottle, push_switch and pick_spoon do not run here.

Needs ``mujoco-mjx`` (and ``jax``, with CUDA for a GPU); imported only for ``--device gpu``.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from typing import Any, Sequence

import numpy as np

from realm_ros.backends.mujoco.batch import Rows, State
from realm_ros.backends.mujoco.world import MujocoWorld
from realm_ros.core.errors import BackendUnavailable, ConfigError

try:
    import mujoco
except ImportError as err:  # pragma: no cover - world.py already raised BackendUnavailable
    raise BackendUnavailable('the MuJoCo twin needs the "mujoco" package') from err

#: Model fields that only the renderer reads (V-LIGHT, V-VIEW change them): not per world here.
VISUAL_PREFIXES = ('light_', 'cam_', 'mat_', 'tex_', 'geom_rgba')
#: Bodies whose collision cylinders become capsules in the MJX model (the arm and the hand).
ARM_BODY_PREFIXES = ('panda_', 'gripper')


def _import_mjx() -> tuple[Any, Any]:
    try:
        import jax
        from mujoco import mjx
    except ImportError as err:
        raise BackendUnavailable('--device gpu needs the "mujoco-mjx" and "jax" packages '
                                 '(pip install mujoco-mjx==3.17.0; jax with CUDA)') from err
    return jax, mjx


def mjx_model(model: mujoco.MjModel, iterations: int | None = None,
              ls_iterations: int | None = None) -> mujoco.MjModel:
    """Return a copy of ``model`` as MJX runs it: pyramidal cones, implicitfast, the arm's
    cylinders as capsules, the solver's iterations (None: the model's own)."""
    m = copy.copy(model)
    m.opt.cone = mujoco.mjtCone.mjCONE_PYRAMIDAL
    if m.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICIT:
        m.opt.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    cyl, cap = mujoco.mjtGeom.mjGEOM_CYLINDER, mujoco.mjtGeom.mjGEOM_CAPSULE
    for g in range(m.ngeom):
        body = m.body(m.geom_bodyid[g]).name
        if m.geom_type[g] == cyl and body.startswith(ARM_BODY_PREFIXES):
            m.geom_type[g] = cap
            r, h = m.geom_size[g, 0], m.geom_size[g, 1]
            m.geom_rbound[g] = r + h
            m.geom_aabb[g, 3:] = (r, r, r + h)
    if iterations is not None:
        m.opt.iterations = int(iterations)
    if ls_iterations is not None:
        m.opt.ls_iterations = int(ls_iterations)
    return m


def unsupported_pairs(model: mujoco.MjModel) -> list[str]:
    """Return the geom pairs of ``model`` MJX cannot collide, as 'body/geom (TYPE) - ...'."""
    _, _ = _import_mjx()
    from mujoco.mjx._src import collision_driver

    def label(g: int) -> str:
        name = model.geom(g).name or f'geom {g}'
        kind = mujoco.mjtGeom(model.geom_type[g]).name[len('mjGEOM_'):]
        return f'{model.body(model.geom_bodyid[g]).name}/{name} ({kind})'

    out = []
    for g1, g2, _pair in collision_driver.geom_pairs(model):
        t1, t2 = sorted((model.geom_type[g1], model.geom_type[g2]))
        if not collision_driver.has_collision_fn(t1, t2):
            out.append(f'{label(g1)} - {label(g2)}')
    return out


def check_model(model: mujoco.MjModel, task: str) -> None:
    """Raise :class:`ConfigError` naming the first pairs MJX cannot collide in ``task``."""
    bad = unsupported_pairs(model)
    if bad:
        raise ConfigError(
            f'--device gpu: task {task!r} needs collisions MJX 3.17 does not implement '
            f'({len(bad)} geom pairs, e.g. {"; ".join(bad[:3])}); run it with --device cpu. '
            'Runs on the GPU: put_green_block_in_bowl, put_banana_into_box, rotate_marker, '
            'stack_cubes, open_drawer, close_drawer')


def structure_key(world: MujocoWorld) -> tuple:
    """What must be equal for worlds to share one MJX model: sizes and the static fields."""
    m = world.model
    return (m.nq, m.nv, m.nu, m.nbody, m.ngeom, m.njnt, m.nmocap, m.geom_type.tobytes(),
            m.body_parentid.tobytes(), m.geom_size.tobytes(), m.geom_pos.tobytes())


class MjxStepper:
    """One MJX batch of same-structure worlds (see the module docstring).

    Args:
        worlds: reset :class:`MujocoWorld` s with equal :func:`structure_key`.
        iterations, ls_iterations: the solver's (None: the twin's, 100 and 50).
    """

    name = 'mjx'
    #: Not handed back (``batch.Stepper.derived``): MJX steps a changed model (capsules,
    #: pyramidal cones), so each world rebuilds them with its own model on the host.
    derived = None

    def __init__(self, worlds: Sequence[MujocoWorld], iterations: int | None = None,
                 ls_iterations: int | None = None) -> None:
        jax, mjx = _import_mjx()
        jnp = jax.numpy
        self._jax = jax
        keys = {structure_key(w) for w in worlds}
        if len(keys) != 1:
            raise ConfigError('MjxStepper: the worlds of one batch must share their scene '
                              'geometry (group cells by structure_key)')
        base = mjx_model(worlds[0].model, iterations, ls_iterations)
        check_model(base, worlds[0]._task or '')
        models = [w.model for w in worlds]
        # put_model decides from the values it sees which dofs get frictionloss rows: give it
        # every dof that has friction in any world (a zero in the others is no force).
        fric = np.max([m.dof_frictionloss for m in models], axis=0)
        base.dof_frictionloss[:] = np.where(fric > 0, fric, base.dof_frictionloss)
        self.model = base
        mx = mjx.put_model(base)
        varying: dict[str, Any] = {}
        static: list[str] = []
        for field in dataclasses.fields(mx):
            name = field.name
            value = getattr(mx, name)
            if not hasattr(base, name) or name in ('geom_type', 'geom_rbound', 'geom_aabb') \
                    or name.startswith(VISUAL_PREFIXES):
                continue
            arrays = [np.asarray(getattr(m, name)) for m in models]
            if not isinstance(arrays[0], np.ndarray) or arrays[0].dtype == object:
                continue
            if all(np.array_equal(a, arrays[0]) for a in arrays[1:]):
                continue
            if isinstance(value, np.ndarray) or not hasattr(value, 'dtype'):
                static.append(name)
                continue
            varying[name] = jnp.asarray(np.stack(arrays), dtype=value.dtype)
        if static:
            raise ConfigError(f'MjxStepper: fields MJX holds static differ between worlds: '
                              f'{static}')
        self.varying = sorted(varying)
        d0 = mjx.make_data(mx)
        axes = jax.tree_util.tree_map(lambda _: None, mx)
        if varying:
            axes = axes.tree_replace({k: 0 for k in varying})
            mx = mx.tree_replace(varying)
        self.mx = mx
        n = len(worlds)
        batch = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (n,) + x.shape), d0)
        dtype = d0.qpos.dtype
        self.data = batch.replace(
            qpos=jnp.asarray(np.stack([w.data.qpos for w in worlds]), dtype),
            qvel=jnp.asarray(np.stack([w.data.qvel for w in worlds]), dtype),
            time=jnp.asarray(np.array([w.data.time for w in worlds]), d0.time.dtype),
            ctrl=jnp.asarray(np.stack([w.data.ctrl for w in worlds]), dtype),
            mocap_pos=jnp.asarray(np.stack([w.data.mocap_pos for w in worlds]), dtype),
            mocap_quat=jnp.asarray(np.stack([w.data.mocap_quat for w in worlds]), dtype))
        # Committed to the device like the jitted call's outputs: an uncommitted first input
        # makes the second call compile again (measured: cache size 2 after two calls).
        self.data = jax.device_put(self.data, jax.devices()[0])

        def period(m, d, ctrl, mpos, mquat):
            def one(d, u):
                c, p, q = u
                return mjx.step(m, d.replace(ctrl=c, mocap_pos=p, mocap_quat=q)), None

            d, _ = jax.lax.scan(one, d, (ctrl[:-1], mpos[:-1], mquat[:-1]))
            before = (d.qpos, d.qvel, d.time)
            d, _ = one(d, (ctrl[-1], mpos[-1], mquat[-1]))
            return d, before, (d.qpos, d.qvel, d.time)

        self._fn = jax.jit(jax.vmap(period, in_axes=(axes, 0, 0, 0, 0)), donate_argnums=(1,))
        self.timing = {'compile': 0.0, 'device': 0.0, 'transfer': 0.0, 'calls': 0}
        self._dtype = dtype

    def step(self, rows: Sequence[Rows]) -> list[tuple[State, State]]:
        """Integrate one control period of every world (``batch.Stepper``)."""
        jnp = self._jax.numpy
        t = time.perf_counter()
        ctrl = jnp.asarray(np.stack([r[0] for r in rows]), self._dtype)
        mpos = jnp.asarray(np.stack([r[1] for r in rows]), self._dtype)
        mquat = jnp.asarray(np.stack([r[2] for r in rows]), self._dtype)
        t1 = time.perf_counter()
        self.data, before, after = self._fn(self.mx, self.data, ctrl, mpos, mquat)
        before, after = self._jax.device_get((before, after))
        t2 = time.perf_counter()
        self.timing['transfer'] += t1 - t
        self.timing['compile' if self.timing['calls'] == 0 else 'device'] += t2 - t1
        self.timing['calls'] += 1
        q0, v0, s0 = (np.asarray(a, dtype=float) for a in before)
        q1, v1, s1 = (np.asarray(a, dtype=float) for a in after)
        return [((q0[i], v0[i], float(s0[i])), (q1[i], v1[i], float(s1[i])))
                for i in range(len(rows))]
