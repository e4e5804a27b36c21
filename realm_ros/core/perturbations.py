"""REALM's perturbations as data: codes, ranges, compatibility, and deterministic sampling.

A perturbation is ``(code, intensity, seed)`` on an :class:`~realm_ros.core.types.EpisodeSpec`.
:func:`sample` turns it into concrete parameters, identically in every world, so a pair of
episodes sees the very same perturbation. ``intensity`` in [0, 1] scales each draw's distance
from "no change" (1.0 = REALM's full range; 0.0 = the default scene). The MuJoCo twin and the
digital real apply the codes in :data:`TWIN_SUPPORTED`; others raise :class:`ConfigError`.
Ranges are REALM's (``realm_environment_dynamic.py``, realm.md section 1.5).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from realm_ros.core import tasks
from realm_ros.core.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class PerturbationDef:
    """One REALM perturbation: CLI id, code, meaning, modalities, REALM's sampling ranges."""

    id: int
    code: str
    meaning: str
    modalities: str
    ranges: str


PERTURBATIONS: dict[str, PerturbationDef] = {p.code: p for p in (
    PerturbationDef(0, 'Default', 'no perturbation', '', ''),
    PerturbationDef(1, 'V-AUG', 'image augmentation (blur, contrast) on every camera', 'V',
                    'Gaussian blur sigma ~ U(0, 2.5) px, contrast alpha ~ U(0.25, 1.5), once '
                    'per reset'),
    PerturbationDef(2, 'V-VIEW', 'external camera viewpoint', 'V',
                    'named DROID extrinsic, position +-0.2 m per axis, pitch/yaw +-0.2 rad'),
    PerturbationDef(3, 'V-SC', 'scene clutter', 'V',
                    'distractors re-placed and swapped for other categories (max 0.12 m)'),
    PerturbationDef(4, 'V-LIGHT', 'illumination', 'V',
                    'light intensity ~ U(20000, 750000), colour ~ N((255, 214, 170), 15)'),
    PerturbationDef(5, 'S-PROP', 'refer to the object by its properties', 'S',
                    "one of the task's cached paraphrases"),
    PerturbationDef(6, 'S-LANG', 'rephrasing and synonyms', 'S',
                    "one of the task's cached paraphrases"),
    PerturbationDef(7, 'S-MO', 'multi-object / spatial referencing', 'S', 'cached paraphrases'),
    PerturbationDef(8, 'S-AFF', 'affordance phrasing', 'S', 'cached paraphrases'),
    PerturbationDef(9, 'S-INT', 'world-knowledge phrasing', 'S', 'cached paraphrases'),
    PerturbationDef(10, 'B-HOBJ', 'hidden object physics', 'B',
                    'object mass x s, s ~ U(0.25, 3), capped at 2 kg; joint damping x '
                    'exp(U(-1, 1))'),
    PerturbationDef(11, 'SB-NOUN', 'instruction retargeted to another object', 'SB',
                    'drawers: top <-> middle'),
    PerturbationDef(12, 'SB-VRB', 'different verb / skill on the same object', 'SB',
                    'put <-> pick/rotate/stack, open <-> close'),
    PerturbationDef(13, 'VB-POSE', 'object pose change', 'VB',
                    'collision-free re-placement, main-object yaw noise sigma 3.14 rad; switch '
                    'x +-0.075 m; drawer yaw ~ N(0.25, 0.12) clipped to [0, 0.57] rad'),
    PerturbationDef(14, 'VB-MOBJ', 'morphed object size / shape', 'VB',
                    'anisotropic scales U(0.5, 1.5), product <= 1.5'),
    PerturbationDef(15, 'VSB-NOBJ', 'a new, unseen object replaces the target', 'VSB',
                    'other category, max size 0.15 m'),
)}

#: Codes the MuJoCo twin (and the digital real) can apply.
TWIN_SUPPORTED = ('Default', 'V-AUG', 'V-LIGHT', 'S-PROP', 'S-LANG', 'B-HOBJ', 'VB-POSE')

#: REALM's known incompatible skill/perturbation combinations (raised as NotImplementedError).
INCOMPATIBLE: dict[str, tuple[str, ...]] = {
    'push': ('V-SC', 'B-HOBJ', 'SB-NOUN', 'SB-VRB', 'VB-MOBJ', 'VSB-NOBJ'),
    'stack': ('SB-NOUN',),
    'open_drawer': ('VB-MOBJ', 'SB-VRB'),
    'close_drawer': ('VB-MOBJ', 'SB-VRB'),
}


def by_id(index: int) -> PerturbationDef:
    """Return the perturbation with REALM's CLI index ``index`` (0..15)."""
    for p in PERTURBATIONS.values():
        if p.id == index:
            return p
    raise ConfigError(f'perturbation id must be 0..15, got {index}')


def validate(task: str, code: str) -> None:
    """Raise :class:`ConfigError` unless the twin can apply ``code`` to ``task``."""
    if code not in PERTURBATIONS:
        raise ConfigError(
            f'unknown perturbation {code!r}; REALM codes: {list(PERTURBATIONS)}')
    if task in tasks.TASKS:
        skill = tasks.TASKS[task].skill
        if code in INCOMPATIBLE.get(skill, ()):
            raise ConfigError(
                f'perturbation {code} is incompatible with {skill} tasks ({task}) in REALM; '
                f'compatible codes the twin supports: '
                f'{[c for c in TWIN_SUPPORTED if c not in INCOMPATIBLE.get(skill, ())]}')
    if code not in TWIN_SUPPORTED:
        raise ConfigError(
            f'perturbation {code} is not supported by the MuJoCo twin; supported: '
            f'{list(TWIN_SUPPORTED)}')


def _towards(value: float, neutral: float, intensity: float) -> float:
    return neutral + intensity * (value - neutral)


def sample(task: str, code: str, intensity: float, seed: int) -> dict[str, Any]:
    """Return the concrete parameters of ``code`` for one episode (JSON-ready, deterministic).

    Keys by code: ``V-AUG`` blur_sigma (px), contrast; ``V-LIGHT`` light_scale (diffuse
    multiplier; REALM's intensity / 250000, so U(0.08, 3)), light_rgb (0..1); ``S-*``
    instruction; ``B-HOBJ`` mass_scale, joint_damping_scale; ``VB-POSE`` pose_seed, yaw_std (rad),
    shift (fraction of REALM's displacement ranges).
    """
    validate(task, code)
    if not 0.0 <= intensity <= 1.0 or math.isnan(intensity):
        raise ConfigError(f'perturbation intensity must be in [0, 1], got {intensity}')
    rng = np.random.default_rng([int(seed), PERTURBATIONS[code].id, 0xBE1])
    if code == 'V-AUG':
        return {'blur_sigma': intensity * float(rng.uniform(0.0, 2.5)),
                'contrast': _towards(float(rng.uniform(0.25, 1.5)), 1.0, intensity)}
    if code == 'V-LIGHT':
        rgb = rng.normal([255.0, 214.0, 170.0], 15.0) / 255.0
        rgb = np.clip(rgb / rgb.max(), 0.0, 1.0)
        return {'light_scale': _towards(float(rng.uniform(20000, 750000)) / 250000, 1.0,
                                        intensity),
                'light_rgb': [float(_towards(c, 1.0, intensity)) for c in rgb]}
    if code in ('S-LANG', 'S-PROP'):
        options = tasks.get_task(task).paraphrases.get(code, ())
        if not options or intensity == 0.0:
            return {'instruction': tasks.get_task(task).instruction}
        return {'instruction': options[int(rng.integers(len(options)))]}
    if code == 'B-HOBJ':
        return {'mass_scale': _towards(float(rng.uniform(0.25, 3.0)), 1.0, intensity),
                'joint_damping_scale': float(math.exp(intensity * rng.uniform(-1.0, 1.0)))}
    if code == 'VB-POSE':
        return {'pose_seed': int(rng.integers(2 ** 31)), 'yaw_std': 3.14 * intensity,
                'shift': float(intensity)}
    return {}


def augment_image(image: np.ndarray, blur_sigma: float, contrast: float) -> np.ndarray:
    """Return ``image`` (H, W, 3 uint8) blurred (Gaussian, sigma px) and contrast-scaled.

    Contrast scales each pixel's distance from the image mean by ``contrast``, as torchvision's
    ``adjust_contrast`` does (mean of the greyscale image).
    """
    out = np.asarray(image, dtype=np.float32)
    if blur_sigma > 1e-3:
        radius = max(1, int(math.ceil(3.0 * blur_sigma)))
        x = np.arange(-radius, radius + 1, dtype=np.float32)
        kernel = np.exp(-0.5 * (x / blur_sigma) ** 2)
        kernel /= kernel.sum()
        padded = np.pad(out, ((radius, radius), (0, 0), (0, 0)), mode='reflect')
        out = sum(kernel[i] * padded[i:i + out.shape[0]] for i in range(kernel.size))
        padded = np.pad(out, ((0, 0), (radius, radius), (0, 0)), mode='reflect')
        out = sum(kernel[i] * padded[:, i:i + image.shape[1]] for i in range(kernel.size))
    if abs(contrast - 1.0) > 1e-6:
        grey = float(np.mean(out @ np.array([0.299, 0.587, 0.114], dtype=np.float32)))
        out = grey + contrast * (out - grey)
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)
