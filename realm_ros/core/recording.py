"""Configuration of the recorder (``recorder_node``): what to record and where; and the
camera-calibration :class:`Recording` a ``cameras record`` bag holds (read by
``io/recordings.py``, used by ``backends/mujoco/calibration.py``)."""

from __future__ import annotations

import dataclasses

import numpy as np

from realm_ros.core.config import CAMERA_NAMES, field
from realm_ros.core.errors import ConfigError

#: How a recorder stores camera images: raw rgb8, or compressed (image_transport's names).
IMAGE_FORMATS = ('raw', 'jpeg', 'png')


@dataclasses.dataclass(frozen=True)
class RecorderConfig:
    """Parameters of ``recorder_node`` (each declared as a ROS parameter)."""

    out_dir: str = field('', 'directory that receives the bags (one per run or episode)')
    namespace: str = field('/real', 'namespace of the world whose topics are recorded')
    cameras: tuple[str, ...] = field(
        ('',), 'cameras whose images are recorded ("" = none; exterior_1, exterior_2, wrist)')
    image_format: str = field(
        'raw', 'how images are stored: raw (sensor_msgs/Image rgb8 on cameras/<name>/image) or '
               'jpeg / png (sensor_msgs/CompressedImage on cameras/<name>/image/compressed)')
    image_width: int = field(0, 'stored image width, px (resized with padding, as the VLA '
                                'clients do); 0 = as the world publishes it')
    image_height: int = field(0, 'stored image height, px; 0 = as the world publishes it')
    bag_prefix: str = field('run', 'bag directory names: <out_dir>/<bag_prefix>_<NNN>')
    use_header_stamps: bool = field(
        True, 'log time of each message = its header stamp (sim time in lockstep); false = '
              'receive time on the node clock')

    def __post_init__(self) -> None:
        if not self.out_dir:
            raise ConfigError('RecorderConfig.out_dir must be set (a directory for the bags)')
        cameras = tuple(c for c in self.cameras if c)
        unknown = [c for c in cameras if c not in CAMERA_NAMES]
        if unknown:
            raise ConfigError(
                f'RecorderConfig.cameras: unknown camera(s) {unknown}; choose from {CAMERA_NAMES}')
        object.__setattr__(self, 'cameras', cameras)
        if self.image_format not in IMAGE_FORMATS:
            raise ConfigError(f'RecorderConfig.image_format must be one of {list(IMAGE_FORMATS)}, '
                              f'got {self.image_format!r}')
        if self.image_width < 0 or self.image_height < 0 or \
                (self.image_width == 0) != (self.image_height == 0):
            raise ConfigError('RecorderConfig.image_width and image_height must both be > 0 '
                              f'or both 0, got {self.image_width}x{self.image_height}')
        if not self.bag_prefix or '/' in self.bag_prefix:
            raise ConfigError('RecorderConfig.bag_prefix must be a non-empty name without "/"')


@dataclasses.dataclass
class Recording:
    """A calibration recording: per frame, the arm's joints and every camera's image."""

    q: np.ndarray                 # (T, 7) rad
    gripper: np.ndarray           # (T,) g in [0, 1]
    images: dict[str, np.ndarray]  # camera -> (T, H, W, 3) uint8
    path: str = ''

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the images, px."""
        first = next(iter(self.images.values()))
        return int(first.shape[2]), int(first.shape[1])
