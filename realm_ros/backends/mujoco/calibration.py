"""Calibrate the exterior cameras from a recording: match the twin's robot to the robot seen.

RobotArena infinity's camera-robot calibration without its learned models. The recording
(``realm-ros cameras record``) holds joint states and images of the arm moving through every
exterior camera's view over a cleared table. Per exterior camera:

1. *Robot, modelled*: the twin's visual robot geometry (mesh vertices and points sampled on
   its surfaces) at each frame's recorded joints, projected through a pinhole camera
   with MuJoCo's conventions (square pixels, ``f = H / 2 / tan(fovy / 2)``); parts that move
   less than ``STATIC_M`` over the recording are left out (they are in the plate).
2. *Robot pixels, seen*: background subtraction against a plate made of the frames where the
   twin's robot at the rig file's camera, grown by ``PRIOR_GROW`` of the image width, leaves
   the pixel free (the plain temporal median holds the arm where it stays long); a pixel is
   robot where it differs from the plate by more than ``threshold`` and is not a shadow
   (darker than the plate by one factor in every channel, no darker than ``SHADOW_MIN``)
   away from where the robot may be (there it is its own shaded paint).
3. *Coarse*: CMA-ES (``cma``) over seven parameters (position 3, cm; rotation vector in the
   camera frame 3, deg; vertical FOV 1, deg) from the rig file's camera, at half then full
   resolution, on a symmetric silhouette chamfer (capped distance transforms).
4. *Fine*, twice: a clean plate without the robot where the fit places it, the masks again,
   then Gauss-Newton on the seen silhouette's signed distance at the model's outline points
   (:func:`refine_edges`): smooth where the chamfer's valley is flat. The seen silhouette's
   uniform growth (blur, threshold) is fitted beside the pose.

The wrist camera's mount (:func:`calibrate_wrist`): the hand's mesh outline from the rig's
mount moved by the same seven parameters, fitted to the edges that stay put in the wrist
image over the recording (:func:`persistent_edges`), kept where it lands on them.

The result is a rig file (``config/cameras/droid.yaml``'s format: ``position``,
``quaternion_xyzw`` of the optical frame, ``fovy_deg``) the twin reads as it is.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
from typing import Any, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from realm_ros.backends.mujoco import camera_rig
from realm_ros.backends.mujoco.actuation import ArmActuation
from realm_ros.backends.mujoco.visual_match import robot_geoms, subtree_geoms
from realm_ros.core import robot
from realm_ros.core.errors import ConfigError, DataError
from realm_ros.core.recording import Recording

#: Exterior cameras (the ones calibrated and visually matched).
EXTERIOR = ('exterior_1', 'exterior_2')
#: Points of the robot that move less than this over the recording are in the plate, m.
STATIC_M = 0.06
#: Surface points sampled per robot mesh, per m^2 of its area (besides its vertices).
POINTS_PER_M2 = 20000.0
#: Distances above this count as this in the loss (robustness to shadows, clutter), px.
CAP_PX = 6.0
#: A pixel darker than the plate by a factor below this in every channel is not a shadow.
SHADOW_MIN = 0.6
#: The robot's points in its boundary pixels lie this far inside its edge on average, px
#: (a point marks the pixel it falls in; measured at the true pose, ``test_calibration``).
EDGE_BIAS_PX = 0.31
#: Edge residuals above this count linearly (inside) or fade out (outside, twice it), px.
HUBER_PX = 1.0


@dataclasses.dataclass(frozen=True)
class CameraPose:
    """A camera in ``base_link``: position (m), MuJoCo camera axes as the columns of ``rot``
    (x right, y up, z backwards), vertical field of view (deg)."""

    position: np.ndarray
    rot: np.ndarray
    fovy: float

    @classmethod
    def from_spec(cls, spec: Any) -> CameraPose:
        """Return the pose of a :class:`~realm_ros.backends.mujoco.model.CameraSpec`."""
        xy = np.array([float(v) for v in spec.mjcf_xyaxes().split()])
        x, y = xy[:3] / np.linalg.norm(xy[:3]), xy[3:] / np.linalg.norm(xy[3:])
        z = np.cross(x, y)
        return cls(np.asarray(spec.pos, float), np.stack([x, y, z], 1), float(spec.fovy))

    def moved(self, theta: npt.ArrayLike) -> CameraPose:
        """Return this pose moved by ``theta`` = (dx, dy, dz cm; rotation vector deg, camera
        frame; dfovy deg)."""
        from scipy.spatial.transform import Rotation

        t = np.asarray(theta, float)
        turn = Rotation.from_rotvec(np.radians(t[3:6])).as_matrix()
        return CameraPose(self.position + t[:3] / 100.0, self.rot @ turn, self.fovy + t[6])

    def project(self, points: np.ndarray, width: int, height: int) -> tuple[np.ndarray,
                                                                              np.ndarray]:
        """Return (u, v) image coordinates (px, (0, 0) = top-left corner) of world ``points``
        (N, 3), and a mask of those in front of the camera."""
        local = (points - self.position) @ self.rot
        depth = -local[:, 2]
        front = depth > 1e-3
        f = 0.5 * height / math.tan(math.radians(self.fovy) / 2.0)
        safe = np.where(front, depth, 1.0)
        u = 0.5 * width + f * local[:, 0] / safe
        v = 0.5 * height - f * local[:, 1] / safe
        return np.stack([u, v], 1), front

    def rig_entry(self, parent: str = 'world') -> dict[str, Any]:
        """Return this camera as a rig-file entry (position, optical-frame quaternion, fovy),
        in ``parent``'s frame (``world``, or ``gripper`` for the wrist)."""
        from scipy.spatial.transform import Rotation

        optical = self.rot @ np.diag([1.0, -1.0, -1.0])
        quat = Rotation.from_matrix(optical).as_quat()  # x, y, z, w
        return {'parent': parent,
                'position': [round(float(v), 6) for v in self.position],
                'quaternion_xyzw': [round(float(v), 8) for v in quat],
                'fovy_deg': round(float(self.fovy), 5)}

    def error_to(self, other: CameraPose) -> tuple[float, float, float]:
        """Return (position error m, rotation error deg, fovy error deg) to ``other``."""
        rel = self.rot.T @ other.rot
        angle = math.degrees(math.acos(max(-1.0, min(1.0, (np.trace(rel) - 1.0) / 2.0))))
        return (float(np.linalg.norm(self.position - other.position)), angle,
                abs(self.fovy - other.fovy))


class RobotGeometry:
    """The twin's visible robot as points: mesh vertices and samples on every surface.

    Built from a model with visuals (``model.build_mjcf(visuals=True)``); a model without the
    Panda meshes uses its primitive arm (capsules, cylinders, boxes sampled on their surface).
    """

    def __init__(self, model: Any, seed: int = 0) -> None:
        import mujoco

        self.model = model
        self.data = mujoco.MjData(model)
        self._act = ArmActuation(model)
        on_robot = robot_geoms(model)
        rng = np.random.default_rng(seed)
        geoms, points = [], []
        visible = {0, 1, 2}  # MuJoCo's default mjvOption.geomgroup
        for g in range(model.ngeom):
            if not on_robot[g] or int(model.geom_group[g]) not in visible \
                    or model.geom_rgba[g, 3] <= 0:
                continue
            local = _geom_points(model, g, rng)
            if len(local):
                geoms.append(g)
                points.append(local)
        self.geoms = np.array(geoms, int)
        self._local = points
        self._owner = np.concatenate([np.full(len(p), k) for k, p in enumerate(points)])
        self._stacked = np.concatenate(points)

    def points(self, q: np.ndarray, gripper: float = 0.0) -> np.ndarray:
        """Return the robot's points in ``base_link`` (N, 3) at joints ``q`` and gripper ``g``."""
        import mujoco

        self._act.set_arm_state(self.data, np.asarray(q, float), gripper=gripper)
        mujoco.mj_kinematics(self.model, self.data)
        pos = self.data.geom_xpos[self.geoms][self._owner]
        mat = self.data.geom_xmat[self.geoms].reshape(-1, 3, 3)[self._owner]
        return pos + np.einsum('nij,nj->ni', mat, self._stacked)


def _mesh(model: Any, g: int) -> tuple[np.ndarray, np.ndarray]:
    """Return mesh geom ``g``'s vertices (V, 3) in its own frame and its faces (F, 3)."""
    mesh = int(model.geom_dataid[g])
    v0, nv = int(model.mesh_vertadr[mesh]), int(model.mesh_vertnum[mesh])
    f0, nf = int(model.mesh_faceadr[mesh]), int(model.mesh_facenum[mesh])
    return model.mesh_vert[v0:v0 + nv].astype(float), model.mesh_face[f0:f0 + nf]


def _geom_points(model: Any, g: int, rng: np.random.Generator) -> np.ndarray:
    """Return points on geom ``g``'s surface in its own frame."""
    import mujoco

    kind = int(model.geom_type[g])
    size = model.geom_size[g]
    if kind == mujoco.mjtGeom.mjGEOM_MESH:
        verts, faces = _mesh(model, g)
        tri = verts[faces]
        area = 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
        n = int(area.sum() * POINTS_PER_M2)
        if n and area.sum() > 0:
            pick = rng.choice(len(tri), n, p=area / area.sum())
            a, b = rng.uniform(size=(2, n))
            flip = a + b > 1
            a, b = np.where(flip, 1 - a, a), np.where(flip, 1 - b, b)
            t = tri[pick]
            samples = t[:, 0] + a[:, None] * (t[:, 1] - t[:, 0]) + b[:, None] * (t[:, 2] - t[:, 0])
            verts = np.concatenate([verts, samples])
        return verts
    n = 400
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    if kind == mujoco.mjtGeom.mjGEOM_SPHERE:
        return d * size[0]
    if kind == mujoco.mjtGeom.mjGEOM_BOX:
        return np.clip(d * 2.0, -1, 1) * size[:3]
    if kind in (mujoco.mjtGeom.mjGEOM_CAPSULE, mujoco.mjtGeom.mjGEOM_CYLINDER):
        ang = rng.uniform(0, 2 * np.pi, n)
        z = rng.uniform(-size[1], size[1], n)
        return np.stack([size[0] * np.cos(ang), size[0] * np.sin(ang), z], 1)
    return np.zeros((0, 3))


# -- seen robot pixels ----------------------------------------------------------------------


def plate_and_masks(frames: np.ndarray, threshold: float = 15.0,
                    robot_near: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Return the temporal-median plate (H, W, 3) uint8 and the robot masks (T, H, W) bool.

    A pixel is robot where its summed absolute RGB difference to the plate exceeds
    ``threshold`` (0-765) and it is not shadow-like (every channel darker than the plate by
    about the same factor) away from ``robot_near`` ((T, H, W) bool: where the robot may be).
    Specks are removed by a 3x3 opening.
    """

    stack = np.asarray(frames)
    plate = np.median(stack, axis=0).astype(np.uint8)
    return plate, _masks(stack, plate, threshold, robot_near)


def _masks(stack: np.ndarray, plate: np.ndarray, threshold: float,
           robot_near: np.ndarray | None = None) -> np.ndarray:
    import cv2

    f = stack.astype(np.float32)
    p = plate.astype(np.float32)[None]
    diff = np.abs(f - p).sum(-1)
    ratio = (f + 8.0) / (p + 8.0)
    # A shadow takes the key light away: darker in every channel, by roughly one factor
    # (the key light's colour tilts it a little).
    # A shadow keeps some light (ambient, the fill): darker still is a dark part of the robot
    # (the Panda's black joints against a light wall), not a shadow.
    shadow = (np.all(ratio < 0.93, axis=-1) & np.all(ratio > SHADOW_MIN, axis=-1)
              & (ratio.max(-1) - ratio.min(-1) < 0.25))
    # Where the robot may be, the same change is its own shaded paint (a white arm's far side
    # before a pale wall is darker by one factor too): the shadow test took 5-10 % of the
    # robot's pixels there. Cast shadows fall on the table and walls, away from it.
    if robot_near is not None:
        shadow &= ~robot_near
    masks = (diff > threshold) & ~shadow
    kernel = np.ones((3, 3), np.uint8)
    return np.stack([cv2.morphologyEx(m.astype(np.uint8), cv2.MORPH_OPEN, kernel) > 0
                     for m in masks])


# -- the fit --------------------------------------------------------------------------------


class SilhouetteLoss:
    """The symmetric silhouette chamfer of one camera over a recording (module docstring)."""

    def __init__(self, points: Sequence[np.ndarray], masks: np.ndarray, scale: float = 1.0,
                 max_seen: int = 600, seed: int = 0, unknown: np.ndarray | None = None) -> None:
        import cv2

        rng = np.random.default_rng(seed)
        self.scale = scale
        t, h, w = masks.shape
        self.width, self.height = max(8, round(w * scale)), max(8, round(h * scale))
        self.points = list(points)
        self.dt_out, self.seen = [], []
        size = (self.width, self.height)
        hidden = np.zeros((self.height, self.width), bool)
        if unknown is not None:  # pixels the plate never saw free of the robot: no evidence
            hidden = cv2.resize(unknown.astype(np.uint8) * 255, size,
                                interpolation=cv2.INTER_AREA) > 0
        near_hidden = cv2.dilate(hidden.astype(np.uint8), np.ones((3, 3), np.uint8)) > 0
        for m in masks:
            small = cv2.resize(m.astype(np.uint8) * 255, size,
                               interpolation=cv2.INTER_AREA) >= 128
            # Distance (px) from each pixel to the nearest seen robot pixel (0 where unknown).
            # Seen pixels are the silhouette's pixel centres; its edge lies half a pixel beyond
            # the last of them, where a projected point on the true edge falls: no penalty.
            dt = np.maximum(cv2.distanceTransform((~small).astype(np.uint8), cv2.DIST_L2, 5)
                            - 0.5, 0.0)
            dt[hidden] = 0.0
            self.dt_out.append(dt)
            edge = small & ~cv2.erode(small.astype(np.uint8), np.ones((3, 3), np.uint8))
            edge &= ~near_hidden
            ys, xs = np.nonzero(edge)
            if len(ys) > max_seen:
                keep = rng.choice(len(ys), max_seen, replace=False)
                ys, xs = ys[keep], xs[keep]
            self.seen.append((ys, xs))

    def __call__(self, pose: CameraPose) -> float:
        """Return the loss of ``pose``, px (at this loss's scale)."""
        import cv2

        total, count = 0.0, 0
        w, h = self.width, self.height
        kernel = np.ones((3, 3), np.uint8)
        for pts, dt, (ys, xs) in zip(self.points, self.dt_out, self.seen):
            uv, front = pose.project(pts, w, h)
            uv = uv[front]
            inside = (uv[:, 0] >= 0) & (uv[:, 0] < w) & (uv[:, 1] >= 0) & (uv[:, 1] < h)
            if not inside.any():
                total += CAP_PX * 2
                count += 1
                continue
            uvi = uv[inside].astype(np.float32)
            # Model -> seen: bilinear distance at each projected point (shifted: pixel centres).
            d_model = cv2.remap(dt, uvi[:, 0:1] - 0.5, uvi[:, 1:2] - 0.5, cv2.INTER_LINEAR,
                                borderMode=cv2.BORDER_REPLICATE)[:, 0]
            # Seen -> model: distance of each seen boundary pixel to the projected robot, on
            # the box around both (3 px more: the closing and the distance transform's
            # shortest paths stay inside it, so the values are the whole image's).
            rows = np.minimum(uvi[:, 1].astype(int), h - 1)
            cols = np.minimum(uvi[:, 0].astype(int), w - 1)
            r0, r1 = int(rows.min()), int(rows.max())
            c0, c1 = int(cols.min()), int(cols.max())
            if len(ys):
                r0, r1 = min(r0, int(ys.min())), max(r1, int(ys.max()))
                c0, c1 = min(c0, int(xs.min())), max(c1, int(xs.max()))
            r0, c0 = max(0, r0 - 3), max(0, c0 - 3)
            r1, c1 = min(h, r1 + 4), min(w, c1 + 4)
            raster = np.zeros((r1 - r0, c1 - c0), np.uint8)
            raster[rows - r0, cols - c0] = 1
            raster = np.asarray(cv2.morphologyEx(raster, cv2.MORPH_CLOSE, kernel), np.uint8)
            dt_model = cv2.distanceTransform(1 - raster, cv2.DIST_L2, 5)
            d_seen = dt_model[ys - r0, xs - c0] if len(ys) else np.zeros(1)
            total += float(np.minimum(d_model, CAP_PX).mean()
                           + np.minimum(d_seen, CAP_PX).mean())
            count += 1
        return total / max(count, 1) / self.scale


@dataclasses.dataclass(frozen=True)
class CameraFit:
    """One camera's calibration: poses before and after, the loss before and after (px)."""

    name: str
    start: CameraPose
    pose: CameraPose
    loss_start: float
    loss: float
    evaluations: int
    #: How much wider the seen robot is than the model all round, px (:func:`refine_edges`).
    growth_px: float = 0.0


#: Coarse to fine: (image scale, CMA-ES step size in cm / deg, iterations) per stage.
STAGES = ((0.5, 1.5, 25), (1.0, 0.4, 30))
#: The fine stage after the clean plate (callers' CMA-ES refinement; ``calibrate`` ends with
#: :func:`refine_edges` instead).
REFINE = ((1.0, 0.2, 20),)
#: The first plate leaves out the twin's robot at the rig's pose grown by this fraction of the
#: image width (a lab's calibration error: a few centimetres, a degree or two).
PRIOR_GROW = 0.03
#: Once fitted, the robot may be within this of where the fit places it (the shadow test is
#: off there), px.
NEAR_PX = 4


def fit_camera(name: str, start: CameraPose, points: Sequence[np.ndarray], masks: np.ndarray,
               seed: int = 0, stages: Sequence[tuple[float, float, int]] = STAGES,
               unknown: np.ndarray | None = None, theta0: Sequence[float] | None = None
               ) -> tuple[CameraFit, np.ndarray]:
    """Fit one camera: CMA-ES over the 7 parameters, one stage per (scale, sigma, iterations).

    ``points``: the robot's moving points per frame (``base_link``); ``masks``: the seen robot
    per frame at the camera's resolution; ``unknown``: pixels without evidence. Bounds: +-8 cm,
    +-8 deg, +-8 deg of FOV around ``start``. Returns the fit and its parameter vector.
    """
    import cma

    theta = np.zeros(7) if theta0 is None else np.asarray(theta0, float)
    evaluations = 0
    full = SilhouetteLoss(points, masks, 1.0, seed=seed, unknown=unknown)
    loss_start = full(start)
    for scale, sigma, iterations in stages:
        loss = full if scale == 1.0 else SilhouetteLoss(points, masks, scale, seed=seed,
                                                         unknown=unknown)
        options = {'seed': seed + 1, 'bounds': [[-8.0] * 7, [8.0] * 7], 'maxiter': iterations,
                   'verbose': -9, 'tolfun': 1e-4, 'tolx': 1e-4}
        es = cma.CMAEvolutionStrategy(theta, sigma, options)
        while not es.stop():
            candidates = es.ask()
            es.tell(candidates, [loss(start.moved(c)) for c in candidates])
            evaluations += len(candidates)
        best = es.result.xbest if es.result.xbest is not None else theta
        theta = np.asarray(best, float)
    pose = start.moved(theta)
    return CameraFit(name, start, pose, loss_start, full(pose), evaluations), theta


def signed_distance(mask: np.ndarray, unknown: np.ndarray | None = None) -> np.ndarray:
    """Return the seen silhouette's signed distance (H, W) float32, px: negative inside,
    positive outside, zero half a pixel beyond the last robot pixel centre; NaN where
    ``unknown`` (no evidence)."""
    import cv2

    m = mask.astype(np.uint8)
    outside = cv2.distanceTransform(1 - m, cv2.DIST_L2, 5)
    inside = cv2.distanceTransform(m, cv2.DIST_L2, 5)
    sdf = np.where(mask, 0.5 - inside, outside - 0.5).astype(np.float32)
    if unknown is not None:
        sdf[unknown] = np.nan
    return sdf


def edge_points(pose: CameraPose, points: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Return the indices of ``points`` on the projected robot's outline at ``pose``: those in
    the boundary pixels of its raster, away from the image border."""
    import cv2

    w, h = size
    uv, front = pose.project(points, w, h)
    ok = front & (uv[:, 0] >= 0) & (uv[:, 0] < w) & (uv[:, 1] >= 0) & (uv[:, 1] < h)
    index = np.flatnonzero(ok)
    u, v = uv[index, 0].astype(int), uv[index, 1].astype(int)
    raster = np.zeros((h, w), np.uint8)
    raster[v, u] = 1
    kernel = np.ones((3, 3), np.uint8)
    raster = np.asarray(cv2.morphologyEx(raster, cv2.MORPH_CLOSE, kernel), np.uint8)
    edge = raster & (1 - np.asarray(cv2.erode(raster, kernel), np.uint8))
    edge[:2], edge[-2:], edge[:, :2], edge[:, -2:] = 0, 0, 0, 0
    return index[edge[v, u] > 0]


def refine_edges(start: CameraPose, theta0: npt.ArrayLike, points: Sequence[np.ndarray],
                 masks: np.ndarray, unknown: np.ndarray | None = None, iterations: int = 15,
                 per_frame: int = 1500, offset: bool = True) -> tuple[np.ndarray, int, float]:
    """Refine ``theta0`` by Gauss-Newton on the silhouettes' edges, at full resolution.

    The residuals are the seen silhouette's signed distance (bilinear, sub-pixel) at the
    projected robot's outline points (:func:`edge_points`, corrected by ``EDGE_BIAS_PX``):
    smooth in the parameters and zero only where both outlines coincide, so the valley the
    capped chamfer leaves flat (shifts below half a pixel) has a floor. Each iteration picks
    the outline points at the current pose (as ICP does), takes the Jacobian by central
    differences (0.05 cm / deg) and solves the weighted normal equations. Weights: a model
    outline inside the seen robot (negative residual) is evidence the robot is larger, Huber
    beyond ``HUBER_PX``; one outside it may be robot that background subtraction missed (a
    white arm before a pale wall), so positive residuals get Tukey's biweight, none beyond
    ``2 * HUBER_PX``. With ``offset`` an eighth unknown, the seen silhouette's uniform
    growth (px, the same along every outline), is fitted beside the pose: a lens and sensor
    blur and the subtraction's threshold widen the seen robot by a fraction of a pixel all
    round, which the pose would otherwise absorb as a camera nearer or a wider field of view
    (on lab_demo's camera it is 0.6-0.8 px; fitted, the error at the fit's fixed point fell
    from 1.0-2.0 cm to 0.4-1.1 cm on the cameras that failed). Steps are clipped to 1 cm /
    deg (and 1 px); it stops below 0.005. Returns the parameters, the number of loss
    evaluations and the growth (px; 0 without ``offset``).
    """
    import cv2

    _, h, w = masks.shape
    sdfs = [signed_distance(m, unknown) for m in masks]
    theta = np.asarray(theta0, float).copy()
    growth = 0.0
    evaluations = 0
    for k in range(iterations):
        pose = start.moved(theta)
        rng = np.random.default_rng(k)
        chosen = []
        for pts in points:
            sel = edge_points(pose, pts, (w, h))
            if len(sel) > per_frame:
                sel = np.sort(rng.choice(sel, per_frame, replace=False))
            chosen.append(pts[sel])
        if not sum(len(c) for c in chosen):
            break

        def residuals(t: np.ndarray, chosen: list[np.ndarray] = chosen) -> np.ndarray:
            moved = start.moved(t)
            out = []
            for pts, sdf in zip(chosen, sdfs):
                uv = moved.project(pts, w, h)[0].astype(np.float32)
                d = cv2.remap(sdf, uv[:, 0:1] - 0.5, uv[:, 1:2] - 0.5, cv2.INTER_LINEAR,
                              borderMode=cv2.BORDER_CONSTANT,
                              borderValue=(float('nan'),))[:, 0]
                out.append(d + EDGE_BIAS_PX)
            return np.concatenate(out)

        # The seen outline lies ``growth`` beyond the model's: subtract it from the distance.
        r = residuals(theta) + growth
        jac = np.stack([(residuals(theta + e) - residuals(theta - e)) / 0.1
                        for e in np.eye(7) * 0.05], 1)
        if offset:
            jac = np.concatenate([jac, np.ones((len(jac), 1))], 1)
        evaluations += 15
        ok = np.isfinite(r) & np.isfinite(jac).all(1)
        r, jac = r[ok], jac[ok]
        if len(r) < jac.shape[1]:
            break
        cap = 2.0 * HUBER_PX
        weight = np.where(r > 0, np.where(r < cap, (1.0 - (r / cap) ** 2) ** 2, 0.0),
                          np.minimum(1.0, HUBER_PX / np.maximum(np.abs(r), 1e-9)))
        root = np.sqrt(weight)
        step = -np.linalg.lstsq(jac * root[:, None], r * root, rcond=None)[0]
        step = np.clip(step, -1.0, 1.0)
        theta = np.clip(theta + step[:7], -8.0, 8.0)
        if offset:
            growth += float(step[7])
        if float(np.abs(step).max()) < 0.005:
            break
    return theta, evaluations, growth


def robot_raster(pose: CameraPose, points: Sequence[np.ndarray], size: tuple[int, int],
                 grow_px: int = 2) -> np.ndarray:
    """Return (T, H, W) bool: where the projected robot is in each frame, grown by
    ``grow_px``."""
    import cv2

    w, h = size
    out = np.zeros((len(points), h, w), bool)
    kernel = np.ones((2 * grow_px + 1, 2 * grow_px + 1), np.uint8)
    for k, pts in enumerate(points):
        uv, front = pose.project(pts, w, h)
        uv = uv[front]
        ok = (uv[:, 0] >= 0) & (uv[:, 0] < w) & (uv[:, 1] >= 0) & (uv[:, 1] < h)
        raster = np.zeros((h, w), np.uint8)
        raster[np.minimum(uv[ok, 1].astype(int), h - 1),
               np.minimum(uv[ok, 0].astype(int), w - 1)] = 1
        out[k] = cv2.dilate(cv2.morphologyEx(raster, cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8)),
                            kernel) > 0
    return out


def clean_plate(frames: np.ndarray, robot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the per-pixel temporal median of ``frames`` over the frames where ``robot``
    (T, H, W) is False, and the pixels never free of it (their value: the plain median)."""
    stack = np.asarray(frames).astype(np.float32)
    free = (~robot).sum(0)
    unknown = free == 0
    # The median of the free frames per pixel (as np.nanmedian, several times faster): sorted
    # along time with the robot's frames last, the middle one or the mean of the middle two.
    ordered = np.sort(np.where(robot[..., None], np.inf, stack), axis=0)
    n = np.maximum(free, 1)[None, ..., None]
    low = np.take_along_axis(ordered, (n - 1) // 2, axis=0)[0]
    high = np.take_along_axis(ordered, n // 2, axis=0)[0]
    plate = (low + high) / np.float32(2.0)
    plate[unknown] = np.median(stack, axis=0)[unknown]
    return np.clip(plate + 0.5, 0, 255).astype(np.uint8), unknown


def masks_against(frames: np.ndarray, plate: np.ndarray, threshold: float = 15.0,
                  robot_near: np.ndarray | None = None) -> np.ndarray:
    """Return the robot masks of ``frames`` against a given ``plate`` (as
    :func:`plate_and_masks`)."""
    return _masks(np.asarray(frames), plate, threshold, robot_near)


# -- recordings ------------------------------------------------------------------------------


def moving_points(geometry: RobotGeometry, recording: Recording,
                  per_pixel: float = 1.5, static_m: float = STATIC_M) -> list[np.ndarray]:
    """Return each frame's robot points, without those that stay within ``static_m``.

    At most ``per_pixel`` points per image pixel are kept (a fixed random subset): the robot
    covers a few percent of the image, so that is still several points per robot pixel.
    """
    clouds = [geometry.points(q, g) for q, g in zip(recording.q, recording.gripper)]
    stack = np.stack(clouds)
    spread = np.linalg.norm(stack.max(0) - stack.min(0), axis=1)
    keep = np.flatnonzero(spread > static_m)
    w, h = recording.size
    limit = int(per_pixel * w * h)
    if len(keep) > limit:
        keep = np.sort(np.random.default_rng(0).choice(keep, limit, replace=False))
    return [c[keep] for c in clouds]


def twin_geometry(rig: camera_rig.Rig, size: tuple[int, int]) -> RobotGeometry:
    """Return the robot geometry of the twin as its cameras see it (visual meshes)."""
    import mujoco

    from realm_ros.backends.mujoco import model as mjcf

    xml = mjcf.build_mjcf(cameras=rig.exterior, wrist=rig.wrist, image_size=size,
                          visuals=True, with_table=False)
    return RobotGeometry(mujoco.MjModel.from_xml_string(xml))


@dataclasses.dataclass(frozen=True)
class Calibration:
    """Every exterior camera's fit, and the rig they make."""

    fits: Mapping[str, CameraFit]
    rig_source: str
    size: tuple[int, int]
    #: The wrist camera's mount fit (:func:`calibrate_wrist`), if it was tried.
    wrist: CameraFit | None = None

    @property
    def wrist_kept(self) -> bool:
        """Whether the rig file takes the wrist's fit (:func:`wrist_fit_kept`)."""
        return self.wrist is not None and wrist_fit_kept(self.wrist)

    def rig_yaml(self, base: camera_rig.Rig) -> dict[str, Any]:
        """Return the calibrated rig file's content (the wrist fitted if kept, else as in
        ``base``)."""
        cameras: dict[str, Any] = {name: fit.pose.rig_entry() for name, fit in self.fits.items()}
        render = {'shadows': base.shadows, 'reflections': base.reflections,
                  'antialias': base.antialias}
        if self.wrist is not None and self.wrist_kept:
            cameras['wrist'] = self.wrist.pose.rig_entry('gripper')
            return {'frame': 'base_link', 'cameras': cameras, 'render': render}
        w = base.wrist
        cameras['wrist'] = {'parent': 'gripper', 'position': [float(v) for v in w.pos],
                            'fovy_deg': float(w.fovy)}
        if w.xyaxes is not None:
            cameras['wrist']['quaternion_xyzw'] = CameraPose.from_spec(w).rig_entry()[
                'quaternion_xyzw']
        else:
            cameras['wrist'].update(look_at=[float(v) for v in w.target],
                                    up=[float(v) for v in w.up])
        return {'frame': 'base_link', 'cameras': cameras, 'render': render}


def calibrate(recording: Recording, rig: camera_rig.Rig, seed: int = 0,
              cameras: Sequence[str] = EXTERIOR,
              masks: Mapping[str, np.ndarray] | None = None, wrist: bool = True
              ) -> Calibration:
    """Fit every exterior camera in ``recording``, starting from ``rig``'s cameras, and the
    wrist camera's mount (``wrist``, where the recording has wrist images:
    :func:`calibrate_wrist`).

    ``masks`` (camera -> (T, H, W) bool) replaces background subtraction with given robot
    masks (a bench's segmentation renders: the fit alone, without the masks' errors).
    """
    size = recording.size
    geometry = twin_geometry(rig, size)
    # Given masks hold the whole robot, base too: then the model keeps its static parts.
    points = moving_points(geometry, recording, static_m=STATIC_M if masks is None else -1.0)
    starts = {c.name: CameraPose.from_spec(c) for c in rig.exterior}
    fits = {}
    for name in cameras:
        if name not in recording.images:
            raise DataError(f'{recording.path}: no {name} images to calibrate it from')
        frames = recording.images[name]
        if masks is not None:
            first, theta = fit_camera(name, starts[name], points, masks[name], seed=seed)
            theta, n, _ = refine_edges(starts[name], theta, points, masks[name], offset=False)
            pose = starts[name].moved(theta)
            loss = SilhouetteLoss(points, masks[name], 1.0, seed=seed)(pose)
            fits[name] = dataclasses.replace(first, pose=pose, loss=loss,
                                             evaluations=first.evaluations + n)
            continue
        # The plate from the frames where the twin at the rig's pose leaves a pixel free (the
        # robot grown by the rig's error, a few percent of the image), the masks against it.
        grow = max(2, round(PRIOR_GROW * size[0]))
        near = robot_raster(starts[name], points, size, grow)
        plate, unknown = clean_plate(frames, near)
        seen = masks_against(frames, plate, robot_near=near)
        if seen.mean() < 1e-3:
            raise DataError(f'{recording.path}: {name} never sees the arm move')
        first, theta = fit_camera(name, starts[name], points, seen, seed=seed, unknown=unknown)
        evaluations = first.evaluations
        # Then, twice: a clean plate without the robot the fit places, the masks against it,
        # the edges' least squares at full resolution.
        growth = 0.0
        for _ in range(2):
            pose = starts[name].moved(theta)
            plate, unknown = clean_plate(frames, robot_raster(pose, points, size))
            seen = masks_against(frames, plate,
                                 robot_near=robot_raster(pose, points, size, NEAR_PX))
            theta, n, growth = refine_edges(starts[name], theta, points, seen, unknown)
            evaluations += n
        full = SilhouetteLoss(points, seen, 1.0, seed=seed, unknown=unknown)
        pose = starts[name].moved(theta)
        fits[name] = CameraFit(name, starts[name], pose, first.loss_start, full(pose),
                               evaluations, growth)
    wrist_fit = None
    if wrist and 'wrist' in recording.images:
        wrist_fit = calibrate_wrist(recording, rig, seed=seed, geometry=geometry)
    return Calibration(fits, rig.source, size, wrist_fit)


# -- the wrist camera -------------------------------------------------------------------------

#: A persistent edge is at least this strong (median gradient magnitude, grey levels per px)
#: and this fraction of the strongest (its 99.5th percentile).
WRIST_EDGE_MIN = 12.0
WRIST_EDGE_FRACTION = 0.25
#: The gradient magnitude a persistent edge keeps in this percentage of the frames or more.
WRIST_EDGE_QUANTILE = 50.0
#: The wrist's fit is kept only if its outline ends this close to the persistent edges, px
#: (on average): farther, the edges do not cover the hand's outline (a pale hand over a pale
#: table in most frames) and the rig's mount is kept.
WRIST_ACCEPT_PX = 1.0
#: ... and only if it improves on the rig's mount by this much, px: the valley is flat (a mount
#: already right moved 0.66 deg for 0.01 px on lab_demo's recording), a real error of a
#: centimetre starts near 5 px.
WRIST_MIN_GAIN_PX = 0.1


def wrist_fit_kept(fit: CameraFit) -> bool:
    """Whether a wrist fit is kept: its outline within ``WRIST_ACCEPT_PX`` of the persistent
    edges, ``WRIST_MIN_GAIN_PX`` nearer than the rig's mount."""
    return fit.loss <= WRIST_ACCEPT_PX and fit.loss_start - fit.loss >= WRIST_MIN_GAIN_PX


def persistent_edges(frames: np.ndarray) -> np.ndarray:
    """Return the edges that stay put in the image over ``frames`` (T, H, W, 3): (H, W) bool.

    The wrist camera moves with the hand, so there is no plate to subtract; but the hand and
    the fingers (at one opening) stay where they are in its image while the table, walls and
    floor sweep past. The per-pixel median over the frames of the gradient magnitude (grey,
    Gaussian-smoothed by 1 px) is high only on edges that are there in most frames: the
    hand's outline (its contrast to the passing background changes, its place does not), and
    its own inner edges. Thinned to one pixel (local maxima across the ridge), above
    ``WRIST_EDGE_MIN`` and ``WRIST_EDGE_FRACTION`` of the strongest.
    """
    import cv2

    mags = []
    for frame in np.asarray(frames):
        grey = cv2.GaussianBlur(cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY).astype(np.float32),
                                (0, 0), 1.0)
        mags.append(np.hypot(cv2.Sobel(grey, cv2.CV_32F, 1, 0), cv2.Sobel(grey, cv2.CV_32F, 0, 1)))
    med = np.percentile(np.stack(mags), WRIST_EDGE_QUANTILE, axis=0)
    pad = np.pad(med, 1, mode='edge')
    ridge_x = (med >= pad[1:-1, :-2]) & (med >= pad[1:-1, 2:])
    ridge_y = (med >= pad[:-2, 1:-1]) & (med >= pad[2:, 1:-1])
    strong = med > max(WRIST_EDGE_MIN, WRIST_EDGE_FRACTION * float(np.percentile(med, 99.5)))
    return strong & (ridge_x | ridge_y)


def wrist_triangles(geometry: RobotGeometry, recording: Recording, camera: str = 'wrist'
                    ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Return, per gripper opening in the recording (open, closed), the mesh triangles
    (N, 3, 3) of the robot parts that move with the wrist camera (its body and those below
    it: hand, fingers) in the camera's parent frame, and the indices of the frames at that
    opening. (Triangles, not points: the hand is so near the camera that any point sampling
    leaves holes in its silhouette.)"""
    import mujoco

    model, data = geometry.model, geometry.data
    cam_body = int(model.cam_bodyid[model.camera(camera).id])
    below = subtree_geoms(model, cam_body)
    carried = [int(g) for g in geometry.geoms
               if below[g] and int(model.geom_type[g]) == mujoco.mjtGeom.mjGEOM_MESH]
    if not carried:
        raise DataError('the twin has no hand meshes to calibrate the wrist camera against '
                        '(the primitive arm: install the Panda meshes)')
    groups = (recording.gripper >= 0.5).astype(int)
    shapes, frames = [], []
    for value in (0, 1):
        index = np.flatnonzero(groups == value)
        if len(index) < 3:
            continue
        geometry.points(recording.q[index[0]], float(np.median(recording.gripper[index])))
        pos = data.xpos[cam_body]
        rot = data.xmat[cam_body].reshape(3, 3)
        tris = []
        for g in carried:
            verts, faces = _mesh(model, g)
            world = data.geom_xpos[g] + verts @ data.geom_xmat[g].reshape(3, 3).T
            tris.append(((world - pos) @ rot)[faces])
        shapes.append(np.concatenate(tris))
        frames.append(index)
    return shapes, frames


def triangle_outline(pose: CameraPose, triangles: np.ndarray, size: tuple[int, int]
                     ) -> np.ndarray:
    """Return the (row, col) pixels of the silhouette outline of ``triangles`` (N, 3, 3) seen
    from ``pose`` (filled at 1/16 px), away from the image border: (K, 2) int."""
    import cv2

    w, h = size
    uv, front = pose.project(triangles.reshape(-1, 3), w, h)
    front = front.reshape(-1, 3).all(1)
    uv = uv.reshape(-1, 3, 2)[front]
    keep = np.abs(uv).max((1, 2)) < 4 * max(w, h)
    fixed = np.round(uv[keep] * 16).astype(np.int32)
    raster = np.zeros((h, w), np.uint8)
    for tri in fixed:
        cv2.fillConvexPoly(raster, tri, (1,), lineType=cv2.LINE_8, shift=4)
    kernel = np.ones((3, 3), np.uint8)
    # Both sides of the outline (the pixels just inside and just outside it): the persistent
    # edge lies between them.
    edge = np.asarray(cv2.dilate(raster, kernel), np.uint8) - np.asarray(cv2.erode(raster,
                                                                                 kernel), np.uint8)
    edge[:2], edge[-2:], edge[:, :2], edge[:, -2:] = 0, 0, 0, 0
    return np.argwhere(edge > 0)


def _edge_chamfer(pose: CameraPose, shapes: Sequence[np.ndarray], dts: Sequence[np.ndarray],
                  size: tuple[int, int]) -> float:
    """Mean capped distance (px) from the model's outline to the persistent edges."""
    total = 0.0
    for tris, dt in zip(shapes, dts):
        rc = triangle_outline(pose, tris, size)
        if len(rc) < 20:
            return 2.0 * CAP_PX
        total += float(np.minimum(dt[rc[:, 0], rc[:, 1]], CAP_PX).mean())
    return total / len(shapes)


def calibrate_wrist(recording: Recording, rig: camera_rig.Rig, seed: int = 0,
                    geometry: RobotGeometry | None = None) -> CameraFit:
    """Fit the wrist camera's mount (pose in the gripper frame, vertical FOV) to the
    recording's persistent edges (:func:`persistent_edges`, one set per gripper opening).

    The model: the hand and fingers, which the camera carries, projected from the rig's mount
    moved by the seven parameters (as the exterior cameras': cm, deg in the camera frame,
    deg of FOV); the loss: the mean distance of their projected outline to the nearest
    persistent edge, capped at ``CAP_PX``. CMA-ES, coarse to fine (step 0.5 then 0.15).
    Inner edges of the hand are edges too, so the loss never asks every edge to be outline.
    Only the hand is near: a turn of the camera and a shift of it trade against each other
    more than for the exterior cameras (docs/visual-matching.md has the figures).

    Raises:
        DataError: no wrist images, no opening with 3 frames, or no hand meshes in the twin.
    """
    import cma
    import cv2

    if 'wrist' not in recording.images:
        raise DataError(f'{recording.path}: no wrist images to calibrate it from')
    size = recording.size
    geometry = geometry if geometry is not None else twin_geometry(rig, size)
    shapes, groups = wrist_triangles(geometry, recording)
    if not shapes:
        raise DataError(f'{recording.path}: the wrist camera needs at least 3 frames at one '
                        'gripper opening')
    dts = []
    for index in groups:
        edges = persistent_edges(recording.images['wrist'][index])
        dts.append(cv2.distanceTransform((~edges).astype(np.uint8), cv2.DIST_L2, 5))
    start = CameraPose.from_spec(rig.wrist)
    loss_start = _edge_chamfer(start, shapes, dts, size)
    theta = np.zeros(7)
    evaluations = 0
    for sigma, iterations in ((0.5, 60), (0.15, 60)):
        options = {'seed': seed + 1, 'bounds': [[-5.0] * 7, [5.0] * 7], 'maxiter': iterations,
                   'verbose': -9, 'tolfun': 1e-5, 'tolx': 1e-4}
        es = cma.CMAEvolutionStrategy(theta, sigma, options)
        while not es.stop():
            candidates = es.ask()
            es.tell(candidates, [_edge_chamfer(start.moved(c), shapes, dts, size)
                                 for c in candidates])
            evaluations += len(candidates)
        if es.result.xbest is not None:
            theta = np.asarray(es.result.xbest, float)
    pose = start.moved(theta)
    return CameraFit('wrist', start, pose, loss_start, _edge_chamfer(pose, shapes, dts, size),
                     evaluations)


def write_rig(path: str | pathlib.Path, content: Mapping[str, Any], header: str = '') -> None:
    """Write a rig file (``camera_rig.load_rig`` reads it)."""
    import yaml

    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = ''.join(f'# {line}\n' for line in header.splitlines())
    path.write_text(text + yaml.safe_dump(dict(content), sort_keys=False))
    camera_rig.load_rig(str(path))  # it must read back


def record_waypoints(n: int, seed: int = 0) -> np.ndarray:
    """Return ``n`` arm poses (rad) that take the arm through both exterior cameras' views.

    Drawn around the reset pose (shoulder swinging +-1.1 rad, elbow and wrist reaching near
    and far, high and low), each kept only if every link frame and the gripper stay 12 cm
    above the table and in front of the robot's back edge (x > -0.25 m). Deterministic.
    """
    if n < 2:
        raise ConfigError(f'the recording needs at least 2 poses, got {n}')
    rng = np.random.default_rng(seed)
    span = np.array([1.1, 0.45, 0.5, 0.55, 0.8, 0.5, 1.2])
    out: list[np.ndarray] = []
    while len(out) < n:
        q = robot.RESET_Q + rng.uniform(-1.0, 1.0, 7) * span
        q = np.clip(q, robot.JOINT_LOWER + 0.1, robot.JOINT_UPPER - 0.1)
        frames = robot.forward_kinematics(q)
        origins = np.array([f[:3, 3] for f in frames])
        tip = frames[-1][:3, :3] @ np.array([0, 0, robot.TCP_OFFSET]) + frames[-1][:3, 3]
        if origins[2:, 2].min() > 0.12 and tip[2] > 0.12 and origins[:, 0].min() > -0.25:
            out.append(q)
    # Sweep the shoulder in order so consecutive poses are near each other.
    out.sort(key=lambda q: q[0])
    return np.array(out)


def gripper_for(k: int) -> float:
    """Return the gripper command of recording pose ``k``: open and closed in turn."""
    return 0.0 if k % 2 == 0 else 1.0


__all__ = ['CameraFit', 'CameraPose', 'Calibration', 'Recording', 'RobotGeometry',
           'SilhouetteLoss', 'calibrate', 'calibrate_wrist', 'edge_points', 'fit_camera',
           'gripper_for', 'moving_points', 'persistent_edges', 'plate_and_masks',
           'record_waypoints', 'refine_edges', 'signed_distance', 'triangle_outline',
           'twin_geometry', 'wrist_fit_kept', 'wrist_triangles', 'write_rig']
