"""QoS profiles used across realm_ros, named for what they carry."""

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

#: Joint states and commands: reliable so lockstep never loses a step; a short queue.
STATE = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE,
                   history=HistoryPolicy.KEEP_LAST, durability=DurabilityPolicy.VOLATILE)
COMMAND = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                     history=HistoryPolicy.KEEP_LAST, durability=DurabilityPolicy.VOLATILE)
#: Camera images: reliable (lockstep policies must see every frame), shallow queue.
IMAGE = QoSProfile(depth=3, reliability=ReliabilityPolicy.RELIABLE,
                   history=HistoryPolicy.KEEP_LAST, durability=DurabilityPolicy.VOLATILE)
#: Latched facts (instruction, camera_info, episode spec): late joiners get the last value.
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     history=HistoryPolicy.KEEP_LAST, durability=DurabilityPolicy.TRANSIENT_LOCAL)
#: Subscribing to what a lab's drivers publish (camera_info of realsense2_camera, zed_wrapper,
#: usb_cam: volatile, with every image; some best effort, as rclcpp's SensorDataQoS). Best
#: effort + volatile is compatible with every publisher, reliable or not, latched or not; a
#: transient-local subscription would match no volatile publisher and never receive.
DRIVER_IN = QoSProfile(depth=5, reliability=ReliabilityPolicy.BEST_EFFORT,
                       history=HistoryPolicy.KEEP_LAST, durability=DurabilityPolicy.VOLATILE)
#: Watching a topic whoever publishes it (monitor, operator): best effort connects to reliable and
#: best-effort publishers alike; a deep queue, since only counting or plotting happens.
ANY_PUBLISHER = QoSProfile(depth=50, reliability=ReliabilityPolicy.BEST_EFFORT)
#: /clock as rosgraph expects it.
CLOCK = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                   history=HistoryPolicy.KEEP_LAST, durability=DurabilityPolicy.VOLATILE)
