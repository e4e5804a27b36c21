"""``recorder_node``: record a world's commands and joint states (and images) to rosbag2/MCAP.

Topics (relative to the ``namespace`` parameter, e.g. ``/real``):
    command (in)                 trajectory_msgs/JointTrajectory
    joint_states (in)            sensor_msgs/JointState, at whatever rate the world publishes
    cameras/<name>/image (in)    sensor_msgs/Image, for each name in ``cameras``; stored raw, or
                                 with ``image_format`` jpeg/png as sensor_msgs/CompressedImage on
                                 ``cameras/<name>/image/compressed``, optionally resized
                                 (``image_width`` x ``image_height``, with padding)
    instruction (in, latched)    std_msgs/String, logged at the latest stamp written
Services:
    ~/split                      std_srvs/Trigger: close the current bag, open the next one;
                                 the response message is JSON {closed, counts, opened, namespace}
    ~/status                     std_srvs/Trigger: JSON {bag, counts, namespace, first_ns,
                                 last_ns} of the open bag (the log times it holds so far)
Parameters: every field of :class:`realm_ros.core.recording.RecorderConfig`.

Bags are ``<out_dir>/<bag_prefix>_000``, ``_001``, ... (one per run or episode), written with
``rosbags`` (no rosbag2 install needed). Every message is written in its callback, and the bag
is finalised when the node is destroyed, on SIGINT/SIGTERM and on any exception, so nothing
received is lost.
"""

from __future__ import annotations

import json
import pathlib
import sys
from typing import Any

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from realm_ros.core.errors import RealmError
from realm_ros.core.recording import RecorderConfig
from realm_ros.io import bags
from realm_ros.io.bags import IMAGE, JOINT_STATE, STRING, TRAJECTORY, BagWriter
from realm_ros.ros import qos, topics
from realm_ros.ros.params import declare_config
from realm_ros.ros.runner import spin_node


class RecorderNode(Node):
    """Write every message of one world's sysid/evaluation topics to the current bag."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__('recorder', **kwargs)
        self.config = declare_config(self, RecorderConfig)
        self.out_dir = pathlib.Path(self.config.out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._repair_cut_bags()
        ns = self.config.namespace.rstrip('/')
        self._index = -1
        self.bag: BagWriter | None = None
        self.finished: list[pathlib.Path] = []
        self._first_ns: int | None = None  # log times of the open bag's first and last message
        self._last_ns: int | None = None
        self.bag = self._open_next()
        self._subscribe(f'{ns}/{topics.COMMAND}', JointTrajectory, TRAJECTORY, qos.COMMAND)
        self._subscribe(f'{ns}/{topics.JOINT_STATES}', JointState, JOINT_STATE, qos.STATE)
        self._subscribe(f'{ns}/{topics.INSTRUCTION}', String, STRING, qos.LATCHED)
        for name in self.config.cameras:
            self._subscribe(f'{ns}/{topics.camera_image(name)}', Image, IMAGE, qos.IMAGE)
        self.create_service(Trigger, '~/split', self._on_split)
        self.create_service(Trigger, '~/status', self._on_status)
        self.get_logger().info(f'recording {ns or "/"} to {self.bag.path}')

    def _repair_cut_bags(self) -> None:
        """Make bags an earlier, killed recorder left cut short readable (issue 15).

        Only this recorder's own bags (``<bag_prefix>_NNN``): another recorder may be writing
        into the same folder under another prefix, and its open bag has no metadata.yaml yet.
        """
        from realm_ros.io.repair import find_cut_bags, repair_bag
        mine = f'{self.config.bag_prefix}_'
        for path in find_cut_bags(self.out_dir, deep=False):
            if not path.name.startswith(mine) or path == self.out_dir:
                continue
            try:
                self.get_logger().warning(f'repaired a bag cut short: {repair_bag(path)}')
            except RealmError as err:
                self.get_logger().error(f'cannot repair {path}: {err}')

    def _subscribe(self, topic: str, cls: type, msgtype: str, profile: Any) -> None:
        def callback(msg: Any) -> None:
            self._write(topic, msgtype, msg)
        self.create_subscription(cls, topic, callback, profile)

    def _write(self, topic: str, msgtype: str, msg: Any) -> None:
        if self.bag is None:
            return
        if msgtype == STRING:
            # No header: logged at the latest stamp written, so it sorts with the messages of
            # the reset that published it, in the bag's own time base (sim time in lockstep).
            t_ns = self._last_ns if self._last_ns is not None else 0
        elif self.config.use_header_stamps:  # 0 is a valid stamp: sim time right after reset
            t_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        else:
            t_ns = self.get_clock().now().nanoseconds
        if msgtype == IMAGE and self._compress_or_resize():
            self._write_image(self.bag, topic, msg, t_ns)
        else:
            self.bag.write(topic, to_rosbags(msg, msgtype), t_ns)
        self._first_ns = t_ns if self._first_ns is None else min(self._first_ns, t_ns)
        self._last_ns = t_ns if self._last_ns is None else max(self._last_ns, t_ns)

    def _compress_or_resize(self) -> bool:
        return self.config.image_format != 'raw' or self.config.image_width > 0

    def _write_image(self, bag: BagWriter, topic: str, msg: Any, t_ns: int) -> None:
        """Store an image resized (with padding) and/or compressed, as configured."""
        from realm_ros.policies.image_tools import resize_with_pad
        from realm_ros.ros.convert import image_from_msg

        frame = image_from_msg(msg)
        if self.config.image_width > 0:
            frame = resize_with_pad(frame, self.config.image_height, self.config.image_width)
        t = t_ns * 1e-9
        if self.config.image_format == 'raw':
            bag.write_image(topic, t, frame)
        else:
            bag.write_compressed_image(topic + bags.COMPRESSED_SUFFIX, t, frame,
                                            self.config.image_format)

    def _open_next(self) -> BagWriter:
        self._index += 1
        path = self.out_dir / f'{self.config.bag_prefix}_{self._index:03d}'
        while path.exists():  # never overwrite an earlier session's bag
            self._index += 1
            path = self.out_dir / f'{self.config.bag_prefix}_{self._index:03d}'
        self._first_ns = self._last_ns = None
        self.bag = BagWriter(path)
        return self.bag

    def split(self) -> dict[str, Any]:
        """Close the current bag and open the next; return what was closed and opened."""
        closed = self.bag
        counts = dict(closed.counts) if closed is not None else {}
        self.close()
        opened = self._open_next()
        return {'closed': str(closed.path) if closed else '', 'counts': counts,
                'opened': str(opened.path), 'namespace': self.config.namespace}

    def _on_split(self, request: Trigger.Request, response: Trigger.Response) -> Any:
        del request
        try:
            result = self.split()
        except RealmError as err:
            self.get_logger().error(f'split failed: {err}')
            response.success, response.message = False, str(err)
            return response
        response.success, response.message = True, json.dumps(result)
        return response

    def _on_status(self, request: Trigger.Request, response: Trigger.Response) -> Any:
        """Answer ``{bag, counts}`` of the open bag (messages written so far per topic)."""
        del request
        bag = self.bag
        response.success = bag is not None
        response.message = json.dumps({'bag': str(bag.path) if bag else '',
                                       'counts': dict(bag.counts) if bag else {},
                                       'namespace': self.config.namespace,
                                       'first_ns': self._first_ns, 'last_ns': self._last_ns})
        return response

    def close(self) -> None:
        """Finalise the current bag (idempotent)."""
        if self.bag is not None:
            bag, self.bag = self.bag, None
            bag.close()
            self.finished.append(bag.path)
            self.get_logger().info(f'closed {bag.path}: {bag.counts}')

    def destroy_node(self) -> None:
        self.close()
        super().destroy_node()


def to_rosbags(msg: Any, msgtype: str) -> Any:
    """Return the ``rosbags`` (Kilted typestore) copy of an rclpy message of ``msgtype``.

    Serialising with rosbags rather than ``rclpy.serialization`` keeps the bag byte-exact for
    readers: rclpy's buffer carries trailing padding that rosbags' strict CDR reader rejects.
    """
    types = bags.TYPESTORE.types
    if msgtype == STRING:
        return types[msgtype](data=msg.data)
    header = types['std_msgs/msg/Header'](
        stamp=types['builtin_interfaces/msg/Time'](sec=msg.header.stamp.sec,
                                                   nanosec=msg.header.stamp.nanosec),
        frame_id=msg.header.frame_id)
    if msgtype == JOINT_STATE:
        return types[msgtype](
            header=header, name=list(msg.name), position=np.asarray(msg.position, float),
            velocity=np.asarray(msg.velocity, float), effort=np.asarray(msg.effort, float))
    if msgtype == TRAJECTORY:
        point_cls = types['trajectory_msgs/msg/JointTrajectoryPoint']
        duration = types['builtin_interfaces/msg/Duration']
        points = [point_cls(
            positions=np.asarray(p.positions, float), velocities=np.asarray(p.velocities, float),
            accelerations=np.asarray(p.accelerations, float),
            effort=np.asarray(p.effort, float),
            time_from_start=duration(sec=p.time_from_start.sec,
                                     nanosec=p.time_from_start.nanosec)) for p in msg.points]
        return types[msgtype](header=header, joint_names=list(msg.joint_names), points=points)
    if msgtype == IMAGE:
        return types[msgtype](
            header=header, height=msg.height, width=msg.width, encoding=msg.encoding,
            is_bigendian=msg.is_bigendian, step=msg.step,
            data=np.frombuffer(bytes(msg.data), dtype=np.uint8))
    raise ValueError(f'recorder cannot convert {msgtype}')


def main(args: list[str] | None = None) -> int:
    """Record until interrupted; the bag is closed on SIGINT/SIGTERM; exit 2 on a bad parameter."""
    return spin_node('recorder_node', RecorderNode, args)


if __name__ == '__main__':
    sys.exit(main())
