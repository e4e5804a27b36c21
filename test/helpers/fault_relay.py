"""An unreliable link on purpose: relay JointTrajectory messages, dropping and delaying some.

Run as a process between a policy and a world (issue 15 fault injection)::

    python test/helpers/fault_relay.py --ros-args -r __ns:=/sim -p input:=command_unreliable \
        -p output:=command -p delay_s:=0.03 -p drop_probability:=0.0 -p seed:=0

``delay_s`` is the largest random delay, s (uniform, order kept); ``drop_probability`` may be
changed at run time (``ros2 param set``). Every drop is logged with its message count.
"""

from __future__ import annotations

import collections
import sys
import time

import numpy as np
from rclpy.node import Node
from trajectory_msgs.msg import JointTrajectory

from realm_ros.ros import qos
from realm_ros.ros.runner import spin_node


class FaultRelay(Node):
    """Forward ``input`` to ``output`` with seeded random drops and delays."""

    def __init__(self) -> None:
        super().__init__('fault_relay')
        self.declare_parameter('input', 'command_unreliable')
        self.declare_parameter('output', 'command')
        self.declare_parameter('delay_s', 0.0)
        self.declare_parameter('drop_probability', 0.0)
        self.declare_parameter('seed', 0)
        self._rng = np.random.default_rng(self.get_parameter('seed').value)
        self._queue: collections.deque = collections.deque()
        self.received = self.dropped = 0
        self._pub = self.create_publisher(
            JointTrajectory, self.get_parameter('output').value, qos.COMMAND)
        self.create_subscription(JointTrajectory, self.get_parameter('input').value,
                                 self._on_message, qos.COMMAND)
        self.create_timer(0.002, self._flush)
        self.get_logger().info('fault relay up')

    def _on_message(self, msg: JointTrajectory) -> None:
        self.received += 1
        if self._rng.random() < self.get_parameter('drop_probability').value:
            self.dropped += 1
            self.get_logger().warning(f'dropped message {self.received} '
                                      f'({self.dropped} dropped so far)')
            return
        delay = self._rng.uniform(0.0, self.get_parameter('delay_s').value)
        due = max(time.monotonic() + delay, self._queue[-1][0] if self._queue else 0.0)
        self._queue.append((due, msg))

    def _flush(self) -> None:
        now = time.monotonic()
        while self._queue and self._queue[0][0] <= now:
            self._pub.publish(self._queue.popleft()[1])


def main(args: list[str] | None = None) -> int:
    """Run the relay until interrupted."""
    return spin_node('fault_relay', FaultRelay, args)


if __name__ == '__main__':
    sys.exit(main())
