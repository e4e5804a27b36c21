"""Watch franka_ros2's ``franka_robot_state_broadcaster/robot_state`` for reflexes and errors.

``/joint_states`` keeps arriving with fresh stamps after a reflex (the broadcaster republishes
cached values), so joint-state freshness cannot tell a stopped arm. franka_msgs/FrankaRobotState
can: ``robot_mode`` (REFLEX, USER_STOPPED, ...) and ``current_errors`` (36 libfranka flags). The
rule that turns them into a fault is :func:`realm_ros.core.safety.robot_fault` (pure, tested).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from realm_ros.backends.franka.grippers import import_interfaces
from realm_ros.core.safety import robot_fault
from realm_ros.ros import qos


def errors_to_dict(errors: Any) -> dict[str, bool]:
    """Return franka_msgs/Errors as {flag name: value}."""
    return {name: bool(getattr(errors, name)) for name in errors.get_fields_and_field_types()}


class RobotStateWatch:
    """Subscribe to FrankaRobotState; remember the first fault until :meth:`clear`."""

    def __init__(self, node: Any, topic: str) -> None:
        msg = import_interfaces('franka_msgs.msg', 'reflex detection (franka.robot_state_topic)')
        self._lock = threading.Lock()
        self.fault: str | None = None
        self.mode: int | None = None
        self.received = 0
        node.create_subscription(msg.FrankaRobotState, topic, self._on_state, qos.STATE)
        self._log = node.get_logger()

    def _on_state(self, msg: Any) -> None:
        fault = robot_fault(msg.robot_mode, errors_to_dict(msg.current_errors))
        with self._lock:
            self.mode = int(msg.robot_mode)
            self.received += 1
            if fault is not None and self.fault is None:
                self.fault = fault
                self._log.error(f'franka reflex/error: {fault}')

    def wait_first(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the first message; return whether one arrived."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                if self.received:
                    return True
            time.sleep(0.02)
        with self._lock:
            return self.received > 0

    def current(self) -> str | None:
        """The fault seen since the last :meth:`clear`, or None."""
        with self._lock:
            return self.fault

    def clear(self) -> None:
        """Forget the fault (after recovery)."""
        with self._lock:
            self.fault = None
