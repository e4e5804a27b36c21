"""Visual matching (SIMPLER's ``rgb_overlay``, background mode) for the twin's cameras.

From a calibration recording (``realm-ros cameras record``) and the calibrated rig
(``cameras calibrate``), :func:`realm_ros.backends.mujoco.matching.build_match` writes a folder
the twin takes as ``visual_match_dir``:

* ``rig.yaml``: the calibrated rig (the twin renders from it);
* ``<camera>_plate.png`` per exterior camera: the clean plate, the per-pixel temporal median
  of the recording with the robot masked out by the calibrated twin's segmentation render;
* ``match.yaml``: per camera the colour transform (3x3 + bias, ``real = A sim + b`` on linear
  0-1 RGB) fitted on robot pixels between the recording and the twin's render at the recorded
  joints; the wrist camera moves, so it gets the colour transform only.

:class:`VisualMatchLook` is the matched twin's look: each exterior frame is drawn, by the
actor-level segmentation, from simulation where the robot, the task objects and articulated
fixtures are (every body but the world and the table; the robot colour-transformed) and from
the plate everywhere else, at the camera's resolution: a hard mask, as SIMPLER's. What is
lost, as in SIMPLER: shadows the simulated robot and objects cast on the table and floor
(those pixels come from the plate), and anything that changes in the lab's background (the
plate is static).
Perturbations still act on the simulated pixels (a V-LIGHT dims the robot and objects, not the
plate; V-VIEW moves the camera off the plate's viewpoint, which the plate cannot follow).
"""

from __future__ import annotations

import pathlib
from typing import Any, Mapping

import numpy as np

from realm_ros.backends.mujoco import camera_rig
from realm_ros.backends.mujoco.appearance import Look, Segmenter
from realm_ros.core.errors import ConfigError, DataError

EXTERIOR = ('exterior_1', 'exterior_2')
#: mjtObj's geom type in a segmentation image's second channel.
GEOM = 5


def kept_geoms(model: Any) -> np.ndarray:
    """Return a bool per geom: drawn from simulation (robot, objects, fixtures) in a composite.

    Every geom of a body other than the world body and the table: the room, floor, table and
    any other world-body geometry come from the plate.
    """
    skip = {0}
    try:
        skip.add(model.body('table').id)
    except KeyError:
        pass
    return np.array([int(model.geom_bodyid[g]) not in skip for g in range(model.ngeom)], bool)


def robot_geoms(model: Any) -> np.ndarray:
    """Return a bool per geom: part of the robot (the subtree of ``panda_link0``)."""
    return subtree_geoms(model, model.body('panda_link0').id)


def subtree_geoms(model: Any, root: int) -> np.ndarray:
    """Return a bool per geom: on body ``root`` or a body below it."""
    out = np.zeros(model.ngeom, bool)
    for g in range(model.ngeom):
        walk = int(model.geom_bodyid[g])
        while walk > 0 and walk != root:
            walk = int(model.body_parentid[walk])
        out[g] = walk == root
    return out


def seg_mask(seg: np.ndarray, geoms: np.ndarray) -> np.ndarray:
    """Return (H, W) bool: pixels of a segmentation image showing one of ``geoms`` (bool per
    geom)."""
    ids, kind = seg[..., 0], seg[..., 1]
    ok = (kind == GEOM) & (ids >= 0) & (ids < len(geoms))
    out = np.zeros(ids.shape, bool)
    out[ok] = geoms[ids[ok]]
    return out


#: Ridge weight of :func:`fit_colour` toward the identity, per pixel (0-1 values).
COLOUR_RIDGE = 0.005


def fit_colour(sim: np.ndarray, real: np.ndarray, ridge: float = COLOUR_RIDGE) -> np.ndarray:
    """Return the (4, 3) colour transform ``[r g b 1] @ M`` from ``sim`` to ``real`` pixels
    ((N, 3), 0-255), well conditioned.

    Ridge regression toward the identity on 0-1 values (``min |X M - Y|^2 + ridge N
    |A - I|^2`` on the 3x3 part ``A``, the bias nearly free): along colour directions the
    pixels do not span (a white arm's pixels are nearly grey: one direction) the identity
    stays, so the map cannot blow up there. Fitted on half the pixels and checked on the other
    half against a gain per channel and the identity; the one with the least held-out error is
    fitted on all pixels and returned. Plain least squares on a white robot gave equal red and
    green rows and coefficients from -2.5 to 7.9.
    """
    if len(sim) < 20:
        raise DataError(f'only {len(sim)} robot pixels to fit a colour transform on')
    x = np.asarray(sim, float) / 255.0
    y = np.asarray(real, float) / 255.0
    half = np.arange(len(x)) % 2 == 0
    fits = {'affine': _ridge, 'gain': _gain, 'identity': lambda a, b, r: _IDENTITY}
    held = {name: float(np.abs(_through(x[~half], f(x[half], y[half], ridge)) - y[~half]).mean())
            for name, f in fits.items()}
    best = min(held, key=lambda k: held[k])
    return fits[best](x, y, ridge)


_IDENTITY = np.vstack([np.eye(3), np.zeros((1, 3))])


def _through(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    return x @ m[:3] + m[3]


def _ridge(x: np.ndarray, y: np.ndarray, ridge: float) -> np.ndarray:
    xa = np.concatenate([x, np.ones((len(x), 1))], 1)
    penalty = ridge * len(x) * np.diag([1.0, 1.0, 1.0, 1e-3])
    delta = np.linalg.solve(xa.T @ xa + penalty, xa.T @ (y - _through(x, _IDENTITY)))
    return _IDENTITY + delta


def _gain(x: np.ndarray, y: np.ndarray, ridge: float) -> np.ndarray:
    del ridge
    g = (x * y).sum(0) / np.maximum((x * x).sum(0), 1e-9)
    return np.vstack([np.diag(np.clip(g, 0.2, 5.0)), np.zeros((1, 3))])


def colour_where(image: np.ndarray, mask: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Return ``image`` with the pixels of ``mask`` (H, W) through the colour transform ``m``."""
    return np.where(mask[..., None], apply_colour(image, m), image)


def apply_colour(image: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Return ``image`` (..., 3) uint8 through the colour transform ``m`` (4, 3)."""
    x = image.astype(np.float32) / 255.0
    out = x @ m[:3].astype(np.float32) + m[3].astype(np.float32)
    return np.clip(out * 255.0 + 0.5, 0, 255).astype(np.uint8)


class VisualMatchLook(Look):
    """The visually matched twin's look (module docstring)."""

    def __init__(self, folder: pathlib.Path, rig: camera_rig.Rig, size: tuple[int, int],
                 plates: Mapping[str, np.ndarray], colours: Mapping[str, np.ndarray]) -> None:
        self.folder = folder
        self.calibrated = rig
        self.size = size
        self.plates = dict(plates)
        self.colours = dict(colours)
        self._plates_at: dict[tuple[str, int, int], np.ndarray] = {}
        self._kept: tuple[Any, np.ndarray, np.ndarray] | None = None

    @classmethod
    def load(cls, folder: str | pathlib.Path) -> VisualMatchLook:
        """Read a ``cameras match`` folder.

        Raises:
            ConfigError: missing or malformed ``match.yaml``, ``rig.yaml`` or a plate (named).
        """
        import imageio.v2 as imageio

        from realm_ros.core.config import load_yaml

        folder = pathlib.Path(folder).expanduser().resolve()
        where = f'visual_match_dir {folder}'
        if not (folder / 'match.yaml').is_file():
            raise ConfigError(f'{where}: no match.yaml (write it with `realm-ros cameras match`)')
        data = load_yaml(folder / 'match.yaml')
        rig = camera_rig.load_rig(str(folder / 'rig.yaml'))
        cams = data.get('cameras')
        if not isinstance(cams, dict):
            raise ConfigError(f'{where}: match.yaml needs a `cameras` map')
        size = data.get('size') or [0, 0]
        plates, colours = {}, {}
        for name, entry in cams.items():
            try:
                colours[name] = np.asarray(entry['colour'], float).reshape(4, 3)
            except (KeyError, TypeError, ValueError):
                raise ConfigError(f'{where}: cameras.{name}.colour must be 4 rows of 3 '
                                  'numbers') from None
            if 'plate' in entry:
                path = folder / str(entry['plate'])
                try:
                    plates[name] = np.asarray(imageio.imread(path))[..., :3]
                except (OSError, ValueError) as err:
                    raise ConfigError(f'{where}: cannot read plate {path}: {err}') from None
        return cls(folder, rig, (int(size[0]), int(size[1])), plates, colours)

    def rig(self, rig: camera_rig.Rig) -> camera_rig.Rig:
        """The calibrated cameras, with the configured rig's render options."""
        import dataclasses

        return dataclasses.replace(rig, exterior=self.calibrated.exterior,
                                   wrist=self.calibrated.wrist,
                                   source=self.calibrated.source)

    def plate(self, camera: str, width: int, height: int) -> np.ndarray:
        """Return ``camera``'s plate at ``width`` x ``height`` (resized once)."""
        key = (camera, width, height)
        if key not in self._plates_at:
            from PIL import Image

            plate = self.plates[camera]
            if plate.shape[:2] != (height, width):
                plate = np.asarray(Image.fromarray(plate).resize((width, height),
                                                                 Image.Resampling.BILINEAR))
            self._plates_at[key] = plate
        return self._plates_at[key]

    def finish(self, world: Any, images: dict[str, np.ndarray],
               segment: Segmenter) -> dict[str, np.ndarray]:
        """Colour-match the robot's pixels; composite the exterior cameras over their plates.

        The colour transform is fitted on robot pixels (white and grey paint), so it is applied
        to them only: extrapolated to saturated objects or the wrist camera's table it is not
        what the camera does (it turned a green block grey). Objects keep the twin's colours.
        """
        if not any(name in self.colours or name in self.plates for name in images):
            return images
        if self._kept is None or self._kept[0] is not world.model:
            self._kept = (world.model, kept_geoms(world.model), robot_geoms(world.model))
        seg = segment()
        out = {}
        for name, image in images.items():
            picture = image
            if name in self.colours:
                picture = colour_where(image, seg_mask(seg[name], self._kept[2]),
                                       self.colours[name])
            if name in self.plates:
                h, w = image.shape[:2]
                keep = seg_mask(seg[name], self._kept[1])
                picture = np.where(keep[..., None], picture, self.plate(name, w, h))
            out[name] = picture
        return out


__all__ = ['EXTERIOR', 'VisualMatchLook', 'apply_colour', 'colour_where', 'fit_colour',
           'kept_geoms', 'robot_geoms', 'seg_mask']
