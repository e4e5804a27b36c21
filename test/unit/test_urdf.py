"""The robot description parses, matches core's joints and limits, and the twin's kinematics."""

import pathlib
import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import pytest
import xacro
import yourdfpy

from realm_ros.backends.mujoco import model as mjcf
from realm_ros.core import robot, rotations
from realm_ros.programs import description

ROOT = pathlib.Path(__file__).resolve().parents[2]
URDF = ROOT / 'urdf' / 'panda_droid.urdf'
XACRO = ROOT / 'urdf' / 'panda_droid.urdf.xacro'


@pytest.fixture(scope='module')
def urdf():
    return yourdfpy.URDF.load(str(URDF), build_scene_graph=True, load_meshes=False)


@pytest.fixture(scope='module')
def twin():
    m = mujoco.MjModel.from_xml_string(mjcf.build_mjcf())
    return m, mujoco.MjData(m)


def test_committed_files_are_the_generators_output():
    assert URDF.read_text() == description.pretty(description.build_urdf(xacro=False)), \
        'urdf/panda_droid.urdf is stale: run `realm-ros urdf --out-dir urdf`'
    assert XACRO.read_text() == description.pretty(description.build_urdf(xacro=True)), \
        'urdf/panda_droid.urdf.xacro is stale: run `realm-ros urdf --out-dir urdf`'


def test_xacro_without_meshes_equals_the_urdf_and_with_meshes_uses_franka_description():
    def joints_and_links(root):
        return ([(j.get('name'), j.get('type')) for j in root.iter('joint')],
                [link.get('name') for link in root.iter('link')])

    plain = xacro.process_file(str(XACRO), mappings={'franka_meshes': 'false'})
    plain_root = ET.fromstring(plain.toxml())
    urdf_root = ET.parse(URDF).getroot()
    assert joints_and_links(plain_root) == joints_and_links(urdf_root)
    assert not list(plain_root.iter('mesh'))
    meshes = xacro.process_file(str(XACRO), mappings={'franka_meshes': 'true'})
    files = [m.get('filename') for m in ET.fromstring(meshes.toxml()).iter('mesh')]
    assert files == [f'package://franka_description/meshes/robot_arms/fer/visual/link{i}.dae'
                     for i in range(8)]


def test_joint_names_order_limits_match_core(urdf):
    actuated = [j for j in urdf.actuated_joint_names if j in robot.JOINT_NAMES]
    assert tuple(actuated) == robot.JOINT_NAMES
    for i, name in enumerate(robot.JOINT_NAMES):
        joint = urdf.joint_map[name]
        assert joint.type == 'revolute'
        assert joint.limit.lower == pytest.approx(robot.JOINT_LOWER[i])
        assert joint.limit.upper == pytest.approx(robot.JOINT_UPPER[i])
        assert joint.limit.velocity == pytest.approx(robot.VELOCITY_LIMIT[i])
        assert joint.limit.effort == pytest.approx(robot.EFFORT_LIMIT[i])
    for finger in description.FINGER_JOINTS:
        assert urdf.joint_map[finger].mimic.joint == robot.GRIPPER_JOINT
    links = set(urdf.link_map)
    assert {'base_link', *description.ARM_LINKS, *description.CAMERA_FRAMES.values()} <= links
    assert urdf.base_link == 'base_link'


def test_inertials_match_core(urdf):
    for i, (mass, com, (ixx, iyy, izz, ixy, ixz, iyz)) in enumerate(robot.LINK_INERTIALS):
        inertial = urdf.link_map[f'panda_link{i + 1}'].inertial
        assert inertial.mass == pytest.approx(mass)
        np.testing.assert_allclose(inertial.origin[:3, 3], com)
        np.testing.assert_allclose(inertial.origin[:3, :3], np.eye(3))
        np.testing.assert_allclose(inertial.inertia, [[ixx, ixy, ixz], [ixy, iyy, iyz],
                                                      [ixz, iyz, izz]])


def _twin_pose(m, d, ref):
    if ref.startswith('site:'):
        site = m.site(ref[5:]).id
        return d.site_xpos[site], d.site_xmat[site].reshape(3, 3)
    if ref.startswith('camera:'):
        cam = m.camera(ref[7:]).id
        return d.cam_xpos[cam], d.cam_xmat[cam].reshape(3, 3) @ description.MUJOCO_TO_OPTICAL
    body = m.body(ref).id
    return d.xpos[body], d.xmat[body].reshape(3, 3)


def test_forward_kinematics_equal_the_twins_for_random_configurations(urdf, twin):
    """Every link, the TCP and the three camera optical frames, with the fingers from g."""
    m, d = twin
    arm_qpos = [m.joint(n).qposadr[0] for n in robot.JOINT_NAMES]
    fingers = [m.joint(n).qposadr[0] for n in description.FINGER_JOINTS]
    rng = np.random.default_rng(7)
    for _ in range(10):
        q = rng.uniform(robot.JOINT_LOWER, robot.JOINT_UPPER)
        g = float(rng.uniform(0.0, 1.0))
        urdf.update_cfg({**dict(zip(robot.JOINT_NAMES, q)), robot.GRIPPER_JOINT: g})
        d.qpos[arm_qpos] = q
        d.qpos[fingers] = mjcf.FINGER_TRAVEL * (1.0 - g)
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        mujoco.mj_camlight(m, d)  # camera poses are not part of mj_kinematics
        for link, ref in description.TWIN_FRAME_OF_LINK.items():
            pose = urdf.get_transform(link, 'base_link')
            pos, rot = _twin_pose(m, d, ref)
            np.testing.assert_allclose(pose[:3, 3], pos, atol=1e-7, err_msg=link)
            np.testing.assert_allclose(pose[:3, :3], rot, atol=1e-7, err_msg=link)


def test_camera_optical_frames_look_at_the_workspace(urdf):
    """REP 103 optical frame: +z forward. The exterior cameras aim at the table centre."""
    urdf.update_cfg(dict(zip(robot.JOINT_NAMES, robot.RESET_Q)))
    for cam in mjcf.DEFAULT_CAMERAS:
        pose = urdf.get_transform(description.CAMERA_FRAMES[cam.name], 'base_link')
        aim = np.subtract(cam.target, cam.pos)
        np.testing.assert_allclose(pose[:3, 2], aim / np.linalg.norm(aim), atol=1e-9)
        assert pose[2, 1] < 0.0  # image "down" (+y) points down in the world


def test_rpy_round_trip():
    rng = np.random.default_rng(3)
    for _ in range(50):
        rot = rotations.matrix_from_quat(rng.normal(size=4))
        back = rotations.matrix_from_rpy(rotations.rpy_from_matrix(rot))
        np.testing.assert_allclose(back, rot, atol=1e-12)


def test_urdf_command_writes_and_checks(tmp_path):
    from realm_ros import cli
    assert cli.main(['urdf', '--check', '--out-dir', str(ROOT / 'urdf')]) == 0
    assert cli.main(['urdf', '--check', '--out-dir', str(tmp_path)]) == 1
    assert cli.main(['urdf', '--out-dir', str(tmp_path)]) == 0
    assert (tmp_path / 'panda_droid.urdf').read_text() == URDF.read_text()
    assert cli.main(['urdf', '--check', '--out-dir', str(tmp_path)]) == 0
