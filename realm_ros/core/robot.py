"""Franka Panda constants in the DROID setup: joint order, limits, gains, kinematics.

Units: rad, rad/s, N m, m, kg, kg m^2. Frames: ``base_link`` is the robot base (``panda_link0``),
z up, x forward. Every array here is in the canonical joint order :data:`JOINT_NAMES`; stacks
that name joints differently (``fr3_jointN``, ``jointN``, ``fer_jointN``) are mapped at the edges
with :func:`map_joint_names`.

Sources (facts, not code): Franka's published joint limits and modified-DH kinematics
(franka_description ``joint_limits.yaml``; FCI documentation), DROID's controller gains
(``config/panda/franka_hardware.yaml``), the dynamic identification of Gaz et al., IEEE RA-L 2019,
for link inertials, and REALM's identified friction/armature.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike

from realm_ros.core.errors import ConfigError

NUM_ARM_JOINTS = 7
#: Canonical arm joint order. ``sensor_msgs/JointState`` and ``JointTrajectory`` use these names.
JOINT_NAMES: tuple[str, ...] = tuple(f'panda_joint{i}' for i in range(1, NUM_ARM_JOINTS + 1))
#: Name of the gripper pseudo-joint in the shared world interface; value g in [0, 1], 1 = closed.
GRIPPER_JOINT = 'gripper'

# Panda (FER) limits from franka_description joint_limits.yaml.
JOINT_LOWER = np.array([-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973])
JOINT_UPPER = np.array([2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973])
VELOCITY_LIMIT = np.array([2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61])  # rad/s
EFFORT_LIMIT = np.array([87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0])  # N m



@dataclasses.dataclass(frozen=True)
class ArmSpec:
    """One Franka arm as franka_ros2 names and limits it (franka_description joint_limits.yaml).

    ``arm_id`` is franka_description's robot id; joints are ``<arm_id>_joint1..7`` and the
    gripper's fingers ``<arm_id>_finger_joint1/2`` (franka_ros2 >= v1, agimus-franka-ros2).
    Arrays are in :data:`JOINT_NAMES` order: rad, rad/s, N m.
    """

    arm_id: str
    description: str
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray

    @property
    def prefix(self) -> str:
        """Joint-name prefix on the robot side, e.g. ``'fr3_'``."""
        return f'{self.arm_id}_'

    @property
    def joint_names(self) -> tuple[str, ...]:
        """The seven arm joint names on the robot side."""
        return prefixed_joint_names(self.prefix)

    @property
    def finger_names(self) -> tuple[str, ...]:
        """The two finger joints of the Franka Hand on the robot side."""
        return (f'{self.prefix}finger_joint1', f'{self.prefix}finger_joint2')


#: Per-arm limits, from frankarobotics/franka_description 1.0.1 ``robots/<id>/joint_limits.yaml``
#: (checked against the file; FR3 and FER differ on every joint).
ARMS: dict[str, ArmSpec] = {
    'fr3': ArmSpec(
        'fr3', 'Franka Research 3 (frankarobotics/franka_ros2)',
        lower=np.array([-2.7437, -1.7837, -2.9007, -3.0421, -2.8065, 0.5445, -3.0159]),
        upper=np.array([2.7437, 1.7837, 2.9007, -0.1518, 2.8065, 4.5169, 3.0159]),
        velocity=np.array([2.62, 2.62, 2.62, 2.62, 5.26, 4.18, 5.26]),
        effort=np.array([87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0])),
    'fer': ArmSpec(
        'fer', 'Franka Emika Robot = Panda (agimus-project/agimus-franka-ros2)',
        lower=JOINT_LOWER.copy(), upper=JOINT_UPPER.copy(), velocity=VELOCITY_LIMIT.copy(),
        effort=EFFORT_LIMIT.copy()),
}
#: Accepted spellings of an arm id: ``panda`` is franka_description's ``fer`` (the Panda under
#: the agimus fork of franka_ros2).
ARM_ALIASES = {'panda': 'fer'}
#: Values a user may give as ``arm_id``: the arms, then their aliases (every ``choices`` list
#: and the launch files' ``arm_id`` arguments are these; ``test_graph`` checks the launch files).
ARM_IDS = (*ARMS, *ARM_ALIASES)


def canonical_arm_id(arm_id: str) -> str:
    """Return the franka_description arm id of ``arm_id`` (``panda`` -> ``fer``), unchecked."""
    return ARM_ALIASES.get(arm_id, arm_id)


def arm_spec(arm_id: str) -> ArmSpec:
    """Return the :class:`ArmSpec` of ``arm_id`` (``fr3``, ``fer``; ``panda`` = ``fer``).

    Raises:
        ConfigError: unknown arm id.
    """
    key = canonical_arm_id(arm_id)
    if key not in ARMS:
        raise ConfigError(f'arm_id {arm_id!r} unknown; use one of {list(ARM_IDS)}')
    return ARMS[key]


#: DROID's reset pose (droid/robot_env.py).
RESET_Q = np.array([0.0, -math.pi / 5, 0.0, -4 * math.pi / 5, 0.0, 3 * math.pi / 5, 0.0])

# DROID / Polymetis HybridJointImpedanceControl gains (config/panda/franka_hardware.yaml).
KQ = np.array([40.0, 30.0, 50.0, 25.0, 35.0, 25.0, 10.0])  # joint stiffness, N m/rad
KQD = np.array([4.0, 6.0, 5.0, 5.0, 3.0, 2.0, 1.0])  # joint damping, N m s/rad
KX = np.array([400.0, 400.0, 400.0, 15.0, 15.0, 15.0])  # Cartesian stiffness, N/m | N m/rad
KXD = np.array([37.0, 37.0, 37.0, 2.0, 2.0, 2.0])  # Cartesian damping, N s/m | N m s/rad

#: DROID control rate.
CONTROL_HZ = 15.0
#: DROID joint-velocity convention: target = q_measured + MAX_JOINT_DELTA * v, v in [-1, 1].
MAX_JOINT_DELTA = 0.2  # rad per control step
#: Default physics rate of every simulated world (MuJoCo, PhysX, Isaac), Hz; a multiple of
#: :data:`CONTROL_HZ`.
PHYSICS_HZ = 240.0
#: Flange to tool centre point (between the fingertips) along the flange z axis, m: the Robotiq
#: 2F-85 on DROID's adapter.
TCP_OFFSET = 0.165

#: Robotiq 2F-85 maximum opening (DROID's gripper), m. Width = max_width * (1 - g).
GRIPPER_MAX_WIDTH = 0.085
#: Maximum opening of each gripper the bridge drives, m (Franka Hand: franka_gripper aborts goals
#: beyond 0.08 m; Robotiq 2F-85: 85 mm stroke).
GRIPPER_WIDTHS = {'franka_hand': 0.08, 'robotiq_2f_85': 0.085}
#: The hands a lab mounts (the ``gripper`` launch argument; ``core.config.BRIDGE_GRIPPERS``
#: adds the digital real's stand-ins).
HANDS = tuple(GRIPPER_WIDTHS)


#: REALM's identified per-joint friction and armature (PhysX units; our prior for the real arm).
REALM_FRICTION = np.array([0.05, 0.10, 0.05, 0.10, 0.75, 0.425, 0.20])
REALM_ARMATURE = np.array([0.25, 0.50, 0.25, 0.50, 0.25, 0.15, 0.00])

#: Modified (Craig) DH parameters, one row per joint: (a_{i-1}, d_i, alpha_{i-1}), m and rad.
#: The last row is the flange (``panda_link8``), a fixed frame.
DH_MODIFIED: tuple[tuple[float, float, float], ...] = (
    (0.0, 0.333, 0.0),
    (0.0, 0.0, -math.pi / 2),
    (0.0, 0.316, math.pi / 2),
    (0.0825, 0.0, math.pi / 2),
    (-0.0825, 0.384, -math.pi / 2),
    (0.0, 0.0, math.pi / 2),
    (0.088, 0.0, math.pi / 2),
    (0.0, 0.107, 0.0),
)

#: Link inertials (Gaz et al. 2019): mass kg, centre of mass m in the link frame,
#: inertia (Ixx, Iyy, Izz, Ixy, Ixz, Iyz) kg m^2 about the centre of mass.
LINK_INERTIALS: tuple[tuple[float, tuple[float, float, float], tuple[float, ...]], ...] = (
    (4.970684, (0.003875, 0.002081, -0.04762),
     (0.70337, 0.70661, 0.0091170, -0.00013900, 0.0067720, 0.019169)),
    (0.646926, (-0.003141, -0.02872, 0.003495),
     (0.0079620, 0.028110, 0.025995, -0.0039250, 0.010254, 0.00070400)),
    (3.228604, (0.027518, 0.039252, -0.066502),
     (0.037242, 0.036155, 0.010830, -0.0048610, -0.011396, -0.012805)),
    (3.587895, (-0.05317, 0.104419, 0.027454),
     (0.025853, 0.019552, 0.028323, 0.0077960, -0.0013320, 0.0086410)),
    (1.225946, (-0.011953, 0.041065, -0.038437),
     (0.035549, 0.029474, 0.0086270, -0.0021170, -0.0040370, 0.00022900)),
    (1.666555, (0.060149, -0.014117, -0.010517),
     (0.0019640, 0.0043540, 0.0054330, 0.00010900, -0.0011580, 0.00034100)),
    (0.735522, (0.010517, -0.004252, 0.061597),
     (0.012516, 0.010027, 0.004815, -0.000428, -0.001196, -0.000741)),
)

#: Joint-name prefixes used by the stacks realm_ros talks to.
KNOWN_PREFIXES = ('panda_', 'fr3_', 'fer_', '')


def map_joint_names(names: Sequence[str], prefix: str = 'panda_') -> tuple[str, ...]:
    """Return canonical names for ``<prefix>jointN`` names, in the order given.

    Raises:
        ConfigError: a name does not match ``<prefix>joint<1..7>``.
    """
    out = []
    pattern = re.compile(rf'^{re.escape(prefix)}joint([1-7])$')
    for name in names:
        match = pattern.match(name)
        if match is None:
            raise ConfigError(
                f'joint name {name!r} does not match {prefix}joint1..7; '
                f'set the joint-name prefix (one of {KNOWN_PREFIXES})')
        out.append(JOINT_NAMES[int(match.group(1)) - 1])
    return tuple(out)


def prefixed_joint_names(prefix: str) -> tuple[str, ...]:
    """Return the seven arm joint names with ``prefix`` (``'fr3_'`` -> ``fr3_joint1..7``)."""
    return tuple(f'{prefix}joint{i}' for i in range(1, NUM_ARM_JOINTS + 1))


def dh_transform(a: float, d: float, alpha: float, theta: float) -> np.ndarray:
    """Return the 4x4 modified-DH transform RotX(alpha) TransX(a) RotZ(theta) TransZ(d)."""
    ca, sa = math.cos(alpha), math.sin(alpha)
    ct, st = math.cos(theta), math.sin(theta)
    return np.array([
        [ct, -st, 0.0, a],
        [st * ca, ct * ca, -sa, -sa * d],
        [st * sa, ct * sa, ca, ca * d],
        [0.0, 0.0, 0.0, 1.0],
    ])


# The constant parts of :func:`dh_transform` per row of DH_MODIFIED (link1..link7, flange):
# :func:`link_poses` fills in the joint angles' cosines and sines.
_DH = np.array(DH_MODIFIED)  # (8, 3): a, d, alpha
_CA = np.array([math.cos(alpha) for alpha in _DH[:, 2]])
_SA = np.array([math.sin(alpha) for alpha in _DH[:, 2]])
_TEMPLATE = np.zeros((len(_DH), 4, 4))
_TEMPLATE[:, 0, 3] = _DH[:, 0]
_TEMPLATE[:, 1, 2] = -_SA
_TEMPLATE[:, 1, 3] = -_SA * _DH[:, 1]
_TEMPLATE[:, 2, 2] = _CA
_TEMPLATE[:, 2, 3] = _CA * _DH[:, 1]
_TEMPLATE[:, 3, 3] = 1.0


def link_poses(q: ArrayLike, tool: np.ndarray | None = None) -> np.ndarray:
    """The arm's forward kinematics, the one implementation: poses in ``base_link`` of
    link1..link7 and the flange (link8), and of ``tool`` (a fixed 4x4 transform from the flange,
    the gripper's TCP) when given.

    ``q`` is (..., 7): one configuration gives (8, 4, 4) (9 with a tool), a batch (B, 7) gives
    (B, 8, 4, 4); every link transform is filled in at once from :data:`DH_MODIFIED` (the
    modified-DH transform of :func:`dh_transform`), then chained. The flange Jacobian, the TCP
    pose, IK (``core/kinematics.py``) and the PhysX twin's batched Jacobians are views of it.
    """
    joints = np.asarray(q, dtype=float)
    if joints.shape[-1:] != (NUM_ARM_JOINTS,):
        raise ValueError(f'q must have shape (..., 7), got {joints.shape}')
    lead = joints.shape[:-1]
    theta = np.zeros(lead + (len(_DH),))
    theta[..., :NUM_ARM_JOINTS] = joints
    ct, st = np.cos(theta), np.sin(theta)
    local = np.broadcast_to(_TEMPLATE, lead + _TEMPLATE.shape).copy()
    local[..., 0, 0] = ct
    local[..., 0, 1] = -st
    local[..., 1, 0] = st * _CA
    local[..., 1, 1] = ct * _CA
    local[..., 2, 0] = st * _SA
    local[..., 2, 1] = ct * _SA
    poses = np.empty(lead + (len(_DH) + (tool is not None), 4, 4))
    poses[..., 0, :, :] = local[..., 0, :, :]
    for i in range(1, len(_DH)):
        np.matmul(poses[..., i - 1, :, :], local[..., i, :, :], out=poses[..., i, :, :])
    if tool is not None:
        np.matmul(poses[..., -2, :, :], tool, out=poses[..., -1, :, :])
    return poses


def forward_kinematics(q: ArrayLike) -> list[np.ndarray]:
    """Return the poses (4x4, in ``base_link``) of link1..link7 and the flange (link8) at one
    configuration ``q`` (7,): :func:`link_poses`, as a list.

    Used to check the MJCF and URDF built from the same table, and by the safety rules.
    """
    joints = np.asarray(q, dtype=float)
    if joints.shape != (NUM_ARM_JOINTS,):
        raise ValueError(f'q must have shape (7,), got {joints.shape}')
    return list(link_poses(joints))


def flange_jacobian(q: ArrayLike) -> np.ndarray:
    """Return the 6x7 geometric Jacobian of the flange (``panda_link8``) in ``base_link``.

    Rows: linear velocity (m/s) then angular velocity (rad/s) per joint rate (rad/s). Joint i
    turns about the z axis of link frame i (modified DH).
    """
    poses = forward_kinematics(q)
    tip = poses[-1][:3, 3]
    jac = np.zeros((6, NUM_ARM_JOINTS))
    for i in range(NUM_ARM_JOINTS):
        axis = poses[i][:3, 2]
        jac[:3, i] = np.cross(axis, tip - poses[i][:3, 3])
        jac[3:, i] = axis
    return jac
