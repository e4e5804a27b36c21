"""The digital real's hidden appearance: what a lab looks like that the twin does not know.

The twin renders its own look (``backends/mujoco/visuals.py``). A lab's cameras see something
else: cameras a few centimetres and degrees off their nominal rig, other table, wall, floor and
robot colours, another light, clutter nobody modelled, and a camera's sensor (noise, white
balance, gamma, vignetting, blur, compression). An :class:`Appearance` is all of that, read from
a YAML file (``config/appearance/lab_demo.yaml`` explains every key) and given to the digital
real like its hidden dynamics (``appearance_file``); the twin never reads it.

This module is the pure part: the schema with its validation, and :class:`SensorModel`, the
camera sensor as a function of an image and a seed. ``backends/mujoco/appearance.py`` applies
the rest to a MuJoCo model. Same file and seed, same picture.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
from typing import Any, Mapping, Sequence

import numpy as np

from realm_ros.core.config import CAMERA_NAMES, load_yaml
from realm_ros.core.errors import ConfigError

#: Surfaces whose material an appearance may change.
SURFACES = ('table', 'floor', 'walls', 'robot')
#: Procedural textures an appearance may paint on a surface ('' = plain colour).
TEXTURES = ('', 'laminate', 'wood', 'concrete', 'plaster', 'tiles')
#: Clutter shapes (visual only: they neither collide nor weigh anything).
SHAPES = ('box', 'cylinder', 'sphere')


def _floats(value: Any, n: int, where: str, low: float = -math.inf,
            high: float = math.inf) -> tuple[float, ...]:
    try:
        out = tuple(float(v) for v in value)
    except (TypeError, ValueError):
        raise ConfigError(f'{where} must be a list of {n} numbers, got {value!r}') from None
    if len(out) != n or not all(math.isfinite(v) and low <= v <= high for v in out):
        raise ConfigError(f'{where} must be {n} finite numbers in [{low}, {high}], got {value!r}')
    return out


def _number(entry: Mapping[str, Any], key: str, default: float, where: str, low: float,
            high: float) -> float:
    value = entry.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or not low <= value <= high:
        raise ConfigError(f'{where}.{key} must be a number in [{low}, {high}], got {value!r}')
    return float(value)


def _map(value: Any, where: str, keys: Sequence[str]) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f'{where} must be a map, got {type(value).__name__}')
    unknown = sorted(set(value) - set(keys))
    if unknown:
        raise ConfigError(f'{where}: unknown key(s) {unknown}; allowed: {list(keys)}')
    return value


@dataclasses.dataclass(frozen=True)
class Material:
    """One surface's look: base colour (linear RGB in [0, 1]), texture, shine."""

    rgb: tuple[float, float, float]
    texture: str = ''
    specular: float = 0.2

    @classmethod
    def from_entry(cls, entry: Any, where: str) -> Material:
        """Return the material of an ``materials.<surface>`` entry."""
        entry = _map(entry, where, ('rgb', 'texture', 'specular'))
        if 'rgb' not in entry:
            raise ConfigError(f'{where} needs rgb: [r, g, b] in [0, 1]')
        texture = str(entry.get('texture', '') or '')
        if texture not in TEXTURES:
            raise ConfigError(f'{where}.texture = {texture!r} is not allowed; choose one of '
                              f'{list(TEXTURES)}')
        rgb = _floats(entry['rgb'], 3, f'{where}.rgb', 0.0, 1.0)
        return cls((rgb[0], rgb[1], rgb[2]), texture,
                   _number(entry, 'specular', 0.2, where, 0.0, 1.0))


def colour_temperature_rgb(kelvin: float) -> tuple[float, float, float]:
    """Return the RGB (max 1) of a black body at ``kelvin`` (Tanner Helland's fit, 1000-40000 K).

    6600 K is white; lower is warmer (tungsten 2700-3200 K), higher bluer (overcast 7000 K).
    """
    t = min(max(kelvin, 1000.0), 40000.0) / 100.0
    red = 255.0 if t <= 66 else 329.698727446 * (t - 60) ** -0.1332047592
    green = (99.4708025861 * math.log(t) - 161.1195681661 if t <= 66
             else 288.1221695283 * (t - 60) ** -0.0755148492)
    blue = 255.0 if t >= 66 else (0.0 if t <= 19 else
                                  138.5177312231 * math.log(t - 10) - 305.0447927307)
    rgb = np.clip(np.array([red, green, blue]) / 255.0, 0.0, 1.0)
    rgb = rgb / max(float(rgb.max()), 1e-9)
    return float(rgb[0]), float(rgb[1]), float(rgb[2])


@dataclasses.dataclass(frozen=True)
class Light:
    """The lab's key light: where it shines from, its colour and strength, its shadows."""

    direction: tuple[float, float, float] = (0.0, -0.1, -1.0)
    colour_temperature_k: float = 5000.0
    intensity: float = 0.55
    shadows: bool = True
    ambient: float = 0.38

    @classmethod
    def from_entry(cls, entry: Any, where: str) -> Light:
        """Return the light of the ``light`` section."""
        entry = _map(entry, where, ('direction', 'colour_temperature_k', 'intensity', 'shadows',
                                    'ambient'))
        direction = _floats(entry.get('direction', cls.direction), 3, f'{where}.direction')
        if np.linalg.norm(direction) < 1e-6 or direction[2] >= 0:
            raise ConfigError(f'{where}.direction must point down (z < 0), got {direction}')
        shadows = entry.get('shadows', True)
        if not isinstance(shadows, bool):
            raise ConfigError(f'{where}.shadows must be true or false, got {shadows!r}')
        return cls((direction[0], direction[1], direction[2]),
                   _number(entry, 'colour_temperature_k', 5000.0, where, 1000.0, 40000.0),
                   _number(entry, 'intensity', 0.55, where, 0.0, 3.0), shadows,
                   _number(entry, 'ambient', 0.38, where, 0.0, 1.0))

    @property
    def rgb(self) -> tuple[float, float, float]:
        """The light's diffuse colour: temperature times intensity."""
        r, g, b = colour_temperature_rgb(self.colour_temperature_k)
        return r * self.intensity, g * self.intensity, b * self.intensity


@dataclasses.dataclass(frozen=True)
class Clutter:
    """One static thing in the lab the twin does not model (visual only), in ``base_link``."""

    shape: str
    pos: tuple[float, float, float]
    size: tuple[float, ...]
    rgb: tuple[float, float, float]

    @classmethod
    def from_entry(cls, entry: Any, where: str) -> Clutter:
        """Return one ``clutter`` item."""
        entry = _map(entry, where, ('shape', 'pos', 'size', 'rgb'))
        shape = str(entry.get('shape', 'box'))
        if shape not in SHAPES:
            raise ConfigError(f'{where}.shape = {shape!r}; choose one of {list(SHAPES)}')
        n = {'box': 3, 'cylinder': 2, 'sphere': 1}[shape]
        pos = _floats(entry.get('pos'), 3, f'{where}.pos')
        rgb = _floats(entry.get('rgb', (0.5, 0.5, 0.5)), 3, f'{where}.rgb', 0.0, 1.0)
        return cls(shape, (pos[0], pos[1], pos[2]), _floats(entry.get('size'), n,
                                                             f'{where}.size', 1e-3, 3.0),
                   (rgb[0], rgb[1], rgb[2]))


@dataclasses.dataclass(frozen=True)
class SensorModel:
    """A colour camera's sensor and pipeline, applied to a rendered image.

    In order: exposure (gain), white balance (per-channel gains), vignetting (``1 - v r^2``,
    ``r`` = 1 at the image corner), optical blur (Gaussian, px at the rendered size), gamma
    (``out = in ** (1 / gamma)``), shot/read noise (Gaussian, fraction of full scale), 8-bit
    quantisation and JPEG-like compression (8x8 block DCT, luma and chroma quantised with the
    JPEG tables scaled by ``jpeg_quality``; 0 = none). The identity is the default.
    """

    noise_std: float = 0.0
    white_balance: tuple[float, float, float] = (1.0, 1.0, 1.0)
    exposure: float = 1.0
    gamma: float = 1.0
    vignetting: float = 0.0
    blur_sigma_px: float = 0.0
    jpeg_quality: int = 0

    @classmethod
    def from_entry(cls, entry: Any, where: str) -> SensorModel:
        """Return the sensor of the ``sensor`` section."""
        entry = _map(entry, where, ('noise_std', 'white_balance', 'exposure', 'gamma',
                                    'vignetting', 'blur_sigma_px', 'jpeg_quality'))
        wb = _floats(entry.get('white_balance', (1.0, 1.0, 1.0)), 3, f'{where}.white_balance',
                     0.2, 5.0)
        quality = entry.get('jpeg_quality', 0)
        if isinstance(quality, bool) or not isinstance(quality, int) or not 0 <= quality <= 100:
            raise ConfigError(f'{where}.jpeg_quality must be an integer in [0, 100] (0 = no '
                              f'compression), got {quality!r}')
        return cls(_number(entry, 'noise_std', 0.0, where, 0.0, 0.5), (wb[0], wb[1], wb[2]),
                   _number(entry, 'exposure', 1.0, where, 0.05, 20.0),
                   _number(entry, 'gamma', 1.0, where, 0.2, 5.0),
                   _number(entry, 'vignetting', 0.0, where, 0.0, 1.0),
                   _number(entry, 'blur_sigma_px', 0.0, where, 0.0, 10.0), int(quality))

    def apply(self, image: np.ndarray, seed: Sequence[int]) -> np.ndarray:
        """Return ``image`` ((H, W, 3) uint8 RGB) as this sensor delivers it; ``seed`` fixes the
        noise (same image and seed, same output)."""
        x = image.astype(np.float32) / 255.0
        x = x * (self.exposure * np.asarray(self.white_balance, np.float32))
        h, w = x.shape[:2]
        if self.vignetting:
            yy = (np.arange(h, dtype=np.float32) + 0.5 - h / 2) / (h / 2)
            xx = (np.arange(w, dtype=np.float32) + 0.5 - w / 2) / (w / 2)
            r2 = (yy[:, None] ** 2 + xx[None, :] ** 2) / 2.0
            x = x * (1.0 - self.vignetting * r2)[..., None]
        if self.blur_sigma_px > 0:
            x = gaussian_blur(x, self.blur_sigma_px)
        x = np.clip(x, 0.0, 1.0)
        if self.gamma != 1.0:
            x = x ** (1.0 / self.gamma)
        if self.noise_std:
            rng = np.random.default_rng([int(s) & 0xFFFFFFFF for s in seed])
            x = x + rng.normal(0.0, self.noise_std, x.shape).astype(np.float32)
        out = np.clip(x * 255.0 + 0.5, 0, 255).astype(np.uint8)
        if self.jpeg_quality:
            out = jpeg_like(out, self.jpeg_quality)
        return out


def gaussian_blur(x: np.ndarray, sigma: float) -> np.ndarray:
    """Return (H, W, C) float ``x`` blurred by a separable Gaussian of ``sigma`` px (edges
    replicated)."""
    radius = max(1, int(math.ceil(3 * sigma)))
    k = np.exp(-0.5 * (np.arange(-radius, radius + 1) / sigma) ** 2).astype(np.float32)
    k /= k.sum()
    pad = np.pad(x, ((radius, radius), (0, 0), (0, 0)), mode='edge')
    x = sum(k[i] * pad[i:i + x.shape[0]] for i in range(k.size))
    pad = np.pad(x, ((0, 0), (radius, radius), (0, 0)), mode='edge')
    return np.asarray(sum(k[i] * pad[:, i:i + x.shape[1]] for i in range(k.size)))


#: JPEG's luma and chroma quantisation tables (ITU-T T.81 Annex K).
_Q_LUMA = np.array([
    16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69,
    56, 14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81,
    104, 113, 92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99],
    float).reshape(8, 8)
_Q_CHROMA = np.full((8, 8), 99.0)
_Q_CHROMA[:4, :4] = [[17, 18, 24, 47], [18, 21, 26, 66], [24, 26, 56, 99], [47, 66, 99, 99]]


def _dct_matrix() -> np.ndarray:
    n = np.arange(8)
    m = np.cos(np.pi * (2 * n[None, :] + 1) * n[:, None] / 16) * math.sqrt(2 / 8)
    m[0] /= math.sqrt(2)
    return m


_DCT = _dct_matrix()


def jpeg_like(image: np.ndarray, quality: int) -> np.ndarray:
    """Return ``image`` after JPEG's lossy step: YCbCr, 8x8 DCT, quantisation at ``quality``
    (1-100, the IJG scaling), inverse. No chroma subsampling, no entropy coding (lossless)."""
    scale = 5000.0 / quality if quality < 50 else 200.0 - 2.0 * quality
    h, w = image.shape[:2]
    ph, pw = -h % 8, -w % 8
    rgb = np.pad(image.astype(np.float64), ((0, ph), (0, pw), (0, 0)), mode='edge')
    ycc = rgb @ np.array([[0.299, -0.168736, 0.5], [0.587, -0.331264, -0.418688],
                          [0.114, 0.5, -0.081312]])
    ycc[..., 0] -= 128.0
    out = np.empty_like(ycc)
    hh, ww = ycc.shape[:2]
    for c, table in enumerate((_Q_LUMA, _Q_CHROMA, _Q_CHROMA)):
        q = np.clip(np.floor((table * scale + 50.0) / 100.0), 1.0, 255.0)
        blocks = ycc[..., c].reshape(hh // 8, 8, ww // 8, 8).transpose(0, 2, 1, 3)
        coef = _DCT @ blocks @ _DCT.T
        coef = np.round(coef / q) * q
        out[..., c] = (_DCT.T @ coef @ _DCT).transpose(0, 2, 1, 3).reshape(hh, ww)
    out[..., 0] += 128.0
    back = out @ np.array([[1.0, 1.0, 1.0], [0.0, -0.344136, 1.772], [1.402, -0.714136, 0.0]])
    return np.clip(back[:h, :w] + 0.5, 0, 255).astype(np.uint8)


_TOP = ('seed', 'cameras', 'materials', 'light', 'clutter', 'sensor')


@dataclasses.dataclass(frozen=True)
class Appearance:
    """A lab's look, hidden from the twin (see the module docstring and ``lab_demo.yaml``).

    ``cameras`` holds rig-file entries (``config/cameras/droid.yaml``'s format, absolute
    values) for the cameras whose true pose or intrinsics differ from the rig's; the MuJoCo
    backend reads them with the rig file's own parser. ``sensors`` maps a camera to its
    :class:`SensorModel` (``sensor`` for all, or ``sensor: {exterior_1: {...}, ...}``).
    """

    seed: int = 0
    cameras: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    materials: Mapping[str, Material] = dataclasses.field(default_factory=dict)
    light: Light | None = None
    clutter: tuple[Clutter, ...] = ()
    sensors: Mapping[str, SensorModel] = dataclasses.field(default_factory=dict)
    source: str = ''

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], where: str = 'appearance') -> Appearance:
        """Return the appearance of a parsed YAML mapping; errors name the key."""
        data = _map(data, where, _TOP)
        seed = data.get('seed', 0)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ConfigError(f'{where}.seed must be an integer, got {seed!r}')
        cameras = _map(data.get('cameras'), f'{where}.cameras', CAMERA_NAMES)
        for name, entry in cameras.items():
            if not isinstance(entry, Mapping):
                raise ConfigError(f'{where}.cameras.{name} must be a map (the rig file format)')
        materials = {name: Material.from_entry(entry, f'{where}.materials.{name}')
                     for name, entry in _map(data.get('materials'), f'{where}.materials',
                                             SURFACES).items()}
        light = (Light.from_entry(data['light'], f'{where}.light')
                 if data.get('light') is not None else None)
        clutter = data.get('clutter') or []
        if not isinstance(clutter, list):
            raise ConfigError(f'{where}.clutter must be a list of items')
        items = tuple(Clutter.from_entry(c, f'{where}.clutter[{k}]')
                      for k, c in enumerate(clutter))
        sensor = data.get('sensor') or {}
        if isinstance(sensor, Mapping) and set(sensor) and set(sensor) <= set(CAMERA_NAMES):
            sensors = {name: SensorModel.from_entry(entry, f'{where}.sensor.{name}')
                       for name, entry in sensor.items()}
        else:
            one = SensorModel.from_entry(sensor, f'{where}.sensor')
            sensors = {name: one for name in CAMERA_NAMES}
        return cls(seed, {k: dict(v) for k, v in cameras.items()}, materials, light, items,
                   sensors, where)

    @classmethod
    def from_yaml(cls, path: str | pathlib.Path) -> Appearance:
        """Read an appearance file (``config/appearance/lab_demo.yaml``'s format)."""
        return cls.from_mapping(load_yaml(path), str(path))

    def sensor(self, camera: str) -> SensorModel:
        """Return ``camera``'s sensor (the identity if the file gives none)."""
        return self.sensors.get(camera, SensorModel())


def camera_offsets(entry: Mapping[str, Any], rng: np.random.Generator,
                   translation_m: float, rotation_deg: float, fovy_deg: float
                   ) -> dict[str, Any]:
    """Return a rig entry with ``entry``'s camera moved by a random lab calibration error.

    The position moves by a uniform random direction times ``translation_m``, the optical axis
    turns by ``rotation_deg`` about a random axis (look_at moved accordingly, at the same
    distance), the vertical field of view changes by +-``fovy_deg``. For benches and tests that
    need hidden offsets nobody tuned on. Needs ``position``, ``look_at`` and ``fovy_deg``.
    """
    pos = np.asarray(entry['position'], float)
    target = np.asarray(entry['look_at'], float)
    shift = rng.normal(size=3)
    new_pos = pos + translation_m * shift / np.linalg.norm(shift)
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    angle = math.radians(rotation_deg)
    forward = target - pos
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    rot = np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * k @ k
    sign = 1.0 if rng.uniform() < 0.5 else -1.0
    out = dict(entry)
    out['position'] = [round(float(v), 6) for v in new_pos]
    out['look_at'] = [round(float(v), 6) for v in new_pos + rot @ forward]
    out['fovy_deg'] = round(float(entry['fovy_deg']) + sign * fovy_deg, 6)
    return out


def lab_look(seed: int, rig: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Return a hidden lab look drawn from ``seed`` with every axis changed (an appearance
    file's content): both exterior cameras off ``rig``'s entries (``camera_offsets``: 2-4 cm,
    1-2 deg, 0.5-1.5 deg of FOV), table, floor, walls and robot paint (colour, texture,
    shine), the key light (direction, 3000-7500 K, intensity, ambient, shadows), 3-5 pieces of
    clutter, and a sensor (noise, white balance, exposure, gamma, vignetting, blur, JPEG).
    For benches that must not be tuned to the looks they are scored on."""
    rng = np.random.default_rng([seed, 39])

    def colour(low: float, high: float) -> list[float]:
        return [round(float(v), 3) for v in rng.uniform(low, high, 3)]

    def pick(options: Sequence[str]) -> str:
        return str(options[int(rng.integers(len(options)))])

    cameras = {name: camera_offsets(rig[name], rng, float(rng.uniform(0.02, 0.04)),
                                    float(rng.uniform(1.0, 2.0)), float(rng.uniform(0.5, 1.5)))
               for name in ('exterior_1', 'exterior_2')}
    turn = rng.uniform(-0.6, 0.6, 2)
    clutter = []
    for _ in range(int(rng.integers(3, 6))):
        shape = pick(SHAPES)
        side = 1.0 if rng.uniform() < 0.5 else -1.0
        size = [round(float(v), 3) for v in
                rng.uniform(0.03, 0.08, {'box': 3, 'cylinder': 2, 'sphere': 1}[shape])]
        height = size[-1] if shape != 'sphere' else size[0]
        clutter.append({'shape': shape, 'pos': [round(float(rng.uniform(0.0, 1.0)), 3),
                                                round(float(side * rng.uniform(0.6, 0.75)), 3),
                                                round(height, 3)],
                        'size': size, 'rgb': colour(0.05, 0.95)})
    grey = float(rng.uniform(0.55, 0.95))
    return {
        'seed': int(seed),
        'cameras': {k: {kk: v[kk] for kk in ('position', 'look_at', 'fovy_deg')}
                    for k, v in cameras.items()},
        'materials': {
            'table': {'rgb': colour(0.15, 0.8), 'texture': pick(['laminate', 'wood',
                                                                 'concrete', 'tiles']),
                      'specular': round(float(rng.uniform(0.05, 0.35)), 3)},
            'floor': {'rgb': colour(0.15, 0.6), 'texture': pick(['concrete', 'tiles', 'wood']),
                      'specular': 0.05},
            'walls': {'rgb': colour(0.35, 0.9), 'texture': pick(['plaster', 'tiles', '']),
                      'specular': 0.02},
            'robot': {'rgb': [round(grey, 3), round(grey * float(rng.uniform(0.95, 1.0)), 3),
                              round(grey * float(rng.uniform(0.88, 1.0)), 3)],
                      'specular': round(float(rng.uniform(0.2, 0.5)), 3)}},
        'light': {'direction': [round(float(turn[0]), 3), round(float(turn[1]), 3), -1.0],
                  'colour_temperature_k': round(float(rng.uniform(3000, 7500))),
                  'intensity': round(float(rng.uniform(0.45, 0.9)), 3), 'shadows': True,
                  'ambient': round(float(rng.uniform(0.2, 0.45)), 3)},
        'clutter': clutter,
        'sensor': {'noise_std': round(float(rng.uniform(0.004, 0.015)), 4),
                   'white_balance': [round(float(v), 3) for v in rng.uniform(0.92, 1.08, 3)],
                   'exposure': round(float(rng.uniform(0.9, 1.15)), 3),
                   'gamma': round(float(rng.uniform(0.9, 1.2)), 3),
                   'vignetting': round(float(rng.uniform(0.0, 0.3)), 3),
                   'blur_sigma_px': round(float(rng.uniform(0.0, 0.8)), 3),
                   'jpeg_quality': int(rng.integers(75, 96))},
    }



#: DROID's camera rig, off which :func:`droid_lab_look` draws a look's cameras.
DROID_RIG = 'config/cameras/droid.yaml'


def droid_lab_look(seed: int) -> dict[str, Any]:
    """Return :func:`lab_look` of ``seed`` drawn off DROID's rig (:data:`DROID_RIG`)."""
    from realm_ros.core.share import share_path
    return lab_look(int(seed), load_yaml(share_path(DROID_RIG))['cameras'])


def write_lab_look(seed: int, path: str | pathlib.Path) -> pathlib.Path:
    """Write :func:`droid_lab_look` of ``seed`` to ``path`` as YAML and return the path. The
    same seed always writes the same text; a file that already holds it is left as it is."""
    import yaml
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(droid_lab_look(seed), sort_keys=False)
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
    return path

#: What a twin variant changes, one axis per variant (SIMPLER's variant aggregation).
VARIANT_AXES = ('background', 'lighting', 'table', 'distractors')
#: SIMPLER's count of variants (its visual variant aggregation): the twin's own look and two of
#: each axis.
VARIANT_COUNT = 9


@dataclasses.dataclass(frozen=True)
class VariantSet:
    """SIMPLER's variant aggregation for a lab with no recording: ``count`` looks of the twin.

    Variant 0 is the twin's own look; variant k >= 1 changes one axis of
    :data:`VARIANT_AXES` in turn (k = 1: background, 2: lighting, 3: table, 4: distractors,
    5: background again, ...), drawn from ``seed`` and k: walls and floor of another colour and
    texture; the key light from another direction, warmer or cooler, brighter or darker; the
    table's colour and texture; three to five visual-only objects on the table's edges (no
    collision, no mass). The cameras and the sensor are the twin's. Each variant is an
    :class:`Appearance` (the hidden appearance's own schema), so a variant is written and read
    as an appearance file and a world dresses it with the same code.
    """

    count: int = VARIANT_COUNT
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise ConfigError(f'variant aggregation: the number of variants must be an '
                              f'integer >= 1, got {self.count!r}')

    def axis(self, k: int) -> str:
        """Return what variant ``k`` changes ('' for variant 0, the twin's own look)."""
        return '' if k == 0 else VARIANT_AXES[(k - 1) % len(VARIANT_AXES)]

    def name(self, k: int) -> str:
        """Return variant ``k``'s label, e.g. ``variant_3_table``."""
        return f'variant_{k}' + (f'_{self.axis(k)}' if k else '')

    def mapping(self, k: int) -> dict[str, Any]:
        """Return variant ``k`` as an appearance file's content."""
        if not 0 <= k < self.count:
            raise ConfigError(f'variant {k} out of range (0..{self.count - 1})')
        rng = np.random.default_rng([self.seed, k, 24])
        out: dict[str, Any] = {'seed': int(self.seed * 100 + k)}
        axis = self.axis(k)

        def colour(low: float, high: float) -> list[float]:
            return [round(float(v), 3) for v in rng.uniform(low, high, 3)]

        if axis == 'background':
            out['materials'] = {
                'walls': {'rgb': colour(0.25, 0.85),
                          'texture': str(rng.choice(['plaster', 'tiles', 'concrete', '']))},
                'floor': {'rgb': colour(0.15, 0.6),
                          'texture': str(rng.choice(['concrete', 'tiles', 'wood']))}}
        elif axis == 'lighting':
            turn = rng.uniform(-0.6, 0.6, 2)
            out['light'] = {'direction': [round(float(turn[0]), 3), round(float(turn[1]), 3),
                                          -1.0],
                            'colour_temperature_k': round(float(rng.uniform(2900, 7500))),
                            'intensity': round(float(rng.uniform(0.3, 0.95)), 3),
                            'shadows': True,
                            'ambient': round(float(rng.uniform(0.2, 0.5)), 3)}
        elif axis == 'table':
            out['materials'] = {'table': {
                'rgb': colour(0.2, 0.8), 'specular': round(float(rng.uniform(0.05, 0.4)), 3),
                'texture': str(rng.choice(['laminate', 'wood', 'concrete', 'tiles']))}}
        elif axis == 'distractors':
            items = []
            for _ in range(int(rng.integers(3, 6))):
                shape = str(rng.choice(SHAPES))
                side = 1.0 if rng.uniform() < 0.5 else -1.0
                xy = [round(float(rng.uniform(0.25, 0.85)), 3),
                      round(float(side * rng.uniform(0.38, 0.55)), 3)]
                size = [round(float(v), 3) for v in
                        rng.uniform(0.02, 0.05, {'box': 3, 'cylinder': 2, 'sphere': 1}[shape])]
                height = size[-1] if shape != 'sphere' else size[0]
                items.append({'shape': shape, 'pos': [*xy, round(height, 3)], 'size': size,
                              'rgb': colour(0.05, 0.95)})
            out['clutter'] = items
        return out

    def appearance(self, k: int) -> Appearance:
        """Return variant ``k`` as an :class:`Appearance`."""
        return Appearance.from_mapping(self.mapping(k), self.name(k))


__all__ = ['Appearance', 'Clutter', 'Light', 'Material', 'SensorModel', 'VARIANT_AXES',
           'VARIANT_COUNT', 'VariantSet', 'camera_offsets', 'lab_look',
           'colour_temperature_rgb', 'gaussian_blur', 'jpeg_like']
