"""A ``cameras record`` bag read as a camera-calibration :class:`~realm_ros.core.recording.
Recording`: the one way a recording comes in (``cameras calibrate | match | rebuild``, the
vision demo); ``backends/mujoco/calibration.py`` fits it, ``commands/`` only passes paths."""

from __future__ import annotations

import pathlib
from typing import Sequence

import numpy as np

from realm_ros.core.errors import DataError
from realm_ros.core.recording import Recording
from realm_ros.io import bags


def load_recording(path: str | pathlib.Path, cameras: Sequence[str] = ('exterior_1',
                                                                      'exterior_2', 'wrist')
                   ) -> Recording:
    """Read a ``cameras record`` bag: each image with the joint state at its stamp.

    Raises:
        DataError: unreadable bag, no images, or images without joint states around them.
    """
    path = pathlib.Path(path)
    run = bags.read_run(path, prefix='panda_', cameras=_cameras_in(path, cameras))
    if not run.images:
        raise DataError(f'bag {path}: no camera images (record with `realm-ros cameras record`)')
    stamps = next(iter(run.images.values()))[0]
    q = np.stack([np.interp(stamps, run.state_t, run.state_q[:, j]) for j in range(7)], 1)
    g = np.interp(stamps, run.state_t, run.state_gripper)
    images = {}
    for name, (t, frames) in run.images.items():
        if len(t) != len(stamps) or np.max(np.abs(t - stamps)) > 1e-6:
            raise DataError(f'bag {path}: camera {name} frames are not stamped with the others')
        images[name] = np.stack(frames)
    return Recording(q, g, images, str(path))


def _cameras_in(path: pathlib.Path, wanted: Sequence[str]) -> list[str]:
    """The cameras of ``wanted`` whose images the bag at ``path`` holds."""
    from rosbags.rosbag2 import Reader

    from realm_ros.core import topics

    try:
        with Reader(path) as reader:
            present = {c.topic for c in reader.connections}
    except Exception as err:  # noqa: BLE001 - rosbags raises several types for a bad bag
        raise DataError(f'cannot read bag {path}: {err}') from None
    return [c for c in wanted if any(t.endswith('/' + topics.camera_image(c)) for t in present)]
