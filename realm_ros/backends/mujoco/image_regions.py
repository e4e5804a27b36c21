"""Where the image error is: the robot's, the objects' and the background's pixels.

A real frame's regions come from its own segmentation render (MuJoCo's (geom id, type) per
pixel): the robot is the subtree of ``panda_link0``, the objects the task's objects and
articulated fixtures (every other geom drawn from simulation in a composite,
:func:`~realm_ros.backends.mujoco.visual_match.kept_geoms`), the background everything else.
They are kept as one label image per camera (uint8, :data:`LABELS`), so a first frame's regions
can be stored beside it as a PNG. Used by ``demo --vision``'s image distance and
``bench/bench_visual_match.py``.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

#: The regions an image distance is split into ('image': every pixel).
REGIONS = ('image', 'robot', 'objects', 'background')
#: Label of each region but 'image' in a label image.
LABELS = {'background': 0, 'robot': 1, 'objects': 2}


def region_labels(model: Any, segmentation: np.ndarray) -> np.ndarray:
    """Return the (H, W) uint8 label image (:data:`LABELS`) of one camera's segmentation
    render of ``model``."""
    from realm_ros.backends.mujoco.visual_match import kept_geoms, robot_geoms, seg_mask

    robot = robot_geoms(model)
    labels = np.zeros(segmentation.shape[:2], np.uint8)
    labels[seg_mask(segmentation, kept_geoms(model) & ~robot)] = LABELS['objects']
    labels[seg_mask(segmentation, robot)] = LABELS['robot']
    return labels


def region_distances(real: np.ndarray, twin: np.ndarray, labels: np.ndarray
                     ) -> dict[str, float]:
    """Mean absolute pixel error (0-255, over RGB) of ``twin`` against ``real`` per region of
    :data:`REGIONS` that has pixels in ``labels`` (the real frame's)."""
    err = np.abs(np.asarray(twin, float) - np.asarray(real, float)).mean(-1)
    out = {'image': float(err.mean())}
    for region, label in LABELS.items():
        mask = labels == label
        if mask.any():
            out[region] = float(err[mask].mean())
    return out


def split_distances(real: Mapping[str, np.ndarray], twin: Mapping[str, np.ndarray],
                    labels: Mapping[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """{camera: :func:`region_distances`} for every camera of ``labels`` both frames hold."""
    return {c: region_distances(real[c], twin[c], labels[c])
            for c in sorted(labels) if c in real and c in twin}
