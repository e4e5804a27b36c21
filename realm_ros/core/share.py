"""Installed package files (``config/...``, ``checkpoints/...``): the ament index of a ROS
install, the Python prefix's share folder, then the source tree. No rclpy."""

from __future__ import annotations

import pathlib
import sys

from realm_ros.core.errors import ConfigError


def share_path(relative: str) -> pathlib.Path:
    """Return an installed package file (``config/...``): ament share, then the source tree."""
    candidates = []
    try:
        from ament_index_python.packages import get_package_share_directory
        candidates.append(pathlib.Path(get_package_share_directory('realm_ros')) / relative)
    except (ImportError, LookupError, ValueError, OSError):  # OSError: no AMENT_PREFIX_PATH
        pass
    candidates.append(pathlib.Path(sys.prefix) / 'share' / 'realm_ros' / relative)
    candidates.append(pathlib.Path(__file__).resolve().parents[2] / relative)
    for path in candidates:
        if path.exists():
            return path
    raise ConfigError(f'cannot find {relative} of package realm_ros (looked in '
                      f'{[str(c.parent) for c in candidates]})')
