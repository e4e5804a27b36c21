"""Convert the monitor's ROS-free records into visualization_msgs and std_msgs messages."""

from __future__ import annotations

from typing import Iterable

from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, Pose, Quaternion, Vector3
from std_msgs.msg import ColorRGBA, Float64MultiArray, MultiArrayDimension
from visualization_msgs.msg import Marker, MarkerArray

from realm_ros.core import robot
from realm_ros.core.monitor import Divergence, MarkerSpec

_TYPES = {'sphere': Marker.SPHERE, 'cube': Marker.CUBE, 'text': Marker.TEXT_VIEW_FACING}
#: Layout label of ``monitor/divergence``: what the numbers are, then each joint in order.
DIVERGENCE_LABEL = 'abs_dq_rad:' + ','.join(robot.JOINT_NAMES)


def marker_to_msg(spec: MarkerSpec, frame_id: str, stamp: Time) -> Marker:
    """Return an ADD marker for ``spec`` in ``frame_id``."""
    msg = Marker()
    msg.header.frame_id = frame_id
    msg.header.stamp = stamp
    msg.ns, msg.id = spec.ns, spec.id
    msg.type = _TYPES[spec.kind]
    msg.action = Marker.ADD
    w, x, y, z = spec.orientation
    msg.pose = Pose(position=Point(x=spec.position[0], y=spec.position[1], z=spec.position[2]),
                    orientation=Quaternion(x=x, y=y, z=z, w=w))
    msg.scale = Vector3(x=float(spec.scale[0]), y=float(spec.scale[1]), z=float(spec.scale[2]))
    msg.color = ColorRGBA(r=spec.rgba[0], g=spec.rgba[1], b=spec.rgba[2], a=spec.rgba[3])
    msg.text = spec.text
    msg.frame_locked = True
    return msg


def marker_array(specs: Iterable[MarkerSpec], frame_id: str, stamp: Time) -> MarkerArray:
    """Return a MarkerArray that first clears the previous markers, then adds ``specs``."""
    clear = Marker()
    clear.header.frame_id = frame_id
    clear.header.stamp = stamp
    clear.action = Marker.DELETEALL
    return MarkerArray(markers=[clear] + [marker_to_msg(s, frame_id, stamp) for s in specs])


def divergence_to_msg(div: Divergence) -> Float64MultiArray:
    """Return ``monitor/divergence``: 7 values |q_real - q_sim| rad, labelled per joint."""
    msg = Float64MultiArray()
    msg.layout.dim = [MultiArrayDimension(label=DIVERGENCE_LABEL, size=robot.NUM_ARM_JOINTS,
                                          stride=robot.NUM_ARM_JOINTS)]
    msg.data = [float(v) for v in div.per_joint]
    return msg
