"""``realm-ros doctor``: say what this install can run (ROS, DDS, MuJoCo, rendering, PhysX,
Isaac Sim)."""

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


#: What a lab runs to try the Isaac Sim world (it has never run in this project: no RTX GPU).
ISAAC_INSTALL = ("pip install 'isaacsim[all,extscache]==6.2.0.0' "
                 '--extra-index-url https://pypi.nvidia.com')
ISAAC_TRY = 'REALM_ROS_TRY_NOT_RUN=isaac realm-ros episode --backend isaac --task stack_cubes'


def _physx() -> str:
    import ovphysx

    from realm_ros.backends import usd_export
    usd_export.import_pxr()
    return f'ovphysx {ovphysx.__version__} (backend physx, CPU mode) + usd-core + PhysX schemas'


def _gpu_names() -> list[str]:
    import shutil
    import subprocess
    if shutil.which('nvidia-smi') is None:
        return []
    out = subprocess.run(['nvidia-smi', '--query-gpu=name', '--format=csv,noheader'],
                         capture_output=True, text=True, timeout=20, check=False)
    return [line.strip() for line in out.stdout.splitlines() if line.strip()]


def _isaac() -> str:
    import sys
    gpus = _gpu_names()
    rtx = [g for g in gpus if 'RTX' in g.upper()]
    where = (f'RTX GPU: {rtx[0]}' if rtx else
             f'no RTX GPU ({", ".join(gpus) or "no NVIDIA GPU"}; Isaac Sim needs one)')
    if sys.version_info[:2] != (3, 12):
        where += f'; Python {sys.version_info[0]}.{sys.version_info[1]} (Isaac Sim 6: 3.12)'
    try:
        module = importlib.import_module('isaacsim')
        module.SimulationApp  # noqa: B018 - the attribute is the check
    except Exception as err:  # noqa: BLE001 - reported with the install command
        raise RuntimeError(f'Isaac Sim not installed ({where}). On an RTX machine with '
                           f'Python 3.12: {ISAAC_INSTALL} ; then: {ISAAC_TRY}') from err
    return (f'installed ({where}); the isaac world has never been run by this project, try: '
            f'{ISAAC_TRY}')


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
                                ('franka_msgs', 'franka_msgs.action', 'Grasp')]:
        _check(f'{label} (lab install only)',
               lambda m=module, a=attr: str(getattr(importlib.import_module(m), a)))
    _check('kit-less PhysX twin (physx extra)', _physx)
    _check('Isaac Sim (RTX lab install only)', _isaac)
    return 0 if all(essential) else 1
