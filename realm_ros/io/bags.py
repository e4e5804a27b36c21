"""rosbag2 (MCAP) writing and reading without ROS, through ``rosbags`` (docs/sysid.md).

A *run* bag holds one world's ``command`` (trajectory_msgs/JointTrajectory) and
``joint_states`` (sensor_msgs/JointState) topics, optionally ``cameras/<name>/image``. Bags are
rosbag2 version 9 directories (``metadata.yaml`` + ``<name>.mcap``, MCAP profile ``ros2``,
``ros2msg`` schemas from the Kilted typestore), readable by ``rosbags``, by ``mcap_ros2`` and by
``ros2 bag info`` on a ROS install.

:func:`read_run` returns a :class:`RunData` with these arrays (joint order
:data:`realm_ros.core.robot.JOINT_NAMES`, seconds from the messages' header stamps,
which are sim time in lockstep and wall time on a real arm):

* ``command_t`` (K,), ``command_q`` (K, 7) rad, ``command_gripper`` (K,) g in [0, 1];
* ``state_t`` (N,), ``state_q`` (N, 7) rad, ``state_dq`` (N, 7) rad/s, ``state_effort``
  (N, 7) N m, ``state_gripper`` (N,);
* ``images``: camera name -> (stamps (M,), list of (H, W, 3) uint8 RGB frames), if asked.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import time
from typing import Any, Iterable, Sequence

import numpy as np
from rosbags.rosbag2 import Reader, ReaderError, StoragePlugin, Writer, WriterError
from rosbags.typesys import Stores, get_typestore

from realm_ros.core import robot
from realm_ros.core import topics as names
from realm_ros.core.errors import ConfigError, DataError
from realm_ros.core.sysid import Trajectory

TYPESTORE = get_typestore(Stores.ROS2_KILTED)
JOINT_STATE = 'sensor_msgs/msg/JointState'
TRAJECTORY = 'trajectory_msgs/msg/JointTrajectory'
IMAGE = 'sensor_msgs/msg/Image'
COMPRESSED_IMAGE = 'sensor_msgs/msg/CompressedImage'
STRING = 'std_msgs/msg/String'
#: image_transport's suffix for a compressed image topic (``cameras/<name>/image/compressed``).
COMPRESSED_SUFFIX = '/compressed'

_T = TYPESTORE.types
_Time = _T['builtin_interfaces/msg/Time']
_Duration = _T['builtin_interfaces/msg/Duration']
_Header = _T['std_msgs/msg/Header']


def _stamp(seconds: float) -> Any:
    sec = int(math.floor(seconds))
    return _Time(sec=sec, nanosec=int(round((seconds - sec) * 1e9)) % 1_000_000_000)


def _seconds(stamp: Any) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


class BagWriter:
    """Write a rosbag2/MCAP run bag; use as a context manager so the bag is always finalised.

    Topics are registered on first use. ``path`` must not exist yet (rosbags refuses to
    overwrite). :meth:`close` is idempotent; a bag closed early still holds every message
    written before.

    Crash safety: rosbags keeps an MCAP chunk in memory until it reaches 1 MiB, so a killed
    recorder would lose everything since the last chunk. Every ``flush_s`` seconds of wall time
    the pending chunk is written and flushed to the OS, so a ``kill -9`` loses at most that
    much; ``realm-ros bag repair`` (:mod:`realm_ros.io.repair`) then makes the cut bag readable.
    """

    def __init__(self, path: str | pathlib.Path, flush_s: float = 1.0) -> None:
        self.path = pathlib.Path(path)
        self.flush_s = flush_s
        self._flushed = time.monotonic()
        if self.path.exists():
            raise DataError(f'{self.path} exists already; choose a new bag directory')
        self._writer = Writer(self.path, version=9, storage_plugin=StoragePlugin.MCAP)
        try:
            self._writer.open()
        except WriterError as err:
            raise DataError(f'cannot create bag {self.path}: {err}') from None
        bio = getattr(getattr(self._writer, 'storage', None), 'bio', None)
        if bio is not None:
            bio.flush()  # the MCAP header: a bag killed before its first chunk is still MCAP
        self._connections: dict[str, Any] = {}
        self.counts: dict[str, int] = {}
        self.closed = False

    def __enter__(self) -> 'BagWriter':
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _connection(self, topic: str, msgtype: str) -> Any:
        conn = self._connections.get(topic)
        if conn is None:
            conn = self._writer.add_connection(topic, msgtype, typestore=TYPESTORE)
            self._connections[topic] = conn
            self.counts[topic] = 0
        elif conn.msgtype != msgtype:
            raise DataError(f'topic {topic} is {conn.msgtype}, cannot also write {msgtype}')
        return conn

    def write_serialized(self, topic: str, msgtype: str, t_ns: int,
                         data: bytes | memoryview) -> None:
        """Write one CDR-serialised message (as rclpy's ``serialize_message`` returns it)."""
        if self.closed:
            raise DataError(f'bag {self.path} is closed')
        self._writer.write(self._connection(topic, msgtype), int(t_ns), bytes(data))
        self.counts[topic] += 1
        if time.monotonic() - self._flushed >= self.flush_s:
            self.flush()

    def flush(self) -> None:
        """Write the pending MCAP chunk and hand the file's buffer to the OS.

        Uses rosbags' MCAP writer (``close_chunk``, ``bio``; checked by
        ``test/e2e/test_crash_safety.py``); with another storage writer this only does nothing.
        """
        self._flushed = time.monotonic()
        storage: Any = getattr(self._writer, 'storage', None)
        chunk = getattr(storage, 'chunk', None)
        if chunk is None or not hasattr(storage, 'close_chunk') or not chunk.bio.tell():
            return
        storage.close_chunk()
        storage.bio.flush()

    def write(self, topic: str, msg: Any, t_ns: int | None = None) -> None:
        """Write a rosbags message object; ``t_ns`` defaults to its header stamp."""
        if t_ns is None:
            t_ns = int(round(_seconds(msg.header.stamp) * 1e9))
        self.write_serialized(topic, msg.__msgtype__, t_ns,
                              TYPESTORE.serialize_cdr(msg, msg.__msgtype__))

    def write_joint_state(self, topic: str, t: float, q: Sequence[float],
                          dq: Sequence[float] | None = None, gripper: float = 0.0,
                          names: Sequence[str] = robot.JOINT_NAMES) -> None:
        """Write a joint state: 7 arm joints (rad, rad/s) plus ``gripper`` (g in [0, 1])."""
        dq_values = np.zeros(7) if dq is None else np.asarray(dq, float)
        msg = _T[JOINT_STATE](
            header=_Header(stamp=_stamp(t), frame_id='base_link'),
            name=list(names) + [robot.GRIPPER_JOINT],
            position=np.r_[np.asarray(q, float), gripper],
            velocity=np.r_[dq_values, 0.0],
            effort=np.zeros(len(names) + 1))
        self.write(topic, msg)

    def write_command(self, topic: str, t: float, q_d: Sequence[float], gripper: float = 0.0,
                      names: Sequence[str] = robot.JOINT_NAMES) -> None:
        """Write a one-point position command (absolute targets, rad; gripper g)."""
        point = _T['trajectory_msgs/msg/JointTrajectoryPoint'](
            positions=np.r_[np.asarray(q_d, float), gripper], velocities=np.zeros(0),
            accelerations=np.zeros(0), effort=np.zeros(0),
            time_from_start=_Duration(sec=0, nanosec=0))
        msg = _T[TRAJECTORY](header=_Header(stamp=_stamp(t), frame_id='base_link'),
                             joint_names=list(names) + [robot.GRIPPER_JOINT], points=[point])
        self.write(topic, msg)

    def write_image(self, topic: str, t: float, image: np.ndarray) -> None:
        """Write an (H, W, 3) uint8 RGB image as ``rgb8``."""
        h, w = image.shape[:2]
        msg = _T[IMAGE](header=_Header(stamp=_stamp(t), frame_id='camera_optical_frame'),
                        height=h, width=w, encoding='rgb8', is_bigendian=0, step=w * 3,
                        data=np.ascontiguousarray(image, dtype=np.uint8).reshape(-1))
        self.write(topic, msg)

    def write_compressed_image(self, topic: str, t: float, image: np.ndarray,
                               fmt: str = 'jpeg') -> None:
        """Write an (H, W, 3) uint8 RGB image as a ``jpeg`` or ``png`` CompressedImage."""
        msg = _T[COMPRESSED_IMAGE](
            header=_Header(stamp=_stamp(t), frame_id='camera_optical_frame'), format=fmt,
            data=encode_image(image, fmt))
        self.write(topic, msg)

    def close(self) -> None:
        """Finalise the bag (MCAP summary and metadata.yaml)."""
        if not self.closed:
            self.closed = True
            self._writer.close()


def encode_image(image: np.ndarray, fmt: str) -> np.ndarray:
    """Return an (H, W, 3) uint8 RGB image compressed as ``jpeg`` or ``png`` bytes (uint8)."""
    import cv2

    ok, buf = cv2.imencode('.jpg' if fmt == 'jpeg' else f'.{fmt}',
                           np.ascontiguousarray(np.asarray(image, np.uint8)[..., ::-1]))
    if not ok:
        raise DataError(f'cannot encode a {np.shape(image)} image as {fmt}')
    return np.asarray(buf, dtype=np.uint8).reshape(-1)


def decode_image(msg: Any) -> np.ndarray:
    """Return the (H, W, 3) uint8 RGB frame of a rosbags Image (rgb8/bgr8) or CompressedImage."""
    if msg.__msgtype__ == COMPRESSED_IMAGE:
        import cv2

        bgr = cv2.imdecode(np.asarray(msg.data, np.uint8), cv2.IMREAD_COLOR)
        if bgr is None:
            raise DataError(f'cannot decode a {msg.format!r} compressed image')
        return np.ascontiguousarray(bgr[..., ::-1])
    if msg.encoding not in ('rgb8', 'bgr8'):
        raise DataError(f'image encoding {msg.encoding!r} is not rgb8 or bgr8')
    frame = (np.asarray(msg.data, np.uint8).reshape(msg.height, msg.step)[:, :msg.width * 3]
             .reshape(msg.height, msg.width, 3))
    return np.ascontiguousarray(frame[..., ::-1] if msg.encoding == 'bgr8' else frame)


@dataclasses.dataclass
class RunData:
    """One world's recorded run, as arrays (see the module docstring for shapes and units)."""

    path: pathlib.Path
    command_t: np.ndarray
    command_q: np.ndarray
    command_gripper: np.ndarray
    state_t: np.ndarray
    state_q: np.ndarray
    state_dq: np.ndarray
    state_effort: np.ndarray
    state_gripper: np.ndarray
    images: dict[str, tuple[np.ndarray, list[np.ndarray]]] = dataclasses.field(
        default_factory=dict)
    topics: dict[str, str] = dataclasses.field(default_factory=dict)


def _pick_topic(topics: dict[str, str], name: str, msgtype: str, namespace: str | None,
                path: pathlib.Path) -> str:
    if namespace is not None:
        wanted = f'{namespace.rstrip("/")}/{name}' if namespace.strip('/') else f'/{name}'
        candidates = [t for t in topics if t == wanted]
    else:
        candidates = [t for t in topics if t == name or t.endswith(f'/{name}')]
    if not candidates:
        raise DataError(
            f'bag {path}: no {name!r} topic' + (f' in namespace {namespace!r}' if namespace
                                                else '')
            + f'; it has {sorted(topics) or "no topics"}')
    if len(candidates) > 1:
        raise DataError(f'bag {path}: several {name!r} topics {candidates}; pass the namespace')
    topic = candidates[0]
    if topics[topic] != msgtype:
        raise DataError(f'bag {path}: topic {topic} is {topics[topic]}, expected {msgtype}')
    return topic


def _arm_index(names: Sequence[str], prefix: str, what: str) -> tuple[list[int], int | None]:
    """Return indices of the 7 arm joints in canonical order, and of ``gripper`` (or None)."""
    index = {}
    for i, name in enumerate(names):
        if name == robot.GRIPPER_JOINT:
            continue
        try:
            index[robot.map_joint_names([name], prefix)[0]] = i
        except ConfigError:
            raise DataError(
                f'{what}: joint name {name!r} does not match {prefix}joint1..7 '
                f'(names {list(names)}); pass the joint-name prefix the robot uses') from None
    missing = [n for n in robot.JOINT_NAMES if n not in index]
    if missing:
        raise DataError(f'{what}: joint names {list(names)} lack {missing}')
    grip = list(names).index(robot.GRIPPER_JOINT) if robot.GRIPPER_JOINT in names else None
    return [index[n] for n in robot.JOINT_NAMES], grip


#: Joint positions further than this outside the Panda's limits are not a Panda in radians.
LIMIT_SLACK_RAD = 0.1


def _check_limits(q: np.ndarray, where: str) -> None:
    """Raise DataError if ``q`` (rad, core order) is far outside the joint limits (units?)."""
    bad = np.flatnonzero((q < robot.JOINT_LOWER - LIMIT_SLACK_RAD)
                         | (q > robot.JOINT_UPPER + LIMIT_SLACK_RAD))
    if bad.size:
        detail = ', '.join(f'{robot.JOINT_NAMES[i]} = {q[i]:.4g}' for i in bad)
        raise DataError(f'{where}: joint positions outside the joint limits ({detail}); '
                        "positions must be in rad (degrees?), in the robot's joint order")


def read_run(path: str | pathlib.Path, namespace: str | None = None, prefix: str = 'panda_',
             cameras: Iterable[str] = ()) -> RunData:
    """Read a run bag into arrays.

    Args:
        path: the bag directory (or its .mcap file).
        namespace: the world's namespace (``/real``); None = the one ``command`` /
            ``joint_states`` pair in the bag.
        prefix: joint-name prefix in the bag (``panda_``, ``fr3_``, ...).
        cameras: camera names whose images to load.

    Raises:
        DataError: unreadable or empty bag, missing or mistyped topics, mismatched joint names,
            NaN samples; the message names the bag, topic and message index.
    """
    path = pathlib.Path(path)
    try:
        reader = Reader(path)
        reader.open()
    except (ReaderError, FileNotFoundError, OSError) as err:
        raise DataError(f'cannot read bag {path}: {err}') from None
    try:
        topics = {c.topic: c.msgtype for c in reader.connections}
        if reader.message_count == 0:
            raise DataError(f'bag {path} is empty (no messages)')
        cmd_topic = _pick_topic(topics, names.COMMAND, TRAJECTORY, namespace, path)
        js_topic = _pick_topic(topics, names.JOINT_STATES, JOINT_STATE, namespace, path)
        ns = js_topic[:-len(names.JOINT_STATES)]
        image_topics = {ns + names.camera_image(c): c for c in cameras}
        for topic in image_topics:
            if topics.get(topic) != IMAGE:
                raise DataError(f'bag {path}: no {IMAGE} topic {topic}')
        wanted = [c for c in reader.connections
                  if c.topic in (cmd_topic, js_topic) or c.topic in image_topics]
        cmd_t, cmd_q, cmd_g = [], [], []
        st_t, st_q, st_dq, st_eff, st_g = [], [], [], [], []
        images: dict[str, tuple[list[float], list[np.ndarray]]] = {
            c: ([], []) for c in image_topics.values()}
        counts = {cmd_topic: 0, js_topic: 0}
        grip_cmd = 0.0
        for conn, _, raw in reader.messages(connections=wanted):
            msg: Any = TYPESTORE.deserialize_cdr(raw, conn.msgtype)  # a generated message class
            if conn.topic in image_topics:
                frames = images[image_topics[conn.topic]]
                frames[0].append(_seconds(msg.header.stamp))
                frames[1].append(np.asarray(msg.data, np.uint8)
                                 .reshape(msg.height, msg.step)[:, :msg.width * 3]
                                 .reshape(msg.height, msg.width, 3).copy())
                continue
            k = counts[conn.topic]
            counts[conn.topic] += 1
            where = f'bag {path}, topic {conn.topic}, message {k}'
            stamp = _seconds(msg.header.stamp)
            if conn.topic == cmd_topic:
                arm, grip = _arm_index(msg.joint_names, prefix, where)
                if not msg.points:
                    raise DataError(f'{where}: command has no points')
                t0 = None
                for j, point in enumerate(msg.points):
                    values = np.asarray(point.positions, dtype=float)
                    if values.size != len(msg.joint_names):
                        raise DataError(f'{where}, point {j}: {values.size} positions for '
                                        f'{len(msg.joint_names)} joint names (sysid needs '
                                        'position commands)')
                    if not np.all(np.isfinite(values)):
                        raise DataError(f'{where}, point {j}: NaN or inf position')
                    tfs = _seconds(point.time_from_start)
                    t0 = tfs if t0 is None else t0
                    grip_cmd = float(values[grip]) if grip is not None else grip_cmd
                    cmd_t.append(stamp + tfs - t0)
                    cmd_q.append(values[arm])
                    cmd_g.append(grip_cmd)
            else:
                arm, grip = _arm_index(msg.name, prefix, where)
                pos = np.asarray(msg.position, dtype=float)
                if pos.size != len(msg.name):
                    raise DataError(f'{where}: {pos.size} positions for {len(msg.name)} names')
                if not np.all(np.isfinite(pos)):
                    raise DataError(f'{where}: NaN or inf joint position at t = {stamp:.3f} s')
                _check_limits(pos[arm], f'{where}, t = {stamp:.3f} s')
                vel = np.asarray(msg.velocity, dtype=float)
                eff = np.asarray(msg.effort, dtype=float)
                st_t.append(stamp)
                st_q.append(pos[arm])
                st_dq.append(vel[arm] if vel.size == pos.size else np.zeros(7))
                st_eff.append(eff[arm] if eff.size == pos.size else np.zeros(7))
                st_g.append(float(pos[grip]) if grip is not None else 0.0)
        for topic, n in counts.items():
            if n == 0:
                raise DataError(f'bag {path}: topic {topic} has no messages')
        return RunData(
            path=path, command_t=np.array(cmd_t), command_q=np.array(cmd_q),
            command_gripper=np.array(cmd_g), state_t=np.array(st_t), state_q=np.array(st_q),
            state_dq=np.array(st_dq), state_effort=np.array(st_eff),
            state_gripper=np.array(st_g),
            images={c: (np.array(v[0]), v[1]) for c, v in images.items()},
            topics={cmd_topic: TRAJECTORY, js_topic: JOINT_STATE})
    finally:
        reader.close()


def write_run(path: str | pathlib.Path, run: RunData, namespace: str = '/real') -> None:
    """Write ``run``'s commands and joint states (and images) as a bag (tests, conversions)."""
    ns = namespace.rstrip('/')
    with BagWriter(path) as bag:
        for t, q, dq, g in zip(run.state_t, run.state_q, run.state_dq, run.state_gripper):
            bag.write_joint_state(f'{ns}/{names.JOINT_STATES}', t, q, dq, g)
        for t, q, g in zip(run.command_t, run.command_q, run.command_gripper):
            bag.write_command(f'{ns}/{names.COMMAND}', t, q, g)
        for name, (stamps, frames) in run.images.items():
            for t, image in zip(stamps, frames):
                bag.write_image(f'{ns}/{names.camera_image(name)}', t, image)


def run_to_trajectory(run: RunData, dt: float = 1.0 / robot.CONTROL_HZ,
                      name: str | None = None) -> Trajectory:
    """Align a run to control steps for system identification.

    The initial state is the last joint state at or before the first command; the measured
    position after command ``k`` is the joint state interpolated (linearly, per joint) at
    ``t_cmd[0] + (k + 1) dt``. Commands are taken one per control period in order (lockstep
    and real time alike); measured states must cover the whole span.

    Raises:
        DataError: no state before the first command or states end too early.
    """
    name = name or run.path.name
    t0 = run.command_t[0]
    before = np.flatnonzero(run.state_t <= t0 + 1e-6)
    if before.size == 0:
        raise DataError(f'{name}: no joint state at or before the first command (t = {t0:.3f})')
    i0 = before[-1]
    k = len(run.command_t)
    times = t0 + dt * np.arange(1, k + 1)
    last = run.state_t[-1]
    if last < times[-1] - 1e-6:
        keep = int(np.sum(times <= last + 1e-6))
        if keep == 0:
            raise DataError(f'{name}: joint states end before the first control step')
        k, times = keep, times[:keep]
    measured = np.stack([np.interp(times, run.state_t, run.state_q[:, j]) for j in range(7)], 1)
    measured_dq = np.stack([np.interp(times, run.state_t, run.state_dq[:, j])
                            for j in range(7)], 1)
    return Trajectory(
        name=name, q0=run.state_q[i0], dq0=run.state_dq[i0], gripper0=float(run.state_gripper[i0]),
        targets=run.command_q[:k], gripper=run.command_gripper[:k], measured=measured,
        measured_dq=measured_dq, dt=dt)
