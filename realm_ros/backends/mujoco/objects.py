"""The twin's object set (``core.perturbations.OBJECTS``) as MuJoCo geometry, and morphing.

Two sources:

* procedural: primitives written here (fruit, cans, stationery, toys, containers, platforms);
* ``pybullet_data``: OBJ meshes that the ``pybullet`` wheel (zlib licence) ships, loaded at run
  time from the installed package by absolute path; none is copied into this repository. Each
  is scaled so its largest dimension is the object's ``size``; collision uses MuJoCo's convex
  hull of the mesh.

:func:`morph` scales an object's geoms per body axis (VB-MOBJ): boxes stay boxes, spheres and
ellipsoids become ellipsoids, everything else (cylinders, capsules, rotated boxes, meshes)
becomes a convex vertex mesh scaled exactly; masses scale with the volume.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import pathlib
from typing import Any
import xml.etree.ElementTree as ET

import numpy as np

from realm_ros.core import perturbations
from realm_ros.core.errors import ConfigError

# Each procedural object: (geoms in the body frame with the frame at the base centre, height).
_OBJ = 'class="object"'
_PROCEDURAL: dict[str, str] = {
    'apple': f'<geom {_OBJ} type="sphere" size="0.035" pos="0 0 0.035" rgba="0.8 0.1 0.1 1" '
             'mass="0.15"/>',
    'orange': f'<geom {_OBJ} type="sphere" size="0.0375" pos="0 0 0.0375" '
              'rgba="0.98 0.55 0.05 1" mass="0.15"/>',
    'lemon': f'<geom {_OBJ} type="ellipsoid" size="0.035 0.025 0.025" pos="0 0 0.025" '
             'rgba="0.98 0.92 0.2 1" mass="0.1"/>',
    'carrot': f'<geom {_OBJ} type="capsule" size="0.015 0.045" pos="0 0 0.015" '
              'quat="0.7071068 0 0.7071068 0" rgba="0.95 0.45 0.05 1" mass="0.07"/>',
    'soda_can': f'<geom {_OBJ} type="cylinder" size="0.033 0.06" pos="0 0 0.06" '
                'rgba="0.8 0.05 0.1 1" mass="0.05"/>',
    'glue_stick': f'<geom {_OBJ} type="cylinder" size="0.012 0.05" pos="0 0 0.012" '
                  'quat="0.7071068 0.7071068 0 0" rgba="0.95 0.95 0.95 1" mass="0.03"/>',
    'tape_roll': f'<geom {_OBJ} type="cylinder" size="0.04 0.0125" pos="0 0 0.0125" '
                 'rgba="0.75 0.7 0.6 1" mass="0.08"/>',
    'eraser': f'<geom {_OBJ} type="box" size="0.03 0.012 0.008" pos="0 0 0.008" '
              'rgba="0.95 0.6 0.7 1" mass="0.02"/>',
    'toy_dice': f'<geom {_OBJ} type="box" size="0.025 0.025 0.025" pos="0 0 0.025" '
                'rgba="0.97 0.97 0.97 1" mass="0.03"/>',
    'tennis_ball': f'<geom {_OBJ} type="sphere" size="0.0325" pos="0 0 0.0325" '
                   'rgba="0.8 0.95 0.2 1" mass="0.06"/>',
    'sponge': f'<geom {_OBJ} type="box" size="0.05 0.035 0.02" pos="0 0 0.02" '
              'rgba="0.95 0.85 0.2 1" mass="0.02"/>',
    'book': f'<geom {_OBJ} type="box" size="0.09 0.065 0.015" pos="0 0 0.015" '
            'rgba="0.2 0.3 0.7 1" mass="0.3"/>',
    'wooden_crate': f'<geom {_OBJ} type="box" size="0.06 0.06 0.03" pos="0 0 0.03" '
                    'rgba="0.7 0.55 0.35 1" mass="0.3"/>',
}

#: Containers: (inner half x, inner half y, wall height, rgba).
_CONTAINERS = {'salad_bowl': (0.085, 0.085, 0.05, '0.3 0.6 0.4 1'),
               'basket': (0.09, 0.065, 0.07, '0.6 0.45 0.25 1')}

#: pybullet_data meshes: (path in the package, quaternion w x y z turning it z-up, rgba).
_MESHES = {
    'rubber_duck': ('duck_vhacd.obj', (0.7071068, 0.7071068, 0.0, 0.0), '0.95 0.85 0.1 1'),
    'teddy_bear': ('teddy2_VHACD_CHs.obj', (0.7071068, 0.7071068, 0.0, 0.0), '0.6 0.4 0.2 1'),
    'toy_bunny': ('bunny.obj', (1.0, 0.0, 0.0, 0.0), '0.85 0.8 0.75 1'),
    'cup': ('objects/mug.obj', (1.0, 0.0, 0.0, 0.0), '0.9 0.9 0.95 1'),
    'ball': ('soccerball.obj', (1.0, 0.0, 0.0, 0.0), '0.95 0.95 0.95 1'),
    'lego_brick': ('lego/lego.obj', (0.7071068, 0.7071068, 0.0, 0.0), '0.85 0.1 0.1 1'),
    'domino': ('domino/domino.obj', (1.0, 0.0, 0.0, 0.0), '0.1 0.1 0.1 1'),
}
_MESH_MASS = 0.08  # kg; REALM's BEHAVIOR-1K objects carry their own masses


@dataclasses.dataclass(frozen=True)
class Built:
    """An object ready for a scene: geoms (body frame at the base centre), assets, extents."""

    geoms: str
    assets: str
    extents: tuple[float, float, float]
    interior: tuple[float, float, float] | None = None


def pybullet_data_dir() -> pathlib.Path:
    """Return the installed ``pybullet_data`` folder; a clear error when it is missing."""
    try:
        import pybullet_data
    except ImportError:
        raise ConfigError('the object set needs the "pybullet" package (it ships the meshes '
                          'in pybullet_data): pip install pybullet') from None
    return pathlib.Path(pybullet_data.getDataPath())


@functools.lru_cache(maxsize=None)
def _obj_vertices(path: str) -> np.ndarray:
    verts = [line.split()[1:4] for line in pathlib.Path(path).read_text(errors='replace')
             .splitlines() if line.startswith('v ')]
    return np.asarray(verts, dtype=float)


def _rotate(quat: Any, points: np.ndarray) -> np.ndarray:
    w, x, y, z = quat
    rot = np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
    return points @ rot.T


def build(name: str, prefix: str, max_dim: float | None = None) -> Built:
    """Return object ``name`` of the object set, scaled down to ``max_dim`` if larger.

    ``prefix`` makes the asset names unique in the model (one per body).
    """
    if name not in perturbations.OBJECTS:
        raise ConfigError(f'unknown object {name!r}; the object set has '
                          f'{sorted(perturbations.OBJECTS)}')
    size = perturbations.OBJECTS[name].size
    if name in _CONTAINERS:
        hx, hy, height, rgba = _CONTAINERS[name]
        t = 0.005
        # (half sizes x, y, z; centre x, y, z), m
        walls: list[tuple[float, ...]] = [(hx + t, hy + t, t, 0.0, 0.0, t)]
        walls += [(t, hy + t, height / 2, sx * (hx + t), 0, height / 2) for sx in (-1, 1)]
        walls += [(hx + t, t, height / 2, 0, sy * (hy + t), height / 2) for sy in (-1, 1)]
        geoms = ''.join(f'<geom {_OBJ} type="box" size="{a:.4f} {b:.4f} {c:.4f}" '
                        f'pos="{x:.4f} {y:.4f} {z:.4f}" rgba="{rgba}" mass="0.06"/>'
                        for a, b, c, x, y, z in walls)
        ext = (2 * (hx + 2 * t), 2 * (hy + 2 * t), height)
        return Built(geoms, '', ext, interior=(hx, hy, height + 0.01))
    if name in _PROCEDURAL:
        geoms = _PROCEDURAL[name]
        return Built(geoms, '', tuple(_extents(geoms)))
    rel, quat, rgba = _MESHES[name]
    path = pybullet_data_dir() / rel
    verts = _rotate(quat, _obj_vertices(str(path)))
    lo, hi = verts.min(axis=0), verts.max(axis=0)
    target = min(size, max_dim) if max_dim else size
    scale = target / float(np.max(hi - lo))
    centre = (lo + hi) / 2.0
    pos = (-centre[0] * scale, -centre[1] * scale, -lo[2] * scale)
    mesh = f'{prefix}_mesh'
    assets = f'<mesh name="{mesh}" file="{path}" scale="{scale:.6g} {scale:.6g} {scale:.6g}"/>'
    geoms = (f'<geom {_OBJ} type="mesh" mesh="{mesh}" pos="{pos[0]:.5f} {pos[1]:.5f} '
             f'{pos[2]:.5f}" quat="{" ".join(f"{q:.7g}" for q in quat)}" rgba="{rgba}" '
             f'mass="{_MESH_MASS}"/>')
    ext = (hi - lo) * scale
    return Built(geoms, assets, (float(ext[0]), float(ext[1]), float(ext[2])))


# -- geometry of geoms (extents, vertices) ----------------------------------------------------

def _floats(text: str | None, default: tuple[float, ...]) -> np.ndarray:
    return np.asarray([float(v) for v in text.split()] if text else default, dtype=float)


def _local_points(geom: ET.Element, mesh_vertices: dict[str, np.ndarray]) -> np.ndarray:
    """Return points whose convex hull is ``geom`` in its own frame (before pos/quat)."""
    kind = geom.get('type', 'sphere')
    size = _floats(geom.get('size'), (0.0, 0.0, 0.0))
    ring = np.linspace(0.0, 2 * math.pi, 24, endpoint=False)
    if kind == 'box':
        return np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1)
                         for sz in (-1, 1)]) * size[:3]
    if kind == 'sphere':
        size = np.repeat(size[0], 3)
        kind = 'ellipsoid'
    if kind == 'ellipsoid':
        u, v = np.meshgrid(ring, np.linspace(-math.pi / 2, math.pi / 2, 9))
        pts = np.stack([np.cos(v) * np.cos(u), np.cos(v) * np.sin(u), np.sin(v)], -1)
        return pts.reshape(-1, 3) * size[:3]
    if kind == 'cylinder':
        r, h = size[0], size[1]
        return np.array([[r * math.cos(a), r * math.sin(a), z] for a in ring for z in (-h, h)])
    if kind == 'capsule':
        r, h = size[0], size[1]
        u, v = np.meshgrid(ring, np.linspace(0.0, math.pi / 2, 5))
        cap = np.stack([np.cos(v) * np.cos(u) * r, np.cos(v) * np.sin(u) * r, np.sin(v) * r], -1)
        cap = cap.reshape(-1, 3)
        return np.concatenate([cap + [0, 0, h], cap * [1, 1, -1] - [0, 0, h]])
    if kind == 'mesh':
        return mesh_vertices[geom.get('mesh', '')]
    raise ConfigError(f'cannot morph a geom of type {kind!r}')


def _world_points(geom: ET.Element, mesh_vertices: dict[str, np.ndarray]) -> np.ndarray:
    pts = _local_points(geom, mesh_vertices)
    quat = _floats(geom.get('quat'), (1.0, 0.0, 0.0, 0.0))
    return _rotate(quat / np.linalg.norm(quat), pts) + _floats(geom.get('pos'), (0.0, 0.0, 0.0))


def _mesh_vertices(assets: str) -> dict[str, np.ndarray]:
    out = {}
    for mesh in ET.fromstring(f'<r>{assets}</r>'):
        scale = _floats(mesh.get('scale'), (1.0, 1.0, 1.0))
        if mesh.get('file'):
            out[mesh.get('name', '')] = _obj_vertices(mesh.get('file', '')) * scale
        else:
            out[mesh.get('name', '')] = _floats(mesh.get('vertex'), ()).reshape(-1, 3) * scale
    return out


def _extents(geoms: str, assets: str = '') -> np.ndarray:
    meshes = _mesh_vertices(assets)
    pts = np.concatenate([_world_points(g, meshes) for g in ET.fromstring(f'<r>{geoms}</r>')])
    return pts.max(axis=0) - pts.min(axis=0)


def morph(geoms: str, assets: str, scale: Any, box: tuple[float, float] | None,
          prefix: str) -> tuple[str, str, np.ndarray]:
    """Return ``(geoms, assets, effective_scale)`` with the object scaled per body axis.

    ``box`` clips the scaled bounding box (REALM: [0.02, 0.175] m); the effective per-axis
    scale is returned. Masses scale with s1 s2 s3.
    """
    s = np.asarray(scale, dtype=float)
    ext = _extents(geoms, assets)
    if box is not None:
        s = np.clip(ext * s, box[0], box[1]) / np.where(ext > 0, ext, 1.0)
    meshes = _mesh_vertices(assets)
    out_geoms, out_assets = [], []
    for k, geom in enumerate(ET.fromstring(f'<r>{geoms}</r>')):
        g = dict(geom.attrib)
        quat = _floats(g.get('quat'), (1.0, 0.0, 0.0, 0.0))
        straight = np.allclose(np.abs(quat), [1, 0, 0, 0])
        if 'mass' in g:
            g['mass'] = f'{float(g["mass"]) * float(np.prod(s)):.6g}'
        if g.get('type') == 'box' and straight:
            g['size'] = ' '.join(f'{v:.6g}' for v in _floats(g['size'], ()) * s)
            g['pos'] = ' '.join(f'{v:.6g}' for v in _floats(g.get('pos'), (0, 0, 0)) * s)
        elif g.get('type') in ('sphere', 'ellipsoid') and straight:
            size = _local_points(geom, meshes).max(axis=0)
            g['type'] = 'ellipsoid'
            g['size'] = ' '.join(f'{v:.6g}' for v in size * s)
            g['pos'] = ' '.join(f'{v:.6g}' for v in _floats(g.get('pos'), (0, 0, 0)) * s)
        else:
            pts = _world_points(geom, meshes) * s
            name = f'{prefix}_morph{k}'
            out_assets.append(f'<mesh name="{name}" vertex="'
                              + ' '.join(f'{v:.5g}' for v in pts.reshape(-1)) + '"/>')
            for key in ('size', 'quat', 'pos', 'fromto'):
                g.pop(key, None)
            g['type'] = 'mesh'
            g['mesh'] = name
        out_geoms.append('<geom ' + ' '.join(f'{k2}="{v}"' for k2, v in g.items()) + '/>')
    return ''.join(out_geoms), ''.join(out_assets), s


def geoms_extents(geoms: str, assets: str = '') -> np.ndarray:
    """Return the (x, y, z) extents of ``geoms`` in the body frame, m."""
    return _extents(geoms, assets)
