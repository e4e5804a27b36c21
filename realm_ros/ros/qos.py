"""QoS profiles used across realm_ros, named for what they carry."""

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy


def _keep_last(depth: int, reliability: ReliabilityPolicy = ReliabilityPolicy.RELIABLE,
               durability: DurabilityPolicy = DurabilityPolicy.VOLATILE) -> QoSProfile:
    """A keep-last profile of ``depth``; reliable and volatile unless told."""
    return QoSProfile(depth=depth, reliability=reliability, history=HistoryPolicy.KEEP_LAST,
                      durability=durability)


#: Joint states and commands: reliable so lockstep never loses a step; a short queue.
STATE = _keep_last(50)
COMMAND = _keep_last(10)
#: Camera images: reliable (lockstep policies must see every frame), shallow queue.
IMAGE = _keep_last(3)
#: Latched facts (instruction, camera_info, episode spec): late joiners get the last value.
LATCHED = _keep_last(1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
#: Subscribing to what a lab's drivers publish (camera_info of realsense2_camera, zed_wrapper,
#: usb_cam: volatile, with every image; some best effort, as rclcpp's SensorDataQoS). Best
#: effort + volatile is compatible with every publisher, reliable or not, latched or not; a
#: transient-local subscription would match no volatile publisher and never receive.
DRIVER_IN = _keep_last(5, reliability=ReliabilityPolicy.BEST_EFFORT)
#: Watching a topic whoever publishes it (monitor, operator): best effort connects to reliable and
#: best-effort publishers alike; a deep queue, since only counting or plotting happens.
ANY_PUBLISHER = _keep_last(50, reliability=ReliabilityPolicy.BEST_EFFORT)
#: /clock as rosgraph expects it.
CLOCK = _keep_last(10)
