"""Apply REALM's perturbations in the MuJoCo twin (and so in the digital real, which is the same
world class with hidden dynamics): the same parameters (``core.perturbations.sample``) give the
same change in both.

Three hooks, called by :class:`~realm_ros.backends.mujoco.world.MujocoWorld` at reset:

* :func:`make_variant`: a scene whose *geometry* differs (V-SC distractors, SB-NOUN's added
  object or drawer, SB-VRB's receiver, VB-MOBJ's morphed object, VSB-NOBJ's new object or
  cabinet); the world rebuilds its model when :func:`variant_key` changes.
* :func:`perturb_state`: the initial state (VB-POSE re-places the main object only; objects the
  variant added are placed collision-free; SB-NOUN's close_drawer opens the other drawer).
* :func:`apply_model`: model parameters from the pristine copy (V-LIGHT, B-HOBJ, V-VIEW).

V-AUG is applied to the rendered images (``core.perturbations.augment_image``); the semantic
codes change only the instruction.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from typing import Any, Mapping

import numpy as np

from realm_ros.backends.mujoco import objects
from realm_ros.core import perturbations, tasks
from realm_ros.core.rotations import quat_mul, yaw_quat

try:
    import mujoco
except ImportError:  # pragma: no cover - world.py already raised BackendUnavailable
    mujoco = None

#: Codes whose parameters change the scene's geometry (the model is rebuilt for them).
GEOMETRY_CODES = ('V-SC', 'SB-NOUN', 'SB-VRB', 'VB-MOBJ', 'VSB-NOBJ')
#: Where added objects (distractors, receivers, SB-NOUN's object) are placed: x, y ranges, m.
ADDED_REGION = (0.35, 0.68, -0.3, 0.3)
#: On drawer tasks: beside the cabinet, clear of the drawers' travel.
ADDED_REGION_DRAWERS = (0.45, 0.7, 0.27, 0.4)


def variant_key(code: str, params: Mapping[str, Any]) -> str:
    """Return a key that differs exactly when the scene geometry differs."""
    if code not in GEOMETRY_CODES or not params:
        return ''
    geometry = {k: v for k, v in params.items() if k not in ('instruction', 'placement_seed')}
    return code + json.dumps(geometry, sort_keys=True)


def _added(scene: Any, name: str, kind: str, max_dim: float | None = None) -> Any:
    """Return a FreeObject for object-set entry ``kind`` with body name ``name``."""
    built = objects.build(kind, prefix=name, max_dim=max_dim)
    radius = 0.5 * float(math.hypot(built.extents[0], built.extents[1])) + 0.01
    region = ADDED_REGION_DRAWERS if 'drawer' in scene.task.skill else ADDED_REGION
    obj = _free_object_class()(name, built.geoms, 0.0, region, radius, interior=built.interior)
    return obj, built.assets


def _free_object_class() -> Any:
    from realm_ros.backends.mujoco import scenes
    return scenes.FreeObject


def make_variant(scene: Any, code: str, params: Mapping[str, Any]) -> Any:
    """Return ``scene`` changed by ``code`` (a copy), or ``scene`` itself when unchanged."""
    if code not in GEOMETRY_CODES or not params or not hasattr(scene, 'free'):
        return scene
    out = copy.copy(scene)
    out._ids = None
    out._model_key = None
    free = list(scene.free)
    assets: list[str] = []
    main = scene.task.obj
    if code == 'V-SC':
        for i, kind in enumerate(params['distractors']):
            obj, extra = _added(scene, f'distractor_{i}', kind, max_dim=0.12)
            free.append(obj)
            assets.append(extra)
    elif code == 'SB-NOUN' and 'add_object' in params:
        obj, extra = _added(scene, 'noun_object', params['add_object'], max_dim=0.12)
        free.append(obj)
        assets.append(extra)
    elif code == 'SB-VRB':
        out.task = perturbations_task(scene.task, params)
        if 'receiver' in params:
            obj, extra = _added(scene, 'receiver', params['receiver'], max_dim=0.185)
            free.append(obj)
            assets.append(extra)
        if 'replace_target' in params:
            k = [o.name for o in free].index(scene.task.target)
            built = objects.build(params['replace_target'], prefix=scene.task.target,
                                  max_dim=0.185)
            free[k] = dataclasses.replace(free[k], geoms=built.geoms, z=0.0,
                                          interior=built.interior)
            assets.append(built.assets)
    elif code == 'VB-MOBJ':
        k = [o.name for o in free].index(main)
        geoms, extra, s = objects.morph(free[k].geoms, '', params['scale'], params.get('box'),
                                        prefix=main)
        free[k] = dataclasses.replace(free[k], geoms=geoms, z=free[k].z * float(s[2]),
                                      radius=free[k].radius * float(max(s[0], s[1])))
        assets.append(extra)
    elif code == 'VSB-NOBJ':
        if 'cabinet' in params:
            out._cabinet = params['cabinet']
        else:
            k = [o.name for o in free].index(main)
            built = objects.build(params['replace_main'], prefix=main, max_dim=0.15)
            free[k] = dataclasses.replace(free[k], geoms=built.geoms, z=0.0)
            assets.append(built.assets)
    if code == 'SB-NOUN':
        out.task = perturbations_task(scene.task, params)
    out.free = tuple(free)
    out._extra_assets = ''.join(assets)
    base_mjcf = scene.mjcf

    def mjcf() -> tuple[str, str]:
        body, asset = base_mjcf()
        cabinet = getattr(out, '_cabinet', '')
        if cabinet:
            body = cabinet_variant(body, cabinet)
        # Bodies of the added objects: same form as the scene's own free bodies.
        for obj in out.free[len(scene.free):]:
            body += (f'\n<body name="{obj.name}" pos="0.5 0 {obj.z + 0.3}">'
                     f'<freejoint name="{obj.name}_free"/>{obj.geoms}</body>')
        for obj_old, obj_new in zip(scene.free, out.free):
            if obj_old.geoms != obj_new.geoms:
                body = body.replace(obj_old.geoms, obj_new.geoms, 1)
        return body, asset + out._extra_assets

    out.mjcf = mjcf
    return out


def perturbations_task(task: tasks.TaskDef, params: Mapping[str, Any]) -> tasks.TaskDef:
    """Return ``task`` with the scored fields of ``params`` (SB-NOUN, SB-VRB)."""
    changes = dict(params.get('scored', {}))
    if 'instruction' in params:
        changes['instruction'] = params['instruction']
    return dataclasses.replace(task, **changes)


def cabinet_variant(body_xml: str, model: str) -> str:
    """Return the cabinet MJCF recoloured and, for knob models, with knobs for bar handles."""
    spec = perturbations.CABINET_MODELS[model]
    carcass = ' '.join(f'{v:g}' for v in spec['carcass']) + ' 1'
    front = ' '.join(f'{v:g}' for v in spec['front']) + ' 1'
    out = body_xml.replace('rgba="0.55 0.42 0.28 1"', f'rgba="{carcass}"')
    out = out.replace('rgba="0.7 0.55 0.35 1"', f'rgba="{front}"')
    out = out.replace('rgba="0.6 0.48 0.3 1"', f'rgba="{front}"')
    if spec['handle'] == 'knob':
        out = out.replace('size="0.012 0.065 0.01"', 'size="0.02 0.03 0.02"')
    return out


# -- initial state ----------------------------------------------------------------------------

def _place(rng: np.random.Generator, obj: Any, placed: list[tuple[float, float, float]]
           ) -> tuple[float, float]:
    for _ in range(500):
        x = rng.uniform(obj.region[0], obj.region[1])
        y = rng.uniform(obj.region[2], obj.region[3])
        if all(math.hypot(x - px, y - py) > obj.radius + pr for px, py, pr in placed):
            return x, y
    from realm_ros.core.errors import ConfigError
    raise ConfigError(f'cannot place {obj.name} collision-free')


def _radius(scene: Any, name: str) -> float:
    for obj in scene.free:
        if obj.name == name:
            return obj.radius
    return 0.05


def perturb_state(scene: Any, state: Mapping[str, Any], code: str,
                  params: Mapping[str, Any], seed: int = 0) -> dict[str, Any]:
    """Return the initial state changed by ``code`` for ``scene`` (a variant or the base).

    VB-POSE (REALM's ``vb_pose``): only the main object moves: re-placed collision-free in its
    region against every other object's current position, its yaw + N(0, yaw_std); the switch
    panel: REALM's wall z +-0.15 m maps to the table's x (the panel lies flat, so the wall's
    vertical is the table's depth) and its x +-0.075 m to y; the cabinet: re-placed in its
    region, yaw ~ N(0.25, 0.12) clipped to [0, 0.57] rad. Displacements scale with ``shift``.
    Objects a variant added (distractors, receivers) get collision-free poses from
    ``placement_seed`` (or the pose seed, or the episode seed).
    """
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in state.items()}
    out.setdefault('objects', {})
    out.setdefault('fixtures', {})
    out.setdefault('joints', {})
    main = getattr(getattr(scene, 'task', None), 'obj', '')
    if code in GEOMETRY_CODES:
        # A replaced or morphed object rests at its own height.
        heights = {o.name: o.z for o in getattr(scene, 'free', ())}
        out['objects'] = {n: ([p[0], p[1], heights[n]] + list(p[3:]) if n in heights else p)
                          for n, p in out['objects'].items()}
    if code == 'VB-POSE' and params.get('shift'):
        rng = np.random.default_rng(params['pose_seed'])
        shift = float(params['shift'])
        objs = {k: list(v) for k, v in out['objects'].items()}
        if main in objs:
            obj = next(o for o in scene.free if o.name == main)
            others = [(p[0], p[1], _radius(scene, n)) for n, p in objs.items() if n != main]
            x, y = _place(rng, obj, others)
            old = objs[main]
            x, y = old[0] + shift * (x - old[0]), old[1] + shift * (y - old[1])
            yaw = 2.0 * math.atan2(old[6], old[3]) + rng.normal(0.0, params['yaw_std'])
            objs[main] = [x, y, old[2]] + yaw_quat(yaw)
        out['objects'] = objs
        fixtures = {k: list(v) for k, v in out['fixtures'].items()}
        if 'light_switch' in fixtures:
            fixtures['light_switch'][0] += shift * rng.uniform(-0.15, 0.15)
            fixtures['light_switch'][1] += shift * rng.uniform(-0.075, 0.075)
        if 'cabinet' in fixtures:
            fixtures['cabinet'][0] += shift * (rng.uniform(0.76, 0.8) - fixtures['cabinet'][0])
            fixtures['cabinet'][1] += shift * (rng.uniform(-0.08, 0.08) - fixtures['cabinet'][1])
            fixtures['cabinet'][2] = shift * float(np.clip(rng.normal(0.25, 0.12), 0.0, 0.57))
        out['fixtures'] = fixtures
    if code == 'SB-NOUN' and params.get('drawer') and getattr(scene, 'task', None):
        if scene.task.skill == 'close_drawer':
            from realm_ros.backends.mujoco.scenes import DRAWER_TRAVEL
            for name in ('top_drawer', 'middle_drawer'):
                out['joints'][f'{name}_slide'] = DRAWER_TRAVEL if name == params['drawer'] \
                    else 0.0
    missing = [o for o in getattr(scene, 'free', ()) if o.name not in out['objects']]
    if missing:
        rng = np.random.default_rng(params.get('placement_seed', params.get('pose_seed', seed)))
        placed = [(p[0], p[1], _radius(scene, n)) for n, p in out['objects'].items()]
        objs = dict(out['objects'])
        for obj in missing:
            x, y = _place(rng, obj, placed)
            placed.append((x, y, obj.radius))
            objs[obj.name] = [x, y, obj.z] + yaw_quat(rng.uniform(-math.pi, math.pi))
        out['objects'] = objs
    return out


# -- model parameters -------------------------------------------------------------------------

def snapshot(model: Any) -> dict[str, np.ndarray]:
    """Return pristine copies of everything :func:`apply_model` changes."""
    return {
        'body_mass': model.body_mass.copy(),
        'body_inertia': model.body_inertia.copy(),
        'light_diffuse': model.light_diffuse.copy(),
        'light_specular': model.light_specular.copy(),
        'headlight': model.vis.headlight.diffuse.copy(),
        'dof_damping': model.dof_damping.copy(),
        'jnt_stiffness': model.jnt_stiffness.copy(),
        'jnt_actfrcrange': model.jnt_actfrcrange.copy(),
        'cam_pos': model.cam_pos.copy(),
        'cam_quat': model.cam_quat.copy(),
    }


def main_object_bodies(model: Any, name: str) -> list[int]:
    """Return the bodies of object ``name`` and its subtree (REALM: the object's links)."""
    try:
        root = model.body(name).id
    except KeyError:
        return []
    out = []
    for b in range(model.nbody):
        walk = b
        while walk > 0 and walk != root:
            walk = model.body_parentid[walk]
        if walk == root:
            out.append(b)
    return out


def apply_model(model: Any, pristine: Mapping[str, np.ndarray], code: str,
                params: Mapping[str, Any], main: str, arm_dofs: np.ndarray) -> None:
    """Restore the pristine model, then apply V-LIGHT, B-HOBJ or V-VIEW (REALM's ranges).

    B-HOBJ (REALM's ``b_hobj``): only the main object's bodies: mass x s capped at
    ``mass_cap`` (REALM's ``min(m s, 2)``; its release code multiplies by s a second time, a bug
    REALM v1.0.0 fixed, not reproduced), inertia with the mass; its joints' damping, stiffness
    and actuator-force range (REALM's max effort) each x their own exp(U(-1, 1)). Gripper
    fingers, the arm and every other object are untouched.
    """
    m, p = model, pristine
    m.body_mass[:] = p['body_mass']
    m.body_inertia[:] = p['body_inertia']
    m.light_diffuse[:] = p['light_diffuse']
    m.light_specular[:] = p['light_specular']
    m.vis.headlight.diffuse[:] = p['headlight']
    scene_dofs = np.setdiff1d(np.arange(m.nv), arm_dofs)  # arm: set_dynamics owns it
    m.dof_damping[scene_dofs] = p['dof_damping'][scene_dofs]
    m.jnt_stiffness[:] = p['jnt_stiffness']
    m.jnt_actfrcrange[:] = p['jnt_actfrcrange']
    m.cam_pos[:] = p['cam_pos']
    m.cam_quat[:] = p['cam_quat']
    if code == 'V-LIGHT':
        rgbs = np.asarray(params.get('light_rgbs', [params['light_rgb']]))
        for i in range(m.nlight):
            scale = params['light_scale'] * rgbs[(i + 1) % len(rgbs)]
            m.light_diffuse[i] = p['light_diffuse'][i] * scale
            m.light_specular[i] = p['light_specular'][i] * scale
        m.vis.headlight.diffuse[:] = p['headlight'] * params['light_scale'] * rgbs[0]
    elif code == 'B-HOBJ':
        bodies = main_object_bodies(m, main)
        for b in bodies:
            base = p['body_mass'][b]
            mass = min(base * params['mass_scale'], params['mass_cap'])
            m.body_mass[b] = mass
            m.body_inertia[b] = p['body_inertia'][b] * (mass / base if base > 0 else 1.0)
        for j in range(m.njnt):
            if m.jnt_bodyid[j] in bodies and m.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE:
                dof = m.jnt_dofadr[j]
                m.dof_damping[dof] = p['dof_damping'][dof] * params['damping_scale']
                m.jnt_stiffness[j] = p['jnt_stiffness'][j] * params['stiffness_scale']
                m.jnt_actfrcrange[j] = p['jnt_actfrcrange'][j] * params['effort_scale']
    elif code == 'V-VIEW':
        offset = np.asarray(params['camera_offset'])
        yaw = yaw_quat(params['camera_yaw'])
        pitch = np.array([math.cos(params['camera_pitch'] / 2), math.sin(
            params['camera_pitch'] / 2), 0.0, 0.0])
        for c in range(m.ncam):
            if m.cam_bodyid[c] != 0:
                continue  # body-attached (the wrist camera): REALM moves exterior cameras only
            m.cam_pos[c] = p['cam_pos'][c] + offset
            # yaw about world z (pre-multiplied), pitch about the camera's own x axis (post).
            m.cam_quat[c] = quat_mul(quat_mul(np.asarray(yaw), p['cam_quat'][c]), pitch)


def perturbed_initial_state(spec: Any, params: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``spec.initial_state`` as ``spec``'s perturbation changes it in the twin
    (``core.world.PERTURBED_STATES``): what the real arm's operator must set up by hand."""
    from realm_ros.backends.mujoco.world import load_scene

    scene = make_variant(load_scene(spec.task), spec.perturbation, params)
    return perturb_state(scene, dict(spec.initial_state), spec.perturbation, params, spec.seed)
