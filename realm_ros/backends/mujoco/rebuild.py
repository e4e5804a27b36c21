"""The rebuilt look: the lab's static scene painted onto the twin's known geometry.

From a calibration recording (``realm-ros cameras record``) and the calibrated rig (``cameras
calibrate``), :func:`build_rebuild` (``realm-ros cameras rebuild``) writes a folder the twin
takes as its look (``visual_match_dir``, ``--visual-match DIR``; :func:`looks.look_for` reads
``rebuild.yaml``), rendered from *any* camera, the wrist included:

* *Textures* (projective texturing): the table top, the floor and the four walls are planes of
  known pose (``model.py``, ``visuals.py``). Every texel's centre is projected into every view
  (the exterior cameras' clean plates, and each wrist frame from the wrist camera's pose at the
  recorded joints), kept where the twin's segmentation at that pixel shows the same surface
  (the robot, grown, and anything in front of the surface rejected), and blended with weight
  ``(f cos / d)^2`` (pixel footprint and viewing angle). One reweighting pass drops samples far
  from the blend (the arm's shadow in one wrist frame). Texels no view saw are filled from
  their seen neighbours (``cv2.inpaint``) and reported as a fraction per surface.
* *Light* (:func:`estimate_light`): the key light is a point light whose position is searched
  so that the robot's shadow it casts on the table, projected into the exterior cameras, covers
  the shadow seen there (frames darker than the plate by one factor); the shadow's darkening
  per channel gives the ambient and the key light's colour (its temperature reported). The
  textures are divided by that light's shading of each texel, so that the twin, lit by it,
  draws the recorded colours where nothing shades them and the arm's shadow where it does.
* *Robot paint*: a colour transform per camera on the robot's pixels between the recording and
  the rebuilt twin's render (:func:`visual_match.fit_colour`: ridge toward identity, held-out
  check, identity when the fit does not help).

Not rebuilt: the twin's other room furniture keeps its own materials (lit by the estimated
light); static clutter the twin lacks is painted flat onto the surface behind it (right from the
exterior cameras, without parallax from the wrist); task objects are not in a calibration
recording (a cleared table), so their colours are the twin's, under the estimated light.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
from typing import Any, Mapping, Sequence

import numpy as np

from realm_ros.backends.mujoco import camera_rig
from realm_ros.backends.mujoco.appearance import Look, Segmenter
from realm_ros.backends.mujoco.calibration import CameraPose
from realm_ros.backends.mujoco.visual_match import colour_where, robot_geoms, seg_mask
from realm_ros.core.errors import ConfigError

#: Texture resolution per surface, m per texel.
TEXEL_M = {'table': 0.002, 'floor': 0.01, 'wall': 0.01}
#: Rebuilt planes sit this far in front of the twin's surfaces, m.
LIFT_M = 0.001
#: The geom group the twin's rebuilt surfaces move to (MuJoCo draws groups 0-2 by default).
HIDDEN_GROUP = 4
#: The robot's pixels are grown by this before a view's pixels count for a surface, px.
ROBOT_GROW_PX = 3
#: A table top more unseen than this (beyond the robot's base) is warned about.
WARN_UNSEEN = 0.005
#: The robot's base covers the table within this of its axis for good, m.
BASE_RADIUS_M = 0.15
#: Samples further than this from the first blend (summed |RGB|, 0-765) lose their weight.
OUTLIER = 60.0
#: The rebuilt light's highest level on the table's centre (``build_rebuild``).
TWIN_LIGHT = 1.3
#: The rebuilt twin renders at this fraction of its light and :meth:`RebuiltLook.expose`
#: multiplies the picture back: MuJoCo clamps the light summed on a surface to 1 before the
#: texture or colour multiplies it, and the lab's light on a surface facing every lamp is
#: above that (so are the twin's own lights, 1.3 on the table's centre).
EXPOSURE = 0.5
#: The key light hangs below the twin's ceiling (``visuals._room``: 1.84 m), m.
CEILING_Z = 1.79
#: The table's centre, about which the key light is searched, m.
TABLE_CENTRE = (0.45, 0.0, 0.0)


@dataclasses.dataclass(frozen=True)
class Surface:
    """A rectangle of the twin's scene, textured: centre, in-plane axes (x to the texture's
    columns, y to its rows upwards), half sizes (m), texture size (px)."""

    name: str
    kind: str
    centre: tuple[float, float, float]
    ex: tuple[float, float, float]
    ey: tuple[float, float, float]
    half: tuple[float, float]

    @property
    def normal(self) -> np.ndarray:
        """The side the cameras see."""
        return np.cross(self.ex, self.ey)

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns) of its texture."""
        step = TEXEL_M[self.kind]
        return (max(4, round(2 * self.half[1] / step)), max(4, round(2 * self.half[0] / step)))

    def texels(self) -> np.ndarray:
        """Return each texel's centre (rows * cols, 3), m; row 0 at +y (MuJoCo's plane
        mapping, checked by ``test_rebuild.py``)."""
        rows, cols = self.shape
        x = -self.half[0] + (np.arange(cols) + 0.5) * 2 * self.half[0] / cols
        y = self.half[1] - (np.arange(rows) + 0.5) * 2 * self.half[1] / rows
        gx, gy = np.meshgrid(x, y)
        return (np.asarray(self.centre)[None] + gx.reshape(-1, 1) * np.asarray(self.ex)[None]
                + gy.reshape(-1, 1) * np.asarray(self.ey)[None])

    def xml(self) -> str:
        """The visual plane drawing it, LIFT_M in front of the twin's surface."""
        pos = np.asarray(self.centre) + LIFT_M * self.normal
        axes = ' '.join(f'{v:.6g}' for v in (*self.ex, *self.ey))
        return (f'<geom class="visual" name="rebuilt_{self.name}" type="plane" '
                f'size="{self.half[0]:.6g} {self.half[1]:.6g} 0.01" '
                f'pos="{pos[0]:.6g} {pos[1]:.6g} {pos[2]:.6g}" xyaxes="{axes}" '
                f'material="rebuilt_{self.name}"/>')


def scene_surfaces() -> tuple[Surface, ...]:
    """The twin's table top, floor and four walls (``model.py``, ``visuals._room``)."""
    from realm_ros.backends.mujoco.model import TABLE_TOP_Z
    from realm_ros.backends.mujoco.visuals import FLOOR_Z

    z_mid, half_h = FLOOR_Z + 1.3, 1.3
    up = (0.0, 0.0, 1.0)
    return (
        Surface('table', 'table', (0.45, 0.0, TABLE_TOP_Z), (1, 0, 0), (0, 1, 0), (0.6, 0.8)),
        Surface('floor', 'floor', (0.8, 0.0, FLOOR_Z), (1, 0, 0), (0, 1, 0), (2.0, 2.2)),
        Surface('wall_back', 'wall', (-1.18, 0.0, z_mid), (0, 1, 0), up, (2.2, half_h)),
        Surface('wall_front', 'wall', (2.78, 0.0, z_mid), (0, -1, 0), up, (2.2, half_h)),
        Surface('wall_left', 'wall', (0.8, 2.18, z_mid), (1, 0, 0), up, (2.0, half_h)),
        Surface('wall_right', 'wall', (0.8, -2.18, z_mid), (-1, 0, 0), up, (2.0, half_h)),
    )


def surface_geoms(model: Any, surface: Surface) -> np.ndarray:
    """Return the ids of the twin's geoms that are ``surface`` (table top, floor, the wall
    box nearest the plane)."""
    if surface.kind in ('table', 'floor'):
        return np.array([model.geom(f'{surface.kind}_top' if surface.kind == 'table'
                                    else 'floor').id])
    try:
        wall = model.material('wall').id
    except KeyError:
        return np.zeros(0, int)
    ids = np.flatnonzero(model.geom_matid == wall)
    if not len(ids):
        return ids
    # The wall box whose centre lies nearest the plane, along its normal.
    off = np.abs((model.geom_pos[ids] - np.asarray(surface.centre)) @ surface.normal)
    return ids[[int(np.argmin(off))]]


# -- views -----------------------------------------------------------------------------------


@dataclasses.dataclass
class View:
    """One picture of the static scene: image (H, W, 3) uint8, the twin's geom id per pixel
    (-1 where the robot is, grown, or nothing known), the camera's pose."""

    camera: str
    image: np.ndarray
    ids: np.ndarray
    pose: CameraPose
    #: The arm's shadow on the table at this frame (:func:`table_shadow`), or None.
    shadow: np.ndarray | None = None


#: The table's shadow grids: cell size, m, and the growth around the cast points, cells.
SHADOW_CELL_M = 0.01
SHADOW_GROW = 3


def table_shadow(points: np.ndarray, light: np.ndarray) -> np.ndarray:
    """Return where the robot's ``points`` (N, 3) shadow the table from a point light at
    ``light``: a bool grid over the table (rows along x, columns along y), grown."""
    import cv2

    rows, cols = round(1.2 / SHADOW_CELL_M), round(1.6 / SHADOW_CELL_M)
    grid = np.zeros((rows, cols), np.uint8)
    cast = _cast(points, light)
    if len(cast):
        r = np.clip(((cast[:, 0] - TABLE_CENTRE[0] + 0.6) / SHADOW_CELL_M).astype(int), 0,
                    rows - 1)
        c = np.clip(((cast[:, 1] + 0.8) / SHADOW_CELL_M).astype(int), 0, cols - 1)
        grid[r, c] = 1
        size = 2 * SHADOW_GROW + 1
        grid = np.asarray(cv2.dilate(grid, np.ones((size, size), np.uint8)), np.uint8)
    return grid > 0


def _in_shadow(grid: np.ndarray, points: np.ndarray) -> np.ndarray:
    rows, cols = grid.shape
    r = np.clip(((points[:, 0] - TABLE_CENTRE[0] + 0.6) / SHADOW_CELL_M).astype(int), 0,
                rows - 1)
    c = np.clip(((points[:, 1] + 0.8) / SHADOW_CELL_M).astype(int), 0, cols - 1)
    return grid[r, c]


def _sample(image: np.ndarray, uv: np.ndarray) -> np.ndarray:
    """Return ``image`` (H, W, 3) read bilinearly at ``uv`` (N, 2) px, (N, 3) float."""
    h, w = image.shape[:2]
    x = np.clip(uv[:, 0] - 0.5, 0.0, w - 1.001)
    y = np.clip(uv[:, 1] - 0.5, 0.0, h - 1.001)
    x0, y0 = x.astype(int), y.astype(int)
    fx, fy = (x - x0)[:, None], (y - y0)[:, None]
    img = image.astype(np.float32)
    top = img[y0, x0] * (1 - fx) + img[y0, x0 + 1] * fx
    bottom = img[y0 + 1, x0] * (1 - fx) + img[y0 + 1, x0 + 1] * fx
    return np.asarray(top * (1 - fy) + bottom * fy, float)


def _accumulate(surface: Surface, geoms: np.ndarray, views: Sequence[View],
                first: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Return (sum of w * colour (N, 3), sum of w (N,)) over ``views`` for ``surface``'s
    texels; with ``first`` (a blend), samples far from it are down-weighted."""
    points = surface.texels()
    n = surface.normal
    acc = np.zeros((len(points), 3))
    weight = np.zeros(len(points))
    for view in views:
        h, w = view.image.shape[:2]
        uv, front = view.pose.project(points, w, h)
        ok = front & (uv[:, 0] >= 0) & (uv[:, 0] < w) & (uv[:, 1] >= 0) & (uv[:, 1] < h)
        ray = view.pose.position[None] - points
        dist = np.linalg.norm(ray, axis=1)
        cos = (ray @ n) / np.maximum(dist, 1e-9)
        ok &= cos > 0.05
        idx = np.flatnonzero(ok)
        if not len(idx):
            continue
        cols = np.minimum(uv[idx, 0].astype(int), w - 1)
        rows = np.minimum(uv[idx, 1].astype(int), h - 1)
        keep = np.isin(view.ids[rows, cols], geoms)
        if view.shadow is not None and surface.kind == 'table':
            keep &= ~_in_shadow(view.shadow, points[idx])
        idx = idx[keep]
        if not len(idx):
            continue
        colour = _sample(view.image, uv[idx])
        f = 0.5 * h / math.tan(math.radians(view.pose.fovy) / 2.0)
        wt = (f * cos[idx] / dist[idx]) ** 2
        if first is not None:
            far = np.abs(colour - first[idx]).sum(1)
            wt = wt * np.exp(-(far / OUTLIER) ** 2)
        np.add.at(weight, idx, wt)
        np.add.at(acc, idx, wt[:, None] * colour)
    return acc, weight


def project_surface(surface: Surface, geoms: np.ndarray,
                    views: Sequence[View]) -> tuple[np.ndarray, np.ndarray]:
    """Return ``surface``'s texture as seen (rows, cols, 3) float 0-255, NaN-free, and its
    seen mask (rows, cols) bool (texels no view saw are inpainted from their neighbours)."""
    import cv2

    rows, cols = surface.shape
    acc, weight = _accumulate(surface, geoms, views, None)
    seen = weight > 0
    first = np.where(seen[:, None], acc / np.maximum(weight, 1e-12)[:, None], 0.0)
    acc, weight2 = _accumulate(surface, geoms, views, first)
    blend = np.where((weight2 > 1e-9 * np.maximum(weight, 1e-12))[:, None],
                     acc / np.maximum(weight2, 1e-12)[:, None], first)
    texture = blend.reshape(rows, cols, 3)
    mask = seen.reshape(rows, cols)
    if mask.any() and not mask.all():
        hole = (~mask).astype(np.uint8)
        # Inpainting a large hole at full size is slow: fill at a quarter, then keep the seen.
        small = cv2.resize(np.clip(texture, 0, 255).astype(np.uint8), (cols // 4 or 1,
                                                                        rows // 4 or 1),
                           interpolation=cv2.INTER_AREA)
        small_hole = (cv2.resize(hole.astype(np.float32), (small.shape[1], small.shape[0]),
                                 interpolation=cv2.INTER_AREA) > 0).astype(np.uint8)
        filled = cv2.inpaint(small, small_hole, 5, cv2.INPAINT_TELEA)
        big = cv2.resize(filled, (cols, rows), interpolation=cv2.INTER_LINEAR).astype(float)
        texture = np.where(mask[..., None], texture, big)
    return texture, mask


# -- light -----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class KeyLight:
    """The rebuilt key light: a spot light at ``position`` aimed at the table's centre,
    ``rgb`` its diffuse colour, ``ambient`` the ambient light (rgb), ``cutoff_deg`` its cone;
    ``estimated``: found from the arm's shadow (else a light above the table);
    ``shadow_iou``: the overlap of the shadow it casts with the shadow seen."""

    position: tuple[float, float, float] = (0.45, 0.0, 2.0)
    rgb: tuple[float, float, float] = (0.6, 0.6, 0.6)
    ambient: tuple[float, float, float] = (0.4, 0.4, 0.4)
    cutoff_deg: float = 75.0
    estimated: bool = False
    shadow_iou: float = 0.0
    #: The twin's fill and room lights (:data:`FILLS`) shine too (unshadowed).
    fills: bool = False

    @property
    def direction(self) -> np.ndarray:
        """Unit vector from the light to the table's centre."""
        d = np.asarray(TABLE_CENTRE) - np.asarray(self.position)
        return d / np.linalg.norm(d)

    def colour_temperature_k(self) -> float:
        """The black-body temperature whose colour is nearest the light's (1500-15000 K)."""
        from realm_ros.core.appearance import colour_temperature_rgb

        rgb = np.asarray(self.rgb) / max(max(self.rgb), 1e-9)
        grid = np.arange(1500.0, 15001.0, 50.0)
        errors = [float(np.abs(np.asarray(colour_temperature_rgb(k)) - rgb).sum()) for k in grid]
        return float(grid[int(np.argmin(errors))])

    def shading(self, points: np.ndarray, normal: np.ndarray) -> np.ndarray:
        """Return the light falling on ``points`` (N, 3) of a surface facing ``normal``,
        unshadowed: ambient + key (N, 3), as MuJoCo's spot light with exponent 0 draws it."""
        to_light = np.asarray(self.position)[None] - points
        dist = np.linalg.norm(to_light, axis=1)
        cos = np.maximum((to_light @ normal) / dist, 0.0)
        axis = -(to_light / dist[:, None]) @ self.direction
        cos = np.where(axis >= math.cos(math.radians(self.cutoff_deg)), cos, 0.0)
        out = np.asarray(self.ambient)[None] + cos[:, None] * np.asarray(self.rgb)[None]
        if self.fills:
            out = out + fill_shading(points, normal)
        return out

    def to_yaml(self) -> dict[str, Any]:
        """The ``light`` section of ``rebuild.yaml``."""
        return {'position': [round(float(v), 4) for v in self.position],
                'rgb': [round(float(v), 4) for v in self.rgb],
                'ambient': [round(float(v), 4) for v in self.ambient],
                'cutoff_deg': round(float(self.cutoff_deg), 2),
                'colour_temperature_k': round(self.colour_temperature_k()),
                'intensity': round(float(max(self.rgb)), 4),
                'estimated': bool(self.estimated), 'shadow_iou': round(float(self.shadow_iou), 4),
                'fills': bool(self.fills)}

    @classmethod
    def from_yaml(cls, entry: Mapping[str, Any]) -> KeyLight:
        """Read the ``light`` section."""
        def three(key: str) -> tuple[float, float, float]:
            v = [float(x) for x in entry[key]]
            return v[0], v[1], v[2]

        return cls(three('position'), three('rgb'), three('ambient'), float(entry['cutoff_deg']),
                   bool(entry.get('estimated', False)), float(entry.get('shadow_iou', 0.0)),
                   bool(entry.get('fills', False)))


#: The twin's fill and room lights (``visuals.look``): position, direction, diffuse, cutoff
#: (deg), exponent. The rebuilt look keeps them: the lab's robot and objects are lit from more
#: than one side, and the twin's guess of its room lights is better than none.
FILLS = (((1.6, -1.0, 1.7), (-0.6, 0.5, -0.8), (0.3, 0.3, 0.32), 45.0, 10.0),
         ((-0.6, 1.0, 1.6), (0.5, -0.4, -0.8), (0.22, 0.22, 0.22), 45.0, 10.0))


def fill_shading(points: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """Return the light :data:`FILLS` put on ``points`` (N, 3) of a surface facing ``normal``
    (N, 3), as MuJoCo's spot lights draw it (``cos^exponent`` inside the cone)."""
    out = np.zeros((len(points), 3))
    for pos, direction, diffuse, cutoff, exponent in FILLS:
        axis_dir = np.asarray(direction) / np.linalg.norm(direction)
        to_light = np.asarray(pos)[None] - points
        dist = np.linalg.norm(to_light, axis=1)
        cos = np.maximum((to_light @ normal) / dist, 0.0)
        axis = -(to_light / dist[:, None]) @ axis_dir
        spot = np.where(axis >= math.cos(math.radians(cutoff)),
                        np.maximum(axis, 0.0) ** exponent, 0.0)
        out += (cos * spot)[:, None] * np.asarray(diffuse)[None]
    return out


def _cutoff(position: np.ndarray) -> float:
    """A cone from ``position`` that takes in the table's corners with 10 deg to spare."""
    d = np.asarray(TABLE_CENTRE) - position
    d /= np.linalg.norm(d)
    corners = np.array([[0.45 + sx * 0.6, sy * 0.8, 0.0] for sx in (-1, 1) for sy in (-1, 1)])
    rays = corners - position
    rays /= np.linalg.norm(rays, axis=1, keepdims=True)
    return float(min(80.0, math.degrees(math.acos(float(np.min(rays @ d)))) + 10.0))


def _cast(points: np.ndarray, light: np.ndarray) -> np.ndarray:
    """Return where ``points`` (N, 3) shadow the table plane z = 0 from a point light."""
    z = points[:, 2]
    ok = (z > 0.01) & (z < light[2] - 0.05)
    p = points[ok]
    s = light[None] + (p - light[None]) * (light[2] / (light[2] - p[:, 2]))[:, None]
    inside = (np.abs(s[:, 0] - TABLE_CENTRE[0]) < 0.6) & (np.abs(s[:, 1]) < 0.8)
    return s[inside]


@dataclasses.dataclass
class ShadowEvidence:
    """One exterior frame's evidence for the light: the camera, the robot's points, the seen
    shadow and where a shadow could be seen (the table, away from the robot), at the scale
    the search runs at."""

    pose: CameraPose
    points: np.ndarray
    seen: np.ndarray
    valid: np.ndarray
    ratio: np.ndarray  # (K, 3) frame / plate on the seen shadow's pixels


def shadow_mask(frame: np.ndarray, plate: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Return the pixels of ``frame`` in shadow against ``plate`` (darker by about one factor in
    every channel) within ``valid``; a 3x3 opening removes specks."""
    import cv2

    ratio = (frame.astype(np.float32) + 4.0) / (plate.astype(np.float32) + 4.0)
    dark = (np.all(ratio < 0.88, -1) & np.all(ratio > 0.15, -1)
            & (ratio.max(-1) - ratio.min(-1) < 0.3) & valid)
    return cv2.morphologyEx(dark.astype(np.uint8), cv2.MORPH_OPEN, np.ones((3, 3), np.uint8)) > 0


def _score(evidence: Sequence[ShadowEvidence], light: np.ndarray) -> float:
    import cv2

    inter = union = 0
    kernel = np.ones((3, 3), np.uint8)
    for ev in evidence:
        h, w = ev.seen.shape
        cast = _cast(ev.points, light)
        pred = np.zeros((h, w), np.uint8)
        if len(cast):
            uv, front = ev.pose.project(cast, w, h)
            uv = uv[front]
            ok = (uv[:, 0] >= 0) & (uv[:, 0] < w) & (uv[:, 1] >= 0) & (uv[:, 1] < h)
            pred[uv[ok, 1].astype(int), uv[ok, 0].astype(int)] = 1
            pred = np.asarray(cv2.morphologyEx(pred, cv2.MORPH_CLOSE, kernel), np.uint8)
        p = (pred > 0) & ev.valid
        inter += int((p & ev.seen).sum())
        union += int((p | ev.seen).sum())
    return inter / union if union else 0.0


def _candidate(tilt: float, azimuth: float, distance: float) -> np.ndarray:
    t, a = math.radians(tilt), math.radians(azimuth)
    d = np.array([math.sin(t) * math.cos(a), math.sin(t) * math.sin(a), -math.cos(t)])
    return np.asarray(TABLE_CENTRE) - d * distance


def estimate_light(evidence: Sequence[ShadowEvidence], min_iou: float = 0.15) -> KeyLight:
    """Return the key light that best explains the arm's shadows (module docstring).

    A grid over the light's direction from the table's centre (tilt 0-48 deg, every 20 deg of
    azimuth) and distance (1.3-4 m), below the twin's ceiling (above it, the ceiling would
    shade everything), then two finer grids about the best. Falls back to a light
    2 m above the table (``estimated`` False) when the best overlap is below ``min_iou`` or
    no shadow was seen.
    """
    seen = sum(int(ev.seen.sum()) for ev in evidence)
    if not evidence or seen < 20:
        return KeyLight()
    grid = [(0.0, 0.0, dist) for dist in (1.3, 1.8, 2.6, 4.0)]
    grid += [(t, a, dist) for t in range(6, 49, 6) for a in range(0, 360, 20)
             for dist in (1.3, 1.8, 2.6, 4.0)]
    grid = [c for c in grid if _candidate(*c)[2] <= CEILING_Z]
    scores = [_score(evidence, _candidate(*c)) for c in grid]
    best = grid[int(np.argmax(scores))]
    best_score = max(scores)
    for step_t, step_a, factor in ((3.0, 10.0, 1.2), (1.5, 5.0, 1.08)):
        local = [(max(0.0, best[0] + dt * step_t), best[1] + da * step_a, best[2] * factor ** dk)
                 for dt in (-1, 0, 1) for da in (-1, 0, 1) for dk in (-1, 0, 1)]
        local = [c for c in local if _candidate(*c)[2] <= CEILING_Z]
        local_scores = [_score(evidence, _candidate(*c)) for c in local]
        if max(local_scores) > best_score:
            best_score = max(local_scores)
            best = local[int(np.argmax(local_scores))]
    position = _candidate(*best)
    if best_score < min_iou:
        return KeyLight(shadow_iou=best_score)
    ratios = np.concatenate([ev.ratio for ev in evidence if len(ev.ratio)])
    r = np.clip(np.median(ratios, axis=0), 0.05, 0.95)
    # Lit = A + I cos0 = 1 at the table's centre, shadow = A: the shadow's darkening.
    to_light = position - np.asarray(TABLE_CENTRE)
    cos0 = float(to_light[2] / np.linalg.norm(to_light))
    key = (1.0 - r) / max(cos0, 0.1)
    return KeyLight((float(position[0]), float(position[1]), float(position[2])),
                    (float(key[0]), float(key[1]), float(key[2])),
                    (float(r[0]), float(r[1]), float(r[2])), _cutoff(position), True, best_score)


# -- the look --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SurfaceTexture:
    """A rebuilt surface: its texture (rows, cols, 3) uint8 (albedo under the rebuilt light),
    the emission that keeps it within range, and the fraction of it no view saw."""

    surface: Surface
    texture: np.ndarray
    emission: float
    unseen: float


class RebuiltLook(Look):
    """The rebuilt twin's look (module docstring): textured planes, the estimated key light,
    the robot's colour transform per camera.

    Every camera renders the rebuilt scene. An exterior camera at its calibrated pose also has
    its clean plate: there the static pixels are the plate's, darkened where the rendered
    scene is in the robot's (or an object's) shadow by as much as the render is (differential
    rendering: the plate times rendered over unshadowed), so the plate's detail and the
    twin's shadows come together; the robot, the objects and the fixtures are rendered.
    """

    def __init__(self, folder: pathlib.Path, rig: camera_rig.Rig,
                 textures: Sequence[SurfaceTexture], light: KeyLight,
                 colours: Mapping[str, np.ndarray],
                 plates: Mapping[str, np.ndarray] | None = None) -> None:
        self.folder = folder
        self.calibrated = rig
        self.textures = tuple(textures)
        self.light = light
        self.colours = dict(colours)
        self.plates = dict(plates or {})
        self._robot: tuple[Any, np.ndarray, np.ndarray] | None = None
        self._unlit: dict[tuple[str, int, int], tuple[np.ndarray, np.ndarray]] = {}

    @classmethod
    def load(cls, folder: str | pathlib.Path) -> RebuiltLook:
        """Read a ``cameras rebuild`` folder.

        Raises:
            ConfigError: missing or malformed ``rebuild.yaml``, ``rig.yaml`` or a texture.
        """
        import imageio.v2 as imageio

        from realm_ros.core.config import load_yaml

        folder = pathlib.Path(folder).expanduser().resolve()
        where = f'visual_match_dir {folder}'
        data = load_yaml(folder / 'rebuild.yaml')
        rig = camera_rig.load_rig(str(folder / 'rig.yaml'))
        by_name = {s.name: s for s in scene_surfaces()}
        textures = []
        try:
            for name, entry in (data.get('surfaces') or {}).items():
                if not entry.get('texture'):
                    continue
                path = folder / str(entry['texture'])
                image = np.asarray(imageio.imread(path))[..., :3]
                if image.shape[:2] != by_name[name].shape:
                    raise ConfigError(f'{where}: {path} is {image.shape[1]}x{image.shape[0]}, '
                                      f'surface {name} needs {by_name[name].shape[1]}x'
                                      f'{by_name[name].shape[0]}')
                textures.append(SurfaceTexture(by_name[name], image,
                                               float(entry.get('emission', 0.0)),
                                               float(entry.get('unseen_fraction', 0.0))))
            light = KeyLight.from_yaml(data['light'])
            cams = data.get('cameras') or {}
            colours = {name: np.asarray(entry['colour'], float).reshape(4, 3)
                       for name, entry in cams.items() if 'colour' in entry}
            plates = {name: np.asarray(imageio.imread(folder / str(entry['plate'])))[..., :3]
                      for name, entry in cams.items() if entry.get('plate')}
        except (KeyError, TypeError, ValueError, OSError, AttributeError) as err:
            raise ConfigError(f'{where}: malformed rebuild.yaml or texture: {err!r}') from None
        return cls(folder, rig, textures, light, colours, plates)

    def rig(self, rig: camera_rig.Rig) -> camera_rig.Rig:
        """The calibrated cameras; the key light's shadows drawn."""
        return dataclasses.replace(rig, exterior=self.calibrated.exterior,
                                   wrist=self.calibrated.wrist, source=self.calibrated.source,
                                   shadows=True)

    def body_xml(self) -> str:
        """A textured plane per rebuilt surface."""
        return '\n'.join(t.surface.xml() for t in self.textures)

    def asset_xml(self) -> str:
        """A texture and a material per rebuilt surface (painted in :meth:`dress`)."""
        out = []
        for t in self.textures:
            rows, cols = t.texture.shape[:2]
            name = f'rebuilt_{t.surface.name}'
            out.append(f'<texture name="{name}" type="2d" builtin="flat" rgb1="1 1 1" '
                       f'width="{cols}" height="{rows}"/>')
            out.append(f'<material name="{name}" texture="{name}" texrepeat="1 1" '
                       f'texuniform="false" specular="0" shininess="0" reflectance="0" '
                       f'emission="{t.emission * EXPOSURE:.5g}"/>')
        return '\n'.join(out)

    def dress(self, model: Any) -> None:
        """The textures, the key light (a spot at the estimated position, shadows), the
        ambient; the twin's other lights and its headlight's diffuse off."""
        import mujoco

        for t in self.textures:
            tex = model.texture(f'rebuilt_{t.surface.name}').id
            adr, n = int(model.tex_adr[tex]), int(model.tex_nchannel[tex])
            pixels = t.texture
            if n == 4:
                pixels = np.concatenate(
                    [pixels, np.full(pixels.shape[:2] + (1,), 255, np.uint8)], -1)
            model.tex_data[adr:adr + pixels.size] = pixels.reshape(-1)
        # The twin's own surfaces under the planes: hidden (group 4 is not drawn), so that
        # neither they nor their shadow maps fight with the planes a millimetre above them.
        for t in self.textures:
            model.geom_group[surface_geoms(model, t.surface)] = HIDDEN_GROUP
        key = model.light('key').id
        light = self.light
        model.light_type[key] = mujoco.mjtLightType.mjLIGHT_SPOT
        model.light_pos[key] = light.position
        model.light_dir[key] = light.direction
        model.light_diffuse[key] = EXPOSURE * np.asarray(light.rgb)
        model.light_specular[key] = 0.1 * np.asarray(light.rgb)
        model.light_ambient[key] = 0.0
        model.light_cutoff[key] = light.cutoff_deg
        model.light_exponent[key] = 0.0
        model.light_attenuation[key] = (1.0, 0.0, 0.0)
        model.light_castshadow[key] = True
        for other in range(model.nlight):
            if other != key:
                model.light_active[other] = light.fills
                model.light_castshadow[other] = False
                model.light_diffuse[other] *= EXPOSURE
                model.light_specular[other] *= EXPOSURE
        model.vis.headlight.ambient[:] = EXPOSURE * np.asarray(light.ambient)
        model.vis.headlight.diffuse[:] = 0.0
        model.vis.headlight.specular[:] = 0.0
        model.vis.quality.shadowsize = max(int(model.vis.quality.shadowsize), 2048)

    def unlit(self, world: Any, camera: str, width: int, height: int
              ) -> tuple[np.ndarray, np.ndarray]:
        """Return, for a fixed camera, what the rebuilt scene draws without shadows (H, W, 3)
        float 0-255 and the rebuilt plane's geom id per pixel (-1: none), by casting each
        pixel's ray onto the planes (computed once per camera and size)."""
        key = (camera, width, height)
        if key in self._unlit:
            return self._unlit[key]
        pose = camera_pose(world.model, world.data, camera)
        f = 0.5 * height / math.tan(math.radians(pose.fovy) / 2.0)
        u, v = np.meshgrid(np.arange(width) + 0.5, np.arange(height) + 0.5)
        rays = np.stack([(u - width / 2) / f, -(v - height / 2) / f, -np.ones_like(u)], -1)
        rays = rays.reshape(-1, 3) @ pose.rot.T
        best = np.full(len(rays), np.inf)
        value = np.zeros((len(rays), 3))
        ids = np.full(len(rays), -1)
        for t in self.textures:
            surface = t.surface
            n = surface.normal
            centre = np.asarray(surface.centre) + LIFT_M * n
            denom = rays @ n
            with np.errstate(divide='ignore', invalid='ignore'):
                dist = ((centre - pose.position) @ n) / denom
            hit = pose.position[None] + dist[:, None] * rays
            x = (hit - centre) @ np.asarray(surface.ex, float)
            y = (hit - centre) @ np.asarray(surface.ey, float)
            ok = ((denom < 0) & (dist > 0) & (dist < best) & (np.abs(x) < surface.half[0])
                  & (np.abs(y) < surface.half[1]))
            if not ok.any():
                continue
            rows, cols = t.texture.shape[:2]
            col = np.clip(((x[ok] + surface.half[0]) / (2 * surface.half[0]) * cols).astype(int),
                          0, cols - 1)
            row = np.clip(((surface.half[1] - y[ok]) / (2 * surface.half[1]) * rows)
                          .astype(int), 0, rows - 1)
            shade = self.light.shading(hit[ok], n) + t.emission
            value[ok] = t.texture[row, col].astype(float) * shade
            best[ok] = dist[ok]
            ids[ok] = world.model.geom(f'rebuilt_{surface.name}').id
        self._unlit[key] = (value.reshape(height, width, 3), ids.reshape(height, width))
        return self._unlit[key]

    @staticmethod
    def expose(image: np.ndarray) -> np.ndarray:
        """Return a rendered picture at the light's full level (``EXPOSURE``)."""
        return np.clip(image.astype(np.float32) / EXPOSURE + 0.5, 0, 255).astype(np.uint8)

    def finish(self, world: Any, images: dict[str, np.ndarray],
               segment: Segmenter) -> dict[str, np.ndarray]:
        """The robot's pixels through each camera's colour transform; an exterior camera's
        static pixels from its plate, shadowed as rendered (class docstring)."""
        from realm_ros.backends.mujoco.visual_match import kept_geoms

        images = {name: self.expose(image) for name, image in images.items()}
        if not any(name in self.colours or name in self.plates for name in images):
            return images
        if self._robot is None or self._robot[0] is not world.model:
            self._robot = (world.model, robot_geoms(world.model), kept_geoms(world.model))
        seg = segment()
        out = dict(images)
        for name, image in images.items():
            picture = image
            if name in self.colours:
                picture = colour_where(image, seg_mask(seg[name], self._robot[1]),
                                       self.colours[name])
            if name in self.plates and self._at_plate(world, name):
                h, w = image.shape[:2]
                plate = self.plates[name]
                if plate.shape[:2] != (h, w):
                    import cv2

                    plate = cv2.resize(plate, (w, h), interpolation=cv2.INTER_AREA)
                unlit, planes = self.unlit(world, name, w, h)
                on_plane = (seg[name][..., 1] == 5) & (seg[name][..., 0] == planes)
                factor = np.clip(image.astype(float) / np.maximum(unlit, 1.0), 0.0, 1.0)
                factor = np.where(on_plane[..., None] & (factor.mean(-1, keepdims=True) < 0.9),
                                  factor, 1.0)
                background = np.clip(plate * factor + 0.5, 0, 255).astype(np.uint8)
                keep = seg_mask(seg[name], self._robot[2])
                picture = np.where(keep[..., None], picture, background)
            out[name] = picture
        return out

    def _at_plate(self, world: Any, camera: str) -> bool:
        """Whether ``camera`` stands where its plate was taken (a V-VIEW moves it off)."""
        spec = next((c for c in self.calibrated.exterior if c.name == camera), None)
        if spec is None:
            return False
        pose = camera_pose(world.model, world.data, camera)
        return bool(np.linalg.norm(pose.position - np.asarray(spec.pos)) < 1e-3)


def is_rebuild(folder: str | pathlib.Path) -> bool:
    """Whether ``folder`` is a ``cameras rebuild`` folder (it has ``rebuild.yaml``)."""
    return (pathlib.Path(folder).expanduser() / 'rebuild.yaml').is_file()


def camera_pose(model: Any, data: Any, camera: str) -> CameraPose:
    cam = model.camera(camera).id
    return CameraPose(np.array(data.cam_xpos[cam]), np.array(data.cam_xmat[cam]).reshape(3, 3),
                      float(model.cam_fovy[cam]))


__all__ = ['KeyLight', 'RebuiltLook', 'Surface', 'View', 'camera_pose', 'estimate_light',
           'is_rebuild', 'project_surface', 'scene_surfaces', 'shadow_mask', 'table_shadow']
