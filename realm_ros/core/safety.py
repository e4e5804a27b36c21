"""Safety rules for every command that can move a real arm (pure logic, no ROS).

The ``franka`` bridge passes each joint target through :class:`SafetyMonitor` before it is
published to franka_ros2. A refused target raises :class:`CommandRejected` with the rule and the
numbers; the bridge then keeps the previous target (the arm holds). Rules, in the order checked:

1. shape and finiteness: seven finite numbers (rad, ``robot.JOINT_NAMES`` order);
2. stale state: the newest joint state must be younger than ``state_timeout_s``;
3. joint position limits of the arm (:class:`realm_ros.core.robot.ArmSpec`: FR3 and FER/Panda
   differ, e.g. FR3 joint 6 >= 0.5445 rad): a target beyond them is refused; a target inside
   them but closer than ``position_margin_rad`` (Polymetis: 0.1 rad) is *shaped*: moved to the
   margin, with the reason in :attr:`SafetyMonitor.last_shaped`;
4. velocity: ``|q_target - q_previous_target| <= velocity_scale * velocity_limit * dt`` per joint
   (the arm's velocity limits);
5. maximum per-step target change relative to the arm: ``|q_target - q_measured| <=
   max_target_error_rad`` per joint (bounds the impedance torque right after a hold or reset);
6. workspace: the TCP (``tcp_offset_m`` along the flange z axis, forward kinematics of
   ``core.robot``) inside the ``base_link`` box ``[workspace_min, workspace_max]``, m; and,
   since an impedance-controlled arm that lags its target overshoots it when the target stops
   (a ramp at 0.8 x joint 1's velocity limit into the box's y wall: the digital real's TCP ended
   0.026 m outside with only the target checked), the look-ahead point ``TCP(target) +
   workspace_lookahead * (TCP(target) - TCP(measured))`` must not leave the box further than the
   target in force's look-ahead point does (moving back in, or along the wall, stays allowed).

A simulated world gets the same rules through :class:`SafetyFilter` (``world_node`` wraps a
twin in it when ``safety.filter_commands`` is set, as a paired evaluation does), so both worlds
of a pair refuse the same commands and hold the same targets.

What reaches the controller is shaped further by :mod:`realm_ros.core.motion` (velocity,
acceleration and jerk below libfranka's limits for the arm). A watchdog
(:meth:`SafetyMonitor.watchdog_expired`) tells the bridge to hold the measured position
when no valid command has arrived for ``watchdog_s`` seconds.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from realm_ros.core import control, robot
from realm_ros.core.config import DynamicsParams, SafetyConfig
from realm_ros.core.errors import CommandRejected
from realm_ros.core.types import Action, ActionMode, EpisodeSpec, Observation
from realm_ros.core.world import World


def tcp_position(q: np.ndarray, tcp_offset_m: float) -> np.ndarray:
    """Return the TCP position (m, ``base_link``) at joint configuration ``q`` (rad)."""
    flange = robot.forward_kinematics(q)[-1]
    return flange[:3, 3] + flange[:3, 2] * tcp_offset_m


def box_excess(points: np.ndarray, config: SafetyConfig) -> np.ndarray:
    """How far (m) each point (..., 3) lies outside ``config``'s workspace box (<= 0: inside,
    by that much)."""
    p = np.asarray(points, dtype=float)
    return np.max(np.maximum(np.asarray(config.workspace_min) - p,
                             p - np.asarray(config.workspace_max)), axis=-1)


def lookahead_point(tcp_target: np.ndarray, tcp_measured: np.ndarray,
                    config: SafetyConfig) -> np.ndarray:
    """Where an impedance-controlled arm lagging its target may overshoot to (m, ``base_link``):
    ``TCP(target) + workspace_lookahead * (TCP(target) - TCP(measured))`` (rule 6). Points may be
    (..., 3); the sysid excitation plans against the same point (``core.sysid.excitation``)."""
    target = np.asarray(tcp_target, dtype=float)
    return target + config.workspace_lookahead * (target - np.asarray(tcp_measured, dtype=float))


class SafetyMonitor:
    """Checks joint targets against :class:`SafetyConfig` and runs the command watchdog.

    Times (``now``, stamps) are seconds on one clock chosen by the caller: wall time for a real
    arm, sim time in lockstep (so that lockstep stays deterministic).
    """

    def __init__(self, config: SafetyConfig, control_dt: float,
                 arm: robot.ArmSpec | None = None) -> None:
        """Check targets for ``arm`` (default: the FER/Panda, the twin's arm)."""
        if control_dt <= 0:
            raise ValueError(f'control_dt must be > 0 s, got {control_dt}')
        self.config = config
        self.control_dt = control_dt
        self.arm = arm or robot.ARMS['fer']
        # Messages name joints as the robot does (fr3_joint6), or canonically without an arm.
        self._names = self.arm.joint_names if arm is not None else robot.JOINT_NAMES
        self._lower = self.arm.lower + config.position_margin_rad
        self._upper = self.arm.upper - config.position_margin_rad
        #: Why the last accepted target was changed (moved out of the limit margin), or ''.
        self.last_shaped = ''
        self._max_step = config.velocity_scale * self.arm.velocity * control_dt
        self._last_valid: float | None = None
        self._holding = False

    def check(self, q_target: np.ndarray, q_previous_target: np.ndarray,
              q_measured: np.ndarray, state_age_s: float) -> np.ndarray:
        """Return ``q_target`` as a float array if it passes every rule.

        Args:
            q_target: (7,) joint target, rad.
            q_previous_target: (7,) target in force now, rad.
            q_measured: (7,) newest measured position, rad.
            state_age_s: age of the newest joint state, s.

        Raises:
            CommandRejected: naming the rule, the joints and the numbers.
        """
        q = np.asarray(q_target, dtype=float)
        if q.shape != (robot.NUM_ARM_JOINTS,):
            raise CommandRejected(f'safety: target must have 7 values, got shape {q.shape}')
        if not np.all(np.isfinite(q)):
            raise CommandRejected(f'safety: target contains NaN or inf: {q.tolist()}')
        if not np.isfinite(state_age_s) or state_age_s > self.config.state_timeout_s:
            raise CommandRejected(
                f'safety: joint state is stale ({state_age_s:.3f} s old > state_timeout_s '
                f'{self.config.state_timeout_s} s); refusing to command')
        tol = control.LIMIT_TOLERANCE
        bad = np.flatnonzero((q < self.arm.lower - tol) | (q > self.arm.upper + tol))
        if bad.size:
            detail = ', '.join(f'{self._names[i]}={q[i]:.4f} not in '
                               f'[{self.arm.lower[i]:.4f}, {self.arm.upper[i]:.4f}]' for i in bad)
            raise CommandRejected(f'safety: target beyond a joint limit: {detail} '
                                  f'({self.arm.arm_id} limits)')
        near = np.flatnonzero((q < self._lower) | (q > self._upper))
        self.last_shaped = ''
        if near.size:
            shaped = np.clip(q, self._lower, self._upper)
            self.last_shaped = (
                f'safety: target within position_margin_rad {self.config.position_margin_rad} '
                'of a joint limit, moved to the margin: ' + ', '.join(
                    f'{self._names[i]} {q[i]:.4f} -> {shaped[i]:.4f}' for i in near)
                + f' ({self.arm.arm_id} limits)')
            q = shaped
        step = np.abs(q - np.asarray(q_previous_target, dtype=float))
        bad = np.flatnonzero(step > self._max_step)
        if bad.size:
            raise CommandRejected('safety: target change exceeds velocity_scale * velocity limit '
                                  f'over {self.control_dt:.4f} s: ' + ', '.join(
                                      f'{self._names[i]} moves {step[i]:.4f} rad > '
                                      f'{self._max_step[i]:.4f} rad' for i in bad))
        error = np.abs(q - np.asarray(q_measured, dtype=float))
        bad = np.flatnonzero(error > self.config.max_target_error_rad)
        if bad.size:
            raise CommandRejected('safety: target too far from the measured position '
                                  f'(max_target_error_rad {self.config.max_target_error_rad}): '
                                  + ', '.join(f'{self._names[i]} off by {error[i]:.4f} rad'
                                              for i in bad))
        tcp = tcp_position(q, self.config.tcp_offset_m)
        if box_excess(tcp, self.config) > 0:
            raise CommandRejected(
                f'safety: TCP at {np.round(tcp, 4).tolist()} m (base_link) leaves the workspace '
                f'box {list(self.config.workspace_min)} .. {list(self.config.workspace_max)}')
        k = self.config.workspace_lookahead
        if k > 0:
            measured = tcp_position(np.asarray(q_measured, dtype=float), self.config.tcp_offset_m)
            ahead = lookahead_point(tcp, measured, self.config)
            out = float(box_excess(ahead, self.config))
            if out > 1e-9:
                previous = tcp_position(np.asarray(q_previous_target, dtype=float),
                                        self.config.tcp_offset_m)
                before = float(box_excess(lookahead_point(previous, measured, self.config),
                                          self.config))
                if out > max(before, 0.0) + 1e-9:
                    raise CommandRejected(
                        f'safety: the arm lags its target by '
                        f'{np.linalg.norm(tcp - measured):.4f} m at the TCP and would overshoot '
                        f'the workspace box by {out:.4f} m (look-ahead '
                        f'{np.round(ahead, 4).tolist()} m, workspace_lookahead {k}); holding')
        return q

    def accept(self, now: float) -> None:
        """Record that a valid command arrived at ``now`` (s); feeds the watchdog."""
        self._last_valid = now
        self._holding = False

    def arm_watchdog(self, now: float) -> None:
        """Start a watchdog period at ``now`` (after a reset) without a command."""
        self._last_valid = now
        self._holding = False

    def watchdog_expired(self, now: float) -> bool:
        """Whether no valid command arrived for ``watchdog_s`` seconds before ``now``.

        Returns True once per silence: the caller then holds the measured position, and the
        hold stays in force (it is not re-taken, which would let the arm creep under gravity)
        until :meth:`accept` records the next valid command.
        """
        if self._last_valid is None:
            self._last_valid = now
        if self._holding or now - self._last_valid <= self.config.watchdog_s + 1e-9:
            return False
        self._holding = True
        return True

    @property
    def holding(self) -> bool:
        """Whether the watchdog has tripped and no valid command has arrived since."""
        return self._holding


#: ``world/status`` name of a refused command's report (a WARN with the episode's count).
REJECTED_STATUS = 'command_rejected'


class SafetyFilter(World):
    """A world whose commands pass the franka bridge's rules (:class:`SafetyMonitor`) first.

    The real side of a paired evaluation filters every command in the bridge: a refused one
    raises :class:`CommandRejected` and the arm holds its last valid target. A twin wrapped in
    this filter refuses and holds the same way, with the same rules, limits and numbers, so the
    two worlds of a pair execute the same command stream (issue 37). An accepted target is
    passed on as the bridge passes it: an absolute joint target (shaped into the limit margin
    where it was), ``ActionMode.POSITION``; the watchdog holds the measured position after
    ``watchdog_s`` of sim time without a valid command, as the bridge's does in lockstep. The
    joint state is the world's own newest observation (age 0: a simulated world's state is
    never stale).
    """

    def __init__(self, world: World, config: SafetyConfig,
                 arm: robot.ArmSpec | None = None) -> None:
        self.inner = world
        self.name = world.name
        self.monitor = SafetyMonitor(config, world.control_dt, arm)
        self._measured: np.ndarray | None = None
        self._target: np.ndarray | None = None
        self._gripper = 0.0
        #: Reasons of the commands refused since the last reset, in order.
        self.rejections: list[str] = []

    @property
    def target(self) -> np.ndarray | None:
        """The joint target in force (rad): the last accepted one, held after a refusal."""
        return None if self._target is None else self._target.copy()

    @property
    def control_dt(self) -> float:
        return self.inner.control_dt

    @property
    def time(self) -> float:
        return self.inner.time

    def reset(self, spec: EpisodeSpec) -> Observation:
        obs = self.inner.reset(spec)
        self._measured = np.asarray(obs.joints.position, dtype=float).copy()
        self._target = self._measured.copy()  # the arm holds its reset pose
        self._gripper = 0.0
        self.rejections = []
        self.monitor.arm_watchdog(self.inner.time)
        return obs

    def apply(self, action: Action) -> Action:
        if self._measured is None or self._target is None:
            raise CommandRejected('world not reset yet')
        q_d, g = control.action_to_target(action, self._measured)
        try:
            q_d = self.monitor.check(q_d, self._target, self._measured, 0.0)
        except CommandRejected as err:
            self.rejections.append(str(err))
            raise
        self._target, self._gripper = q_d, g
        self.monitor.accept(self.inner.time)
        return self.inner.apply(Action(arm=q_d.copy(), gripper=g, mode=ActionMode.POSITION))

    def step(self) -> Observation:
        if self._measured is not None and self.monitor.watchdog_expired(self.inner.time):
            # As the bridge: no valid command for watchdog_s (sim time) holds the measured
            # position, not a target the arm lags behind.
            self._target = self._measured.copy()
            self.inner.apply(Action(arm=self._target.copy(), gripper=self._gripper,
                                    mode=ActionMode.POSITION))
        obs = self.inner.step()
        self._measured = np.asarray(obs.joints.position, dtype=float).copy()
        return obs

    def observe(self, render: bool = True) -> Observation:
        return self.inner.observe(render)

    def set_dynamics(self, params: DynamicsParams) -> None:
        self.inner.set_dynamics(params)

    def camera_fovy(self, name: str) -> float:
        return self.inner.camera_fovy(name)

    def privileged_state(self) -> Mapping[str, Any]:
        return self.inner.privileged_state()

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        # Anything else a backend offers (a twin's model, its perturbation) is the world's.
        if name == 'inner':
            raise AttributeError(name)
        return getattr(self.inner, name)


def filters_commands(world: World) -> bool:
    """Whether ``world`` applies the safety rules itself (the franka bridge does)."""
    return isinstance(getattr(world, 'safety', None), SafetyMonitor) or isinstance(
        world, SafetyFilter)


#: FrankaRobotState robot_mode values (franka_msgs/msg/FrankaRobotState.msg).
ROBOT_MODES = {0: 'OTHER', 1: 'IDLE', 2: 'MOVE', 3: 'GUIDING', 4: 'REFLEX', 5: 'USER_STOPPED',
               6: 'AUTOMATIC_ERROR_RECOVERY'}
#: Modes in which the arm does not follow commands: the episode cannot go on.
FAULT_MODES = frozenset({'OTHER', 'REFLEX', 'USER_STOPPED', 'AUTOMATIC_ERROR_RECOVERY'})


def robot_fault(robot_mode: int, current_errors: dict[str, bool]) -> str | None:
    """Return why the arm cannot follow commands, or None when it can.

    Args:
        robot_mode: ``FrankaRobotState.robot_mode`` (libfranka RobotMode).
        current_errors: ``FrankaRobotState.current_errors`` as {flag name: set}; any set flag
            (``joint_reflex``, ``cartesian_reflex``, ``joint_position_limits_violation``, ...)
            means libfranka stopped the motion.
    """
    mode = ROBOT_MODES.get(int(robot_mode), f'unknown ({robot_mode})')
    errors = sorted(name for name, flag in current_errors.items() if flag)
    if errors or mode in FAULT_MODES or mode.startswith('unknown'):
        return f'robot_mode {mode}, current_errors {errors or "none"}'
    return None


def mode_change_fault(before: int | None, after: int, baseline_errors: frozenset[str],
                      last_motion_errors: frozenset[str]) -> str | None:
    """Return the fault a robot-mode change or new ``last_motion_errors`` means, or None.

    A single FrankaRobotState in MOVE with no current error can still follow a reflex that
    franka_hardware recovered from by itself (``automaticErrorRecovery()`` inside every
    ``initialize*Interface()``): ``last_motion_errors`` then names the errors that stopped the
    last motion. So: the arm leaving MOVE, or ``last_motion_errors`` differing from the baseline
    seen when watching (re)started, is a fault: the episode cannot be trusted.
    """
    if before is not None and ROBOT_MODES.get(before) == 'MOVE' and \
            ROBOT_MODES.get(after) != 'MOVE':
        return f'robot_mode MOVE -> {ROBOT_MODES.get(after, f"unknown ({after})")}'
    new = sorted(last_motion_errors - baseline_errors)
    if new:
        return (f'last_motion_errors {new}: the arm stopped and was recovered without realm_ros '
                '(franka_hardware automaticErrorRecovery)')
    return None
