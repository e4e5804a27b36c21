"""Generate the robot description (URDF and its xacro wrapper) of the Panda in the DROID mount.

One source of truth: the arm comes from :mod:`realm_ros.core.robot` (modified-DH table, link
inertials, joint limits), and the gripper, TCP and cameras from the twin's own MJCF
(:mod:`realm_ros.backends.mujoco.model`, parsed, so the URDF cannot drift from the twin). The
committed ``urdf/panda_droid.urdf`` and ``urdf/panda_droid.urdf.xacro`` are this module's output
(``realm-ros urdf --out-dir urdf``); ``test/unit/test_urdf.py`` checks they are up to date and that
their forward kinematics equal the twin's.

Frames (ROS conventions, REP 103/105): ``base_link`` is the robot base, z up, x forward, and is
the same frame as ``panda_link0`` and as the twin's world frame. Camera frames are *optical*
frames (REP 103: z forward, x right, y down), while a MuJoCo camera looks along its -z with y up,
so ``R_optical = R_mujoco_camera @ diag(1, -1, -1)``.

The world interface publishes the gripper as one pseudo-joint ``gripper`` (g in [0, 1],
1 = closed). So that ``robot_state_publisher`` can place the fingers from that value, the URDF
has a *virtual* revolute joint named ``gripper`` (unitless, 0..1, moving a link without geometry
in place) and both finger joints ``mimic`` it: finger opening = FINGER_TRAVEL * (1 - g) m, the
twin's actuator law.
"""

from __future__ import annotations

import pathlib
from typing import Sequence, Union
import xml.etree.ElementTree as ET

import numpy as np

from realm_ros.backends.mujoco import model as mjcf
from realm_ros.core import robot
from realm_ros.core.rotations import matrix_from_quat, rpy_from_matrix

#: Links of the generated description, root first.
ARM_LINKS = tuple(f'panda_link{i}' for i in range(9))
GRIPPER_LINK = 'gripper_link'
CAMERA_FRAMES = {name: f'{name}_optical_frame' for name in ('exterior_1', 'exterior_2', 'wrist')}
#: URDF link -> the twin's MJCF body (or ``site:``/``camera:`` element) at the same frame.
TWIN_FRAME_OF_LINK = {
    **{f'panda_link{i}': f'panda_link{i}' for i in range(9)},
    GRIPPER_LINK: 'gripper',
    'left_finger': 'left_finger',
    'right_finger': 'right_finger',
    'tcp': 'site:tcp',
    **{frame: f'camera:{name}' for name, frame in CAMERA_FRAMES.items()},
}
#: Name of the virtual joint carrying the world interface's gripper value g.
GRIPPER_JOINT = robot.GRIPPER_JOINT
FINGER_JOINTS = ('left_finger_joint', 'right_finger_joint')

#: MuJoCo camera frame (looks along -z, y up) -> ROS optical frame (z forward, y down).
MUJOCO_TO_OPTICAL = np.diag([1.0, -1.0, -1.0])

_ARM_RGBA = '0.92 0.92 0.95 1'
_GRIP_RGBA = '0.2 0.2 0.22 1'


def matrix_from_xyaxes(xyaxes: Sequence[float]) -> np.ndarray:
    """Return the 3x3 rotation of a MuJoCo ``xyaxes`` attribute (columns x, y, z)."""
    x = np.asarray(xyaxes[:3], float)
    x /= np.linalg.norm(x)
    y = np.asarray(xyaxes[3:], float)
    y -= x * (x @ y)
    y /= np.linalg.norm(y)
    return np.column_stack([x, y, np.cross(x, y)])


#: A 3-vector (or any float vector): a sequence or a numpy array.
Vector = Union[Sequence[float], np.ndarray]


def _fmt(values: Vector) -> str:
    return ' '.join(f'{v:.9g}' for v in (0.0 if abs(v) < 1e-15 else v for v in values))


def _origin(pos: Vector, rot: np.ndarray | None = None) -> str:
    rpy = (0.0, 0.0, 0.0) if rot is None else rpy_from_matrix(rot)
    return f'<origin xyz="{_fmt(pos)}" rpy="{_fmt(rpy)}"/>'


def _floats(text: str) -> list[float]:
    return [float(v) for v in text.split()]


def _child(element: ET.Element, path: str) -> ET.Element:
    """Return ``element.find(path)``; a missing one is the twin's MJCF changing under us."""
    found = element.find(path)
    if found is None:
        raise RuntimeError(f'the twin MJCF has no {path!r} under {element.tag} '
                           f'{element.get("name", "")!r}; update description.py')
    return found


def _attr(element: ET.Element, name: str) -> str:
    value = element.get(name)
    if value is None:
        raise RuntimeError(f'the twin MJCF {element.tag} {element.get("name", "")!r} has no '
                           f'{name!r}; update description.py')
    return value


class _TwinGripper:
    """The gripper, TCP and wrist-camera geometry read from the twin's generated MJCF."""

    def __init__(self) -> None:
        root = ET.fromstring(f'<root>{mjcf.robot_xml(include_wrist_camera=True)}</root>')
        gripper = root.find('.//body[@name="gripper"]')
        if gripper is None:
            raise RuntimeError('the twin MJCF has no body "gripper"; update description.py')
        self.mount_rot = matrix_from_quat(_floats(gripper.get('quat', '1 0 0 0')))
        self.mount_pos = _floats(gripper.get('pos', '0 0 0'))
        self.fingers = {}
        for side in ('left_finger', 'right_finger'):
            body = _child(gripper, f'body[@name="{side}"]')
            joint = _child(body, 'joint')
            self.fingers[side] = (_floats(body.get('pos', '0 0 0')), _floats(_attr(joint, 'axis')),
                                  _floats(_attr(joint, 'range')))
        tcp = _child(gripper, 'site[@name="tcp"]')
        self.tcp_pos = _floats(_attr(tcp, 'pos'))
        cam = _child(gripper, 'camera[@name="wrist"]')
        self.wrist_pos = _floats(_attr(cam, 'pos'))
        self.wrist_rot = matrix_from_xyaxes(_floats(_attr(cam, 'xyaxes')))


def _inertial(index: int) -> str:
    mass, com, (ixx, iyy, izz, ixy, ixz, iyz) = robot.LINK_INERTIALS[index]
    return (f'<inertial>{_origin(com)}<mass value="{mass}"/>'
            f'<inertia ixx="{ixx}" ixy="{ixy}" ixz="{ixz}" iyy="{iyy}" iyz="{iyz}" '
            f'izz="{izz}"/></inertial>')


def _segment(child_pos: np.ndarray, radius: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Return (centre, rotation, length) of a cylinder from the origin to ``child_pos``."""
    length = float(np.linalg.norm(child_pos))
    z = child_pos / length
    helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, z)
    x /= np.linalg.norm(x)
    rot = np.column_stack([x, np.cross(z, x), z])
    return child_pos / 2.0, rot, length


def _primitive_geometry(index: int, child_pos: np.ndarray) -> list[str]:
    """Return ``<origin/><geometry/>`` bodies approximating link ``index`` like the twin does."""
    radius = 0.06 if index <= 4 else 0.045
    if index == 0:
        return [f'{_origin((0, 0, 0.05))}<geometry><cylinder radius="0.09" length="0.1"/>'
                '</geometry>']
    shapes = [f'{_origin((0, 0, 0))}<geometry><cylinder radius="{radius}" '
              f'length="{2 * radius * 0.9:.4f}"/></geometry>']
    if np.linalg.norm(child_pos) > 1e-6:
        centre, rot, length = _segment(child_pos, radius)
        shapes.append(f'{_origin(centre, rot)}<geometry><cylinder radius="{radius * 0.85:.4f}" '
                      f'length="{length:.6g}"/></geometry>')
    return shapes


def _link(name: str, index: int | None, child_pos: np.ndarray | None, xacro: bool) -> str:
    """Return an arm link: inertial, primitive visuals/collisions, or franka meshes in xacro."""
    parts = [f'<link name="{name}">']
    if index is not None and index >= 1:
        parts.append(_inertial(index - 1))
    if index is not None and child_pos is not None:
        primitives = [
            f'<visual>{shape}<material name="arm_white"/></visual>'
            for shape in _primitive_geometry(index, child_pos)]
        collisions = [f'<collision>{shape}</collision>'
                      for shape in _primitive_geometry(index, child_pos)]
        if xacro:
            mesh = ('package://$(arg mesh_package)/meshes/robot_arms/$(arg arm_id)'
                    f'/visual/link{index}.dae')
            parts.append('<xacro:if value="$(arg franka_meshes)"><visual>'
                         f'<geometry><mesh filename="{mesh}"/></geometry></visual></xacro:if>')
            parts.append('<xacro:unless value="$(arg franka_meshes)">'
                         + ''.join(primitives) + '</xacro:unless>')
        else:
            parts.extend(primitives)
        parts.extend(collisions)
    parts.append('</link>')
    return ''.join(parts)


def _fixed(name: str, parent: str, child: str, pos: Vector,
           rot: np.ndarray | None = None) -> str:
    return (f'<joint name="{name}" type="fixed"><parent link="{parent}"/>'
            f'<child link="{child}"/>{_origin(pos, rot)}</joint>')


def build_urdf(xacro: bool = False) -> str:
    """Return the URDF text (``xacro=True``: the xacro wrapper with the mesh switch).

    Args:
        xacro: emit ``xacro:arg`` declarations and an ``franka_meshes`` switch that uses
            franka_description's arm meshes instead of primitives. With ``franka_meshes:=false``
            the processed xacro equals the plain URDF.
    """
    grip = _TwinGripper()
    frames = [robot.dh_transform(a, d, alpha, 0.0) for a, d, alpha in robot.DH_MODIFIED]
    out = ['<?xml version="1.0"?>']
    header = ('<!-- Generated by realm_ros/description.py (realm-ros urdf); do not edit. '
              'Panda (FER) in the DROID mount, Robotiq-2F-85-like gripper, DROID cameras. -->')
    if xacro:
        out.append('<robot name="panda_droid" xmlns:xacro="http://www.ros.org/wiki/xacro">')
        out.append(header)
        out.append('<xacro:arg name="franka_meshes" default="false"/>')
        out.append('<xacro:arg name="mesh_package" default="franka_description"/>')
        out.append('<xacro:arg name="arm_id" default="fer"/>')
    else:
        out.append('<robot name="panda_droid">')
        out.append(header)
    out.append(f'<material name="arm_white"><color rgba="{_ARM_RGBA}"/></material>')
    out.append(f'<material name="gripper_black"><color rgba="{_GRIP_RGBA}"/></material>')
    out.append('<link name="base_link"/>')
    out.append(_fixed('base_joint', 'base_link', 'panda_link0', (0, 0, 0)))
    out.append(_link('panda_link0', 0, frames[0][:3, 3], xacro))
    for i in range(robot.NUM_ARM_JOINTS):
        transform = frames[i]
        child = frames[i + 1][:3, 3]
        out.append(_link(f'panda_link{i + 1}', i + 1, child, xacro))
        out.append(
            f'<joint name="{robot.JOINT_NAMES[i]}" type="revolute">'
            f'<parent link="panda_link{i}"/><child link="panda_link{i + 1}"/>'
            f'{_origin(transform[:3, 3], transform[:3, :3])}<axis xyz="0 0 1"/>'
            f'<limit lower="{robot.JOINT_LOWER[i]}" upper="{robot.JOINT_UPPER[i]}" '
            f'effort="{robot.EFFORT_LIMIT[i]}" velocity="{robot.VELOCITY_LIMIT[i]}"/></joint>')
    out.append('<link name="panda_link8"/>')
    flange = frames[robot.NUM_ARM_JOINTS]
    out.append(_fixed('panda_joint8', 'panda_link7', 'panda_link8', flange[:3, 3],
                      flange[:3, :3]))
    out.append(_gripper_xml(grip))
    out.append(_cameras_xml(grip))
    out.append('</robot>')
    return '\n'.join(out) + '\n'


def _gripper_xml(grip: _TwinGripper) -> str:
    parts = [
        f'<link name="{GRIPPER_LINK}"><inertial>{_origin((0, 0, 0.05))}<mass value="0.9"/>'
        '<inertia ixx="0.0025" ixy="0" ixz="0" iyy="0.0025" iyz="0" izz="0.0015"/></inertial>'
        f'<visual>{_origin((0, 0, 0.03))}<geometry><cylinder radius="0.04" length="0.06"/>'
        '</geometry><material name="gripper_black"/></visual>'
        f'<visual>{_origin((0, 0, 0.08))}<geometry><box size="0.05 0.11 0.04"/></geometry>'
        '<material name="gripper_black"/></visual>'
        f'<collision>{_origin((0, 0, 0.03))}<geometry><cylinder radius="0.04" length="0.06"/>'
        '</geometry></collision></link>',
        _fixed('gripper_mount_joint', 'panda_link8', GRIPPER_LINK, grip.mount_pos,
               grip.mount_rot),
        # Virtual joint: carries g in [0, 1] from joint_states; its link has no geometry.
        '<link name="gripper_closure"/>',
        f'<joint name="{GRIPPER_JOINT}" type="revolute"><parent link="{GRIPPER_LINK}"/>'
        '<child link="gripper_closure"/><origin xyz="0 0 0" rpy="0 0 0"/><axis xyz="0 0 1"/>'
        '<limit lower="0" upper="1" effort="40" velocity="10"/></joint>',
        '<link name="tcp"/>',
        _fixed('tcp_joint', GRIPPER_LINK, 'tcp', grip.tcp_pos),
    ]
    for side, joint in zip(('left_finger', 'right_finger'), FINGER_JOINTS):
        pos, axis, (low, high) = grip.fingers[side]
        sign = axis[1]
        parts.append(
            f'<link name="{side}"><inertial>{_origin((0, 0, 0.03))}<mass value="0.05"/>'
            '<inertia ixx="2e-5" ixy="0" ixz="0" iyy="2e-5" iyz="0" izz="1e-5"/></inertial>'
            f'<visual>{_origin((0, sign * 0.006, 0.03))}<geometry><box size="0.022 0.012 0.07"/>'
            '</geometry><material name="gripper_black"/></visual>'
            f'<collision>{_origin((0, sign * 0.006, 0.03))}<geometry>'
            '<box size="0.022 0.012 0.07"/></geometry></collision></link>')
        # Opening per finger = travel * (1 - g): the twin's gripper actuator target.
        parts.append(
            f'<joint name="{joint}" type="prismatic"><parent link="{GRIPPER_LINK}"/>'
            f'<child link="{side}"/>{_origin(pos)}<axis xyz="{_fmt(axis)}"/>'
            f'<limit lower="{low}" upper="{high}" effort="40" velocity="0.2"/>'
            f'<mimic joint="{GRIPPER_JOINT}" multiplier="{-high}" offset="{high}"/></joint>')
    return ''.join(parts)


def _cameras_xml(grip: _TwinGripper) -> str:
    parts = []
    for cam in mjcf.DEFAULT_CAMERAS:
        rot = matrix_from_xyaxes(_floats(mjcf.lookat_xyaxes(cam.pos, cam.target)))
        frame = CAMERA_FRAMES[cam.name]
        parts.append(f'<link name="{frame}"/>')
        parts.append(_fixed(f'{cam.name}_camera_joint', 'base_link', frame, cam.pos,
                            rot @ MUJOCO_TO_OPTICAL))
    frame = CAMERA_FRAMES['wrist']
    parts.append(f'<link name="{frame}"/>')
    parts.append(_fixed('wrist_camera_joint', GRIPPER_LINK, frame, grip.wrist_pos,
                        grip.wrist_rot @ MUJOCO_TO_OPTICAL))
    return ''.join(parts)


def pretty(xml_text: str) -> str:
    """Return ``xml_text`` indented, one element per line (stable, diff-friendly)."""
    body = xml_text.split('\n', 1)[1] if xml_text.startswith('<?xml') else xml_text
    ET.register_namespace('xacro', 'http://www.ros.org/wiki/xacro')
    parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))
    root = ET.fromstring(body, parser=parser)
    ET.indent(root, space='  ')
    text = ET.tostring(root, encoding='unicode')
    return '<?xml version="1.0"?>\n' + text + '\n'


def write(out_dir: str | pathlib.Path) -> list[pathlib.Path]:
    """Write ``panda_droid.urdf`` and ``panda_droid.urdf.xacro`` into ``out_dir``."""
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / 'panda_droid.urdf', out / 'panda_droid.urdf.xacro']
    paths[0].write_text(pretty(build_urdf(xacro=False)))
    paths[1].write_text(pretty(build_urdf(xacro=True)))
    return paths
