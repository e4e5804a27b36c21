"""Shared test set-up: isolate DDS per test session, helpers to run nodes as processes."""

from __future__ import annotations

import os
import random

# One DDS domain per test session, discovery on this machine only, so parallel sessions
# (and a lab's running graph) never cross-talk. Set before anything initialises rclpy.
os.environ.setdefault('ROS_DOMAIN_ID', str(random.Random(os.getpid()).randint(1, 100)))
os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
os.environ.setdefault('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')
os.environ.setdefault('MUJOCO_GL', 'egl')
