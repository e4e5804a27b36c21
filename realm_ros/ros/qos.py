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
#: /clock as rosgraph expects it.
CLOCK = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                   history=HistoryPolicy.KEEP_LAST, durability=DurabilityPolicy.VOLATILE)
