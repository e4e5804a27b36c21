"""Watch franka_ros2's ``franka_robot_state_broadcaster/robot_state`` for reflexes and errors.

``/joint_states`` keeps arriving with fresh stamps after a reflex (the broadcaster republishes
cached values), so joint-state freshness cannot tell a stopped arm. franka_msgs/FrankaRobotState
can: ``robot_mode`` (REFLEX, USER_STOPPED, ...) and ``current_errors`` (36 libfranka flags). The
rule that turns them into a fault is :func:`realm_ros.core.safety.robot_fault` (pure, tested);
:func:`realm_ros.core.safety.mode_change_fault` adds what one message cannot show: the arm left
MOVE, or ``last_motion_errors`` changed (a reflex that franka_hardware's
``automaticErrorRecovery()`` cleared before a REFLEX message was seen). Every mode change is
logged. A fault stays latched until :meth:`RobotStateWatch.clear` (the operator-confirmed
recovery), even when the arm recovered on its own.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from realm_ros.backends.franka.grippers import import_interfaces
from realm_ros.core.safety import ROBOT_MODES, mode_change_fault, robot_fault
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
        #: (robot_mode before, after) of every change seen, in order.
        self.mode_changes: list[tuple[int, int]] = []
        self._motion_errors: frozenset[str] | None = None  # baseline; None = take the next
        node.create_subscription(msg.FrankaRobotState, topic, self._on_state, qos.STATE)
        self._log = node.get_logger()

    def _on_state(self, msg: Any) -> None:
        mode = int(msg.robot_mode)
        fault = robot_fault(mode, errors_to_dict(msg.current_errors))
        last = getattr(msg, 'last_motion_errors', None)
        motion_errors = frozenset(
            n for n, flag in errors_to_dict(last).items() if flag) if last is not None else \
            frozenset()
        with self._lock:
            before = self.mode
            self.mode = mode
            self.received += 1
            if before is not None and before != mode:
                self.mode_changes.append((before, mode))
                self._log.warning(f'franka robot_mode {ROBOT_MODES.get(before, before)} -> '
                                  f'{ROBOT_MODES.get(mode, mode)}'
                                  + (f' (fault latched: {self.fault})' if self.fault else ''))
            if self._motion_errors is None:
                self._motion_errors = motion_errors
            fault = fault or mode_change_fault(before, mode, self._motion_errors, motion_errors)
            if fault is not None and self.fault is None:
                self.fault = fault
                self._log.error(f'franka reflex/error: {fault}')
            elif self.fault is not None and before != mode and ROBOT_MODES.get(mode) == 'MOVE':
                self._log.error('franka arm back in MOVE without an operator-confirmed recovery '
                                '(franka_hardware automaticErrorRecovery): the fault stays; '
                                'nothing is commanded until the operator confirms recovery')

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
        """Forget the fault (after recovery); the next message is the new baseline."""
        with self._lock:
            self.fault = None
            self._motion_errors = None
