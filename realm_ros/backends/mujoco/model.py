"""Build the twin's MJCF: a Panda with a parallel gripper on a table, three cameras, a scene.

The arm is generated from the modified-DH table and the link inertials in
:mod:`realm_ros.core.robot` (no third-party XML or meshes), with primitive geometry.

The DROID controller runs *inside* MuJoCo as actuators, so it is integrated implicitly at the
physics rate and batched rollouts (``mujoco.rollout``) need no Python per step:

* 7 joint actuators: ``Kq (q_d - q) - Kqd dq`` with ``ctrl = q_d``;
* 6 site actuators between the flange site ``ee`` and the mocap site ``target`` placed at
  FK(q_d): ``-Kx e - Kxd J dq`` with ``e`` the flange pose error. To first order in
  ``q_d - q`` this is ``J^T Kx J (q_d - q)``: together they are Polymetis'
  HybridJointImpedanceControl, Kp = J^T Kx J + Kq, Kd = J^T Kxd J + Kqd, J at the flange;
* gravity is compensated (``gravcomp``) on the arm and gripper, as libfranka does;
* total torque per joint is clipped to the Panda effort limits (``actuatorfrcrange``).

``test/test_twin_control.py`` checks the actuator torque against
:func:`realm_ros.core.control.impedance_torque`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import numpy as np

from realm_ros.core import robot

# Gripper geometry (Robotiq 2F-85-like parallel jaw; DROID's gripper), m.
FINGER_TRAVEL = robot.GRIPPER_MAX_WIDTH / 2.0
GRIPPER_BASE_LENGTH = 0.10
#: Finger joint damping, N s/m: with the 40 N force limit the fingers close at about
#: 40 / 300 = 0.13 m/s, a Robotiq 2F-85's speed. Lightly damped fingers would slam shut at
#: metres per second and tunnel through thin objects (a spoon handle) in one physics step.
FINGER_DAMPING = 300.0

#: Table top height in the world frame; the robot base sits on it at the origin.
TABLE_TOP_Z = 0.0

ARM_ACTUATORS = tuple(f'act_q{i}' for i in range(1, robot.NUM_ARM_JOINTS + 1))
CART_ACTUATORS = ('act_x', 'act_y', 'act_z', 'act_rx', 'act_ry', 'act_rz')
GRIPPER_ACTUATOR = 'act_gripper'


@dataclasses.dataclass(frozen=True)
class CameraSpec:
    """A camera fixed to ``parent`` (``world`` = ``base_link``, or ``gripper``) at ``pos`` (m).

    It looks from ``pos`` at ``target`` with image "up" toward ``up`` (both in the parent
    frame); ``fovy`` is the vertical field of view, degrees. A rig file
    (:mod:`realm_ros.backends.mujoco.camera_rig`) may give the orientation as ``xyaxes``
    (MuJoCo's camera x and y axes in the parent frame) instead, which then wins.
    """

    name: str
    pos: tuple[float, float, float]
    target: tuple[float, float, float]
    fovy: float = 60.0
    parent: str = 'world'
    up: tuple[float, float, float] = (0.0, 0.0, 1.0)
    xyaxes: tuple[float, ...] | None = None

    def mjcf_xyaxes(self) -> str:
        """Return the MJCF ``xyaxes`` attribute of this camera."""
        if self.xyaxes is not None:
            return _fmt(self.xyaxes)
        return lookat_xyaxes(self.pos, self.target, self.up)

    def mjcf(self) -> str:
        """Return the ``<camera>`` element."""
        return (f'<camera name="{self.name}" pos="{_fmt(self.pos)}" fovy="{self.fovy:.9g}" '
                f'xyaxes="{self.mjcf_xyaxes()}"/>')


#: DROID's rig (the numbers of ``config/cameras/droid.yaml``, where they are explained): two
#: exterior ZED 2s either side of the robot looking at the workspace, a ZED Mini on the wrist.
#: ``test/unit/test_cameras.py`` checks that the file and these agree.
DEFAULT_CAMERAS = (
    CameraSpec('exterior_1', (0.55, 0.85, 0.50), (0.45, 0.0, 0.26), fovy=68.0),
    CameraSpec('exterior_2', (0.55, -0.85, 0.50), (0.45, 0.0, 0.26), fovy=68.0),
)
#: The wrist ZED Mini in the gripper frame (z = approach, fingers slide along y): beside the
#: gripper, looking along the approach axis, tilted so the fingertips sit at the frame's bottom.
DEFAULT_WRIST = CameraSpec('wrist', (0.1, 0.0, 0.03), (0.0, 0.0, 0.28), fovy=60.0,
                           parent='gripper', up=(1.0, 0.0, 0.0))


def _quat_from_matrix(m: np.ndarray) -> np.ndarray:
    """Return the (w, x, y, z) quaternion of rotation matrix ``m``."""
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    if trace > 0:
        s = 2.0 * math.sqrt(trace + 1.0)
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q = [(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s]
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q = [(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s]
    else:
        s = 2.0 * math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q = [(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s]
    quat = np.array(q)
    return quat / np.linalg.norm(quat)


def _fmt(values: Sequence[float] | np.ndarray) -> str:
    return ' '.join(f'{v:.9g}' for v in values)


def lookat_xyaxes(pos: Sequence[float], target: Sequence[float],
                  up: Sequence[float] = (0.0, 0.0, 1.0)) -> str:
    """Return MJCF ``xyaxes`` for a camera at ``pos`` looking at ``target``, image up ~ ``up``."""
    forward = np.asarray(target, float) - np.asarray(pos, float)
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, np.asarray(up, float))
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    return _fmt(np.concatenate([right, up]))


def _link_body_frames() -> list[tuple[np.ndarray, np.ndarray]]:
    """Return (pos, quat) of each link frame (and the flange) relative to its parent."""
    frames = []
    for a, d, alpha in robot.DH_MODIFIED:
        transform = robot.dh_transform(a, d, alpha, 0.0)
        frames.append((transform[:3, 3], _quat_from_matrix(transform[:3, :3])))
    return frames


def _link_geoms(index: int, child_pos: np.ndarray, visual: str = '') -> str:
    """Return primitive geoms for link ``index`` (1-based): a capsule toward the next joint."""
    radius = 0.06 if index <= 4 else 0.045
    parts = [f'<geom class="arm" type="cylinder" size="{radius} {radius * 0.9:.4f}" '
             f'name="link{index}_motor"/>']
    length = float(np.linalg.norm(child_pos))
    if length > 1e-6:
        parts.append(
            f'<geom class="arm" type="capsule" size="{radius * 0.85:.4f}" '
            f'fromto="0 0 0 {_fmt(child_pos)}" name="link{index}_capsule"/>')
    parts.append(visual)
    return '\n'.join(parts)


def robot_xml(include_wrist_camera: bool = True, wrist: CameraSpec = DEFAULT_WRIST,
              visuals: bool = False) -> str:
    """Return the MJCF ``<body>`` tree of the arm and gripper, rooted at ``panda_link0``.

    With ``visuals`` every body also gets the Panda's visual meshes
    (:mod:`realm_ros.backends.mujoco.visuals`): geoms that neither collide nor weigh anything
    (the bodies' inertials are explicit), so the dynamics are the same with or without them.
    """
    from realm_ros.backends.mujoco import visuals as vis
    link_visual = vis.link_visual if visuals else (lambda index: '')
    frames = _link_body_frames()
    close = []
    xml = ['<body name="panda_link0" pos="0 0 0">',
           '<geom class="arm" type="cylinder" size="0.09 0.05" pos="0 0 0.05" name="link0"/>',
           link_visual(0)]
    for i in range(robot.NUM_ARM_JOINTS):
        pos, quat = frames[i]
        mass, com, inertia = robot.LINK_INERTIALS[i]
        name = f'panda_link{i + 1}'
        joint = robot.JOINT_NAMES[i]
        child_pos = frames[i + 1][0]
        xml.append(
            f'<body name="{name}" pos="{_fmt(pos)}" quat="{_fmt(quat)}" gravcomp="1">'
            f'<inertial pos="{_fmt(com)}" mass="{mass}" fullinertia="{_fmt(inertia)}"/>'
            f'<joint name="{joint}" class="arm_joint" range="{robot.JOINT_LOWER[i]} '
            f'{robot.JOINT_UPPER[i]}" actuatorfrcrange="{-robot.EFFORT_LIMIT[i]} '
            f'{robot.EFFORT_LIMIT[i]}"/>'
            + _link_geoms(i + 1, child_pos, link_visual(i + 1)))
        close.append('</body>')
    pos, quat = frames[robot.NUM_ARM_JOINTS]
    # Flange (panda_link8); the gripper is mounted rotated -pi/4 about z as on the Franka hand.
    mount = _quat_from_matrix(np.array([
        [math.cos(-math.pi / 4), -math.sin(-math.pi / 4), 0.0],
        [math.sin(-math.pi / 4), math.cos(-math.pi / 4), 0.0],
        [0.0, 0.0, 1.0]]))
    wrist_cam = ''
    if include_wrist_camera:
        # ZED Mini on the gripper, looking along the approach axis past the fingers.
        wrist_cam = wrist.mjcf()
    xml.append(
        f'<body name="panda_link8" pos="{_fmt(pos)}" quat="{_fmt(quat)}">'
        '<site name="ee" size="0.01" rgba="1 0 0 0.3" group="5"/>'
        f'<body name="gripper" quat="{_fmt(mount)}" gravcomp="1">'
        '<inertial pos="0 0 0.05" mass="0.9" diaginertia="0.0025 0.0025 0.0015"/>'
        f'<geom class="grip" type="cylinder" size="0.04 0.03" pos="0 0 0.03" name="gripper_base"/>'
        '<geom class="grip" type="box" size="0.025 0.055 0.02" pos="0 0 0.08" '
        'name="gripper_palm"/>'
        f'<site name="tcp" pos="0 0 {robot.TCP_OFFSET}" size="0.008" rgba="0 1 0 0.5" group="5"/>'
        + wrist_cam
        + (vis.gripper_visual(GRIPPER_BASE_LENGTH) if visuals else '')
        + _finger_xml('left_finger', 1.0, visuals)
        + _finger_xml('right_finger', -1.0, visuals)
        + '</body></body>')
    xml.extend(reversed(close))
    xml.append('</body>')
    return '\n'.join(xml)


def _finger_xml(name: str, side: float, visuals: bool = False) -> str:
    """Return a sliding finger; ``side`` +1 moves along +y when opening."""
    joint = f'{name}_joint'
    visual = ''
    if visuals:
        from realm_ros.backends.mujoco import visuals as vis
        visual = vis.finger_visual(side)
    return (
        f'<body name="{name}" pos="0 0 {GRIPPER_BASE_LENGTH}" gravcomp="1">'
        '<inertial pos="0 0 0.03" mass="0.05" diaginertia="2e-5 2e-5 1e-5"/>'
        f'<joint name="{joint}" type="slide" axis="0 {side:g} 0" range="0 {FINGER_TRAVEL}" '
        f'damping="{FINGER_DAMPING}" armature="0.01"/>'
        f'<geom class="grip" type="box" size="0.011 0.006 0.035" pos="0 {side * 0.006:g} 0.03" '
        f'name="{name}_body"/>'
        f'<geom class="pad" type="box" size="0.011 0.003 0.018" pos="0 {-side * 0.001:g} 0.057" '
        f'name="{name}_pad"/>'
        + visual + '</body>')


def actuators_xml() -> str:
    """Return the ``<actuator>`` block realising the DROID impedance law and the gripper."""
    lines = ['<actuator>']
    for i, name in enumerate(ARM_ACTUATORS):
        kq, kqd = robot.KQ[i], robot.KQD[i]
        lines.append(
            f'<general name="{name}" joint="{robot.JOINT_NAMES[i]}" ctrllimited="true" '
            f'ctrlrange="{robot.JOINT_LOWER[i]} {robot.JOINT_UPPER[i]}" '
            f'gainprm="{kq}" biastype="affine" biasprm="0 {-kq} {-kqd}"/>')
    gears = np.eye(6)
    for i, name in enumerate(CART_ACTUATORS):
        kx, kxd = robot.KX[i], robot.KXD[i]
        lines.append(
            f'<general name="{name}" site="ee" refsite="target" gear="{_fmt(gears[i])}" '
            f'ctrllimited="true" ctrlrange="-1 1" gainprm="{kx}" biastype="affine" '
            f'biasprm="0 {-kx} {-kxd}"/>')
    # Gripper: position servo on the left finger; the right finger is coupled by an equality.
    lines.append(
        f'<general name="{GRIPPER_ACTUATOR}" joint="left_finger_joint" ctrllimited="true" '
        f'ctrlrange="0 {FINGER_TRAVEL}" gainprm="3000" biastype="affine" biasprm="0 -3000 -30" '
        'forcelimited="true" forcerange="-40 40"/>')
    lines.append('</actuator>')
    return '\n'.join(lines)


#: The twin without visuals: primitive geometry, a checker floor, two unshadowed lights.
_PLAIN_LOOK = {
    'visual': ('<quality shadowsize="1024"/>\n    <headlight ambient="0.35 0.35 0.35" '
               'diffuse="0.5 0.5 0.5" specular="0.1 0.1 0.1"/>'),
    'robot_group': 1,
    'assets': ('<texture name="grid" type="2d" builtin="checker" rgb1="0.3 0.32 0.35" '
               'rgb2="0.25 0.27 0.3" width="256" height="256"/>\n'
               '    <material name="floor" texture="grid" texrepeat="6 6" reflectance="0.05"/>\n'
               '    <material name="table" rgba="0.62 0.5 0.38 1"/>'),
    'lights': ('<light name="key" pos="0.4 0.3 1.8" dir="0 -0.2 -1" diffuse="0.7 0.7 0.7" '
               'castshadow="false"/>\n    <light name="fill" pos="-0.6 -0.5 1.5" '
               'dir="0.5 0.3 -1" diffuse="0.3 0.3 0.3" castshadow="false"/>'),
    'room': '',
}


def build_mjcf(
    physics_hz: float = robot.PHYSICS_HZ,
    scene_xml: str = '',
    scene_assets: str = '',
    cameras: Sequence[CameraSpec] = DEFAULT_CAMERAS,
    image_size: tuple[int, int] = (320, 180),
    with_table: bool = True,
    wrist: CameraSpec = DEFAULT_WRIST,
    visuals: bool = False,
    look_options: dict | None = None,
) -> str:
    """Return the complete MJCF of the twin.

    Args:
        physics_hz: physics rate; the timestep is ``1 / physics_hz``.
        scene_xml: task bodies to add to the worldbody (objects, articulations).
        scene_assets: extra ``<asset>`` children the scene uses (textures, materials).
        cameras: fixed cameras; the wrist camera is always attached to the gripper.
        image_size: (width, height) of the largest image to render, px.
        with_table: add the table and floor (off for the arm-only sysid model).
        wrist: the wrist camera, in the gripper frame.
        visuals: dress the twin for cameras (:mod:`realm_ros.backends.mujoco.visuals`): the
            Panda's meshes, a lab room, textures, shadows. Visual geoms only: the physics is
            the same with or without them (``test/unit/test_cameras.py`` checks it).
        look_options: keyword arguments of :func:`visuals.look` (``shadows``, ``antialias``).
    """
    width, height = image_size
    # Free bodies (task objects) need the implicit integrator. implicitfast leaves the Coriolis
    # and gyroscopic terms out of its implicit step; a light object with a very uneven inertia
    # (the spoon: 0.1 kg, 8.9e-6 kg m^2 about its long axis, 33 times less than across) spun by
    # finger-pad friction to tens of rad/s then gains energy every 4.2 ms step until it is
    # ejected and MuJoCo resets ("Nan, Inf or huge value in QACC/QVEL"; 5 in 320 digital-real
    # ladder episodes). Arm-only models (sysid, gap) keep implicitfast: hinge joints at arm
    # speeds do not need it, and their rollouts stay fast.
    integrator = 'implicit' if '<freejoint' in scene_xml else 'implicitfast'
    camera_xml = '\n'.join(c.mjcf() for c in cameras)
    look = _PLAIN_LOOK
    if visuals:
        from realm_ros.backends.mujoco import visuals as vis
        look = vis.look(with_table, **(look_options or {}))
    table = ''
    if with_table:
        table = (
            '<geom name="floor" type="plane" size="3 3 0.1" pos="0 0 -0.76" material="floor"/>'
            f'<body name="table" pos="0.45 0 {TABLE_TOP_Z - 0.02}">'
            '<geom name="table_top" class="scene" type="box" size="0.6 0.8 0.02" '
            'material="table"/>'
            '<geom class="scene" type="box" size="0.03 0.03 0.36" pos="0.5 0.7 -0.38"/>'
            '<geom class="scene" type="box" size="0.03 0.03 0.36" pos="0.5 -0.7 -0.38"/>'
            '<geom class="scene" type="box" size="0.03 0.03 0.36" pos="-0.5 0.7 -0.38"/>'
            '<geom class="scene" type="box" size="0.03 0.03 0.36" pos="-0.5 -0.7 -0.38"/>'
            '</body>')
    return f"""<mujoco model="realm_panda_twin">
  <compiler angle="radian" autolimits="true"/>
  <option timestep="{1.0 / physics_hz:.9g}" integrator="{integrator}" cone="elliptic"
          impratio="10"/>
  <size memory="20M"/>
  <visual>
    <global offwidth="{max(width, 640)}" offheight="{max(height, 480)}"/>
    {look['visual']}
  </visual>
  <default>
    <default class="arm_joint">
      <joint type="hinge" axis="0 0 1" armature="0.1" damping="0" frictionloss="0"/>
    </default>
    <default class="arm">
      <geom contype="2" conaffinity="1" rgba="0.92 0.92 0.95 1" group="{look['robot_group']}"/>
    </default>
    <default class="grip">
      <geom contype="2" conaffinity="1" rgba="0.2 0.2 0.22 1" group="{look['robot_group']}"
            friction="1 0.01 0.001"/>
    </default>
    <default class="pad">
      <geom contype="2" conaffinity="1" rgba="0.1 0.1 0.1 1" group="{look['robot_group']}"
            friction="1.5 0.02 0.002" solref="0.02 1" solimp="0.9 0.95 0.001" condim="4"
            priority="1"/>
    </default>
    <default class="visual">
      <geom contype="0" conaffinity="0" group="2" mass="0" density="0"/>
    </default>
    <default class="scene">
      <geom contype="1" conaffinity="3" rgba="0.55 0.42 0.3 1" group="0"/>
    </default>
    <default class="object">
      <geom contype="1" conaffinity="3" condim="4" friction="1 0.01 0.001" group="0"
            solref="0.01 1"/>
    </default>
  </default>
  <asset>
    {look['assets']}
    {scene_assets}
  </asset>
  <worldbody>
    {look['lights']}
    {table}
    {look['room']}
    {camera_xml}
    <body name="target_frame" mocap="true">
      <site name="target" size="0.012" rgba="0 0.6 1 0.3" group="5"/>
    </body>
    {robot_xml(wrist=wrist, visuals=visuals)}
    {scene_xml}
  </worldbody>
  <equality>
    <joint joint1="right_finger_joint" joint2="left_finger_joint" polycoef="0 1 0 0 0"
           solref="0.005 1"/>
  </equality>
  <contact>
    <exclude body1="gripper" body2="left_finger"/>
    <exclude body1="gripper" body2="right_finger"/>
  </contact>
  {actuators_xml()}
</mujoco>
"""
