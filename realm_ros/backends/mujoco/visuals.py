"""What the twin looks like to a camera: the Panda's meshes, a lab room, textures, light.

Everything here is visual only: geoms of class ``visual`` (``contype = conaffinity = 0``, no
mass) on bodies whose inertials are explicit, lights, materials and textures. The physics of a
twin built with visuals is the physics of the twin without them
(``test/unit/test_cameras.py`` steps both and compares).

The Panda's visual meshes come from ``pybullet_data`` (the ``pybullet`` wheel on PyPI ships
``franka_panda/meshes``, Franka Emika's meshes from franka_ros under the Apache-2.0 licence, in
the package's ``franka_panda/LICENSE.txt``). They are read from the installed package at run
time and never copied into this repository. Links 0 and 7 have only their collision meshes
there, which are used for them. The hand is the Franka Hand (DROID mounts a Robotiq 2F-85;
its meshes are not on PyPI): it sits on a coupling so that its fingers meet the twin's finger
bodies, and its finger meshes are stretched along the approach axis to cover the twin's pads.
Without ``pybullet_data`` the twin keeps its primitive arm and logs why.

Textures that no package ships (wood grain, floor, wall plaster) are generated with numpy
(:func:`paint_textures`) into ``model.tex_data`` after compiling and before a renderer is made.
"""

from __future__ import annotations

import functools
import logging
import os
import pathlib
from typing import Any

import numpy as np

_LOG = logging.getLogger(__name__)

#: Procedural textures: name -> (width, height) px; painted by :func:`paint_textures`.
PAINTED = {'realm_wood': (512, 512), 'realm_floor': (512, 512), 'realm_wall': (256, 256),
           'realm_board': (256, 256)}

#: Hand-to-finger distance of the Franka Hand (franka_description), m.
HAND_FINGER_Z = 0.0584


def coupling(gripper_base_length: float) -> float:
    """Return the length of the coupling between flange and hand that brings the Franka Hand's
    fingers to the twin's (whose finger bodies sit ``gripper_base_length`` from the flange), m.

    The model passes its ``GRIPPER_BASE_LENGTH`` in: this module does not import ``model.py``,
    which imports it (no import cycle).
    """
    return gripper_base_length - HAND_FINGER_Z


#: Finger meshes are 0.054 m long; the twin's pads reach 0.075 m from the finger origin.
FINGER_STRETCH = 1.35

#: Vertex-clustering cell for the visual meshes, m: the source meshes have ~100k triangles,
#: which a software renderer (llvmpipe: EGL without a GPU) draws at seconds per frame; merged
#: on a 1 cm grid (5 mm for the hand) they keep their silhouette at camera resolution with a
#: sixth of the faces.
CLUSTER = 0.01

#: Floor height (the table top is z = 0), m.
FLOOR_Z = -0.76


@functools.lru_cache(maxsize=1)
def mesh_dir() -> pathlib.Path | None:
    """Return pybullet_data's ``franka_panda/meshes`` folder, or None if not installed."""
    try:
        import pybullet_data
    except ImportError:
        _LOG.warning('pybullet_data is not installed: the twin keeps its primitive arm '
                     '(pip install pybullet for the Panda meshes)')
        return None
    path = pathlib.Path(pybullet_data.getDataPath()) / 'franka_panda' / 'meshes'
    if not (path / 'visual' / 'link1.obj').is_file():
        _LOG.warning('pybullet_data has no franka_panda meshes at %s', path)
        return None
    return path


#: Links whose meshes are split per material into the cache (name -> source OBJ stem).
MESH_PARTS = tuple(f'link{i}' for i in range(8)) + ('hand', 'finger')


def _source(link: str) -> pathlib.Path:
    base = mesh_dir()
    assert base is not None
    visual = base / 'visual' / f'{link}.obj'
    return visual if visual.is_file() else base / 'collision' / f'{link}.obj'


def _cache_dir() -> pathlib.Path:
    root = os.environ.get('XDG_CACHE_HOME') or str(pathlib.Path.home() / '.cache')
    return pathlib.Path(root) / 'realm_ros' / f'panda_meshes_v2_{int(CLUSTER * 1e4)}'


def _read_mtl(path: pathlib.Path) -> dict[str, tuple[float, float, float]]:
    colours: dict[str, tuple[float, float, float]] = {}
    name = ''
    if not path.is_file():
        return colours
    for line in path.read_text().splitlines():
        parts = line.split()
        if parts[:1] == ['newmtl']:
            name = parts[1] if len(parts) > 1 else ''
        elif parts[:1] == ['Kd'] and name:
            colours[name] = (float(parts[1]), float(parts[2]), float(parts[3]))
    return colours


def _split(link: str) -> list[tuple[str, tuple[float, float, float]]]:
    """Split ``link``'s OBJ into one vertex-and-face OBJ per material colour (cached).

    MuJoCo's OBJ reader drops faces when some faces of a file have texture coordinates and
    others do not (links 5 and 6 lose almost all their faces); a mesh per colour with
    positions only reads cleanly and keeps the parts' colours as materials.
    """
    source = _source(link)
    out_dir = _cache_dir()
    index = out_dir / f'{link}.txt'
    if index.is_file():
        parts = []
        for line in index.read_text().splitlines():
            file, r, g, b = line.split()
            parts.append((str(out_dir / file), (float(r), float(g), float(b))))
        if all(pathlib.Path(f).is_file() for f, _ in parts):
            return parts
    colours: dict[str, tuple[float, float, float]] = {}
    vertices: list[str] = []
    groups: dict[tuple[float, float, float], list[list[int]]] = {}
    colour = (0.92, 0.92, 0.93)
    for line in source.read_text().splitlines():
        if line.startswith('mtllib '):
            colours.update(_read_mtl(source.parent / line.split(maxsplit=1)[1].strip()))
        elif line.startswith('usemtl '):
            rgb = colours.get(line.split(maxsplit=1)[1].strip(), (0.92, 0.92, 0.93))
            colour = (round(rgb[0], 4), round(rgb[1], 4), round(rgb[2], 4))
        elif line.startswith('v '):
            vertices.append(line)
        elif line.startswith('f '):
            corners = [int(c.split('/')[0]) for c in line.split()[1:]]
            groups.setdefault(colour, []).append(
                [c - 1 if c > 0 else len(vertices) + c for c in corners])
    out_dir.mkdir(parents=True, exist_ok=True)
    parts = []
    lines = []
    for k, (rgb, faces) in enumerate(sorted(groups.items(), key=lambda kv: -len(kv[1]))):
        if len(faces) < 4:
            continue  # slivers (a few stray faces) are not worth a mesh
        file = f'{link}_{k}.obj'
        # The small hand parts keep a finer grid than the links.
        text = _clustered_obj(vertices, faces, CLUSTER / 2 if link in ('hand', 'finger')
                              else CLUSTER)
        if sum(line.startswith('f ') for line in text) < 4:
            continue
        tmp = out_dir / f'.{file}.{os.getpid()}'
        tmp.write_text('\n'.join(text) + '\n')
        tmp.replace(out_dir / file)
        parts.append((str(out_dir / file), rgb))
        lines.append(f'{file} {rgb[0]:.4f} {rgb[1]:.4f} {rgb[2]:.4f}')
    tmp = out_dir / f'.{link}.txt.{os.getpid()}'
    tmp.write_text('\n'.join(lines) + '\n')
    tmp.replace(index)
    return parts


def _clustered_obj(vertices: list[str], faces: list[list[int]], cell: float) -> list[str]:
    """Return OBJ lines of ``faces`` simplified by vertex clustering on a ``cell`` (m) grid.

    Vertices in one grid cell merge into their mean; faces that collapse (two corners in one
    cell) or repeat are dropped; polygons are fanned into triangles.
    """
    points = np.array([[float(v) for v in line.split()[1:4]] for line in vertices])
    cells = np.floor(points / cell).astype(np.int64)
    _, cell_of, counts = np.unique(cells, axis=0, return_inverse=True, return_counts=True)
    cell_of = cell_of.reshape(-1)
    sums = np.zeros((len(counts), 3))
    np.add.at(sums, cell_of, points)
    means = sums / counts[:, None]
    triangles = set()
    for face in faces:
        ids = [int(cell_of[c]) for c in face]
        for i in range(1, len(ids) - 1):
            tri = (ids[0], ids[i], ids[i + 1])
            if len(set(tri)) == 3:
                # Keep the winding; dedupe on the rotation that starts at the smallest id.
                start = tri.index(min(tri))
                triangles.add(tri[start:] + tri[:start])
    used = sorted({c for tri in triangles for c in tri})
    renumber = {old: new + 1 for new, old in enumerate(used)}
    lines = [f'v {means[c][0]:.5f} {means[c][1]:.5f} {means[c][2]:.5f}' for c in used]
    lines += ['f ' + ' '.join(str(renumber[c]) for c in tri) for tri in sorted(triangles)]
    return lines


def _tone(rgb: tuple[float, float, float]) -> str:
    """Return the material for a source colour: Panda white, joint grey, or the colour."""
    r, g, b = rgb
    if min(rgb) > 0.8:
        return 'panda_white'
    if max(rgb) < 0.4:
        return 'panda_dark'
    return f'panda_{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}'


def _mesh_assets() -> str:
    if mesh_dir() is None:
        return ''
    parts = ['<material name="panda_white" rgba="0.93 0.93 0.94 1" specular="0.35" '
             'shininess="0.5"/>',
             '<material name="panda_dark" rgba="0.16 0.16 0.17 1" specular="0.25" '
             'shininess="0.3"/>']
    extra = set()
    for link in MESH_PARTS:
        scale = f' scale="1 1 {FINGER_STRETCH}"' if link == 'finger' else ''
        for k, (file, rgb) in enumerate(_split(link)):
            parts.append(f'<mesh name="panda_{link}_{k}" file="{file}"{scale}/>')
            tone = _tone(rgb)
            if tone not in ('panda_white', 'panda_dark') and tone not in extra:
                extra.add(tone)
                parts.append(f'<material name="{tone}" rgba="{rgb[0]:.3f} {rgb[1]:.3f} '
                             f'{rgb[2]:.3f} 1" specular="0.3"/>')
    return '\n    '.join(parts)


def _mesh_geoms(link: str, name: str, attrs: str = '') -> str:
    return ''.join(
        f'<geom class="visual" type="mesh" mesh="panda_{link}_{k}" material="{_tone(rgb)}" '
        f'name="{name}_{k}"{attrs}/>' for k, (_, rgb) in enumerate(_split(link)))


def link_visual(index: int) -> str:
    """Return the visual mesh geoms of ``panda_link{index}`` (0..7), in the link frame."""
    if mesh_dir() is None:
        return ''
    return _mesh_geoms(f'link{index}', f'link{index}_visual')


def gripper_visual(gripper_base_length: float) -> str:
    """Return the coupling and the Franka Hand, in the twin's gripper frame."""
    if mesh_dir() is None:
        return ''
    length = coupling(gripper_base_length)
    return (f'<geom class="visual" type="cylinder" size="0.033 {length / 2:.4f}" '
            f'pos="0 0 {length / 2:.4f}" material="panda_dark" name="coupling_visual"/>'
            + _mesh_geoms('hand', 'hand_visual', f' pos="0 0 {length:.4f}"'))


def finger_visual(side: float) -> str:
    """Return a Franka Hand finger mesh in a twin finger's frame (``side`` +1: left)."""
    if mesh_dir() is None:
        return ''
    quat = '1 0 0 0' if side > 0 else '0 0 0 1'  # the right finger is turned about z
    name = 'left' if side > 0 else 'right'
    return _mesh_geoms('finger', f'{name}_finger_visual', f' quat="{quat}"')


def _room() -> str:
    """Return the room: walls, skirting, a window, a whiteboard, shelves, a second table."""
    z0 = FLOOR_Z
    wall_h = 2.6
    zc = z0 + wall_h / 2
    v = 'class="visual"'
    parts = [
        # Walls: behind the robot (x = -1.2), facing it (x = 2.8) and either side (y = +-2.2).
        f'<geom {v} type="box" size="0.02 2.2 {wall_h / 2}" pos="-1.2 0 {zc}" material="wall"/>',
        f'<geom {v} type="box" size="0.02 2.2 {wall_h / 2}" pos="2.8 0 {zc}" material="wall"/>',
        f'<geom {v} type="box" size="2.0 0.02 {wall_h / 2}" pos="0.8 2.2 {zc}" material="wall"/>',
        f'<geom {v} type="box" size="2.0 0.02 {wall_h / 2}" pos="0.8 -2.2 {zc}" '
        'material="wall"/>',
        # Skirting boards.
        f'<geom {v} type="box" size="0.03 2.2 0.05" pos="2.77 0 {z0 + 0.05}" material="skirt"/>',
        f'<geom {v} type="box" size="2.0 0.03 0.05" pos="0.8 2.17 {z0 + 0.05}" '
        'material="skirt"/>',
        f'<geom {v} type="box" size="2.0 0.03 0.05" pos="0.8 -2.17 {z0 + 0.05}" '
        'material="skirt"/>',
        # A window on the left wall and a whiteboard facing the robot.
        f'<geom {v} type="box" size="0.6 0.01 0.45" pos="1.3 2.17 {z0 + 1.55}" '
        'material="window"/>',
        f'<geom {v} type="box" size="0.65 0.015 0.5" pos="1.3 2.175 {z0 + 1.55}" '
        'material="frame"/>',
        f'<geom {v} type="box" size="0.01 0.9 0.5" pos="2.77 0.3 {z0 + 1.45}" material="board"/>',
        f'<geom {v} type="box" size="0.015 0.95 0.55" pos="2.775 0.3 {z0 + 1.45}" '
        'material="frame"/>',
        # A shelf with boxes on the right wall, a second table behind the workspace.
        f'<geom {v} type="box" size="0.5 0.18 0.9" pos="1.4 -2.0 {z0 + 0.9}" material="shelf"/>',
        f'<geom {v} type="box" size="0.12 0.1 0.08" pos="1.2 -1.85 {z0 + 1.88}" '
        'rgba="0.75 0.3 0.2 1"/>',
        f'<geom {v} type="box" size="0.1 0.1 0.12" pos="1.55 -1.85 {z0 + 1.92}" '
        'rgba="0.25 0.4 0.7 1"/>',
        f'<geom {v} type="box" size="0.6 0.4 0.02" pos="2.0 0.6 {z0 + 0.72}" material="desk"/>',
        f'<geom {v} type="box" size="0.02 0.02 0.36" pos="1.45 0.25 {z0 + 0.36}" '
        'material="metal"/>',
        f'<geom {v} type="box" size="0.02 0.02 0.36" pos="2.55 0.95 {z0 + 0.36}" '
        'material="metal"/>',
        f'<geom {v} type="box" size="0.02 0.02 0.36" pos="1.45 0.95 {z0 + 0.36}" '
        'material="metal"/>',
        f'<geom {v} type="box" size="0.02 0.02 0.36" pos="2.55 0.25 {z0 + 0.36}" '
        'material="metal"/>',
        f'<geom {v} type="box" size="0.2 0.15 0.12" pos="2.1 0.7 {z0 + 0.86}" '
        'rgba="0.2 0.2 0.22 1"/>',
        # Pin boards with papers on both side walls (what the exterior cameras look across at).
        *(_pin_board(side) for side in (1.0, -1.0)),
        # Behind the robot: a door, a coat rack's coats (boxes), a poster.
        f'<geom {v} type="box" size="0.01 0.45 1.02" pos="-1.17 -1.1 {z0 + 1.02}" '
        'material="desk"/>',
        f'<geom {v} type="box" size="0.012 0.02 0.02" pos="-1.16 -0.75 {z0 + 1.0}" '
        'material="metal"/>',
        f'<geom {v} type="box" size="0.01 0.35 0.5" pos="-1.17 0.6 {z0 + 1.5}" '
        'material="board"/>',
        f'<geom {v} type="box" size="0.1 0.18 0.45" pos="-1.08 1.5 {z0 + 1.2}" '
        'rgba="0.2 0.25 0.35 1"/>',
        f'<geom {v} type="box" size="0.15 0.3 0.5" pos="-1.0 -0.2 {z0 + 0.5}" '
        'material="shelf"/>',
        # A ceiling.
        f'<geom {v} type="plane" size="2.2 2.4 0.1" pos="0.8 0 {z0 + wall_h}" quat="0 1 0 0" '
        'material="ceiling"/>',
    ]
    return '\n'.join(parts)


def _pin_board(side: float) -> str:
    """Return a cork board with a few sheets of paper on the side wall at y = side * 2.2."""
    z0 = FLOOR_Z
    y = side * 2.17
    v = 'class="visual"'
    parts = [f'<geom {v} type="box" size="0.55 0.01 0.4" pos="0.2 {y:.3f} {z0 + 1.45}" '
             'material="cork"/>']
    papers = ((-0.15, 0.1, '0.95 0.95 0.92'), (0.12, 0.15, '0.98 0.9 0.5'),
              (0.38, 0.05, '0.9 0.93 0.98'), (0.0, -0.2, '0.95 0.95 0.95'),
              (0.3, -0.2, '0.95 0.75 0.7'))
    for dx, dz, rgb in papers:
        parts.append(f'<geom {v} type="box" size="0.1 0.005 0.13" '
                     f'pos="{0.2 + dx:.3f} {y - side * 0.012:.3f} {z0 + 1.45 + dz:.3f}" '
                     f'rgba="{rgb} 1"/>')
    return '\n'.join(parts)


def look(with_table: bool = True, shadows: bool = True, antialias: int = 0) -> dict[str, Any]:
    """Return the MJCF fragments :func:`model.build_mjcf` fills in when visuals are on.

    ``shadows``: the key light casts shadows; ``antialias``: MSAA samples (0 = off). On a
    software renderer (EGL on llvmpipe, no GPU) shadows cost about 2x per image and MSAA
    3x on top of them; the rig file's ``render`` section sets both.
    """
    meshes = mesh_dir() is not None
    assets = [
        f'<texture name="realm_wood" type="2d" builtin="flat" rgb1="0.7 0.55 0.4" '
        f'width="{PAINTED["realm_wood"][0]}" height="{PAINTED["realm_wood"][1]}"/>',
        f'<texture name="realm_floor" type="2d" builtin="flat" rgb1="0.5 0.5 0.5" '
        f'width="{PAINTED["realm_floor"][0]}" height="{PAINTED["realm_floor"][1]}"/>',
        f'<texture name="realm_wall" type="2d" builtin="flat" rgb1="0.85 0.85 0.82" '
        f'width="{PAINTED["realm_wall"][0]}" height="{PAINTED["realm_wall"][1]}"/>',
        f'<texture name="realm_board" type="2d" builtin="flat" rgb1="0.95 0.95 0.95" '
        f'width="{PAINTED["realm_board"][0]}" height="{PAINTED["realm_board"][1]}"/>',
        '<material name="table" texture="realm_wood" texrepeat="2 2" texuniform="false" '
        'specular="0.25" shininess="0.35" reflectance="0.03"/>',
        '<material name="floor" texture="realm_floor" texrepeat="4 4" texuniform="true" '
        'specular="0.1" shininess="0.2"/>',
        '<material name="wall" texture="realm_wall" texrepeat="3 3" texuniform="true" '
        'specular="0.05"/>',
        '<material name="ceiling" rgba="0.92 0.92 0.9 1" specular="0"/>',
        '<material name="skirt" rgba="0.35 0.33 0.3 1"/>',
        '<material name="window" rgba="0.75 0.85 0.95 1" emission="0.6" specular="0.5"/>',
        '<material name="frame" rgba="0.8 0.8 0.8 1" specular="0.3"/>',
        '<material name="board" texture="realm_board" specular="0.4" shininess="0.6"/>',
        '<material name="shelf" rgba="0.55 0.45 0.35 1"/>',
        '<material name="cork" rgba="0.62 0.47 0.32 1" specular="0"/>',
        '<material name="desk" rgba="0.85 0.85 0.82 1" specular="0.2"/>',
        '<material name="metal" rgba="0.6 0.62 0.65 1" specular="0.6" shininess="0.7"/>',
    ]
    if meshes:
        assets.append(_mesh_assets())
    lights = (
        # Ceiling panel above the workspace (casts the shadows), two softer room lights.
        '<light name="key" pos="0.45 0.25 1.8" dir="0 -0.1 -1" directional="false" '
        'cutoff="70" exponent="2" diffuse="0.55 0.55 0.52" specular="0.25 0.25 0.25" '
        f'castshadow="{str(shadows).lower()}" attenuation="1 0 0"/>\n'
        '    <light name="fill" pos="1.6 -1.0 1.7" dir="-0.6 0.5 -0.8" diffuse="0.3 0.3 0.32" '
        'specular="0.05 0.05 0.05" castshadow="false"/>\n'
        '    <light name="room" pos="-0.6 1.0 1.6" dir="0.5 -0.4 -0.8" diffuse="0.22 0.22 0.22" '
        'specular="0 0 0" castshadow="false"/>')
    return {
        'visual': (f'<quality shadowsize="512" offsamples="{int(antialias)}"/>\n'
                   '    <map shadowclip="1.5" znear="0.01"/>\n'
                   '    <headlight ambient="0.38 0.38 0.38" diffuse="0.15 0.15 0.15" '
                   'specular="0 0 0"/>'),
        # The primitive collision geoms hide in group 3 when the meshes stand in for them.
        'robot_group': 3 if meshes else 1,
        'assets': '\n    '.join(assets),
        'lights': lights,
        'room': _room() if with_table else '',
    }


def _wood(width: int, height: int, rng: np.random.Generator) -> np.ndarray:
    """Return light birch plywood: straight fine grain along u, soft streaks, boards."""
    v = np.linspace(0.0, 1.0, height)[:, None]
    u = np.linspace(0.0, 1.0, width)[None, :]
    streaks = np.zeros((height, 1))
    for k, amp in ((7, 0.5), (19, 0.3), (53, 0.2)):
        streaks = streaks + amp * np.sin(2 * np.pi * (k * v + rng.uniform()))
    drift = 0.15 * np.sin(2 * np.pi * (u * 1.5 + 0.7 * v))
    fine = rng.normal(0.0, 1.0, (height, width))
    for shift in range(1, 6):  # smear the noise along the grain
        fine = fine + np.roll(fine, shift, axis=1)
    fine /= 6.0
    tone = 0.5 + 0.12 * streaks + 0.05 * drift + 0.10 * fine
    light = np.array([0.86, 0.76, 0.60])
    dark = np.array([0.72, 0.60, 0.44])
    rgb = dark + (light - dark) * np.clip(tone, 0.0, 1.0)[..., None]
    rgb[:: height // 4, :] *= 0.85  # board joints
    return rgb


def _floor(width: int, height: int, rng: np.random.Generator) -> np.ndarray:
    """Return grey vinyl tiles with speckle and grout lines (4 x 4 tiles per texture)."""
    base = 0.47 + 0.03 * rng.normal(size=(height, width))
    tiles = rng.uniform(-0.03, 0.03, (4, 4))
    tile = np.kron(tiles, np.ones((height // 4, width // 4)))
    grey = base + tile
    grout = np.zeros((height, width), dtype=bool)
    grout[:: height // 4, :] = True
    grout[:, :: width // 4] = True
    grey[grout] = 0.32
    rgb = np.stack([grey * 0.98, grey * 0.99, grey * 1.02], axis=-1)
    return rgb


def _wall(width: int, height: int, rng: np.random.Generator) -> np.ndarray:
    noise = rng.normal(0.0, 1.0, (height, width))
    noise = (noise + np.roll(noise, 1, 0) + np.roll(noise, 1, 1)) / 3.0
    grey = 0.86 + 0.012 * noise
    return np.stack([grey, grey * 0.99, grey * 0.95], axis=-1)


def _board(width: int, height: int, rng: np.random.Generator) -> np.ndarray:
    """Return a whiteboard with a few marker strokes."""
    rgb = np.full((height, width, 3), 0.95)
    for k in range(6):
        row = int(height * (0.15 + 0.12 * k))
        length = int(width * rng.uniform(0.3, 0.8))
        start = int(width * 0.1)
        colour = (0.15, 0.2, 0.6) if k % 2 else (0.1, 0.1, 0.1)
        rgb[row:row + 3, start:start + length] = colour
    return rgb


_PAINTERS = {'realm_wood': _wood, 'realm_floor': _floor, 'realm_wall': _wall,
             'realm_board': _board}


def paint_textures(model: Any) -> None:
    """Write the procedural textures into ``model.tex_data`` (before any renderer exists)."""
    rng = np.random.default_rng(7)
    for name, painter in _PAINTERS.items():
        try:
            tex = model.texture(name)
        except KeyError:
            continue
        tid = tex.id
        width, height = int(model.tex_width[tid]), int(model.tex_height[tid])
        channels = int(model.tex_nchannel[tid])
        rgb = np.clip(painter(width, height, rng), 0.0, 1.0)
        pixels = (rgb * 255.0 + 0.5).astype(np.uint8)
        if channels == 4:
            pixels = np.concatenate([pixels, np.full((height, width, 1), 255, np.uint8)], -1)
        adr = int(model.tex_adr[tid])
        model.tex_data[adr:adr + width * height * channels] = pixels.reshape(-1)


__all__ = ['FLOOR_Z', 'coupling', 'finger_visual', 'gripper_visual', 'link_visual', 'look',
           'mesh_dir', 'paint_textures']
