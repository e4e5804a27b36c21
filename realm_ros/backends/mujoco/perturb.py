"""Apply REALM's perturbations in the MuJoCo twin (and so in the digital real, which is the same
world class with hidden dynamics): the same parameters (``core.perturbations.sample``) give the
same change in both.

The twin's appliers, registered by kind and code in :data:`APPLIERS` (the kinds of
``core.perturbations.KINDS`` that a world applies itself); each receives the scene it changes.
:class:`~realm_ros.backends.mujoco.world.MujocoWorld` calls three functions at reset, each of
which looks the code's applier up:

* :func:`make_variant` (``scene``): a scene whose *geometry* differs (V-SC distractors, SB-NOUN's
  added object or drawer, SB-VRB's receiver, VB-MOBJ's morphed object, VSB-NOBJ's new object or
  cabinet); the world rebuilds its model when :func:`variant_key` changes.
* :func:`perturb_state` (``state``): the initial state (VB-POSE re-places the main object only;
  objects the variant added are placed collision-free; SB-NOUN opens the retargeted drawer
  where the skill starts open).
* :func:`apply_model` (``model``): model parameters from the pristine copy (V-LIGHT, B-HOBJ,
  V-VIEW).

The ``image`` kind (V-AUG) and the ``instruction`` kind are applied by the world from
``core.perturbations`` (``PerturbationDef.image``, the ``instruction`` parameter).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from typing import Any, Callable, Mapping

import numpy as np

from realm_ros.backends.mujoco import objects, scenes
from realm_ros.core import perturbations, skills
from realm_ros.core.errors import BackendUnavailable, ConfigError
from realm_ros.core.rotations import quat_mul, yaw_quat

try:
    import mujoco
except ImportError as err:  # pragma: no cover - test_mujoco_missing runs it without mujoco
    raise BackendUnavailable('the MuJoCo twin needs the "mujoco" package') from err

#: Where added objects (distractors, receivers, SB-NOUN's object) are placed: x, y ranges, m
#: (beside a fixture: its ``Fixture.added_region``).
ADDED_REGION = (0.35, 0.68, -0.3, 0.3)
#: The kinds this backend applies, each: code -> applier. ``scene``: ``(variant, params)``
#: changes a :class:`Variant`; ``state``: ``(scene, state, params)`` changes the initial state
#: dict in place; ``model``: ``(model, pristine, params, main)`` changes the model after it was
#: restored from ``pristine``.
APPLIERS: dict[str, dict[str, Callable[..., None]]] = {'scene': {}, 'state': {}, 'model': {}}


def applies(kind: str, code: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register the decorated function as the twin's ``kind`` applier of ``code``."""
    if kind not in APPLIERS:
        raise ConfigError(f'the twin applies kinds {list(APPLIERS)}, not {kind!r}')

    def register(fn: Callable[..., None]) -> Callable[..., None]:
        APPLIERS[kind][code] = fn
        return fn
    return register


def variant_key(code: str, params: Mapping[str, Any]) -> str:
    """Return a key that differs exactly when the scene geometry differs."""
    if code not in APPLIERS['scene'] or not params:
        return ''
    geometry = {k: v for k, v in params.items() if k not in ('instruction', 'placement_seed')}
    return code + json.dumps(geometry, sort_keys=True)


class Variant:
    """A scene being changed by a ``scene`` applier: its task, its free objects (the base
    scene's first, then any added), extra assets, and the cabinet model ('' = the default)."""

    def __init__(self, scene: Any) -> None:
        self.scene = scene
        self.task = scene.task
        self.free = list(scene.free)
        self.assets: list[str] = []
        self.cabinet = ''

    def add(self, name: str, kind: str, max_dim: float | None = None) -> None:
        """Add object-set entry ``kind`` as a free body ``name``, placed in the added region."""
        built = objects.build(kind, prefix=name, max_dim=max_dim)
        radius = 0.5 * float(math.hypot(built.extents[0], built.extents[1])) + 0.01
        region = next((f.added_region for f in getattr(self.scene, 'fixtures', ())
                       if f.added_region is not None), ADDED_REGION)
        self.free.append(scenes.FreeObject(name, built.geoms, 0.0, region, radius,
                                           interior=built.interior))
        self.assets.append(built.assets)

    def index(self, name: str) -> int:
        """Return the position of free object ``name``."""
        return [o.name for o in self.free].index(name)


def make_variant(scene: Any, code: str, params: Mapping[str, Any]) -> Any:
    """Return ``scene`` changed by ``code`` (a copy), or ``scene`` itself when unchanged."""
    applier = APPLIERS['scene'].get(code)
    if applier is None or not params or not hasattr(scene, 'free'):
        return scene
    variant = Variant(scene)
    applier(variant, params)
    out = copy.copy(scene)
    out._ids = None
    out._model_key = None
    out.task = variant.task
    out.free = tuple(variant.free)
    out._extra_assets = ''.join(variant.assets)
    if variant.cabinet:
        out._cabinet = variant.cabinet
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


def _realm(code: str) -> Mapping[str, Any]:
    return perturbations.get(code).realm


@applies('scene', 'V-SC')
def _distractors(variant: Variant, params: Mapping[str, Any]) -> None:
    for i, kind in enumerate(params['distractors']):
        variant.add(f'distractor_{i}', kind, max_dim=_realm('V-SC')['max_dim'])


@applies('scene', 'SB-NOUN')
def _noun_object(variant: Variant, params: Mapping[str, Any]) -> None:
    if 'add_object' in params:
        variant.add('noun_object', params['add_object'], max_dim=_realm('SB-NOUN')['max_dim'])
    variant.task = perturbations.with_scored(variant.task, params)


@applies('scene', 'SB-VRB')
def _receiver(variant: Variant, params: Mapping[str, Any]) -> None:
    base = variant.task
    variant.task = perturbations.with_scored(base, params)
    max_dim = _realm('SB-VRB')['receiver_max_dim']
    if 'receiver' in params:
        variant.add('receiver', params['receiver'], max_dim=max_dim)
    if 'replace_target' in params:
        k = variant.index(base.target)
        built = objects.build(params['replace_target'], prefix=base.target, max_dim=max_dim)
        variant.free[k] = dataclasses.replace(variant.free[k], geoms=built.geoms, z=0.0,
                                              interior=built.interior)
        variant.assets.append(built.assets)


@applies('scene', 'VB-MOBJ')
def _morphed(variant: Variant, params: Mapping[str, Any]) -> None:
    main = variant.task.obj
    k = variant.index(main)
    obj = variant.free[k]
    geoms, extra, s = objects.morph(obj.geoms, '', params['scale'], params.get('box'),
                                    prefix=main)
    variant.free[k] = dataclasses.replace(obj, geoms=geoms, z=obj.z * float(s[2]),
                                          radius=obj.radius * float(max(s[0], s[1])))
    variant.assets.append(extra)


@applies('scene', 'VSB-NOBJ')
def _new_object(variant: Variant, params: Mapping[str, Any]) -> None:
    if 'cabinet' in params:
        variant.cabinet = params['cabinet']
        return
    main = variant.task.obj
    k = variant.index(main)
    built = objects.build(params['replace_main'], prefix=main, max_dim=params['max_dim'])
    variant.free[k] = dataclasses.replace(variant.free[k], geoms=built.geoms, z=0.0)
    variant.assets.append(built.assets)


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

def _radius(scene: Any, name: str) -> float:
    for obj in scene.free:
        if obj.name == name:
            return obj.radius
    return 0.05


def perturb_state(scene: Any, state: Mapping[str, Any], code: str,
                  params: Mapping[str, Any], seed: int = 0) -> dict[str, Any]:
    """Return the initial state changed by ``code`` for ``scene`` (a variant or the base).

    The code's ``state`` applier changes it (VB-POSE, SB-NOUN); a code with a ``scene``
    applier first rests each replaced or morphed object at its own height. Objects a variant
    added (distractors, receivers) get collision-free poses from ``placement_seed`` (or the
    pose seed, or the episode seed).
    """
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in state.items()}
    out.setdefault('objects', {})
    out.setdefault('fixtures', {})
    out.setdefault('joints', {})
    if code in APPLIERS['scene']:
        # A replaced or morphed object rests at its own height.
        heights = {o.name: o.z for o in getattr(scene, 'free', ())}
        out['objects'] = {n: ([p[0], p[1], heights[n]] + list(p[3:]) if n in heights else p)
                          for n, p in out['objects'].items()}
    applier = APPLIERS['state'].get(code)
    if applier is not None:
        applier(scene, out, params)
    missing = [o for o in getattr(scene, 'free', ()) if o.name not in out['objects']]
    if missing:
        rng = np.random.default_rng(params.get('placement_seed', params.get('pose_seed', seed)))
        placed = [(p[0], p[1], _radius(scene, n)) for n, p in out['objects'].items()]
        objs = dict(out['objects'])
        for obj in missing:
            x, y = scenes.place(rng, obj, placed)
            placed.append((x, y, obj.radius))
            objs[obj.name] = [x, y, obj.z] + yaw_quat(rng.uniform(-math.pi, math.pi))
        out['objects'] = objs
    return out


@applies('state', 'VB-POSE')
def _repose(scene: Any, out: dict[str, Any], params: Mapping[str, Any]) -> None:
    """VB-POSE (REALM's ``vb_pose``): only the main object moves: re-placed collision-free in
    its region against every other object's current position, its yaw + N(0, yaw_std); a
    fixture moves as its ``Fixture.repose`` says (the switch panel, the cabinet).
    Displacements scale with ``shift``."""
    if not params.get('shift'):
        return
    rng = np.random.default_rng(params['pose_seed'])
    shift = float(params['shift'])
    main = getattr(getattr(scene, 'task', None), 'obj', '')
    objs = {k: list(v) for k, v in out['objects'].items()}
    if main in objs:
        obj = next(o for o in scene.free if o.name == main)
        others = [(p[0], p[1], _radius(scene, n)) for n, p in objs.items() if n != main]
        x, y = scenes.place(rng, obj, others)
        old = objs[main]
        x, y = old[0] + shift * (x - old[0]), old[1] + shift * (y - old[1])
        yaw = 2.0 * math.atan2(old[6], old[3]) + rng.normal(0.0, params['yaw_std'])
        objs[main] = [x, y, old[2]] + yaw_quat(yaw)
    out['objects'] = objs
    fixtures = {k: list(v) for k, v in out['fixtures'].items()}
    for name, pose in fixtures.items():
        fixture = scenes.FIXTURES.get(name)
        if fixture is not None and fixture.repose is not None:
            fixture.repose(rng, pose, shift, _realm('VB-POSE'))
    out['fixtures'] = fixtures


@applies('state', 'SB-NOUN')
def _retargeted_part(scene: Any, out: dict[str, Any], params: Mapping[str, Any]) -> None:
    """SB-NOUN on a fixture part (a drawer): the named part starts as the skill's scored part
    would (open, for close_drawer), the other parts closed."""
    if not params.get('drawer') or not getattr(scene, 'task', None):
        return
    skill = skills.get(scene.task.skill)
    for fixture in getattr(scene, 'fixtures', ()):
        if params['drawer'] in fixture.parts:
            out['joints'].update(fixture.initial_joints(params['drawer'], skill))


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
    """Restore the pristine model, then apply ``code``'s ``model`` applier, if it has one."""
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
    applier = APPLIERS['model'].get(code)
    if applier is not None:
        applier(m, p, params, main)


@applies('model', 'V-LIGHT')
def _lights(m: Any, p: Mapping[str, np.ndarray], params: Mapping[str, Any], main: str) -> None:
    """V-LIGHT: every light's diffuse and specular x light_scale x its colour (the headlight
    takes the first)."""
    rgbs = np.asarray(params.get('light_rgbs', [params['light_rgb']]))
    for i in range(m.nlight):
        scale = params['light_scale'] * rgbs[(i + 1) % len(rgbs)]
        m.light_diffuse[i] = p['light_diffuse'][i] * scale
        m.light_specular[i] = p['light_specular'][i] * scale
    m.vis.headlight.diffuse[:] = p['headlight'] * params['light_scale'] * rgbs[0]


@applies('model', 'B-HOBJ')
def _object_physics(m: Any, p: Mapping[str, np.ndarray], params: Mapping[str, Any],
                    main: str) -> None:
    """B-HOBJ (REALM's ``b_hobj``): only the main object's bodies: mass x s capped at
    ``mass_cap`` (REALM's ``min(m s, 2)``; its release code multiplies by s a second time, a bug
    REALM v1.0.0 fixed, not reproduced), inertia with the mass; its joints' damping, stiffness
    and actuator-force range (REALM's max effort) each x their own exp(U(-1, 1)). Gripper
    fingers, the arm and every other object are untouched.
    """
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


@applies('model', 'V-VIEW')
def _viewpoint(m: Any, p: Mapping[str, np.ndarray], params: Mapping[str, Any],
               main: str) -> None:
    """V-VIEW: every world-fixed camera offset, yawed about world z and pitched about its own
    x axis; body-attached cameras (the wrist camera) are unchanged, as in REALM."""
    offset = np.asarray(params['camera_offset'])
    yaw = yaw_quat(params['camera_yaw'])
    pitch = np.array([math.cos(params['camera_pitch'] / 2), math.sin(
        params['camera_pitch'] / 2), 0.0, 0.0])
    for c in range(m.ncam):
        if m.cam_bodyid[c] != 0:
            continue
        m.cam_pos[c] = p['cam_pos'][c] + offset
        # yaw about world z (pre-multiplied), pitch about the camera's own x axis (post).
        m.cam_quat[c] = quat_mul(quat_mul(np.asarray(yaw), p['cam_quat'][c]), pitch)


def perturbed_initial_state(spec: Any, params: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``spec.initial_state`` as ``spec``'s perturbation changes it in the twin
    (``Backend.perturbed_state`` in ``core.backends``): what the real arm's operator must set
    up by hand."""
    scene = make_variant(scenes.load_scene(spec.task), spec.perturbation, params)
    return perturb_state(scene, dict(spec.initial_state), spec.perturbation, params, spec.seed)
