"""rviz/realm.rviz: both robots, the cameras and the monitor's markers, in base_link."""

import pathlib

import yaml

from realm_ros.core.config import CAMERA_NAMES
from realm_ros.ros import topics

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _config():
    return yaml.safe_load((ROOT / 'rviz' / 'realm.rviz').read_text())


def _displays(cls):
    return [d for d in _config()['Visualization Manager']['Displays']
            if d['Class'] == f'rviz_default_plugins/{cls}']


def test_fixed_frame_is_base_link():
    assert _config()['Visualization Manager']['Global Options']['Fixed Frame'] == 'base_link'


def test_real_arm_and_translucent_twin_ghost():
    robots = {d['Description Topic']['Value']: d for d in _displays('RobotModel')}
    assert set(robots) == {'/real/robot_description', '/sim/robot_description'}
    real, sim = robots['/real/robot_description'], robots['/sim/robot_description']
    assert real['TF Prefix'] == 'real' and real['Alpha'] == 1
    assert sim['TF Prefix'] == 'sim' and sim['Alpha'] == 0.4
    for d in robots.values():
        # robot_state_publisher latches robot_description: a volatile subscriber never gets it.
        assert d['Description Topic']['Durability Policy'] == 'Transient Local'
        assert d['Description Source'] == 'Topic' and d['Enabled'] is True


def test_three_camera_images_of_the_real_world_enabled():
    images = {d['Topic']['Value']: d['Enabled'] for d in _displays('Image')}
    for name in CAMERA_NAMES:
        assert images[f'/real/{topics.camera_image(name)}'] is True
        assert f'/sim/{topics.camera_image(name)}' in images


def test_monitor_markers_display():
    (markers,) = _displays('MarkerArray')
    assert markers['Topic']['Value'] == '/monitor/markers' and markers['Enabled'] is True


def test_each_robot_reads_the_frames_its_robot_state_publisher_writes():
    """RViz prepends '<TF Prefix>/' to link names; description.launch.py gives robot_state_
    publisher frame_prefix '<world>/' for the world whose robot_description it publishes."""
    for display in _displays('RobotModel'):
        world = display['Description Topic']['Value'].split('/')[1]
        assert display['TF Prefix'] + '/' == f'{world}/'
    assert "'frame_prefix': f'{world}/'" in (ROOT / 'launch' / 'monitor.launch.py').read_text()
