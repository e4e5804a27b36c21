"""The shared world interface's names for the ROS layer: :mod:`realm_ros.core.topics` holds them.

They live in ``core`` so that ``io`` (bags) spells them the same way without importing ROS.
"""

from realm_ros.core.topics import *  # noqa: F401,F403
