"""Gripper adapters of the franka bridge, chosen by ``franka.gripper``.

Each adapter turns the policy's gripper value g in [0, 1] (1 = closed, binarised at 0.5 as openpi
and DROID do) into goals for one real interface:

* ``franka_hand``: franka_gripper's actions ``<ns>/move`` (franka_msgs/action/Move: width m,
  speed m/s) to open and ``<ns>/grasp`` (franka_msgs/action/Grasp: width m, epsilon inner/outer
  m, speed m/s, force N) to close; ``<ns>/homing`` (Homing, empty goal) on request. The Franka
  Hand opens at most 0.08 m (franka_gripper aborts wider goals). franka_ros2 has no width topic.
* ``robotiq_2f_85``: control_msgs/action/GripperCommand on ``franka.gripper_command_action``
  (default ``robotiq_gripper_controller/gripper_cmd``, the ros2_control GripperActionController
  of PickNik's ros2_robotiq_gripper), ``command.position`` = ``gripper_open_position`` or
  ``gripper_closed_position`` (that driver: knuckle joint, 0.0 open .. 0.8 rad closed),
  ``command.max_effort`` N; stroke 0.085 m.
* ``width_topic``: std_msgs/Float64 opening (m) on ``<ns>/width_command``: only the digital real
  (node digital_real) serves it, for machines without franka_msgs/control_msgs (pip installs).

Rules shared by all: a goal goes out only when the binarised command changes, at most one per
``gripper_min_interval_s`` (a change inside the interval is sent when it ends), only while the
action server is up (otherwise the command stays pending and a warning is logged), and the
width stays within ``[0, max_width]`` of the hand.
"""

from __future__ import annotations

import importlib
import time
from typing import Any, Callable

from std_msgs.msg import Float64

from realm_ros.core import control
from realm_ros.core.config import FrankaBridgeConfig
from realm_ros.core.errors import BackendUnavailable
from realm_ros.ros import qos


def import_interfaces(module: str, what: str) -> Any:
    """Import ``module`` (e.g. ``franka_msgs.action``) or raise :class:`BackendUnavailable`."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise BackendUnavailable(
            f'{what} needs the ROS package {module.split(".")[0]!r} (install franka_ros2 / '
            f'control_msgs in the lab workspace; they are not on PyPI): {err}') from err


class Gripper:
    """Base: binarise, rate-limit and clamp; subclasses send one goal for a closed/open state."""

    def __init__(self, node: Any, config: FrankaBridgeConfig,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.node = node
        self.config = config
        self.max_width = config.gripper_max_width
        self._clock = clock
        self._sent: bool | None = None     # closed? last goal sent
        self._wanted: bool | None = None   # closed? last command
        self._last_send = -float('inf')
        self.goals_sent = 0

    def command(self, g: float) -> None:
        """Take the policy's g; send a goal if the binarised value changed and rules allow."""
        self._wanted = bool(g >= 0.5)
        self.flush()

    def flush(self) -> None:
        """Send the pending command now if it differs from the last goal and the rules allow."""
        if self._wanted is None or self._wanted == self._sent:
            return
        now = self._clock()
        if now - self._last_send < self.config.gripper_min_interval_s:
            return
        if not self.ready():
            self.node.get_logger().warning(
                f'gripper {self.config.gripper}: server not available yet; command pending',
                throttle_duration_sec=5.0)
            return
        width = min(max(control.gripper_width(1.0 if self._wanted else 0.0, self.max_width),
                        0.0), self.max_width)
        self.node.get_logger().info(
            f'gripper goal: {"close" if self._wanted else f"open to {width:.3f} m"} '
            f'({self.config.gripper})')
        self.send(self._wanted, width)
        self._sent = self._wanted
        self._last_send = now
        self.goals_sent += 1

    def reset(self) -> None:
        """Forget the last goal: the next command is sent whatever it is."""
        self._sent = None

    def ready(self) -> bool:
        """Whether the gripper's server is up."""
        return True

    def wait_ready(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` wall seconds for the server; return whether it is up."""
        deadline = time.monotonic() + timeout_s
        while not self.ready():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        return True

    def send(self, closed: bool, width: float) -> None:
        """Send one goal: close (grasp) or open to ``width`` m."""
        raise NotImplementedError

    def home(self) -> None:
        """Calibrate the fingers (Franka Hand homing); others: nothing to do."""


class FrankaHandGripper(Gripper):
    """franka_gripper's Grasp (close) / Move (open) / Homing actions (franka_msgs)."""

    def __init__(self, node: Any, config: FrankaBridgeConfig, **kwargs: Any) -> None:
        super().__init__(node, config, **kwargs)
        from rclpy.action import ActionClient
        self.action = import_interfaces('franka_msgs.action', 'the franka_hand gripper')
        ns = config.gripper_namespace
        self._move: ActionClient = ActionClient(node, self.action.Move, f'{ns}/move')
        self._grasp: ActionClient = ActionClient(node, self.action.Grasp, f'{ns}/grasp')
        self._homing: ActionClient = ActionClient(node, self.action.Homing, f'{ns}/homing')

    def ready(self) -> bool:
        return self._move.server_is_ready() and self._grasp.server_is_ready()

    def send(self, closed: bool, width: float) -> None:
        cfg = self.config
        if closed:
            goal = self.action.Grasp.Goal()
            # Close on whatever is there: any final width in [0, max_width] is a success.
            goal.width = 0.0
            goal.epsilon.inner = 0.005
            goal.epsilon.outer = self.max_width
            goal.speed = cfg.gripper_speed
            goal.force = cfg.gripper_force
            self._grasp.send_goal_async(goal)
        else:
            goal = self.action.Move.Goal()
            goal.width = width
            goal.speed = cfg.gripper_speed
            self._move.send_goal_async(goal)

    def home(self) -> None:
        if self._homing.server_is_ready():
            self._homing.send_goal_async(self.action.Homing.Goal())


class Robotiq2F85Gripper(Gripper):
    """control_msgs GripperCommand on ``gripper_command_action`` (driver joint positions)."""

    def __init__(self, node: Any, config: FrankaBridgeConfig, **kwargs: Any) -> None:
        super().__init__(node, config, **kwargs)
        from rclpy.action import ActionClient
        self.action = import_interfaces('control_msgs.action', 'the robotiq_2f_85 gripper')
        self._client: ActionClient = ActionClient(node, self.action.GripperCommand,
                                                  config.gripper_command_action)

    def ready(self) -> bool:
        return self._client.server_is_ready()

    def send(self, closed: bool, width: float) -> None:
        del width  # the driver's position is its joint's, not the opening
        goal = self.action.GripperCommand.Goal()
        goal.command.position = (self.config.gripper_closed_position if closed
                                 else self.config.gripper_open_position)
        goal.command.max_effort = self.config.gripper_force
        self._client.send_goal_async(goal)


class WidthTopicGripper(Gripper):
    """std_msgs/Float64 opening, m, on ``<ns>/width_command`` (the digital real only)."""

    def __init__(self, node: Any, config: FrankaBridgeConfig, **kwargs: Any) -> None:
        super().__init__(node, config, **kwargs)
        self._pub = node.create_publisher(
            Float64, f'{config.gripper_namespace}/width_command', qos.COMMAND)

    def ready(self) -> bool:
        return self._pub.get_subscription_count() > 0

    def send(self, closed: bool, width: float) -> None:
        self._pub.publish(Float64(data=width))


GRIPPERS: dict[str, type[Gripper]] = {
    'franka_hand': FrankaHandGripper,
    'robotiq_2f_85': Robotiq2F85Gripper,
    'width_topic': WidthTopicGripper,
}


def make_gripper(node: Any, config: FrankaBridgeConfig, **kwargs: Any) -> Gripper | None:
    """Return the adapter named by ``config.gripper`` (None for ``none``)."""
    if config.gripper == 'none':
        return None
    return GRIPPERS[config.gripper](node, config, **kwargs)
