"""``realm-ros doctor``: say what this install can run (ROS, DDS, MuJoCo, rendering)."""

from __future__ import annotations

import argparse
import importlib
import os


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options."""
    del parser


def _check(label: str, fn) -> bool:
    try:
        detail = fn()
    except Exception as err:  # noqa: BLE001 - a doctor reports every failure and goes on
        print(f'  [missing] {label}: {type(err).__name__}: {err}')
        return False
    print(f'  [ok]      {label}{": " + detail if detail else ""}')
    return True


def _rclpy() -> str:
    rclpy = importlib.import_module('rclpy')
    rclpy.init()
    try:
        node = rclpy.create_node('realm_ros_doctor')
        node.destroy_node()
    finally:
        rclpy.try_shutdown()
    return f'{rclpy.__file__} (RMW {os.environ.get("RMW_IMPLEMENTATION", "default")})'


def _render() -> str:
    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.core.config import WorldConfig
    world = MujocoWorld(WorldConfig(cameras=('exterior_1',)))
    image = world.render()['exterior_1']
    world.close()
    return f'{image.shape} via MUJOCO_GL={os.environ.get("MUJOCO_GL")}'


def run(args: argparse.Namespace) -> int:
    """Print one line per capability; exit 1 if the embedded default cannot run."""
    del args
    print('realm_ros install check')
    essential = [
        _check('rclpy + DDS', _rclpy),
        _check('mujoco', lambda: importlib.import_module('mujoco').__version__),
        _check('offscreen rendering', _render),
    ]
    # A module attribute, not just the name: the repo's launch/ folder would import as a
    # namespace package named 'launch' when run from the source tree.
    for label, module, attr in [('launch (ros2 launch)', 'launch', 'LaunchDescription'),
                                ('launch_ros', 'launch_ros', 'actions'),
                                ('tf2_ros', 'tf2_ros', 'Buffer'),
                                ('control_msgs', 'control_msgs.action', 'GripperCommand'),
                                ('franka_msgs', 'franka_msgs.action', 'Grasp'),
                                ('isaacsim', 'isaacsim', 'SimulationApp')]:
        _check(f'{label} (lab install only)',
               lambda m=module, a=attr: str(getattr(importlib.import_module(m), a)))
    return 0 if all(essential) else 1
