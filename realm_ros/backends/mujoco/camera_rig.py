"""The twin's camera rig, read from a file a lab fills with its own calibration.

``config/cameras/droid.yaml`` documents the format and holds DROID's rig (the default); a lab
copies it, enters its cameras' extrinsics and intrinsics, and sets ``camera_rig_file``. Only
the three DROID camera names exist (``exterior_1``, ``exterior_2``, ``wrist``); the wrist
camera is fixed to the gripper, the others to ``base_link``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import pathlib
from typing import Any, Mapping, Sequence

import numpy as np
import yaml

from realm_ros.backends.mujoco.model import DEFAULT_CAMERAS, DEFAULT_WRIST, CameraSpec
from realm_ros.core.config import yaml_problem
from realm_ros.core.errors import ConfigError

#: The default rig file, relative to the package root.
DEFAULT_RIG = 'config/cameras/droid.yaml'


@dataclasses.dataclass(frozen=True)
class Rig:
    """The exterior cameras (in ``base_link``) and the wrist camera (in the gripper frame)."""

    exterior: tuple[CameraSpec, ...] = DEFAULT_CAMERAS
    wrist: CameraSpec = DEFAULT_WRIST
    source: str = 'built-in DROID rig'
    #: The key light casts shadows: True, False or 'auto' (on with a GPU, off on a software
    #: renderer such as Mesa's llvmpipe, where they cost about 2x per image).
    shadows: bool | str = 'auto'
    #: Multisample anti-aliasing samples (0 = off; with shadows on llvmpipe, 2 costs 3x).
    antialias: int = 0
    #: Reflective materials (the table's faint reflectance): True, False or 'auto' (as shadows;
    #: about 1.7x per image on llvmpipe).
    reflections: bool | str = 'auto'
    #: The cameras the rig's source defines (the built-in rig: all three).
    listed: tuple[str, ...] = ('exterior_1', 'exterior_2', 'wrist')


def _vector(entry: Mapping[str, Any], key: str, n: int, where: str) -> tuple[float, ...]:
    value = entry.get(key)
    try:
        out = tuple(float(v) for v in value)  # type: ignore[union-attr]  # None: TypeError
    except (TypeError, ValueError):
        raise ConfigError(f'{where}.{key} must be a list of {n} numbers, got {value!r}') from None
    if len(out) != n or not all(math.isfinite(v) for v in out):
        raise ConfigError(f'{where}.{key} must be a list of {n} finite numbers, got {value!r}')
    return out


def _xyaxes_from_optical(quat_xyzw: Sequence[float]) -> tuple[float, ...]:
    """Return MuJoCo camera ``xyaxes`` from an optical-frame quaternion (x, y, z, w)."""
    x, y, z, w = np.asarray(quat_xyzw, float) / np.linalg.norm(quat_xyzw)
    rot = np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    # Optical (x right, y down, z forward) -> MuJoCo camera (x right, y up, looking along -z).
    mujoco_rot = rot @ np.diag([1.0, -1.0, -1.0])
    return tuple(np.concatenate([mujoco_rot[:, 0], mujoco_rot[:, 1]]))


def camera_from_entry(name: str, entry: Mapping[str, Any], where: str) -> CameraSpec:
    """Return the :class:`CameraSpec` of one rig-file entry (see the file's header)."""
    if not isinstance(entry, Mapping):
        raise ConfigError(f'{where} must be a map, got {type(entry).__name__}')
    parent = str(entry.get('parent', 'gripper' if name == 'wrist' else 'world'))
    expected = 'gripper' if name == 'wrist' else 'world'
    if parent != expected:
        raise ConfigError(f'{where}.parent must be {expected!r} for camera {name!r}, got '
                          f'{parent!r}')
    pos = _vector(entry, 'position', 3, where)
    up = _vector(entry, 'up', 3, where) if 'up' in entry else (0.0, 0.0, 1.0)
    xyaxes = None
    if 'quaternion_xyzw' in entry:
        xyaxes = _xyaxes_from_optical(_vector(entry, 'quaternion_xyzw', 4, where))
        target = pos
    elif 'look_at' in entry:
        target = _vector(entry, 'look_at', 3, where)
        forward = np.subtract(target, pos)
        if np.linalg.norm(forward) < 1e-6 or \
                np.linalg.norm(np.cross(forward, up)) < 1e-6 * np.linalg.norm(forward):
            raise ConfigError(f'{where}: look_at must differ from position and not be along up')
    else:
        raise ConfigError(f'{where} needs look_at or quaternion_xyzw')
    if 'fovy_deg' in entry:
        fovy = float(entry['fovy_deg'])
    elif 'fy_px' in entry and 'height_px' in entry:
        fovy = math.degrees(2.0 * math.atan(0.5 * float(entry['height_px']) /
                                            float(entry['fy_px'])))
    else:
        raise ConfigError(f'{where} needs fovy_deg, or fy_px and height_px')
    if not 5.0 <= fovy <= 170.0:
        raise ConfigError(f'{where}: vertical field of view must be in [5, 170] deg, got {fovy}')
    return CameraSpec(name, _xyz(pos), _xyz(target), fovy=fovy, parent=parent, up=_xyz(up),
                      xyaxes=xyaxes)


def _xyz(v: Any) -> tuple[float, float, float]:
    """A 3-vector (checked by :func:`_vector`) as the three floats ``CameraSpec`` holds."""
    return float(v[0]), float(v[1]), float(v[2])


@functools.lru_cache(maxsize=16)
def _load(path: str) -> Rig:
    file = pathlib.Path(path)
    try:
        data = yaml.safe_load(file.read_text())
    except OSError as err:
        raise ConfigError(f'camera_rig_file: cannot read {path}: {err}') from None
    except yaml.YAMLError as err:
        raise ConfigError(f'camera_rig_file: {path} is not valid YAML: {yaml_problem(err)}'
                          ) from None
    cameras = (data or {}).get('cameras') if isinstance(data, dict) else None
    if not isinstance(cameras, dict):
        raise ConfigError(f'camera_rig_file: {path} needs a `cameras` map')
    unknown = sorted(set(cameras) - {'exterior_1', 'exterior_2', 'wrist'})
    if unknown:
        raise ConfigError(f'camera_rig_file: {path}: unknown camera(s) {unknown}; the rig has '
                          'exterior_1, exterior_2 and wrist')
    defaults = {c.name: c for c in DEFAULT_CAMERAS}
    exterior = tuple(
        camera_from_entry(name, cameras[name], f'{path}: cameras.{name}') if name in cameras
        else defaults[name] for name in ('exterior_1', 'exterior_2'))
    wrist = (camera_from_entry('wrist', cameras['wrist'], f'{path}: cameras.wrist')
             if 'wrist' in cameras else DEFAULT_WRIST)
    render = data.get('render') or {}
    if not isinstance(render, dict) or set(render) - {'shadows', 'antialias', 'reflections'}:
        raise ConfigError(f'camera_rig_file: {path}: `render` may set shadows and reflections '
                          f'(true, false, auto) and antialias (0, 2, 4, 8), got {render!r}')
    shadows = render.get('shadows', 'auto')
    reflections = render.get('reflections', 'auto')
    antialias = render.get('antialias', 0)
    for key, value in (('shadows', shadows), ('reflections', reflections)):
        if not isinstance(value, bool) and value != 'auto':
            raise ConfigError(f'camera_rig_file: {path}: render.{key} must be true, false or '
                              f'auto; got {value!r}')
    if antialias not in (0, 2, 4, 8) or isinstance(antialias, bool):
        raise ConfigError(f'camera_rig_file: {path}: render.antialias must be one of 0, 2, 4, '
                          f'8; got {antialias!r}')
    # An empty `cameras` map is a file of render settings over DROID's rig (all three).
    listed = tuple(n for n in ('exterior_1', 'exterior_2', 'wrist') if n in cameras or not cameras)
    return Rig(exterior, wrist, str(file), shadows, int(antialias), reflections, listed)


def load_rig(path: str = '', uses: Sequence[str] = ()) -> Rig:
    """Return the rig in ``path`` ('' = DROID's, as built in).

    A camera the file leaves out keeps DROID's pose, unless the run renders it (``uses``): a
    lab's rig must place every camera its images come from, never DROID's in its stead. A
    file with an empty ``cameras: {}`` sets render options over DROID's whole rig.

    Raises:
        ConfigError: unreadable file, unknown camera, a malformed entry (named), or a camera
            of ``uses`` the file does not define.
    """
    if not path:
        return Rig()
    rig = _load(str(pathlib.Path(path).expanduser().resolve()))
    missing = [name for name in uses if name not in rig.listed]
    if missing:
        raise ConfigError(f'camera_rig_file: {path} has no camera {", ".join(missing)}, which '
                          f'this run renders; add it (config/cameras/droid.yaml shows the '
                          'format) or leave it out of cameras')
    return rig


__all__ = ['DEFAULT_RIG', 'Rig', 'camera_from_entry', 'load_rig']
