"""REALM's fifteen perturbations as objects: row, ranges, sampler, compatibility, appliers.

A perturbation is ``(code, intensity, seed)`` on an :class:`~realm_ros.core.types.EpisodeSpec`.
Each code is one :class:`PerturbationDef` in :data:`PERTURBATIONS`: its row (meaning, REALM's
ranges in words, what realm_ros changes), the numbers its sampler draws from
(``PerturbationDef.realm``, REALM's ranges: ``realm_environment_dynamic.py``,
``realm/helpers.py``; ``shared/reference/realm.md`` section 1.5), the sampler itself, the skills
it cannot run on with REALM's reason, what the real arm's operator is told, and the *kinds* of
change it makes (:data:`KINDS`). :func:`sample` turns a code into concrete, JSON-ready
parameters, identically in every world, so a pair of episodes sees the very same perturbation;
each world applies a kind through its own applier registry (the MuJoCo twin and the digital
real: ``realm_ros.backends.mujoco.perturb.APPLIERS``), the image and instruction kinds are
applied here (:attr:`PerturbationDef.image`, the ``instruction`` parameter). ``intensity`` in
[0, 1] scales each draw's distance from "no change": 1.0 = REALM's full range (the default),
0.0 = the default scene; a sweep runs several intensities.

Incompatible task/perturbation pairs (REALM raises ``NotImplementedError``) are reported by
:func:`skip_reason` and skipped by the planner with that reason, never run as Default. A new
perturbation is one :func:`register` call (``docs/extending.md``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from realm_ros.core import skills, tasks
from realm_ros.core.errors import ConfigError
from realm_ros.core.registry import Registry

#: The kinds of change a perturbation makes. ``model``: model parameters (lights, masses,
#: cameras), restored from a pristine copy at every reset; ``scene``: the scene's geometry (the
#: world rebuilds its model); ``state``: the initial state (poses, joint positions);
#: ``image``: the rendered images (:attr:`PerturbationDef.image`); ``instruction``: the
#: language instruction (the ``instruction`` parameter); ``rubric``: the scored task (the
#: ``scored`` parameter, :func:`scored_task`).
KINDS = ('model', 'scene', 'state', 'image', 'instruction', 'rubric')
#: The code of the unperturbed episode.
DEFAULT = 'Default'


@dataclasses.dataclass(frozen=True)
class Draw:
    """What a sampler draws from: the task (None on the empty table), the intensity in [0, 1],
    the code's own generator and its REALM ranges (:attr:`PerturbationDef.realm`)."""

    task: tasks.TaskDef | None
    intensity: float
    rng: np.random.Generator
    realm: Mapping[str, Any]


Sampler = Callable[[Draw], dict]
Operator = Callable[[str, Mapping[str, Any]], list]
ImageApplier = Callable[[np.ndarray, Mapping[str, Any]], np.ndarray]


@dataclasses.dataclass(frozen=True)
class PerturbationDef:
    """One REALM perturbation.

    Attributes:
        id: REALM's CLI index. code: REALM's code. meaning, modalities: REALM's table row.
        ranges: REALM's sampling ranges, in words (the documentation's row).
        changes: what realm_ros changes (twin, digital real and, by hand, the real scene).
        realm: the numbers :attr:`sampler` draws from (:data:`REALM_RANGES` lists them).
        sampler: ``Draw -> parameters``; None = no parameters (Default).
        kinds: the kinds of change (:data:`KINDS`) a world applies for it.
        incompatible: skill -> why REALM cannot run the code on that skill's tasks.
        operator: ``(task, parameters) -> lines`` telling the real arm's operator what to set.
        image: ``(image, parameters) -> image`` for the ``image`` kind.
        needs_task: the sampler reads the task (it cannot run on the empty table).
        discrete: intensity 0 is the default scene (no parameters).
    """

    id: int
    code: str
    meaning: str
    modalities: str
    ranges: str
    changes: str = ''
    realm: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    sampler: Sampler | None = None
    kinds: tuple[str, ...] = ()
    incompatible: Mapping[str, str] = dataclasses.field(default_factory=dict)
    operator: Operator | None = None
    image: ImageApplier | None = None
    needs_task: bool = False
    discrete: bool = False


PERTURBATIONS: Registry[PerturbationDef] = Registry(
    'perturbation', lead='REALM codes:', ordered=True, replace=True)


def register(perturbation: PerturbationDef) -> PerturbationDef:
    """Add ``perturbation`` to :data:`PERTURBATIONS` and return it.

    Raises:
        ConfigError: an unknown kind, skill, or an id another code has.
    """
    p = perturbation
    bad = [k for k in p.kinds if k not in KINDS]
    if bad:
        raise ConfigError(f'perturbation {p.code}: unknown kinds {bad}; use {list(KINDS)}')
    for skill in p.incompatible:
        skills.get(skill)
    taken = [q.code for q in PERTURBATIONS.values() if q.id == p.id and q.code != p.code]
    if taken:
        raise ConfigError(f'perturbation {p.code}: id {p.id} is taken by {taken[0]}')
    return PERTURBATIONS.add(p.code, p)


def get(code: str) -> PerturbationDef:
    """Return perturbation ``code``; an unknown code raises ConfigError listing the codes."""
    return PERTURBATIONS.lookup(code)


def _towards(value: float, neutral: float, intensity: float) -> float:
    return neutral + intensity * (value - neutral)


def _pick(rng: np.random.Generator, names: list[str]) -> str:
    return names[int(rng.integers(len(names)))]


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


#: Colours V-LIGHT draws (one per light, as REALM does; lights beyond this reuse them).
LIGHTS = 4


#: Procedural cabinet variants for VSB-NOBJ on drawer tasks (REALM: BEHAVIOR-1K bottom_cabinet
#: models): carcass colour, handle style (bar or knob), front colour.
CABINET_MODELS: dict[str, dict[str, Any]] = {
    'white_knobs': {'carcass': (0.92, 0.92, 0.9), 'front': (0.95, 0.95, 0.93), 'handle': 'knob'},
    'dark_bar': {'carcass': (0.25, 0.18, 0.12), 'front': (0.3, 0.22, 0.15), 'handle': 'bar'},
    'blue_knobs': {'carcass': (0.3, 0.4, 0.6), 'front': (0.35, 0.5, 0.75), 'handle': 'knob'},
    'grey_bar': {'carcass': (0.55, 0.57, 0.6), 'front': (0.65, 0.67, 0.7), 'handle': 'bar'},
}

#: Fixture -> its variants VSB-NOBJ draws from, when the task's main object is a fixture part.
FIXTURE_VARIANTS: dict[str, Mapping[str, Any]] = {'cabinet': CABINET_MODELS}


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


def _augment(image: np.ndarray, params: Mapping[str, Any]) -> np.ndarray:
    return augment_image(image, params['blur_sigma'], params['contrast'],
                         params.get('reference_height', 720))


# -- samplers (one per code; Draw.realm holds the numbers) -------------------------------------

def _v_aug(d: Draw) -> dict[str, Any]:
    r = d.realm
    sigma, alpha = float(d.rng.uniform(*r['blur_sigma'])), float(d.rng.uniform(*r['contrast']))
    return {'blur_sigma': d.intensity * sigma, 'contrast': _towards(alpha, 1.0, d.intensity),
            'reference_height': r['reference_height']}


def _v_view(d: Draw) -> dict[str, Any]:
    r = d.realm
    offset = d.rng.uniform(-r['position'], r['position'], 3)
    pitch, yaw = d.rng.uniform([-r['pitch'], -r['yaw']], [r['pitch'], r['yaw']])
    return {'camera_offset': [float(v) * d.intensity for v in offset],
            'camera_pitch': float(pitch) * d.intensity, 'camera_yaw': float(yaw) * d.intensity}


def _v_light(d: Draw) -> dict[str, Any]:
    r = d.realm
    level = float(d.rng.uniform(*r['intensity']))
    # REALM sets one intensity for every light and draws each light's colour on its own.
    drawn = np.clip(d.rng.normal(r['colour_mean'], r['colour_std'], size=(LIGHTS, 3)), 0.0,
                    255.0) / 255.0
    rgbs = [[float(_towards(c, 1.0, d.intensity)) for c in rgb] for rgb in drawn]
    return {'light_scale': _towards(level / r['reference_intensity'], 1.0, d.intensity),
            'light_rgb': rgbs[0], 'light_rgbs': rgbs}


def _b_hobj(d: Draw) -> dict[str, Any]:
    r = d.realm
    s = float(d.rng.uniform(*r['mass_scale']))
    low, high = r['log_joint_scale']
    effort, stiffness, damping = np.exp(d.rng.uniform(low, high, 3) * d.intensity)
    return {'mass_scale': _towards(s, 1.0, d.intensity), 'mass_cap': r['mass_cap'],
            'effort_scale': float(effort), 'stiffness_scale': float(stiffness),
            'damping_scale': float(damping)}


def _vb_pose(d: Draw) -> dict[str, Any]:
    return {'pose_seed': int(d.rng.integers(2 ** 31)), 'yaw_std': d.realm['yaw_std'] * d.intensity,
            'shift': float(d.intensity)}


def _vb_mobj(d: Draw) -> dict[str, Any]:
    r = d.realm
    low, high = r['scale']
    for _ in range(1000):
        scale = d.rng.uniform(low, high, 3)
        if float(np.prod(scale)) <= r['max_product']:
            break
    return {'scale': [float(_towards(v, 1.0, d.intensity)) for v in scale],
            'box': list(r['box'])}


def _paraphrase(code: str) -> Sampler:
    """Return the sampler of a semantic code: one of the task's paraphrases for ``code``."""
    def draw(d: Draw) -> dict[str, Any]:
        assert d.task is not None
        options = d.task.paraphrases.get(code, ())
        if not options or d.intensity == 0.0:
            return {'instruction': d.task.instruction}
        return {'instruction': options[int(d.rng.integers(len(options)))]}
    return draw


def _items(max_dim: float, exclude: str | None = None) -> list[str]:
    """Return the object set's items no larger than ``max_dim``, m (not of theme ``exclude``)."""
    return [o.name for o in OBJECTS.values() if o.role == 'item' and o.size <= max_dim
            and o.theme != exclude]


def _v_sc(d: Draw) -> dict[str, Any]:
    assert d.task is not None
    pool = _items(d.realm['max_dim'], exclude=d.task.theme)
    chosen = d.rng.choice(len(pool), size=d.realm['distractors'], replace=False)
    return {'distractors': [pool[int(i)] for i in chosen],
            'placement_seed': int(d.rng.integers(2 ** 31))}


def _sb_noun(d: Draw) -> dict[str, Any]:
    task = d.task
    assert task is not None
    parts = skills.get(task.skill).parts
    if parts:
        part = _pick(d.rng, list(parts))  # REALM: random.choice(["middle", "top"])
        return {'instruction': task.instruction.replace('top', part),
                'drawer': f'{part}_drawer',
                'scored': {'obj': f'{part}_drawer', 'target': f'{part}_drawer'}}
    new = _pick(d.rng, _items(d.realm['max_dim']))
    return {'instruction': task.instruction.replace(task.noun, OBJECTS[new].noun),
            'add_object': new, 'scored': {'obj': 'noun_object'},
            'placement_seed': int(d.rng.integers(2 ** 31))}


def _sb_vrb(d: Draw) -> dict[str, Any]:
    task = d.task
    assert task is not None
    skill = skills.get(_pick(d.rng, list(skills.get(task.skill).retarget)))
    out: dict[str, Any] = {'scored': {'skill': skill.name, 'target': ''},
                           'placement_seed': int(d.rng.integers(2 ** 31))}
    target_noun = ''
    if skill.receiver:
        receiver = _pick(d.rng, [o.name for o in OBJECTS.values() if o.role == skill.receiver])
        out['scored']['target'] = task.target or 'receiver'
        out['replace_target' if task.target else 'receiver'] = receiver
        target_noun = OBJECTS[receiver].noun
    out['instruction'] = skill.phrase.format(noun=task.noun, target=target_noun)
    return out


def _vsb_nobj(d: Draw) -> dict[str, Any]:
    task = d.task
    assert task is not None
    variants = [v for f in skills.get(task.skill).fixtures for v in FIXTURE_VARIANTS.get(f, {})]
    if variants:
        return {'cabinet': _pick(d.rng, variants), 'max_dim': 0.5,
                'instruction': task.instruction}
    pool = [n for n in _items(d.realm['max_dim']) if OBJECTS[n].noun not in task.noun]
    new = _pick(d.rng, pool)
    return {'replace_main': new, 'max_dim': d.realm['max_dim'],
            'instruction': task.instruction.replace(task.noun, OBJECTS[new].noun)}


# -- operator instructions (what the real arm's operator sets by hand) --------------------------

def _nothing(task: str, params: Mapping[str, Any]) -> list[str]:
    return []


def _op_v_aug(task: str, params: Mapping[str, Any]) -> list[str]:
    return ['nothing to change: the images are augmented in software '
            f'(blur sigma {params["blur_sigma"]:.2f} px at 720 p, contrast gain '
            f'{params["contrast"]:.2f})']


def _op_v_view(task: str, params: Mapping[str, Any]) -> list[str]:
    d = params['camera_offset']
    return [f'move the exterior camera by dx={d[0]:+.3f} m, dy={d[1]:+.3f} m, '
            f'dz={d[2]:+.3f} m (robot base frame), pitch it by '
            f'{math.degrees(params["camera_pitch"]):+.1f} deg and yaw it by '
            f'{math.degrees(params["camera_yaw"]):+.1f} deg']


def _op_v_sc(task: str, params: Mapping[str, Any]) -> list[str]:
    return ['place these distractors on the table, away from the task objects: '
            + ', '.join(OBJECTS[n].noun for n in params['distractors'])]


def _op_v_light(task: str, params: Mapping[str, Any]) -> list[str]:
    r, g, b = (int(round(255 * c)) for c in params['light_rgb'])
    return [f'set the room light to {params["light_scale"]:.2f} x its usual brightness, '
            f'colour about RGB ({r}, {g}, {b})']


def _op_b_hobj(task: str, params: Mapping[str, Any]) -> list[str]:
    return [f'swap the main object for one of the same look with {params["mass_scale"]:.2f}'
            f' x its mass (at most {params["mass_cap"]:g} kg); articulated: scale its '
            f'damping by {params["damping_scale"]:.2f}']


def _op_sb_noun(task: str, params: Mapping[str, Any]) -> list[str]:
    if 'drawer' in params:
        starts_open = task in tasks.TASKS and skills.get(tasks.TASKS[task].skill).start_openness
        return [f'the instruction now names the {params["drawer"].replace("_", " ")}'
                + ('; open it fully before the episode' if starts_open else '')]
    return [f'add a {OBJECTS[params["add_object"]].noun} to the table: it is the object '
            'the instruction names']


def _op_sb_vrb(task: str, params: Mapping[str, Any]) -> list[str]:
    if 'receiver' in params:
        return [f'add a {OBJECTS[params["receiver"]].noun} to the table as the receiver']
    if 'replace_target' in params:
        return [f'replace the target object with a {OBJECTS[params["replace_target"]].noun}']
    return []


def _op_vb_pose(task: str, params: Mapping[str, Any]) -> list[str]:
    return ['move the main object to the pose given in initial_state (objects / fixtures)']


def _op_vb_mobj(task: str, params: Mapping[str, Any]) -> list[str]:
    s = params['scale']
    return [f'replace the main object with one scaled by {s[0]:.2f} x {s[1]:.2f} x '
            f'{s[2]:.2f} (length x width x height)']


def _op_vsb_nobj(task: str, params: Mapping[str, Any]) -> list[str]:
    if 'cabinet' in params:
        return [f'use a different cabinet ({params["cabinet"].replace("_", " ")})']
    return [f'replace the main object with a {OBJECTS[params["replace_main"]].noun}']


# -- the registry -------------------------------------------------------------------------------

_DRAWERS = 'REALM does not implement it for drawer tasks'

for _p in (
    PerturbationDef(0, 'Default', 'no perturbation', '', '', 'nothing'),
    PerturbationDef(1, 'V-AUG', 'image augmentation (blur, contrast) on every camera', 'V',
                    'Gaussian blur sigma ~ U(0, 2.5) px at 1280x720, contrast gain alpha ~ '
                    'U(0.25, 1.5) (pixel x alpha), once per reset',
                    'every camera image: blur with sigma scaled to the image height '
                    '(sigma x H / 720), then pixels x alpha, clipped to 0..255',
                    realm={'blur_sigma': (0.0, 2.5), 'contrast': (0.25, 1.5),
                           'reference_height': 720},
                    sampler=_v_aug, kinds=('image',), operator=_op_v_aug, image=_augment),
    PerturbationDef(2, 'V-VIEW', 'external camera viewpoint', 'V',
                    'position +-0.2 m per axis, pitch and yaw +-0.2 rad (uniform)',
                    'every world-fixed (exterior) camera: position offset, yaw about world z, '
                    'pitch about the camera x axis; the wrist camera is unchanged',
                    realm={'position': 0.2, 'pitch': 0.2, 'yaw': 0.2},
                    sampler=_v_view, kinds=('model',), operator=_op_v_view),
    PerturbationDef(3, 'V-SC', 'scene clutter', 'V',
                    '3 distractors of other categories, max size 0.12 m, placed collision-free',
                    '3 distractor objects from the object set (procedural and pybullet_data '
                    'meshes) placed collision-free around the task objects',
                    realm={'distractors': 3, 'max_dim': 0.12},
                    sampler=_v_sc, kinds=('scene', 'state'), operator=_op_v_sc,
                    incompatible={'push': 'REALM places no distractors around the wall switch'},
                    needs_task=True, discrete=True),
    PerturbationDef(4, 'V-LIGHT', 'illumination', 'V',
                    'intensity ~ U(20000, 750000) for all lights, colour per light ~ '
                    'N((255, 214, 170), 15) clipped / 255',
                    'every light and the headlight: diffuse and specular x intensity / 250000 '
                    'x a colour drawn per light',
                    realm={'intensity': (20000.0, 750000.0),
                           'colour_mean': (255.0, 214.0, 170.0), 'colour_std': 15.0,
                           'reference_intensity': 250000.0},
                    sampler=_v_light, kinds=('model',), operator=_op_v_light),
    *(PerturbationDef(index, code, meaning, 'S', "one of the task's cached paraphrases",
                      'the instruction', sampler=_paraphrase(code), kinds=('instruction',),
                      operator=_nothing, needs_task=True)
      for index, code, meaning in (
          (5, 'S-PROP', 'refer to the object by its properties'),
          (6, 'S-LANG', 'rephrasing and synonyms'),
          (7, 'S-MO', 'multi-object / spatial referencing'),
          (8, 'S-AFF', 'affordance / purpose phrasing'),
          (9, 'S-INT', 'world-knowledge phrasing'))),
    PerturbationDef(10, 'B-HOBJ', 'hidden object physics', 'B',
                    'main object link mass x s, s ~ U(0.25, 3), capped at 2 kg; its joints: '
                    'effort, stiffness, damping each x exp(U(-1, 1))',
                    "the main object's body masses (inertia with them) and its joints' "
                    'actuator-force range, stiffness and damping; nothing else',
                    realm={'mass_scale': (0.25, 3.0), 'mass_cap': 2.0,
                           'log_joint_scale': (-1.0, 1.0)},
                    sampler=_b_hobj, kinds=('model',), operator=_op_b_hobj,
                    incompatible={'push': 'the switch is a fixed fixture; REALM does not '
                                          'perturb its physics'}),
    PerturbationDef(11, 'SB-NOUN', 'instruction retargeted to another object', 'SB',
                    'drawers: top or middle (50/50); others: another object in the scene',
                    'instruction noun and the scored object; drawers: the middle drawer; '
                    'others: a second object is added and becomes the scored one',
                    realm={'max_dim': 0.12},
                    sampler=_sb_noun, kinds=('scene', 'state', 'instruction', 'rubric'),
                    operator=_op_sb_noun,
                    incompatible={'push': 'REALM raises NotImplementedError: no second switch '
                                          'to retarget to',
                                  'stack': 'REALM lists stack with SB-NOUN as incompatible'},
                    needs_task=True, discrete=True),
    PerturbationDef(12, 'SB-VRB', 'different verb / skill on the same object', 'SB',
                    'put <-> pick / rotate / stack; receiver (put: bowl-like, max 0.185 m)',
                    "instruction verb and the scored skill's rubric; a receiver is added or "
                    'the target swapped when the new skill needs one',
                    realm={'receiver_max_dim': 0.185},
                    sampler=_sb_vrb, kinds=('scene', 'state', 'instruction', 'rubric'),
                    operator=_op_sb_vrb,
                    incompatible={'push': "REALM's compatibility matrix gives push no other "
                                          'verb',
                                  'open_drawer': _DRAWERS, 'close_drawer': _DRAWERS},
                    needs_task=True, discrete=True),
    PerturbationDef(13, 'VB-POSE', 'object pose change', 'VB',
                    'main object re-placed collision-free with yaw noise N(0, 3.14); switch '
                    'z +-0.15 m and x +-0.075 m; drawer yaw N(0.25, 0.12) clipped to [0, 0.57]',
                    'only the main object (the cabinet for drawers, the switch panel for push)',
                    realm={'yaw_std': 3.14, 'switch_z': 0.15, 'switch_x': 0.075,
                           'drawer_yaw_mean': 0.25, 'drawer_yaw_std': 0.12,
                           'drawer_yaw': (0.0, 0.57)},
                    sampler=_vb_pose, kinds=('state',), operator=_op_vb_pose),
    PerturbationDef(14, 'VB-MOBJ', 'morphed object size / shape', 'VB',
                    'scales s1, s2, s3 ~ U(0.5, 1.5) with s1 s2 s3 <= 1.5; box clipped to '
                    '[0.02, 0.175] m',
                    "the main object's geometry, scaled per axis (mass with volume)",
                    realm={'scale': (0.5, 1.5), 'max_product': 1.5, 'box': (0.02, 0.175)},
                    sampler=_vb_mobj, kinds=('scene', 'state'), operator=_op_vb_mobj,
                    incompatible={'push': 'REALM does not morph the wall switch',
                                  'open_drawer': _DRAWERS, 'close_drawer': _DRAWERS}),
    PerturbationDef(15, 'VSB-NOBJ', 'a new, unseen object replaces the target', 'VSB',
                    'another category, max size 0.15 m; instruction noun rewritten',
                    'the main object replaced by another category from the object set, and '
                    'the noun in the instruction',
                    realm={'max_dim': 0.15},
                    sampler=_vsb_nobj, kinds=('scene', 'state', 'instruction'),
                    operator=_op_vsb_nobj,
                    incompatible={'push': 'REALM lists push with VSB-NOBJ as incompatible'},
                    needs_task=True, discrete=True),
):
    register(_p)

#: Every code the twin and the digital real apply (all of REALM's fifteen plus Default).
TWIN_SUPPORTED = tuple(PERTURBATIONS)

#: REALM's sampling ranges, per code: a view of each :attr:`PerturbationDef.realm` (the numbers
#: the samplers draw from); ``test_perturbations`` pins them against REALM's.
REALM_RANGES: Mapping[str, Mapping[str, Any]] = {
    code: p.realm for code, p in PERTURBATIONS.items() if p.realm}


def incompatible() -> dict[str, tuple[str, ...]]:
    """Return skill -> the codes REALM cannot run on its tasks (NotImplementedError in REALM)."""
    out: dict[str, tuple[str, ...]] = {}
    for code, p in PERTURBATIONS.items():
        for skill in p.incompatible:
            out[skill] = out.get(skill, ()) + (code,)
    return out


def by_id(index: int) -> PerturbationDef:
    """Return the perturbation with REALM's CLI index ``index`` (0..15)."""
    for p in PERTURBATIONS.values():
        if p.id == index:
            return p
    raise ConfigError(f'perturbation id must be 0..{max(p.id for p in PERTURBATIONS.values())}'
                      f', got {index}')


def skip_reason(task: str | tasks.TaskDef, code: str) -> str:
    """Return why ``code`` cannot run on ``task`` (REALM's incompatibilities), or ''.

    ``task`` is a :class:`~realm_ros.core.tasks.TaskDef` resolved once at the edge (a sweep's
    plan), or a name looked up here ('' for an unknown name).
    """
    p = get(code)
    if isinstance(task, str):
        if task not in tasks.TASKS:
            return ''
        task = tasks.TASKS[task]
    why = p.incompatible.get(task.skill)
    if why is None:
        return ''
    return f'{code} is incompatible with {task.skill} tasks ({task.name}) in REALM: {why}'


#: Why a list of perturbations without Default gets it (the run says so).
BASELINE_REASON = ("each perturbation's delta and REALM's RMSD are measured against Default, "
                   'so Default runs too')


def with_baseline(codes: Sequence[str]) -> tuple[str, ...]:
    """Return ``codes`` with :data:`DEFAULT` first when they hold a perturbation but not it
    (without its baseline a perturbation's delta and RMSD cannot be computed)."""
    codes = tuple(codes)
    if codes and DEFAULT not in codes:
        return (DEFAULT, *codes)
    return codes


def validate(task: str, code: str) -> None:
    """Raise :class:`ConfigError` unless ``code`` is known and can be applied to ``task``."""
    reason = skip_reason(task, code)
    if reason:
        compatible = [c for c in PERTURBATIONS if not skip_reason(task, c)]
        raise ConfigError(f'perturbation {reason}; compatible codes: {compatible}')


def _rng(seed: int, code: str) -> np.random.Generator:
    return np.random.default_rng([int(seed), PERTURBATIONS[code].id, 0xBE1])


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
    p = PERTURBATIONS[code]
    if p.sampler is None:
        return {}
    task_def = tasks.TASKS.get(task)
    if p.needs_task and task_def is None:
        raise ConfigError(f'perturbation {code} needs a REALM task, got {task!r}; tasks: '
                          f'{sorted(tasks.TASKS)}')
    if p.discrete and intensity == 0.0:
        return {}  # a discrete change: intensity 0 is the default scene
    return p.sampler(Draw(task_def, intensity, _rng(seed, code), p.realm))


def scored_task(task: str, code: str = DEFAULT, intensity: float = 1.0,
                seed: int = 0) -> tasks.TaskDef:
    """Return the task the rubric scores under ``(code, intensity, seed)``.

    SB-NOUN retargets the scored object (another drawer, or the added object); SB-VRB swaps the
    skill (and so the stage list) and the target; VSB-NOBJ keeps the body name of the replaced
    object, so the rubric's object name is unchanged. Codes without the ``rubric`` kind score
    the task as is.
    """
    base = tasks.get_task(task)
    if 'rubric' not in get(code).kinds:
        return base
    return with_scored(base, sample(task, code, intensity, seed))


def with_scored(task: tasks.TaskDef, params: Mapping[str, Any]) -> tasks.TaskDef:
    """Return ``task`` with the ``scored`` fields and the instruction of ``params``."""
    changes = dict(params.get('scored', {}))
    if 'instruction' in params:
        changes['instruction'] = params['instruction']
    return dataclasses.replace(task, **changes) if changes else task


def operator_instructions(task: str, code: str, params: Mapping[str, Any]) -> list[str]:
    """Return what the operator of the real arm changes by hand before a perturbed episode."""
    operator = get(code).operator
    if operator is None or not params:
        return []
    return list(operator(task, params))
