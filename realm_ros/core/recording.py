"""Configuration of the recorder (``recorder_node``): what to record and where."""

from __future__ import annotations

import dataclasses

from realm_ros.core.config import CAMERA_NAMES, field
from realm_ros.core.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class RecorderConfig:
    """Parameters of ``recorder_node`` (each declared as a ROS parameter)."""

    out_dir: str = field('', 'directory that receives the bags (one per run or episode)')
    namespace: str = field('/real', 'namespace of the world whose topics are recorded')
    cameras: tuple[str, ...] = field(
        ('',), 'cameras whose images are recorded ("" = none; exterior_1, exterior_2, wrist)')
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
        if not self.bag_prefix or '/' in self.bag_prefix:
            raise ConfigError('RecorderConfig.bag_prefix must be a non-empty name without "/"')
