"""The digital real's arm as franka_ros2 drives it, without ROS (``nodes/digital_real_node.py``
is its ROS plumbing): trajectories followed as a JointTrajectoryController, the reflex a target
beyond the joint limits causes and franka_hardware's recovery from it, the fingers driven to a
width, and physics advanced to the wall clock or one control step per command (lockstep).

:class:`DigitalArm` owns the :class:`~realm_ros.backends.digital_real.DigitalRealWorld` and the
imitated :class:`~realm_ros.backends.franka.hardware_state.FrankaHardwareState`; every method
takes the time it acts at (``time.monotonic()`` seconds), so tests drive it with a fake clock.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from realm_ros.backends.franka.hardware_state import FrankaHardwareState
from realm_ros.core import robot
from realm_ros.core.control import gripper_closure
from realm_ros.core.errors import ConfigError
from realm_ros.core.types import Action, EpisodeSpec, JointState

#: One trajectory point: (time from start s, joint positions rad in the arm's joint order).
Point = tuple[float, np.ndarray]


def parse_trajectory(names: Sequence[str], points: Sequence[tuple[Sequence[float], float]],
                     arm_names: Sequence[str]) -> list[Point]:
    """Return a JointTrajectory's points as :data:`Point`, joints in ``arm_names`` order.

    Args:
        names: the message's joint names (any order, exactly ``arm_names``).
        points: each point's ``(positions, time_from_start s)``.
        arm_names: the arm's joint names (``fr3_joint1..7``).

    Raises:
        ConfigError: other joint names, no points, a point without one position per joint
            (this controller takes positions), NaN or inf.
    """
    names = list(names)
    if sorted(names) != sorted(arm_names):
        raise ConfigError(
            f'joint_names {names} must be exactly {list(arm_names)} (any order)')
    order = [names.index(n) for n in arm_names]
    if not points:
        raise ConfigError('trajectory has no points')
    out = []
    for k, (positions, t) in enumerate(points):
        if len(positions) != len(names):
            raise ConfigError(f'point {k} needs {len(names)} positions, got '
                              f'{len(positions)} (this controller takes positions)')
        q = np.array([positions[i] for i in order], dtype=float)
        if not np.all(np.isfinite(q)):
            raise ConfigError(f'point {k} has NaN or inf positions')
        out.append((t, q))
    return out


class DigitalArm:
    """The digital real's physics driven as franka_ros2 drives a lab's arm.

    Attributes:
        world: the physics (``DigitalRealWorld``).
        arm: the imitated arm (joint names, limits).
        hardware_state: franka_hardware's state (active / reflex / recovered / inactive).
        state: the last joint state read from the world.
        target_q: the impedance target in force, rad (clipped to the hard stops).
        gripper_goals: ``(source, width m)`` of every gripper goal received.
        rejected: commands refused or ignored.
    """

    def __init__(self, world: Any, arm: robot.ArmSpec, max_width: float, lockstep: bool,
                 control_hz: float) -> None:
        self.world = world
        self.arm = arm
        # Hard stops: the imitated arm's limits where the twin's (Panda) model allows them.
        self.lower = np.maximum(arm.lower, robot.JOINT_LOWER)
        self.upper = np.minimum(arm.upper, robot.JOINT_UPPER)
        self.max_width = max_width
        self.lockstep = lockstep
        self.control_hz = control_hz
        self.gripper_g = 0.0
        self.hardware_state = FrankaHardwareState()
        self.gripper_goals: list[tuple[str, float]] = []
        self.schedule: list[tuple[float, np.ndarray]] = []  # (wall time due, q_d rad)
        self.target_q = robot.RESET_Q.copy()
        self.rejected = 0
        # Until :meth:`start` reads the world's.
        self.state = JointState(robot.RESET_Q.copy(), np.zeros(robot.NUM_ARM_JOINTS),
                                np.zeros(robot.NUM_ARM_JOINTS), 0.0)
        self.wall_start = 0.0
        self.sim_start = 0.0

    # -- commands ---------------------------------------------------------------------------

    def beyond_limits(self, points: Sequence[Point]) -> bool:
        """Whether a point lies beyond the arm's joint limits (libfranka stops the arm then)."""
        return any(np.any(q < self.arm.lower) or np.any(q > self.arm.upper) for _, q in points)

    def follow(self, points: Sequence[Point], now: float) -> bool:
        """Follow a trajectory, as a JointTrajectoryController; False (counted as rejected)
        when the hardware is not active and the command is ignored.

        Lockstep: one control step per message; the target is the point at the end of the
        control period (a shaped trajectory's later points are its braking tail); the caller
        steps. Real time: a new trajectory replaces the old one, each point due at ``now`` plus
        its time from the first.
        """
        if not self.hardware_state.active:
            self.rejected += 1
            return False
        if self.lockstep:
            period = 1.0 / self.control_hz
            due = [q for t, q in points if t <= period + 1e-6] or [points[0][1]]
            self.set_target(due[-1])
            return True
        t0 = points[0][0]
        self.schedule = [(now + t - t0, q) for t, q in points]
        self.release_due(now)
        return True

    def set_target(self, q_d: np.ndarray) -> None:
        """Make ``q_d`` (clipped to the hard stops) the impedance target."""
        self.target_q = np.clip(q_d, self.lower, self.upper)
        self.world.apply(Action(arm=self.target_q, gripper=self.gripper_g))

    def hold(self) -> None:
        """Make the measured position the target (after a reflex or a recovery)."""
        self.set_target(self.world.joint_state().position)

    def release_due(self, now: float) -> None:
        """Make the scheduled points due by ``now`` the target, in order."""
        while self.schedule and self.schedule[0][0] <= now:
            _, q = self.schedule.pop(0)
            self.set_target(q)

    def set_width(self, source: str, width: float) -> None:
        """Drive the fingers to ``width`` m (clipped to the hand's opening)."""
        self.gripper_goals.append((source, width))
        self.gripper_g = gripper_closure(width, self.max_width)
        self.world.apply(Action(arm=self.target_q, gripper=self.gripper_g))

    # -- reflexes ---------------------------------------------------------------------------

    def reflex(self, error: str, now: float) -> None:
        """A reflex: the arm stops where it is and ignores commands until recovered."""
        self.hardware_state.reflex(error, now)
        self.schedule = []
        self.hold()

    def auto_recover(self, now: float, after_s: float,
                     publish: Callable[[], None] = lambda: None) -> bool:
        """franka_hardware's automaticErrorRecovery(): clear a reflex ``after_s`` s old
        without being asked (robot mode REFLEX -> AUTOMATIC_ERROR_RECOVERY -> MOVE, each
        ``publish``-ed); whether it recovered now."""
        state = self.hardware_state
        if not state.auto_recover_due(now, after_s):
            return False
        state.errors.clear()
        state.auto_recovering = True
        publish()  # AUTOMATIC_ERROR_RECOVERY
        state.auto_recovering = False
        state.auto_recover()
        self.hold()
        return True

    # -- time -------------------------------------------------------------------------------

    def reset(self, spec: EpisodeSpec) -> str:
        """Reset world and arm to ``spec`` (nothing scheduled, fingers open); return the
        instruction. :meth:`start` then starts the clock."""
        instruction = str(self.world.reset(spec).instruction)
        self.schedule = []
        self.gripper_g = 0.0
        return instruction

    def start(self, now: float) -> None:
        """Take the world's state and target as they are, its clock starting at ``now``."""
        self.state = self.world.joint_state()
        self.target_q = self.world.target[0]
        self.wall_start = now
        self.sim_start = self.world.time

    def advance(self, now: float) -> None:
        """Real time: advance the physics to the wall clock ``now`` at the physics rate, then
        read the joint state. After a stall (a loaded machine) it catches up at most 0.1 s, so
        the arm does not jump ahead."""
        rate = self.world.config.physics_hz
        due = int((now - self.wall_start) * rate) - int(
            round((self.world.time - self.sim_start) * rate))
        if due > 0:
            self.world.step_physics(min(due, int(rate * 0.1)))
            if due > rate * 0.1:
                self.sim_start = self.world.time
                self.wall_start = now
        self.state = self.world.joint_state()

    def step(self) -> None:
        """Lockstep: one control step holding the target, then read the joint state."""
        self.world.step()
        self.state = self.world.joint_state()


class StallInjector:
    """Test hook: every ``every_s`` wall seconds the joint states stop for ``stall_s`` s."""

    def __init__(self) -> None:
        self.until = 0.0
        self.next = 0.0
        self.stalls = 0

    def stalled(self, now: float, every_s: float, stall_s: float) -> bool:
        """Whether the stall is on at ``now`` (the first period only arms it)."""
        if every_s > 0 and now >= self.next:
            if self.next > 0:
                self.until = now + stall_s
                self.stalls += 1
            self.next = now + every_s
        return now < self.until
