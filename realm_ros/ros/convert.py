"""Conversions between ROS messages and core records. Joint order is always core's.

Float sequences are built as ``array.array('d')``: rclpy's generated setters take one as it is,
while a list is checked element by element in Python. Messages in core's own joint order
(``panda_joint1..7`` then ``gripper``, what world_node and policy_node send) are read without
the name lookup; any other order takes the general path, with the same checks and results.
"""

from __future__ import annotations

import array
import json
import math
from typing import Any, Iterable, Mapping, Sequence

from builtin_interfaces.msg import Duration, Time
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
import numpy as np
from sensor_msgs.msg import CameraInfo, Image
from sensor_msgs.msg import JointState as JointStateMsg
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from realm_ros.core import control, robot
from realm_ros.core.errors import CommandRejected
from realm_ros.core.types import Action, ActionMode, JointState, Progress, json_default

CONTROL_FRAME = 'base_link'
#: Joint names of a joint_states / command message in core's order, gripper last.
CORE_ORDER = (*robot.JOINT_NAMES, robot.GRIPPER_JOINT)
_CORE_ORDER_LIST = list(CORE_ORDER)


def _doubles(values: Any, last: float) -> array.array:
    """Return ``values`` then ``last`` as an ``array.array('d')`` (rclpy's float64[])."""
    out = array.array('d')
    out.frombytes(np.ascontiguousarray(values, dtype=np.float64).tobytes())
    out.append(float(last))
    return out


def to_time(seconds: float) -> Time:
    """Return a ``builtin_interfaces/Time`` for ``seconds`` >= 0."""
    sec = int(math.floor(seconds))
    return Time(sec=sec, nanosec=int(round((seconds - sec) * 1e9)) % 1_000_000_000)


def from_time(stamp: Time) -> float:
    """Return seconds for a ``builtin_interfaces/Time``."""
    return stamp.sec + stamp.nanosec * 1e-9


def joint_state_to_msg(state: JointState, names: Sequence[str] = robot.JOINT_NAMES,
                       frame_id: str = CONTROL_FRAME) -> JointStateMsg:
    """Return a ``sensor_msgs/JointState``: 7 arm joints plus ``gripper`` (g in [0, 1])."""
    msg = JointStateMsg()
    msg.header.stamp = to_time(state.stamp)
    msg.header.frame_id = frame_id
    msg.name = [*names, robot.GRIPPER_JOINT]
    msg.position = _doubles(state.position, state.gripper)
    msg.velocity = _doubles(state.velocity, 0.0)
    msg.effort = _doubles(state.effort, 0.0)
    return msg


def joint_state_from_msg(msg: JointStateMsg, prefix: str = 'panda_') -> JointState:
    """Return a core :class:`JointState` from a message with ``<prefix>joint1..7`` (+ gripper).

    Raises:
        CommandRejected: the arm joints are missing or the values are not finite.
    """
    if prefix == 'panda_' and len(msg.position) == 8 and msg.name == _CORE_ORDER_LIST:
        # Core's order (world_node's own messages): the same values without the name lookup.
        position = np.array(msg.position, dtype=float)
        pos, gripper = position[:7], float(position[7])
        vel = (np.array(msg.velocity, dtype=float)[:7] if len(msg.velocity) == 8
               else np.zeros(7))
        eff = np.array(msg.effort, dtype=float)[:7] if len(msg.effort) == 8 else np.zeros(7)
        if not np.all(np.isfinite(pos)):
            raise CommandRejected('joint state contains NaN or inf positions')
        return JointState(position=pos, velocity=vel, effort=eff, gripper=gripper,
                          stamp=from_time(msg.header.stamp))
    index = {}
    for i, name in enumerate(msg.name):
        if name == robot.GRIPPER_JOINT:
            continue
        if name.startswith(f'{prefix}joint') and name[len(prefix) + 5:].isdigit():
            index[robot.map_joint_names([name], prefix)[0]] = i
    missing = [n for n in robot.JOINT_NAMES if n not in index]
    if missing:
        raise CommandRejected(f'joint state lacks {missing} (prefix {prefix!r}): {list(msg.name)}')
    order = [index[n] for n in robot.JOINT_NAMES]
    pos = np.array([msg.position[i] for i in order], dtype=float)
    vel = np.array([msg.velocity[i] for i in order] if len(msg.velocity) == len(msg.name)
                   else np.zeros(7), dtype=float)
    eff = np.array([msg.effort[i] for i in order] if len(msg.effort) == len(msg.name)
                   else np.zeros(7), dtype=float)
    gripper = 0.0
    if robot.GRIPPER_JOINT in msg.name:
        gripper = float(msg.position[list(msg.name).index(robot.GRIPPER_JOINT)])
    if not np.all(np.isfinite(pos)):
        raise CommandRejected('joint state contains NaN or inf positions')
    return JointState(position=pos, velocity=vel, effort=eff, gripper=gripper,
                      stamp=from_time(msg.header.stamp))


def trajectory_to_actions(msg: JointTrajectory, current_gripper: float) -> list[Action]:
    """Return one :class:`Action` per point of a ``command`` message.

    A point with ``positions`` is a POSITION action (absolute targets, rad); a point with only
    ``velocities`` is a DROID VELOCITY action (unitless). Every point is validated; one bad
    point rejects the whole message.

    Raises:
        CommandRejected: with the reason (empty, names, NaN, limits, ...).
    """
    if not msg.points:
        raise CommandRejected('command has no trajectory points')
    actions = []
    gripper = current_gripper
    for k, point in enumerate(msg.points):
        if len(point.positions):
            values, mode = point.positions, ActionMode.POSITION
        elif len(point.velocities):
            values, mode = point.velocities, ActionMode.VELOCITY
        else:
            raise CommandRejected(f'point {k} has neither positions nor velocities')
        try:
            if len(values) == 8 and msg.joint_names == _CORE_ORDER_LIST:
                # Core's order (policy_node's own commands): action_from_named's result
                # without its name checks, which this order passes.
                row = np.array(values, dtype=float)
                action = Action(arm=row[:7], gripper=float(row[7]), mode=mode)
            else:
                action = control.action_from_named(msg.joint_names, values, mode, gripper)
            control.validate_action(action)
        except CommandRejected as err:
            raise CommandRejected(f'point {k}: {err}') from None
        gripper = action.gripper
        actions.append(action)
    return actions


def actions_to_trajectory(actions: Iterable[Action], dt: float,
                          stamp: Time | None = None) -> JointTrajectory:
    """Return a ``command`` message for ``actions`` spaced ``dt`` seconds apart."""
    msg = JointTrajectory()
    if stamp is not None:
        msg.header.stamp = stamp
    msg.joint_names = list(CORE_ORDER)
    for k, action in enumerate(actions):
        point = JointTrajectoryPoint()
        values = _doubles(action.arm, action.gripper)
        if action.mode is ActionMode.VELOCITY:
            point.velocities = values
        else:
            point.positions = values
        t = (k + 1) * dt
        point.time_from_start = Duration(sec=int(t), nanosec=int(round((t % 1.0) * 1e9)))
        msg.points.append(point)
    return msg


def image_to_msg(image: np.ndarray, stamp: Time, frame_id: str) -> Image:
    """Return an ``rgb8`` ``sensor_msgs/Image`` for an (H, W, 3) uint8 array."""
    msg = Image()
    msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    msg.height, msg.width = int(image.shape[0]), int(image.shape[1])
    msg.encoding = 'rgb8'
    msg.is_bigendian = 0
    msg.step = msg.width * 3
    msg.data = np.ascontiguousarray(image, dtype=np.uint8).tobytes()
    return msg


def image_from_msg(msg: Image) -> np.ndarray:
    """Return an (H, W, 3) uint8 RGB array from an ``rgb8`` or ``bgr8`` image message."""
    if msg.encoding not in ('rgb8', 'bgr8'):
        raise CommandRejected(f'unsupported image encoding {msg.encoding!r}; use rgb8 or bgr8')
    rows = np.frombuffer(bytes(msg.data), dtype=np.uint8).reshape(msg.height, msg.step)
    image = rows[:, :msg.width * 3].reshape(msg.height, msg.width, 3)
    return image[..., ::-1].copy() if msg.encoding == 'bgr8' else image.copy()


def camera_info(width: int, height: int, fovy_deg: float, stamp: Time,
                frame_id: str) -> CameraInfo:
    """Return a pinhole ``CameraInfo`` for a camera with vertical field of view ``fovy_deg``."""
    f = 0.5 * height / math.tan(math.radians(fovy_deg) / 2.0)
    cx, cy = (width - 1) / 2.0, (height - 1) / 2.0
    msg = CameraInfo()
    msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    msg.width, msg.height = width, height
    msg.distortion_model = 'plumb_bob'
    msg.d = [0.0] * 5
    msg.k = [f, 0.0, cx, 0.0, f, cy, 0.0, 0.0, 1.0]
    msg.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    msg.p = [f, 0.0, cx, 0.0, 0.0, f, cy, 0.0, 0.0, 0.0, 1.0, 0.0]
    return msg


def privileged_to_json(state: Mapping[str, Any], stamp: float) -> str:
    """Return the JSON text of a ``privileged_state`` message (numpy arrays become lists)."""
    return json.dumps({'stamp': stamp, 'state': state}, default=json_default)


def privileged_from_json(text: str) -> tuple[float, dict[str, Any]]:
    """Return ``(stamp, state)`` from a ``privileged_state`` message's text."""
    data = json.loads(text)
    return float(data['stamp']), dict(data['state'])


def progress_to_msg(progress: Progress, world: str = '') -> DiagnosticStatus:
    """Return the ``progress`` message: a DiagnosticStatus with one key per stage.

    ``name`` = task, ``hardware_id`` = world, ``message`` = progression as text, ``values`` =
    one ``KeyValue(stage, '1'|'0')`` per stage in order, then ``progression``,
    ``max_progression``, ``step`` and ``source``. ``level`` is OK (0) throughout.
    """
    msg = DiagnosticStatus()
    msg.level = DiagnosticStatus.OK
    msg.name = progress.task
    msg.hardware_id = world
    msg.message = f'{progress.progression:.3f}'
    msg.values = [KeyValue(key=s, value='1' if m else '0')
                  for s, m in zip(progress.stages, progress.met)]
    msg.values += [
        KeyValue(key='progression', value=repr(float(progress.progression))),
        KeyValue(key='max_progression', value=repr(float(progress.max_progression))),
        KeyValue(key='step', value=str(int(progress.step))),
        KeyValue(key='source', value=progress.source),
    ]
    return msg


_PROGRESS_KEYS = ('progression', 'max_progression', 'step', 'source')


def progress_from_msg(msg: DiagnosticStatus) -> Progress:
    """Inverse of :func:`progress_to_msg`."""
    values = {kv.key: kv.value for kv in msg.values}
    stage_items = [kv for kv in msg.values if kv.key not in _PROGRESS_KEYS]
    return Progress(
        task=msg.name,
        stages=tuple(kv.key for kv in stage_items),
        met=tuple(kv.value == '1' for kv in stage_items),
        progression=float(values.get('progression', 0.0)),
        max_progression=float(values.get('max_progression', 0.0)),
        step=int(values.get('step', 0)),
        source=values.get('source', 'privileged'))
