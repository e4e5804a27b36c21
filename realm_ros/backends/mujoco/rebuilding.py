"""Building a rebuilt look from a recording (``realm-ros cameras rebuild``).

:func:`build_rebuild` writes the folder :class:`~realm_ros.backends.mujoco.rebuild.RebuiltLook`
reads (the method: :mod:`realm_ros.backends.mujoco.rebuild`'s docstring). Apart from
``rebuild`` because it renders the twin through a
:class:`~realm_ros.backends.mujoco.world.MujocoWorld`, whose look may be a ``RebuiltLook``.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any, Mapping, Sequence

import numpy as np

from realm_ros.backends.mujoco import camera_rig
from realm_ros.backends.mujoco.rebuild import (
    BASE_RADIUS_M,
    EXPOSURE,
    ROBOT_GROW_PX,
    TABLE_CENTRE,
    TWIN_LIGHT,
    WARN_UNSEEN,
    KeyLight,
    RebuiltLook,
    ShadowEvidence,
    Surface,
    SurfaceTexture,
    View,
    camera_pose,
    estimate_light,
    fill_shading,
    project_surface,
    scene_surfaces,
    shadow_mask,
    surface_geoms,
    table_shadow,
)
from realm_ros.backends.mujoco.visual_match import EXTERIOR, seg_mask
from realm_ros.core.errors import ConfigError, DataError

#: Exterior frames used to find the light, at most; the search runs at this image scale.
LIGHT_FRAMES = 12
LIGHT_SCALE = 0.25
#: A rig fits a bag when at least this fraction of the twin's robot pixels see the robot
#: (:func:`rig_fit`).
FIT_RECALL = 0.45


def _grow(masks: np.ndarray, px: int) -> np.ndarray:
    import cv2

    kernel = np.ones((2 * px + 1, 2 * px + 1), np.uint8)
    return np.stack([cv2.dilate(m.astype(np.uint8), kernel) > 0 for m in masks])


def _geom_ids(seg: np.ndarray) -> np.ndarray:
    from realm_ros.backends.mujoco.visual_match import GEOM

    return np.where(seg[..., 1] == GEOM, seg[..., 0], -1)


def rig_fit(frames: np.ndarray, plate: np.ndarray, robot: np.ndarray,
            known: np.ndarray) -> float:
    """Return the fraction of the twin's robot pixels ``robot`` (T, H, W) where the recording
    differs from its ``plate`` (the robot seen there), over the recording, counting only
    pixels the plate ``known`` (H, W: seen free of the robot at least once); 1.0 without any.
    On lab_demo's bag at 320x180: 0.66-0.67 with the true cameras, 0.52-0.64 with DROID's rig
    (2-3 cm off), 0.19-0.42 with cameras 20-30 cm away."""
    diff = np.abs(frames.astype(np.int16) - plate.astype(np.int16)).sum(-1) > 30
    counted = robot & known[None]
    total = int(counted.sum())
    return int((diff & counted).sum()) / total if total else 1.0


def warnings(content: Mapping[str, Any]) -> list[str]:
    """Return the warnings a rebuild's ``rebuild.yaml`` content calls for, one line each."""
    out = []
    table = float(content['surfaces']['table']['unseen_beyond_base'])
    if table > WARN_UNSEEN:
        out.append(f"warning: {table:.1%} of the table top (beyond the robot's base) was never "
                   'seen free of the arm by any camera (filled from its neighbours); record '
                   'again with the arm clearing it')
    if not content['light']['estimated']:
        out.append("warning: no shadow of the arm explained the recording's: the key light "
                   'is a guess (2 m above the table)')
    return out


def build_rebuild(recording: Any, rig_file: str, out: str | pathlib.Path,
                  log: Any = print) -> dict[str, Any]:
    """Write a rebuilt-look folder from ``recording`` (a ``cameras record`` ``Recording``) and
    the calibrated ``rig_file``; return ``rebuild.yaml``'s content.

    Raises:
        ConfigError: no rig given.
        DataError: the bag lacks a camera, or the rig does not fit it (named).
    """
    import time

    import cv2
    import imageio.v2 as imageio
    import yaml

    from realm_ros.backends.mujoco.calibration import RobotGeometry, clean_plate
    from realm_ros.backends.mujoco.matching import TwinFrames, build_match

    start = time.monotonic()
    if not rig_file:
        raise ConfigError('no calibrated rig: run `realm-ros cameras calibrate BAG --out '
                          'rig.yaml` and pass --rig rig.yaml')
    missing = [c for c in ('exterior_1', 'exterior_2', 'wrist') if c not in recording.images]
    if missing:
        raise DataError(f'bag {recording.path}: no images of {", ".join(missing)} (record '
                        'every camera with `realm-ros cameras record`)')
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    # The folder is a visual match too (match.yaml, plates, colour transforms): every command
    # that takes --visual-match DIR checks for match.yaml; the world loads the rebuilt look
    # where rebuild.yaml is (looks.look_for).
    build_match(recording, rig_file, out)
    cameras = ('exterior_1', 'exterior_2', 'wrist')
    width, height = recording.size
    twin = TwinFrames(rig_file, recording.size, cameras)
    model, data = twin.world.model, twin.world.data
    ids: dict[str, list[np.ndarray]] = {c: [] for c in cameras}
    robots: dict[str, list[np.ndarray]] = {c: [] for c in cameras}
    wrist_poses, points = [], []
    geometry = RobotGeometry(model)
    order = np.random.default_rng(0).permutation(len(geometry.points(recording.q[0])))
    pick, dense_pick = order[:4000], order[:16000]
    dense = []
    try:
        for q, g in zip(recording.q, recording.gripper):
            _, seg = twin.render(q, float(g))
            wrist_poses.append(camera_pose(model, data, 'wrist'))
            for c in cameras:
                ids[c].append(_geom_ids(seg[c]))
                robots[c].append(seg_mask(seg[c], twin.robot))
            cloud = geometry.points(q, float(g))
            points.append(cloud[pick])
            dense.append(cloud[dense_pick])
        exterior_poses = {c: camera_pose(model, data, c) for c in EXTERIOR}
    finally:
        twin.close()
    log(f'  twin rendered at {len(recording.q)} recorded poses ({time.monotonic() - start:.0f} s)')
    views: list[View] = []
    evidence: list[ShadowEvidence] = []
    table = model.geom('table_top').id
    content: dict[str, Any] = {'size': [width, height], 'frames': len(recording.q),
                               'cameras': {}, 'surfaces': {}}
    for c in EXTERIOR:
        frames = recording.images[c]
        robot = np.stack(robots[c])
        grown = _grow(robot, ROBOT_GROW_PX)
        plate, unknown = clean_plate(frames, grown)
        fit = rig_fit(frames, plate, robot, ~unknown)
        content['cameras'][c] = {'rig_fit': round(fit, 4),
                                 'plate_unknown_fraction': round(float(unknown.mean()), 5)}
        if fit < FIT_RECALL:
            raise DataError(f'rig {rig_file} does not fit bag {recording.path}: on {c} only '
                            f"{fit:.0%} of the twin's robot pixels show the recorded robot "
                            f'(a fitting rig: over {FIT_RECALL:.0%}); calibrate this bag with '
                            '`realm-ros cameras calibrate`')
        stack = np.stack(ids[c])
        static = np.full(stack.shape[1:], -1)
        for k in range(len(stack) - 1, -1, -1):  # the first frame free of the robot wins
            static = np.where(~grown[k], stack[k], static)
        static[unknown] = -1
        views.append(View(c, plate, static, exterior_poses[c]))
        wide = _grow(robot, 6)
        chosen = np.linspace(0, len(frames) - 1, min(LIGHT_FRAMES, len(frames))).astype(int)
        size = (max(8, round(width * LIGHT_SCALE)), max(8, round(height * LIGHT_SCALE)))
        for k in chosen:
            valid = (static == table) & ~wide[k]
            seen = shadow_mask(frames[k], plate, valid)
            ratio = ((frames[k][seen].astype(float) + 4.0) / (plate[seen].astype(float) + 4.0))
            small = cv2.resize(seen.astype(np.float32), size, interpolation=cv2.INTER_AREA)
            small_valid = cv2.resize(valid.astype(np.float32), size,
                                     interpolation=cv2.INTER_AREA)
            evidence.append(ShadowEvidence(exterior_poses[c], points[k], small > 0.5,
                                           small_valid > 0.5, ratio[::max(1, len(ratio) // 2000)]))
    light = estimate_light(evidence)
    log(f'  key light: {"estimated" if light.estimated else "not found (a light above the table)"}'
        f', shadow overlap {light.shadow_iou:.2f} ({time.monotonic() - start:.0f} s)')
    for k, frame in enumerate(recording.images['wrist']):
        grown = _grow(robots['wrist'][k][None], ROBOT_GROW_PX)[0]
        shadow = (table_shadow(dense[k], np.asarray(light.position)) if light.estimated
                  else None)
        views.append(View('wrist', frame, np.where(grown, -1, ids['wrist'][k]), wrist_poses[k],
                          shadow))
    radiance = {}
    for surface in scene_surfaces():
        texture, seen = project_surface(surface, surface_geoms(model, surface), views)
        radiance[surface.name] = (surface, texture / 255.0, seen)
        content['surfaces'][surface.name] = {'unseen_fraction': round(1.0 - float(seen.mean()),
                                                                      5)}
        if surface.kind == 'table':
            # The robot's base stands on the table for good: what matters is the rest of it.
            texels = surface.texels().reshape(seen.shape + (3,))
            free = np.hypot(texels[..., 0], texels[..., 1]) > BASE_RADIUS_M
            content['surfaces'][surface.name]['unseen_beyond_base'] = round(
                1.0 - float(seen[free].mean()), 5)
    log(f'  textures projected ({time.monotonic() - start:.0f} s)')
    rig = camera_rig.load_rig(rig_file)
    (out / 'rig.yaml').write_text(pathlib.Path(rig.source).read_text())
    rig = camera_rig.load_rig(str(out / 'rig.yaml'))
    plates = {view.camera: view.image for view in views if view.camera in EXTERIOR}
    for c, plate in plates.items():
        imageio.imwrite(out / f'{c}_plate.png', plate)
        content['cameras'][c]['plate'] = f'{c}_plate.png'
    # The light's level: a recording fixes only ratios (lit over shadowed); the level is the
    # twin's own (TWIN_LIGHT on the table's centre), within what the exposure can draw without
    # MuJoCo's clamp (no texel lit above 1 / EXPOSURE). The twin's fill lights stay on: the
    # shadow's darkening is r = (A + F) / (A + F + K cos) at the table's centre, F the fills'
    # light there, so the ambient A is what r leaves beyond them.
    centre = np.asarray([TABLE_CENTRE])
    up = np.array([0.0, 0.0, 1.0])
    fills = fill_shading(centre, up)[0]
    r = np.asarray(light.ambient)  # estimate_light: ambient r + key (1 - r) = 1 there
    peak = max(float(dataclasses.replace(light, fills=True).shading(
        surface.texels(), surface.normal).max()) for surface, _, seen in radiance.values()
        if seen.any())
    level = min(TWIN_LIGHT, 1.0 / EXPOSURE / max(peak, 1e-6))
    light = dataclasses.replace(light, rgb=_scaled(light.rgb, level),
                                ambient=_scaled(np.maximum(r * level - fills, 0.03), 1.0),
                                fills=True)
    textures = _albedos(radiance, light)
    look = RebuiltLook(out, rig, textures, light, {}, plates)
    colours, _ = fit_paint(recording, look, robots)
    for t in textures:
        imageio.imwrite(out / f'{t.surface.name}.png', t.texture)
        content['surfaces'][t.surface.name].update(texture=f'{t.surface.name}.png',
                                                   emission=t.emission)
    for c, m in colours.items():
        content['cameras'].setdefault(c, {}).update(m)
    content['light'] = light.to_yaml()
    content['light']['level'] = round(float(level), 4)
    content['seconds'] = round(time.monotonic() - start, 1)
    (out / 'rebuild.yaml').write_text(
        '# Rebuilt look written by `realm-ros cameras rebuild` (docs/visual-matching.md).\n'
        + yaml.safe_dump(content, sort_keys=False))
    return content


def _scaled(rgb: Sequence[float], level: float) -> tuple[float, float, float]:
    return float(rgb[0]) * level, float(rgb[1]) * level, float(rgb[2]) * level


def _albedos(radiance: Mapping[str, tuple[Surface, np.ndarray, np.ndarray]],
             light: KeyLight) -> list[SurfaceTexture]:
    """The seen surfaces' textures under ``light``: radiance over its shading, an emission
    where the light is too weak for the recorded colour."""
    out = []
    for surface, value, seen in radiance.values():
        if not seen.any():
            continue
        shade = light.shading(surface.texels(), surface.normal).reshape(value.shape)
        # Emission adds to the light before the clamp: at most what keeps the sum within 1.
        room = max(0.0, 1.0 / EXPOSURE - float(shade.max()))
        emission = round(min(room, float(max(0.0, np.quantile((value - shade)[seen], 0.995)))),
                         5)
        albedo = np.clip(value / (shade + emission), 0.0, 1.0)
        out.append(SurfaceTexture(surface, (albedo * 255.0 + 0.5).astype(np.uint8), emission,
                                  1.0 - float(seen.mean())))
    return out


def fit_paint(recording: Any, look: RebuiltLook, robots: Mapping[str, Sequence[np.ndarray]],
              frames: int = 8) -> tuple[dict[str, dict[str, Any]], float]:
    """Return per camera the robot's colour transform (``colour``) between the recording and
    the rebuilt twin rendered at ``frames`` recorded poses, with the pixel count; and how much
    brighter the recorded robot is than the rendered one (median of the ratio of their mean
    brightness per camera)."""
    import cv2
    import mujoco

    from realm_ros.backends.mujoco.actuation import ArmActuation
    from realm_ros.backends.mujoco.render import FrameRenderer
    from realm_ros.backends.mujoco.visual_match import fit_colour
    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.types import EpisodeSpec

    cameras = tuple(robots)
    width, height = recording.size
    world = MujocoWorld(WorldConfig(task='', cameras=cameras, camera_width=width,
                                    camera_height=height), look=look)
    world.reset(EpisodeSpec(task='empty', seed=0))
    act = ArmActuation(world.model)
    renderer = FrameRenderer(world.model, width, height, shadows=True, reflections=False)
    sims: dict[str, list[np.ndarray]] = {c: [] for c in cameras}
    reals: dict[str, list[np.ndarray]] = {c: [] for c in cameras}
    kernel = np.ones((5, 5), np.uint8)
    try:
        for k in np.linspace(0, len(recording.q) - 1, min(frames, len(recording.q))).astype(int):
            act.set_arm_state(world.data, np.asarray(recording.q[k], float),
                              gripper=float(recording.gripper[k]))
            mujoco.mj_forward(world.model, world.data)
            rgb = {c: look.expose(v) for c, v in renderer.render(world.data, cameras).items()}
            for c in cameras:
                inner = cv2.erode(robots[c][k].astype(np.uint8), kernel) > 0
                sims[c].append(rgb[c][inner])
                reals[c].append(recording.images[c][k][inner])
    finally:
        renderer.close()
        world.close()
    out, ratios = {}, []
    for c in cameras:
        sim, real = np.concatenate(sims[c]), np.concatenate(reals[c])
        if len(sim) < 20:
            continue
        m = fit_colour(sim.astype(float), real.astype(float))
        out[c] = {'colour': [[round(float(v), 6) for v in row] for row in m],
                  'robot_pixels': int(len(sim))}
        ratios.append(float(real.mean()) / max(float(sim.mean()), 1.0))
    return out, float(np.clip(np.median(ratios), 0.5, 2.5)) if ratios else 1.0




__all__ = ['build_rebuild', 'fit_paint', 'rig_fit', 'warnings']
