"""Building a visual match from a recording: the twin rendered at the recorded joints.

:func:`build_match` (``realm-ros cameras match``) writes the folder
:class:`~realm_ros.backends.mujoco.visual_match.VisualMatchLook` reads (docs/visual-matching.md);
:class:`TwinFrames` renders the twin (its own look, a given rig) with the arm at recorded joints,
RGB and segmentation, for it and for calibration. Apart from ``visual_match`` because it builds a
:class:`~realm_ros.backends.mujoco.world.MujocoWorld`, whose look is a ``VisualMatchLook``.
"""

from __future__ import annotations

import pathlib
from typing import Any, Sequence

import numpy as np

from realm_ros.backends.mujoco import camera_rig
from realm_ros.backends.mujoco.visual_match import EXTERIOR, fit_colour, robot_geoms, seg_mask
from realm_ros.core import tasks
from realm_ros.core.errors import ConfigError


class TwinFrames:
    """The twin (its own look, a given rig) rendered at recorded joints: RGB and segmentation."""

    def __init__(self, rig_file: str, size: tuple[int, int], cameras: Sequence[str],
                 task: str = '') -> None:
        from realm_ros.backends.mujoco.actuation import ArmActuation
        from realm_ros.backends.mujoco.world import MujocoWorld
        from realm_ros.core.config import WorldConfig
        from realm_ros.core.types import EpisodeSpec

        self.cameras = tuple(cameras)
        self.world = MujocoWorld(WorldConfig(
            task=task, cameras=self.cameras, camera_width=size[0], camera_height=size[1],
            camera_rig_file=rig_file), visual_match_dir='')
        self.world.reset(EpisodeSpec(task=task or tasks.EMPTY, seed=0))
        self._act = ArmActuation(self.world.model)
        self._renderer: Any = None
        self.robot = robot_geoms(self.world.model)

    def render(self, q: np.ndarray, gripper: float) -> tuple[dict[str, np.ndarray],
                                                             dict[str, np.ndarray]]:
        """Return (rgb, segmentation) per camera with the arm at ``q`` (rad), gripper ``g``."""
        import mujoco

        from realm_ros.backends.mujoco.render import FrameRenderer

        w = self.world
        if self._renderer is None:
            self._renderer = FrameRenderer(w.model, w.config.camera_width,
                                           w.config.camera_height, shadows=False,
                                           reflections=False)
        self._act.set_arm_state(w.data, np.asarray(q, float), gripper=gripper)
        mujoco.mj_forward(w.model, w.data)
        return (self._renderer.render(w.data, self.cameras),
                self._renderer.render(w.data, self.cameras, segmentation=True))

    def close(self) -> None:
        """Free the renderers."""
        if self._renderer is not None:
            self._renderer.close()
        self.world.close()


def build_match(recording: Any, rig_file: str, out: str | pathlib.Path,
                grow_px: int = 2) -> dict[str, Any]:
    """Write a visual-match folder from ``recording`` (a calibration ``Recording``) and the
    calibrated ``rig_file``; return ``match.yaml``'s content (with per-camera pixel counts)."""
    import cv2
    import imageio.v2 as imageio
    import yaml

    from realm_ros.backends.mujoco.calibration import clean_plate

    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cameras = [c for c in ('exterior_1', 'exterior_2', 'wrist') if c in recording.images]
    twin = TwinFrames(rig_file, recording.size, cameras)
    kernel = np.ones((2 * grow_px + 1, 2 * grow_px + 1), np.uint8)
    sims: dict[str, list[np.ndarray]] = {c: [] for c in cameras}
    robots: dict[str, list[np.ndarray]] = {c: [] for c in cameras}
    try:
        for q, g in zip(recording.q, recording.gripper):
            rgb, seg = twin.render(q, float(g))
            for c in cameras:
                sims[c].append(rgb[c])
                robots[c].append(seg_mask(seg[c], twin.robot))
    finally:
        twin.close()
    content: dict[str, Any] = {'size': list(recording.size), 'cameras': {}}
    for c in cameras:
        frames = recording.images[c]
        robot = np.stack(robots[c])
        grown = np.stack([cv2.dilate(m.astype(np.uint8), kernel) > 0 for m in robot])
        inner = np.stack([cv2.erode(m.astype(np.uint8), kernel) > 0 for m in robot])
        entry: dict[str, Any] = {}
        if c in EXTERIOR:
            plate, unknown = clean_plate(frames, grown)
            imageio.imwrite(out / f'{c}_plate.png', plate)
            entry['plate'] = f'{c}_plate.png'
            entry['plate_unknown_fraction'] = round(float(unknown.mean()), 5)
        sim = np.stack(sims[c])[inner]
        real = frames[inner]
        m = fit_colour(sim.astype(float), real.astype(float))
        entry['colour'] = [[round(float(v), 6) for v in row] for row in m]
        entry['robot_pixels'] = int(inner.sum())
        content['cameras'][c] = entry
    rig = camera_rig.load_rig(rig_file)
    (out / 'rig.yaml').write_text(pathlib.Path(rig.source).read_text()
                                  if rig_file else _droid_rig_text())
    (out / 'match.yaml').write_text(
        '# Visual match written by `realm-ros cameras match` (docs/visual-matching.md).\n'
        + yaml.safe_dump(content, sort_keys=False))
    return content


def _droid_rig_text() -> str:
    root = pathlib.Path(__file__).resolve().parents[3]
    path = root / camera_rig.DEFAULT_RIG
    if not path.is_file():
        raise ConfigError('no calibrated rig given and config/cameras/droid.yaml not found')
    return path.read_text()


__all__ = ['TwinFrames', 'build_match']
