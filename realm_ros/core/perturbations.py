"""REALM's fifteen perturbations as data: codes, ranges, compatibility, deterministic sampling.

A perturbation is ``(code, intensity, seed)`` on an :class:`~realm_ros.core.types.EpisodeSpec`.
:func:`sample` turns it into concrete, JSON-ready parameters, identically in every world, so a
pair of episodes sees the very same perturbation (the twin and the digital real apply the same
parameters with the same code, ``realm_ros.backends.mujoco.perturb``; the real arm's operator is
told what to change by :func:`operator_instructions`). ``intensity`` in [0, 1] scales each draw's
distance from "no change": 1.0 = REALM's full range (the default), 0.0 = the default scene; a
sweep runs several intensities. Ranges are REALM's (``realm_environment_dynamic.py``,
``realm/helpers.py``; ``shared/reference/realm.md`` section 1.5); :data:`REALM_RANGES` lists them
and ``test_perturbations`` pins them.

Incompatible task/perturbation pairs (REALM raises ``NotImplementedError``) are reported by
:func:`skip_reason` and skipped by the planner with that reason, never run as Default.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping

import numpy as np

from realm_ros.core import tasks
from realm_ros.core.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class PerturbationDef:
    """One REALM perturbation: CLI id, code, meaning, modalities, REALM's sampling ranges, and
    what realm_ros changes (twin, digital real and, by hand, the real arm's scene)."""

    id: int
    code: str
    meaning: str
    modalities: str
    ranges: str
    changes: str = ''


PERTURBATIONS: dict[str, PerturbationDef] = {p.code: p for p in (
    PerturbationDef(0, 'Default', 'no perturbation', '', '', 'nothing'),
    PerturbationDef(1, 'V-AUG', 'image augmentation (blur, contrast) on every camera', 'V',
                    'Gaussian blur sigma ~ U(0, 2.5) px at 1280x720, contrast gain alpha ~ '
                    'U(0.25, 1.5) (pixel x alpha), once per reset',
                    'every camera image: blur with sigma scaled to the image height '
                    '(sigma x H / 720), then pixels x alpha, clipped to 0..255'),
    PerturbationDef(2, 'V-VIEW', 'external camera viewpoint', 'V',
                    'position +-0.2 m per axis, pitch and yaw +-0.2 rad (uniform)',
                    'every world-fixed (exterior) camera: position offset, yaw about world z, '
                    'pitch about the camera x axis; the wrist camera is unchanged'),
    PerturbationDef(3, 'V-SC', 'scene clutter', 'V',
                    '3 distractors of other categories, max size 0.12 m, placed collision-free',
                    '3 distractor objects from the object set (procedural and pybullet_data '
                    'meshes) placed collision-free around the task objects'),
    PerturbationDef(4, 'V-LIGHT', 'illumination', 'V',
                    'intensity ~ U(20000, 750000) for all lights, colour per light ~ '
                    'N((255, 214, 170), 15) clipped / 255',
                    'every light and the headlight: diffuse and specular x intensity / 250000 '
                    'x a colour drawn per light'),
    PerturbationDef(5, 'S-PROP', 'refer to the object by its properties', 'S',
                    "one of the task's cached paraphrases", 'the instruction'),
    PerturbationDef(6, 'S-LANG', 'rephrasing and synonyms', 'S',
                    "one of the task's cached paraphrases", 'the instruction'),
    PerturbationDef(7, 'S-MO', 'multi-object / spatial referencing', 'S',
                    "one of the task's cached paraphrases", 'the instruction'),
    PerturbationDef(8, 'S-AFF', 'affordance / purpose phrasing', 'S',
                    "one of the task's cached paraphrases", 'the instruction'),
    PerturbationDef(9, 'S-INT', 'world-knowledge phrasing', 'S',
                    "one of the task's cached paraphrases", 'the instruction'),
    PerturbationDef(10, 'B-HOBJ', 'hidden object physics', 'B',
                    'main object link mass x s, s ~ U(0.25, 3), capped at 2 kg; its joints: '
                    'effort, stiffness, damping each x exp(U(-1, 1))',
                    "the main object's body masses (inertia with them) and its joints' "
                    'actuator-force range, stiffness and damping; nothing else'),
    PerturbationDef(11, 'SB-NOUN', 'instruction retargeted to another object', 'SB',
                    'drawers: top or middle (50/50); others: another object in the scene',
                    'instruction noun and the scored object; drawers: the middle drawer; '
                    'others: a second object is added and becomes the scored one'),
    PerturbationDef(12, 'SB-VRB', 'different verb / skill on the same object', 'SB',
                    'put <-> pick / rotate / stack; receiver (put: bowl-like, max 0.185 m)',
                    "instruction verb and the scored skill's rubric; a receiver is added or "
                    'the target swapped when the new skill needs one'),
    PerturbationDef(13, 'VB-POSE', 'object pose change', 'VB',
                    'main object re-placed collision-free with yaw noise N(0, 3.14); switch '
                    'z +-0.15 m and x +-0.075 m; drawer yaw N(0.25, 0.12) clipped to [0, 0.57]',
                    'only the main object (the cabinet for drawers, the switch panel for push)'),
    PerturbationDef(14, 'VB-MOBJ', 'morphed object size / shape', 'VB',
                    'scales s1, s2, s3 ~ U(0.5, 1.5) with s1 s2 s3 <= 1.5; box clipped to '
                    '[0.02, 0.175] m',
                    "the main object's geometry, scaled per axis (mass with volume)"),
    PerturbationDef(15, 'VSB-NOBJ', 'a new, unseen object replaces the target', 'VSB',
                    'another category, max size 0.15 m; instruction noun rewritten',
                    'the main object replaced by another category from the object set, and '
                    'the noun in the instruction'),
)}

#: Every code the twin and the digital real apply (all of REALM's fifteen plus Default).
TWIN_SUPPORTED = tuple(PERTURBATIONS)

#: REALM's known incompatible skill/perturbation combinations (NotImplementedError in REALM).
INCOMPATIBLE: dict[str, tuple[str, ...]] = {
    'push': ('V-SC', 'B-HOBJ', 'SB-NOUN', 'SB-VRB', 'VB-MOBJ', 'VSB-NOBJ'),
    'stack': ('SB-NOUN',),
    'open_drawer': ('VB-MOBJ', 'SB-VRB'),
    'close_drawer': ('VB-MOBJ', 'SB-VRB'),
}

_REASONS = {
    ('push', 'V-SC'): 'REALM places no distractors around the wall switch',
    ('push', 'B-HOBJ'): 'the switch is a fixed fixture; REALM does not perturb its physics',
    ('push', 'SB-NOUN'): 'REALM raises NotImplementedError: no second switch to retarget to',
    ('push', 'SB-VRB'): "REALM's compatibility matrix gives push no other verb",
    ('push', 'VB-MOBJ'): 'REALM does not morph the wall switch',
    ('push', 'VSB-NOBJ'): 'REALM lists push with VSB-NOBJ as incompatible',
    ('stack', 'SB-NOUN'): 'REALM lists stack with SB-NOUN as incompatible',
}

#: REALM's sampling ranges, pinned by the tests against the sampler.
REALM_RANGES: dict[str, Any] = {
    'V-AUG': {'blur_sigma': (0.0, 2.5), 'contrast': (0.25, 1.5), 'reference_height': 720},
    'V-VIEW': {'position': 0.2, 'pitch': 0.2, 'yaw': 0.2},
    'V-SC': {'distractors': 3, 'max_dim': 0.12},
    'V-LIGHT': {'intensity': (20000.0, 750000.0), 'colour_mean': (255.0, 214.0, 170.0),
                'colour_std': 15.0, 'reference_intensity': 250000.0},
    'B-HOBJ': {'mass_scale': (0.25, 3.0), 'mass_cap': 2.0, 'log_joint_scale': (-1.0, 1.0)},
    'SB-VRB': {'receiver_max_dim': 0.185},
    'VB-POSE': {'yaw_std': 3.14, 'switch_z': 0.15, 'switch_x': 0.075,
                'drawer_yaw_mean': 0.25, 'drawer_yaw_std': 0.12, 'drawer_yaw': (0.0, 0.57)},
    'VB-MOBJ': {'scale': (0.5, 1.5), 'max_product': 1.5, 'box': (0.02, 0.175)},
    'VSB-NOBJ': {'max_dim': 0.15},
}

#: SB-VRB's verb compatibility (REALM's ``sb_vrb``; its drawer keys never match a task type).
VERB_COMPATIBILITY: dict[str, tuple[str, ...]] = {
    'put': ('pick', 'rotate', 'stack'),
    'pick': ('put', 'rotate', 'stack'),
    'rotate': ('put', 'pick', 'stack'),
    'stack': ('put', 'pick', 'rotate'),
    'push': (),
}


# -- the object set ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ObjectDef:
    """An object category of the twin's object set (geometry: ``backends/mujoco/objects.py``).

    ``role``: 'item' (graspable, a distractor or replacement), 'container' (a put receiver,
    scored by ``inside``), 'platform' (a stack receiver). ``source``: 'procedural' or
    'pybullet_data' (a mesh the ``pybullet`` wheel ships, loaded from the installed package).
    ``theme`` follows REALM's category themes, so V-SC picks distractors of other themes.
    """

    name: str
    noun: str
    role: str
    source: str
    theme: str
    size: float  # largest dimension, m


OBJECTS: dict[str, ObjectDef] = {o.name: o for o in (
    ObjectDef('apple', 'apple', 'item', 'procedural', 'food', 0.07),
    ObjectDef('orange', 'orange', 'item', 'procedural', 'food', 0.075),
    ObjectDef('lemon', 'lemon', 'item', 'procedural', 'food', 0.07),
    ObjectDef('carrot', 'carrot', 'item', 'procedural', 'food', 0.12),
    ObjectDef('soda_can', 'soda can', 'item', 'procedural', 'containers', 0.12),
    ObjectDef('glue_stick', 'glue stick', 'item', 'procedural', 'stationery', 0.1),
    ObjectDef('tape_roll', 'roll of tape', 'item', 'procedural', 'stationery', 0.08),
    ObjectDef('eraser', 'eraser', 'item', 'procedural', 'stationery', 0.06),
    ObjectDef('toy_dice', 'dice', 'item', 'procedural', 'toys', 0.05),
    ObjectDef('tennis_ball', 'tennis ball', 'item', 'procedural', 'toys', 0.065),
    ObjectDef('sponge', 'sponge', 'item', 'procedural', 'kitchen', 0.1),
    ObjectDef('rubber_duck', 'rubber duck', 'item', 'pybullet_data', 'toys', 0.09),
    ObjectDef('teddy_bear', 'teddy bear', 'item', 'pybullet_data', 'toys', 0.12),
    ObjectDef('toy_bunny', 'toy bunny', 'item', 'pybullet_data', 'toys', 0.1),
    ObjectDef('cup', 'cup', 'item', 'pybullet_data', 'containers', 0.11),
    ObjectDef('ball', 'ball', 'item', 'pybullet_data', 'toys', 0.08),
    ObjectDef('lego_brick', 'lego brick', 'item', 'pybullet_data', 'toys', 0.06),
    ObjectDef('domino', 'domino', 'item', 'pybullet_data', 'toys', 0.06),
    ObjectDef('salad_bowl', 'bowl', 'container', 'procedural', 'containers', 0.18),
    ObjectDef('basket', 'basket', 'container', 'procedural', 'containers', 0.18),
    ObjectDef('book', 'book', 'platform', 'procedural', 'stationery', 0.18),
    ObjectDef('wooden_crate', 'crate', 'platform', 'procedural', 'kitchen', 0.12),
)}

#: The theme of each task's main object (V-SC swaps in other themes, as REALM does).
TASK_THEMES = {
    'put_green_block_in_bowl': 'toys', 'put_banana_into_box': 'food',
    'rotate_marker': 'stationery', 'rotate_mug': 'containers', 'pick_spoon': 'kitchen',
    'pick_water_bottle': 'containers', 'stack_cubes': 'toys', 'push_switch': '',
    'open_drawer': '', 'close_drawer': '',
}


#: Colours V-LIGHT draws (one per light, as REALM does; lights beyond this reuse them).
LIGHTS = 4


def by_id(index: int) -> PerturbationDef:
    """Return the perturbation with REALM's CLI index ``index`` (0..15)."""
    for p in PERTURBATIONS.values():
        if p.id == index:
            return p
    raise ConfigError(f'perturbation id must be 0..15, got {index}')


def skip_reason(task: str, code: str) -> str:
    """Return why ``code`` cannot run on ``task`` (REALM's incompatibilities), or ''."""
    if code not in PERTURBATIONS:
        raise ConfigError(f'unknown perturbation {code!r}; REALM codes: {list(PERTURBATIONS)}')
    if task not in tasks.TASKS:
        return ''
    skill = tasks.TASKS[task].skill
    if code in INCOMPATIBLE.get(skill, ()):
        why = _REASONS.get((skill, code), 'REALM does not implement it for drawer tasks' if
                           'drawer' in skill else 'REALM does not implement it')
        return f'{code} is incompatible with {skill} tasks ({task}) in REALM: {why}'
    return ''


def validate(task: str, code: str) -> None:
    """Raise :class:`ConfigError` unless ``code`` is known and can be applied to ``task``."""
    reason = skip_reason(task, code)
    if reason:
        compatible = [c for c in TWIN_SUPPORTED if not skip_reason(task, c)]
        raise ConfigError(f'perturbation {reason}; compatible codes: {compatible}')


def _towards(value: float, neutral: float, intensity: float) -> float:
    return neutral + intensity * (value - neutral)


def _rng(seed: int, code: str) -> np.random.Generator:
    return np.random.default_rng([int(seed), PERTURBATIONS[code].id, 0xBE1])


def _pick(rng: np.random.Generator, names: list[str]) -> str:
    return names[int(rng.integers(len(names)))]


def sample(task: str, code: str, intensity: float, seed: int) -> dict[str, Any]:
    """Return the concrete parameters of ``code`` for one episode (JSON-ready, deterministic).

    Keys by code (units m, rad):

    * ``V-AUG``: blur_sigma (px of a 1280x720 image), contrast (gain), reference_height (720).
    * ``V-VIEW``: camera_offset [dx, dy, dz], camera_pitch, camera_yaw.
    * ``V-SC``: distractors (object-set names), placement_seed.
    * ``V-LIGHT``: light_scale (REALM's intensity / 250000), light_rgbs (a colour per light,
      0..1; light i of the model takes ``light_rgbs[i % LIGHTS]``), light_rgb (the first: the
      headlight's and the one the operator is told).
    * ``S-*``: instruction.
    * ``B-HOBJ``: mass_scale, mass_cap, effort_scale, stiffness_scale, damping_scale.
    * ``SB-NOUN``: instruction, scored {obj}, and drawer, or add_object and placement_seed.
    * ``SB-VRB``: instruction, scored {skill, target}, receiver / replace_target,
      placement_seed.
    * ``VB-POSE``: pose_seed, yaw_std, shift (intensity).
    * ``VB-MOBJ``: scale [s1, s2, s3], box (clip range).
    * ``VSB-NOBJ``: instruction, replace_main (object-set name), max_dim.

    Every key that changes the scored rubric is under ``scored`` (see :func:`scored_task`).

    Raises:
        ConfigError: unknown code, an incompatible pair, intensity outside [0, 1].
    """
    validate(task, code)
    if not 0.0 <= intensity <= 1.0 or math.isnan(intensity):
        raise ConfigError(f'perturbation intensity must be in [0, 1], got {intensity}')
    if code == 'Default':
        return {}
    rng = _rng(seed, code)
    task_def = tasks.get_task(task) if task in tasks.TASKS else None
    if code == 'V-AUG':
        sigma, alpha = float(rng.uniform(0.0, 2.5)), float(rng.uniform(0.25, 1.5))
        return {'blur_sigma': intensity * sigma, 'contrast': _towards(alpha, 1.0, intensity),
                'reference_height': 720}
    if code == 'V-VIEW':
        offset = rng.uniform(-0.2, 0.2, 3)
        pitch, yaw = rng.uniform(-0.2, 0.2, 2)
        return {'camera_offset': [float(v) * intensity for v in offset],
                'camera_pitch': float(pitch) * intensity, 'camera_yaw': float(yaw) * intensity}
    if code == 'V-LIGHT':
        level = float(rng.uniform(20000.0, 750000.0))
        # REALM sets one intensity for every light and draws each light's colour on its own.
        drawn = np.clip(rng.normal([255.0, 214.0, 170.0], 15.0, size=(LIGHTS, 3)), 0.0,
                        255.0) / 255.0
        rgbs = [[float(_towards(c, 1.0, intensity)) for c in rgb] for rgb in drawn]
        return {'light_scale': _towards(level / 250000.0, 1.0, intensity),
                'light_rgb': rgbs[0], 'light_rgbs': rgbs}
    if code == 'B-HOBJ':
        s = float(rng.uniform(0.25, 3.0))
        effort, stiffness, damping = np.exp(rng.uniform(-1.0, 1.0, 3) * intensity)
        return {'mass_scale': _towards(s, 1.0, intensity), 'mass_cap': 2.0,
                'effort_scale': float(effort), 'stiffness_scale': float(stiffness),
                'damping_scale': float(damping)}
    if code == 'VB-POSE':
        return {'pose_seed': int(rng.integers(2 ** 31)), 'yaw_std': 3.14 * intensity,
                'shift': float(intensity)}
    if code == 'VB-MOBJ':
        for _ in range(1000):
            scale = rng.uniform(0.5, 1.5, 3)
            if float(np.prod(scale)) <= 1.5:
                break
        return {'scale': [float(_towards(v, 1.0, intensity)) for v in scale],
                'box': [0.02, 0.175]}
    if task_def is None:
        raise ConfigError(f'perturbation {code} needs a REALM task, got {task!r}; tasks: '
                          f'{sorted(tasks.TASKS)}')
    if code in ('S-LANG', 'S-PROP', 'S-MO', 'S-AFF', 'S-INT'):
        options = task_def.paraphrases.get(code, ())
        if not options or intensity == 0.0:
            return {'instruction': task_def.instruction}
        return {'instruction': options[int(rng.integers(len(options)))]}
    if intensity == 0.0:
        return {}  # the remaining codes are discrete: intensity 0 is the default scene
    exclude = {TASK_THEMES.get(task, '')}
    items = [o.name for o in OBJECTS.values() if o.role == 'item']
    if code == 'V-SC':
        pool = [n for n in items if OBJECTS[n].theme not in exclude and OBJECTS[n].size <= 0.12]
        chosen = rng.choice(len(pool), size=3, replace=False)
        return {'distractors': [pool[int(i)] for i in chosen],
                'placement_seed': int(rng.integers(2 ** 31))}
    if code == 'SB-NOUN':
        if task_def.skill in ('open_drawer', 'close_drawer'):
            drawer = _pick(rng, ['middle', 'top'])  # REALM: random.choice(["middle", "top"])
            return {'instruction': task_def.instruction.replace('top', drawer),
                    'drawer': f'{drawer}_drawer',
                    'scored': {'obj': f'{drawer}_drawer', 'target': f'{drawer}_drawer'}}
        new = _pick(rng, [n for n in items if OBJECTS[n].size <= 0.12])
        return {'instruction': task_def.instruction.replace(task_def.noun, OBJECTS[new].noun),
                'add_object': new, 'scored': {'obj': 'noun_object'},
                'placement_seed': int(rng.integers(2 ** 31))}
    if code == 'SB-VRB':
        skill = _pick(rng, list(VERB_COMPATIBILITY[task_def.skill]))
        noun = task_def.noun
        out: dict[str, Any] = {'scored': {'skill': skill, 'target': ''},
                               'placement_seed': int(rng.integers(2 ** 31))}
        if skill in ('put', 'stack'):
            role = 'container' if skill == 'put' else 'platform'
            receiver = _pick(rng, [o.name for o in OBJECTS.values() if o.role == role])
            target = task_def.target or 'receiver'
            out['scored']['target'] = target
            out['replace_target' if task_def.target else 'receiver'] = receiver
            target_noun = OBJECTS[receiver].noun
            out['instruction'] = (f'put the {noun} into the {target_noun}' if skill == 'put'
                                  else f'stack the {noun} on top of the {target_noun}')
        else:
            out['instruction'] = f'{"pick up" if skill == "pick" else skill} the {noun}'
        return out
    if code == 'VSB-NOBJ':
        if task_def.skill in ('open_drawer', 'close_drawer'):
            model = _pick(rng, list(CABINET_MODELS))
            return {'cabinet': model, 'max_dim': 0.5, 'instruction': task_def.instruction}
        pool = [n for n in items if OBJECTS[n].size <= 0.15 and OBJECTS[n].noun not in
                task_def.noun]
        new = _pick(rng, pool)
        return {'replace_main': new, 'max_dim': 0.15,
                'instruction': task_def.instruction.replace(task_def.noun, OBJECTS[new].noun)}
    raise ConfigError(f'perturbation {code} has no sampler')  # pragma: no cover


#: Procedural cabinet variants for VSB-NOBJ on drawer tasks (REALM: BEHAVIOR-1K bottom_cabinet
#: models): carcass colour, handle style (bar or knob), front colour.
CABINET_MODELS: dict[str, dict[str, Any]] = {
    'white_knobs': {'carcass': (0.92, 0.92, 0.9), 'front': (0.95, 0.95, 0.93), 'handle': 'knob'},
    'dark_bar': {'carcass': (0.25, 0.18, 0.12), 'front': (0.3, 0.22, 0.15), 'handle': 'bar'},
    'blue_knobs': {'carcass': (0.3, 0.4, 0.6), 'front': (0.35, 0.5, 0.75), 'handle': 'knob'},
    'grey_bar': {'carcass': (0.55, 0.57, 0.6), 'front': (0.65, 0.67, 0.7), 'handle': 'bar'},
}


def scored_task(task: str, code: str = 'Default', intensity: float = 1.0,
                seed: int = 0) -> tasks.TaskDef:
    """Return the task the rubric scores under ``(code, intensity, seed)``.

    SB-NOUN retargets the scored object (another drawer, or the added object); SB-VRB swaps the
    skill (and so the stage list) and the target; VSB-NOBJ keeps the body name of the replaced
    object, so the rubric's object name is unchanged. Other codes score the task as is.
    """
    base = tasks.get_task(task)
    if code not in ('SB-NOUN', 'SB-VRB'):
        return base
    params = sample(task, code, intensity, seed)
    changes = dict(params.get('scored', {}))
    if 'instruction' in params:
        changes['instruction'] = params['instruction']
    return dataclasses.replace(base, **changes) if changes else base


def operator_instructions(task: str, code: str, params: Mapping[str, Any]) -> list[str]:
    """Return what the operator of the real arm changes by hand before a perturbed episode."""
    if code == 'Default' or not params:
        return []
    if code == 'V-AUG':
        return ['nothing to change: the images are augmented in software '
                f'(blur sigma {params["blur_sigma"]:.2f} px at 720 p, contrast gain '
                f'{params["contrast"]:.2f})']
    if code == 'V-VIEW':
        d = params['camera_offset']
        return [f'move the exterior camera by dx={d[0]:+.3f} m, dy={d[1]:+.3f} m, '
                f'dz={d[2]:+.3f} m (robot base frame), pitch it by '
                f'{math.degrees(params["camera_pitch"]):+.1f} deg and yaw it by '
                f'{math.degrees(params["camera_yaw"]):+.1f} deg']
    if code == 'V-SC':
        return ['place these distractors on the table, away from the task objects: '
                + ', '.join(OBJECTS[n].noun for n in params['distractors'])]
    if code == 'V-LIGHT':
        r, g, b = (int(round(255 * c)) for c in params['light_rgb'])
        return [f'set the room light to {params["light_scale"]:.2f} x its usual brightness, '
                f'colour about RGB ({r}, {g}, {b})']
    if code.startswith('S-'):
        return []
    if code == 'B-HOBJ':
        return [f'swap the main object for one of the same look with {params["mass_scale"]:.2f}'
                f' x its mass (at most {params["mass_cap"]:g} kg); articulated: scale its '
                f'damping by {params["damping_scale"]:.2f}']
    if code == 'SB-NOUN':
        if 'drawer' in params:
            return [f'the instruction now names the {params["drawer"].replace("_", " ")}'
                    + ('; open it fully before the episode' if task == 'close_drawer' else '')]
        return [f'add a {OBJECTS[params["add_object"]].noun} to the table: it is the object '
                'the instruction names']
    if code == 'SB-VRB':
        if 'receiver' in params:
            return [f'add a {OBJECTS[params["receiver"]].noun} to the table as the receiver']
        if 'replace_target' in params:
            return [f'replace the target object with a '
                    f'{OBJECTS[params["replace_target"]].noun}']
        return []
    if code == 'VB-POSE':
        return ['move the main object to the pose given in initial_state (objects / fixtures)']
    if code == 'VB-MOBJ':
        s = params['scale']
        return [f'replace the main object with one scaled by {s[0]:.2f} x {s[1]:.2f} x '
                f'{s[2]:.2f} (length x width x height)']
    if code == 'VSB-NOBJ':
        if 'cabinet' in params:
            return [f'use a different cabinet ({params["cabinet"].replace("_", " ")})']
        return [f'replace the main object with a {OBJECTS[params["replace_main"]].noun}']
    return []


def augment_image(image: np.ndarray, blur_sigma: float, contrast: float,
                  reference_height: int = 720) -> np.ndarray:
    """Return ``image`` (H, W, 3 uint8) blurred and contrast-changed as REALM does.

    REALM (``apply_blur_and_contrast``): ``cv2.GaussianBlur`` with kernel size
    ``int(4 sigma + 1)`` made odd, then ``clip(pixel * alpha, 0, 255)`` (a gain, not a
    contrast about the mean). Its sigma is in pixels of a 1280x720 image; here it is scaled by
    ``H / reference_height`` so a 180-row image is blurred as much, relative to its size.
    """
    out = np.asarray(image, dtype=np.float32)
    sigma = float(blur_sigma) * out.shape[0] / float(reference_height)
    if sigma > 1e-3:
        radius = max(0, int(sigma * 4 + 1) // 2)  # REALM's ksize = int(4 sigma + 1), odd
        if radius > 0:
            x = np.arange(-radius, radius + 1, dtype=np.float32)
            kernel = np.exp(-0.5 * (x / sigma) ** 2)
            kernel /= kernel.sum()
            # OpenCV's default border: BORDER_REFLECT_101 (numpy's 'reflect').
            padded = np.pad(out, ((radius, radius), (0, 0), (0, 0)), mode='reflect')
            out = sum(kernel[i] * padded[i:i + out.shape[0]] for i in range(kernel.size))
            padded = np.pad(out, ((0, 0), (radius, radius), (0, 0)), mode='reflect')
            out = sum(kernel[i] * padded[:, i:i + image.shape[1]] for i in range(kernel.size))
    out = out * float(contrast)
    return np.clip(out, 0, 255).astype(np.uint8)
