"""franka_hardware's arm states, as the digital real imitates them: pure logic, no ROS.

The node ``digital_real`` (``nodes/digital_real_node.py``) wraps :class:`FrankaHardwareState`
and serves it over franka_ros2's interfaces (FrankaRobotState, ErrorRecovery, controller_manager).
"""

from __future__ import annotations


class FrankaHardwareState:
    """franka_hardware's states as the digital real imitates them (pure logic, no ROS).

    ``active`` follows commands; ``reflex`` after a limit violation or an injected reflex
    (errors set, commands ignored); ``recovered`` after error recovery, until the hardware
    component is set active again (``inactive_controller``) and the controller is activated
    (``active``). Without controller_manager (``controller_manager=False``) error recovery goes
    straight back to ``active``. franka_hardware's ``automaticErrorRecovery()`` is
    :meth:`auto_recover`. The node ``digital_real`` serves this over franka_ros2's interfaces.
    """

    ACTIVE = 'active'
    REFLEX = 'reflex'
    RECOVERED = 'recovered'
    INACTIVE_CONTROLLER = 'inactive_controller'

    def __init__(self, controller_manager: bool = False) -> None:
        self.controller_manager = controller_manager
        self.mode = self.ACTIVE
        #: franka_msgs current_errors set now; last_motion_errors: those of the last reflex.
        self.errors: set[str] = set()
        self.last_motion_errors: set[str] = set()
        self.reflex_at = 0.0
        #: True only while the AUTOMATIC_ERROR_RECOVERY robot state is published.
        self.auto_recovering = False

    @property
    def active(self) -> bool:
        """Whether commands are followed."""
        return self.mode == self.ACTIVE

    def reflex(self, error: str, now: float) -> None:
        """The arm stops with ``error`` (a franka_msgs Errors flag) at ``now`` (monotonic s)."""
        self.errors.add(error)
        self.last_motion_errors = set(self.errors)
        self.reflex_at = now
        self.mode = self.REFLEX

    def error_recovery(self) -> None:
        """franka_msgs ErrorRecovery: clear the errors; the hardware needs re-activation."""
        self.errors.clear()
        if self.mode == self.REFLEX:
            self.mode = self.RECOVERED if self.controller_manager else self.ACTIVE

    def set_hardware_active(self) -> None:
        """controller_manager set_hardware_component_state to active."""
        if self.mode == self.RECOVERED:
            self.mode = self.INACTIVE_CONTROLLER

    def activate_controller(self) -> bool:
        """controller_manager switch_controller activating the arm's controller; return whether
        this made the hardware active again (the caller then holds the measured position)."""
        if self.mode != self.INACTIVE_CONTROLLER:
            return False
        self.mode = self.ACTIVE
        return True

    def auto_recover_due(self, now: float, after_s: float) -> bool:
        """Whether automaticErrorRecovery() runs now: ``after_s`` >= 0 s since the reflex."""
        return self.mode == self.REFLEX and after_s >= 0 and now - self.reflex_at >= after_s

    def auto_recover(self) -> None:
        """franka_hardware's automaticErrorRecovery(): errors cleared, active again at once
        (``last_motion_errors`` kept, as libfranka reports them)."""
        self.errors.clear()
        self.mode = self.ACTIVE

    def robot_mode(self) -> str:
        """The FrankaRobotState robot_mode name for the current state."""
        if self.auto_recovering:
            return 'AUTOMATIC_ERROR_RECOVERY'
        return {self.ACTIVE: 'MOVE', self.REFLEX: 'REFLEX'}.get(self.mode, 'IDLE')
