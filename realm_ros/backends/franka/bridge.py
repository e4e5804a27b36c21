"""The ``franka`` world: the shared world interface on one side, franka_ros2 on the other.

``world_node backend:=franka`` runs this bridge; policies see the same ``joint_states`` /
``command`` interface as on the twin. Towards the robot (names relative to ``franka.namespace``;
joints ``<arm_id>_joint1..7`` from ``franka.arm_id``: ``fr3`` franka_ros2, ``fer`` the Panda
through agimus-franka-ros2):

* arm state: ``<joint_states_topic>`` (sensor_msgs/JointState);
* arm command: ``<controller_name>/joint_trajectory`` (trajectory_msgs/JointTrajectory) for a
  JointTrajectoryController. Each control step sends the target shaped by
  :class:`realm_ros.core.motion.JerkLimitedShaper` (``safety.shape_trajectory``; by default on
  a real arm, not on the digital real): points every
  ``safety.trajectory_sample_s`` with positions, velocities and accelerations whose velocity,
  acceleration and jerk stay below libfranka's limits for the arm, continuous from the previous
  command, ending in a braking tail to rest (what the arm does if no command follows). Without
  shaping: one point one control period ahead at the step's mean velocity;
* gripper: :mod:`realm_ros.backends.franka.grippers` (``franka.gripper``);
* reflexes and errors: ``franka_robot_state_broadcaster/robot_state`` (franka_msgs/
  FrankaRobotState): a reflex ends the episode as an infrastructure failure
  (:class:`InfrastructureError`) and :meth:`FrankaBridgeWorld.recover` clears it as
  franka_hardware documents, after the operator confirms. Every mode change is logged; a
  recovery the bridge did not ask for (franka_hardware's ``automaticErrorRecovery``) is a fault
  too, so motion resumes only through :meth:`FrankaBridgeWorld.recover`.

A real arm's move to the reset pose (homing) waits for the operator's confirmation
(``<world namespace>/franka_bridge/confirm_motion``, std_srvs/SetBool, one confirmation per
move; ``franka.confirm_motion``; the world namespace is the hosting world_node's, e.g.
``/real``, or ``franka.namespace`` without a host, so two bridges on one graph each have their
own), checks that the arm is at rest, inside its limits and fault-free,
runs as a time-scaled move within the limits (:func:`realm_ros.core.motion.plan_move`) and
checks the arm got there. A late joint state (older than ``safety.state_timeout_s``) holds the
arm and waits; one older than ``safety.state_loss_s`` ends the reset or the episode as an
infrastructure failure; neither kills the node.

Every joint target passes :class:`realm_ros.core.safety.SafetyMonitor` with the arm's own limits
and a watchdog holds the arm when commands stop. The bridge owns an rclpy node in the host
node's context, spun by its own executor thread, so :meth:`step` can wait for the robot's next
joint state inside a callback of ``world_node`` without deadlocking it. The digital real's
variant is :class:`realm_ros.backends.franka.digital_real.DigitalRealBridgeWorld`;
:func:`realm_ros.backends.franka.make_bridge_world` builds the one the config names.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any, Callable, Mapping

from builtin_interfaces.msg import Duration
import numpy as np
import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from sensor_msgs.msg import CameraInfo, Image
from sensor_msgs.msg import JointState as JointStateMsg
from std_srvs.srv import SetBool
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from realm_ros.backends.franka import reset_motion
from realm_ros.backends.franka.grippers import import_interfaces, make_gripper
from realm_ros.backends.franka.robot_state import RobotStateWatch
from realm_ros.core import control, motion, robot
from realm_ros.core.config import FrankaBridgeConfig, SafetyConfig, WorldConfig
from realm_ros.core.errors import (
    BackendUnavailable,
    CommandRejected,
    ConfigError,
    EpisodeError,
    InfrastructureError,
)
from realm_ros.core.safety import SafetyMonitor
from realm_ros.core.types import Action, ActionMode, EpisodeSpec, JointState, Observation
from realm_ros.core.world import World
from realm_ros.ros import convert, qos, topics
from realm_ros.ros.params import declare_config


def confirm_service_name(namespace: str) -> str:
    """Return the bridge's confirmation service in ``namespace`` (``/real`` ->
    ``/real/franka_bridge/confirm_motion``)."""
    return f'/{namespace.strip("/")}/franka_bridge/confirm_motion'.replace('//', '/')


class FrankaBridgeWorld(World):
    """A :class:`World` whose arm is franka_ros2 (a real FR3 or Panda)."""

    name = 'franka'
    #: make_world passes the hosting ROS node (world_node) as ``host``.
    uses_host_node = True
    #: ``safety.shape_trajectory:=auto`` shapes the trajectory (a real arm).
    shapes_by_default = True

    def __init__(self, config: WorldConfig, host: Any = None,
                 bridge: FrankaBridgeConfig | None = None,
                 safety: SafetyConfig | None = None) -> None:
        """Build the bridge.

        Args:
            config: the world's config.
            host: the hosting rclpy node; ``franka.*`` and ``safety.*`` parameters are declared
                on it and the bridge's own node lives in its context. Without a host the bridge
                makes its own context (scripts, tests).
            bridge, safety: explicit configs; used instead of the host's parameters.
        """
        if bridge is None and host is not None:
            bridge = declare_config(host, FrankaBridgeConfig, prefix='franka.')
        if bridge is not None and bridge.digital_real and type(self) is FrankaBridgeWorld:
            raise ConfigError('franka.digital_real: build the bridge with realm_ros.backends.'
                              'franka.make_bridge_world (it picks the digital-real variant)')
        if host is not None:
            safety = safety or declare_config(host, SafetyConfig, prefix='safety.')
        self.bridge_config = bridge or FrankaBridgeConfig()
        self.safety_config = safety or SafetyConfig()
        self.arm = self.bridge_config.arm
        self._config = config
        self._dt = 1.0 / config.control_hz
        self.safety = SafetyMonitor(self.safety_config, self._dt, self.arm)
        margin = self.safety_config.position_margin_rad
        self.rate_limits = motion.rate_limits(self.arm, self.safety_config.velocity_scale,
                                              self.safety_config.rate_limit_scale)
        self.shaper = motion.JerkLimitedShaper(self.rate_limits, self.arm.lower + margin,
                                               self.arm.upper - margin)
        self._shaper_live = False  # False: restart the shaper at rest at the measured position
        self.shaped = {'always': True, 'never': False}.get(self.safety_config.shape_trajectory,
                                                     self.shapes_by_default)
        #: Trajectories sent to the controller (count), for tests and logs.
        self.trajectories_sent = 0
        self._confirmed = threading.Event()
        self._confirmed_at = 0.0
        self._prefix = self.arm.prefix
        self._arm_names = self.arm.joint_names
        self._cond = threading.Condition()
        self._arm_state: JointState | None = None
        self._arm_received = 0.0  # monotonic s
        self._width: float | None = None
        self._grip_count = 0
        self._grip_stamp = -1.0
        self._target_q = robot.RESET_Q.copy()
        self._published_q: np.ndarray | None = None
        self._target_g = 0.0
        self._instruction = ''
        self._step_count = 0
        self._deadline = 0.0
        self.rejections: list[str] = []
        self.spin_error: BaseException | None = None

        self._own_context = host is None
        self._context = rclpy.Context() if host is None else host.context
        if self._own_context:
            rclpy.init(context=self._context)
        cfg = self.bridge_config
        # Not the host's global arguments: its ``__ns`` remap (e.g. /real) must not move the
        # robot side; franka.namespace says where franka_ros2 lives.
        self.node = rclpy.create_node('franka_bridge', namespace=cfg.namespace,
                                      context=self._context, use_global_arguments=False)
        self.log = self.node.get_logger()
        self._traj_pub = self.node.create_publisher(
            JointTrajectory, f'{cfg.controller_name}/joint_trajectory', qos.COMMAND)
        self.node.create_subscription(JointStateMsg, cfg.joint_states_topic, self._on_arm,
                                      qos.STATE)
        self.node.create_subscription(JointStateMsg, f'{cfg.gripper_namespace}/joint_states',
                                      self._on_gripper, qos.STATE)
        # Cameras: the lab's camera drivers (or the digital real's renderer) publish images on
        # <namespace>/cameras/<name>/image and camera_info with every image (volatile).
        self._cameras = tuple(config.cameras) if config.camera_rate_hz > 0 else ()
        self._images: dict[str, Image] = {}
        self._infos: dict[str, CameraInfo] = {}
        # A lab's drivers publish images reliable or best effort: a best-effort subscription
        # takes both. The digital real's lockstep waits for every frame, so there it is reliable.
        image_qos = qos.IMAGE if cfg.digital_real else qos.DRIVER_IN
        for name in self._cameras:
            self.node.create_subscription(
                Image, topics.camera_image(name),
                lambda msg, name=name: self._on_image(name, msg), image_qos)
            self.node.create_subscription(
                CameraInfo, topics.camera_info(name),
                lambda msg, name=name: self._on_info(name, msg), qos.DRIVER_IN)
        self.robot_state = self._make_robot_state_watch()
        #: The confirmation lives with the world the operator addresses (world_node's
        #: namespace), not with franka_ros2's: two arms on one graph share franka.namespace
        #: "/" as often as not, and their confirmations must not collide.
        self.confirm_service = confirm_service_name(
            host.get_namespace() if host is not None else cfg.namespace)
        self.node.create_service(SetBool, self.confirm_service, self._on_confirm)
        # Rate-limit gripper goals on the watchdog clock: sim time in lockstep (deterministic).
        self.gripper = make_gripper(self.node, cfg, clock=self._watch_time)
        # The error recovery client lives as long as the node: created and destroyed while the
        # executor thread spins, a client's handle can vanish under the executor's wait set
        # (a soak once logged ``RCLError: action client pointer is invalid``).
        self._recovery_client = self._make_recovery_client()
        self._setup()
        self._executor = SingleThreadedExecutor(context=self._context)
        self._executor.add_node(self.node)
        self._thread = threading.Thread(target=self._spin, name='franka_bridge', daemon=True)
        self._thread.start()
        self.log.info(
            f'franka bridge ({self.describe()}) at {cfg.namespace!r}: arm {self.arm.arm_id}, '
            f'joints {self._arm_names[0]}.., commands on {cfg.controller_name}/joint_trajectory, '
            f'gripper {cfg.gripper!r}')

    # -- variant hooks ------------------------------------------------------------------------

    def describe(self) -> str:
        """Say what the robot side is, for logs."""
        return 'robot'

    def _make_robot_state_watch(self) -> RobotStateWatch | None:
        topic = self.bridge_config.robot_state_topic
        return RobotStateWatch(self.node, topic) if topic else None

    def _setup(self) -> None:
        """Create the variant's extra subscriptions (before the executor starts)."""

    def _fresh_extra(self, stamp: float) -> bool:
        """Whether the variant's extra state for ``stamp`` has arrived (lockstep)."""
        del stamp
        return True

    def _on_confirm(self, request: SetBool.Request,
                    response: SetBool.Response) -> SetBool.Response:
        """The operator allows (data=true) or withdraws (false) the next reset move."""
        if request.data:
            self._confirmed_at = time.monotonic()
            self._confirmed.set()
            response.message = 'the next reset move (homing) may run'
        else:
            self._confirmed.clear()
            response.message = 'confirmation withdrawn: no reset move until confirmed'
        self.log.warning(f'operator: {response.message}')
        response.success = True
        return response

    def confirm_motion(self) -> None:
        """Confirm the next reset move from code (what the service does; scripts, tests)."""
        self._confirmed_at = time.monotonic()
        self._confirmed.set()

    def _await_confirmation(self, what: str) -> None:
        """Block until the operator confirms ``what``; consume the confirmation.

        Raises:
            EpisodeError: no confirmation within ``franka.confirm_timeout_s``.
        """
        if not self.bridge_config.confirm_motion:
            return
        cfg = self.bridge_config
        fresh = self._confirmed.is_set() and \
            time.monotonic() - self._confirmed_at <= cfg.confirm_timeout_s
        if not fresh:
            self._confirmed.clear()
            service = self.confirm_service
            self.log.warning(
                f'{what}: waiting up to {cfg.confirm_timeout_s} s for the operator to confirm '
                f'(ros2 service call {service} std_srvs/srv/SetBool "{{data: true}}")')
            if not self._confirmed.wait(cfg.confirm_timeout_s):
                raise EpisodeError(f'{what} not confirmed by the operator within '
                                   f'{cfg.confirm_timeout_s} s (franka.confirm_timeout_s); the '
                                   f'arm did not move. Confirm with {service}')
        self._confirmed.clear()
        self.log.info(f'{what}: confirmed by the operator')

    # -- ROS side (bridge executor thread) --------------------------------------------------

    def _spin(self) -> None:
        try:
            self._executor.spin()
        except ExternalShutdownException:
            pass  # the context was shut down (node exit): a normal end
        except BaseException as err:  # noqa: BLE001 - kept and re-raised by the next step
            self.spin_error = err
            self.log.error(f'franka bridge executor failed: {err!r}')
            with self._cond:
                self._cond.notify_all()

    def _on_arm(self, msg: JointStateMsg) -> None:
        try:
            state = convert.joint_state_from_msg(msg, self._prefix)
        except (CommandRejected, ConfigError) as err:
            self.log.warning(f'ignoring joint state: {err}', throttle_duration_sec=5.0)
            return
        with self._cond:
            self._arm_state = state
            self._arm_received = time.monotonic()
            self._cond.notify_all()

    def _on_gripper(self, msg: JointStateMsg) -> None:
        fingers = [p for n, p in zip(msg.name, msg.position) if 'finger_joint' in n]
        if not fingers or not all(np.isfinite(fingers)):
            return
        with self._cond:
            # Each finger joint is at width / 2 (franka_gripper); one or two may be published.
            self._width = float(np.mean(fingers)) * 2.0
            self._grip_count += 1
            self._grip_stamp = convert.from_time(msg.header.stamp)
            self._cond.notify_all()

    def _on_image(self, name: str, msg: Image) -> None:
        with self._cond:
            self._images[name] = msg
            self._cond.notify_all()

    def _on_info(self, name: str, msg: CameraInfo) -> None:
        with self._cond:
            self._infos[name] = msg
            self._cond.notify_all()

    # -- World interface --------------------------------------------------------------------

    @property
    def control_dt(self) -> float:
        return self._dt

    @property
    def time(self) -> float:
        """Lockstep: the robot side's stamp (sim time); real time: wall clock, s."""
        if self._config.lockstep:
            with self._cond:
                return self._arm_state.stamp if self._arm_state is not None else 0.0
        return time.time()

    def _watch_time(self) -> float:
        # Watchdog clock: sim time in lockstep (deterministic), monotonic wall time otherwise.
        return self.time if self._config.lockstep else time.monotonic()

    def _check_alive(self) -> None:
        """Raise InfrastructureError on a reflex or a dead executor thread."""
        if self.spin_error is not None:
            raise InfrastructureError(f'franka bridge executor failed: {self.spin_error!r}')
        fault = self.robot_state.current() if self.robot_state is not None else None
        if fault is not None:
            raise InfrastructureError(
                f'franka arm stopped ({fault}): the episode ends as an infrastructure failure; '
                'recover with the error_recovery action, re-activate the hardware and the '
                'controller after the operator confirms (docs/lab-arms.md)')

    def wait_for_state(self, timeout_s: float = 30.0) -> JointState:
        """Block until an arm joint state arrived; return the newest."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._arm_state is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise EpisodeError(
                        f'no joint state from the robot on '
                        f'{self.node.get_namespace()}/{self.bridge_config.joint_states_topic} '
                        f'within {timeout_s} s; is franka_ros2 (or digital_real) running with '
                        f'arm_id {self.arm.arm_id!r} (joints {self._arm_names[0]}..)?')
                self._cond.wait(left)
            return self._arm_state

    def _wait_state_fresh(self, what: str) -> None:
        """Hold (publish nothing) until the joint state is fresh again.

        A state older than ``safety.state_timeout_s`` is late: wait for the next one. Raises
        InfrastructureError when it is older than ``safety.state_loss_s`` (the robot's state
        stream is lost: the reset or episode ends as an infrastructure failure).
        """
        cfg = self.safety_config
        if self._state_age() <= cfg.state_timeout_s:
            return
        self.log.warning(f'{what}: joint state {self._state_age():.3f} s old (> '
                         f'safety.state_timeout_s {cfg.state_timeout_s} s): holding, waiting for '
                         'a fresh one', throttle_duration_sec=1.0)
        with self._cond:
            self._cond.wait_for(lambda: self.spin_error is not None or (
                time.monotonic() - self._arm_received) <= cfg.state_timeout_s,
                max(cfg.state_loss_s - self._state_age(), 0.0))
        self._check_alive()
        age = self._state_age()
        if age > cfg.state_timeout_s:
            raise InfrastructureError(
                f'{what}: no fresh joint state for {age:.2f} s (> safety.state_loss_s '
                f'{cfg.state_loss_s} s) on {self.node.get_namespace().rstrip("/")}/'
                f'{self.bridge_config.joint_states_topic}: the arm holds; the episode ends as '
                'an infrastructure failure')

    def reset(self, spec: EpisodeSpec) -> Observation:
        self._check_alive()
        self.wait_for_state()
        if self.robot_state is not None and not self.robot_state.wait_first(
                self.bridge_config.step_timeout_s):
            # Without it a reflex would go unnoticed: refuse to start.
            raise EpisodeError(
                f'no franka_msgs/FrankaRobotState on {self.node.get_namespace().rstrip("/")}/'
                f'{self.bridge_config.robot_state_topic} within '
                f'{self.bridge_config.step_timeout_s} s: is franka_robot_state_broadcaster '
                'active? (franka.robot_state_topic:="" runs without reflex detection)')
        if self.gripper is not None and not self.gripper.wait_ready(
                self.bridge_config.step_timeout_s):
            raise EpisodeError(
                f'gripper {self.bridge_config.gripper!r}: its server is not up under '
                f'{self.node.get_namespace()} (franka.gripper_namespace / '
                'gripper_command_action); start the gripper node or set franka.gripper:=none')
        target = self._reset_robot(spec)
        self._target_q = target
        self._published_q = None
        self._shaper_live = False
        self._target_g = 0.0
        if self.gripper is not None:
            self.gripper.reset()
        self._step_count = 0
        self._instruction = spec.instruction or self._default_instruction()
        self._deadline = time.monotonic()
        self.safety.arm_watchdog(self._watch_time())
        return self.observe()

    def _default_instruction(self) -> str:
        return ''

    def _reset_robot(self, spec: EpisodeSpec) -> np.ndarray:
        """Real arm: after the operator confirms, open the gripper and make a planned move to
        the reset pose through the safety rules, checking the arm before and after."""
        goal = np.asarray(spec.initial_state.get('reset_q', robot.RESET_Q), dtype=float)
        self._wait_state_fresh('reset')
        state = self.wait_for_state()
        reset_motion.check_arm(state.position, state.velocity, self.arm,
                               'before the reset move')
        self._await_confirmation(
            f'move {self.arm.arm_id} to the reset pose {np.round(goal, 3).tolist()}')
        self._check_alive()
        self._command_gripper(0.0)

        def command(target: np.ndarray) -> None:
            self._check_alive()
            self._wait_state_fresh('reset move')
            q = self.wait_for_state().position
            self._target_q = self.safety.check(target, self._target_q, q, self._state_age())
            self._publish_target()

        self._target_q = self.wait_for_state().position.copy()
        self._published_q = None
        self._shaper_live = False
        reached = reset_motion.planned_move(
            goal, lambda: self.wait_for_state().position, command, self.rate_limits,
            self.bridge_config.reset_speed, self._dt, self._target_q,
            velocity=lambda: self.wait_for_state().velocity)
        state = self.wait_for_state()
        reset_motion.check_arm(state.position, state.velocity, self.arm,
                               'after the reset move', goal)
        return reached

    def apply(self, action: Action) -> Action:
        with self._cond:
            state = self._arm_state
        if state is None:
            raise CommandRejected('no joint state received from the robot yet')
        q_d, g = control.action_to_target(action, state.position)
        try:
            q_d = self.safety.check(q_d, self._target_q, state.position, self._state_age())
        except CommandRejected as err:
            self.rejections.append(str(err))
            raise
        self._target_q, self._target_g = q_d, g
        self.safety.accept(self._watch_time())
        return Action(arm=q_d.copy(), gripper=g, mode=ActionMode.POSITION)

    def step(self) -> Observation:
        self._check_alive()
        if self.safety.watchdog_expired(self._watch_time()):
            with self._cond:
                self._target_q = self._held_state().position.copy()
            self.log.warning(f'watchdog: no valid command for {self.safety_config.watchdog_s} s;'
                             ' holding the measured position')
        if self._config.lockstep:
            with self._cond:
                before = self._held_state().stamp
            self._command_gripper(self._target_g)
            self._publish_target()
            self._wait_fresh(before)
        else:
            if self._state_age() > self.safety_config.state_loss_s:
                self._shaper_live = False
                raise InfrastructureError(
                    f'no fresh joint state for {self._state_age():.2f} s (> safety.state_loss_s '
                    f'{self.safety_config.state_loss_s} s): the arm holds; the episode ends as '
                    'an infrastructure failure')
            if self._state_age() > self.safety_config.state_timeout_s:
                # Late: hold (the last trajectory ends at rest) and wait; commands are refused.
                self.log.error(f'joint state stale ({self._state_age():.2f} s): not commanding',
                               throttle_duration_sec=2.0)
            else:
                self._command_gripper(self._target_g)
                self._publish_target()
            self._deadline = max(self._deadline + self._dt, time.monotonic() - self._dt)
            pause = self._deadline - time.monotonic()
            if pause > 0:
                time.sleep(pause)
        self._step_count += 1
        self._check_alive()
        return self.observe()

    def camera_fovy(self, name: str) -> float:
        """Return camera ``name``'s vertical field of view, degrees, from its camera_info."""
        if name not in self._cameras:
            raise ConfigError(f'world {self.name!r} has no camera {name!r}')
        with self._cond:
            if not self._cond.wait_for(lambda: name in self._infos, 10.0):
                raise ConfigError(
                    f'WorldConfig.cameras: no camera_info on '
                    f'{self.bridge_config.namespace.rstrip("/")}/{topics.camera_info(name)}; '
                    'start the camera drivers there (digital_real: -p cameras:=[...]) or set '
                    'camera_rate_hz:=0.0')
            info = self._infos[name]
        return math.degrees(2.0 * math.atan(0.5 * info.height / info.k[4]))

    def observe(self, render: bool = True) -> Observation:
        with self._cond:
            arm = self._arm_state
            width = self._width
            frames = dict(self._images) if render else {}
        images = {name: convert.image_from_msg(msg) for name, msg in frames.items()}
        if arm is None:
            raise EpisodeError('no joint state received from the robot yet')
        g = self._target_g if width is None else control.gripper_closure(
            width, self.bridge_config.gripper_max_width)
        joints = JointState(position=arm.position, velocity=arm.velocity, effort=arm.effort,
                            gripper=g, stamp=arm.stamp)
        return Observation(joints=joints, images=images, instruction=self._instruction,
                           step=self._step_count, privileged=dict(self.privileged_state()))

    def privileged_state(self) -> Mapping[str, Any]:
        """A real arm has no privileged (simulator-only) state."""
        return {}

    def recover(self, confirm: Callable[[str], bool] | None = None,
                timeout_s: float = 10.0) -> bool:
        """Clear a reflex as franka_hardware documents, once the operator confirms.

        1. ask ``confirm(question)``: the arm may move when its controller comes back;
        2. send the franka_msgs ErrorRecovery goal on ``action_server/error_recovery``;
        3. set the hardware component ``FrankaHardwareInterface`` active and activate the
           controller (controller_manager services; on Jazzy the controllers come back by
           themselves);
        4. hold the measured position and forget the fault.

        Returns whether the arm is ready again; False when the operator declined.

        Raises:
            InfrastructureError: a step failed (naming it); BackendUnavailable: franka_msgs or
            controller_manager_msgs is not installed.
        """
        question = (f'{self.arm.arm_id}: clear the reflex and re-activate the controller '
                    f'{self.bridge_config.controller_name!r}? The arm will hold its position. '
                    'Check that the workspace is clear.')
        if confirm is None or not confirm(question):
            self.log.warning('recovery not confirmed by the operator; the arm stays stopped')
            return False
        self._error_recovery(timeout_s)
        self._reactivate(timeout_s)
        self._hold_measured()
        if self.robot_state is not None:
            self.robot_state.clear()
        return True

    def _make_recovery_client(self) -> Any:
        """The franka_msgs ErrorRecovery action client, or None without franka_msgs (then
        :meth:`recover` says which package is missing)."""
        try:
            action = import_interfaces('franka_msgs.action', 'error recovery')
        except BackendUnavailable:
            return None
        from rclpy.action import ActionClient
        return ActionClient(self.node, action.ErrorRecovery, 'action_server/error_recovery')

    def _error_recovery(self, timeout_s: float) -> None:
        action = import_interfaces('franka_msgs.action', 'error recovery')
        client = self._recovery_client
        if client is None:  # franka_msgs appeared after start-up: not expected, but say so
            raise InfrastructureError('error recovery client was not created at start-up')
        if not client.wait_for_server(timeout_sec=timeout_s):
            raise InfrastructureError(
                f'error recovery action {self.node.get_namespace()}/action_server/'
                'error_recovery not available (franka_hardware running?)')
        handle = self._wait_future(client.send_goal_async(action.ErrorRecovery.Goal()),
                                   timeout_s)
        if handle is None or not handle.accepted:
            raise InfrastructureError('error recovery goal was not accepted')
        if self._wait_future(handle.get_result_async(), timeout_s) is None:
            raise InfrastructureError(f'error recovery did not finish within {timeout_s} s')

    def _reactivate(self, timeout_s: float) -> None:
        """Set FrankaHardwareInterface active and (re)activate the controller."""
        srv = import_interfaces('controller_manager_msgs.srv', 'hardware re-activation')
        from lifecycle_msgs.msg import State
        req = srv.SetHardwareComponentState.Request()
        req.name = 'FrankaHardwareInterface'
        req.target_state.id = State.PRIMARY_STATE_ACTIVE
        req.target_state.label = 'active'
        answer = self._call(srv.SetHardwareComponentState,
                            'controller_manager/set_hardware_component_state', req, timeout_s)
        if not answer.ok:
            raise InfrastructureError('controller_manager refused to activate '
                                      'FrankaHardwareInterface')
        switch = srv.SwitchController.Request()
        switch.activate_controllers = [self.bridge_config.controller_name]
        switch.strictness = srv.SwitchController.Request.BEST_EFFORT
        answer = self._call(srv.SwitchController, 'controller_manager/switch_controller',
                            switch, timeout_s)
        if not answer.ok:
            raise InfrastructureError(
                f'controller_manager could not activate {self.bridge_config.controller_name}')

    def _hold_measured(self) -> None:
        with self._cond:
            if self._arm_state is not None:
                self._target_q = self._arm_state.position.copy()
        self._published_q = None
        self._shaper_live = False
        self.safety.arm_watchdog(self._watch_time())

    def close(self) -> None:
        self._executor.shutdown(timeout_sec=1.0)
        self._thread.join(timeout=2.0)
        self.node.destroy_node()
        if self._own_context:
            rclpy.try_shutdown(context=self._context)

    # -- helpers ----------------------------------------------------------------------------

    def _held_state(self) -> JointState:
        """The newest arm state (held ``_cond``); a step runs only after reset received one."""
        if self._arm_state is None:
            raise EpisodeError('no joint state received from the robot yet: reset first')
        return self._arm_state

    def _state_age(self) -> float:
        if self._config.lockstep:
            return 0.0  # the robot side's clock stops between steps; each step waits for state
        with self._cond:
            if self._arm_state is None:
                return np.inf
            return time.monotonic() - self._arm_received

    def _publish_target(self) -> None:
        """Send the target in force to the controller (shaped: see the module docstring)."""
        if self.shaped:
            self._publish_shaped()
            return
        msg = JointTrajectory()
        msg.joint_names = list(self._arm_names)
        point = JointTrajectoryPoint()
        point.positions = [float(v) for v in self._target_q]
        previous = self._published_q if self._published_q is not None else self._target_q
        velocity = np.clip((self._target_q - previous) / self._dt, -self.arm.velocity,
                           self.arm.velocity)
        point.velocities = [float(v) for v in velocity]
        point.time_from_start = Duration(sec=0, nanosec=int(self._dt * 1e9))
        msg.points = [point]
        self._traj_pub.publish(msg)
        self.trajectories_sent += 1
        self._published_q = self._target_q.copy()

    def _publish_shaped(self) -> None:
        """One control period of the jerk-limited trajectory toward the target, plus its
        braking tail, as points every ``safety.trajectory_sample_s``."""
        if not self._shaper_live:
            with self._cond:
                start = (self._arm_state.position if self._arm_state is not None
                         else self._target_q)
            self.shaper.reset(np.clip(start, self.shaper.lower, self.shaper.upper))
            self._shaper_live = True
        plan = self.shaper.plan(self._target_q, self._dt)
        msg = JointTrajectory()
        msg.joint_names = list(self._arm_names)
        msg.points = [_point(plan.t[k], plan.q[k], plan.v[k], plan.a[k])
                      for k in motion.thin(plan.t, self.safety_config.trajectory_sample_s,
                                           self._dt)]
        self._traj_pub.publish(msg)
        self.trajectories_sent += 1
        self._published_q = self._target_q.copy()

    def _command_gripper(self, g: float) -> None:
        """Pass g to the gripper adapter (it sends only changes of the binarised value).

        In lockstep, a goal that went out is waited for: the robot side acknowledges it with a
        gripper state, so the new width counts from the next control step (deterministic).
        """
        if self.gripper is None:
            return
        with self._cond:
            count = self._grip_count
        sent = self.gripper.goals_sent
        self.gripper.command(g)
        if self._config.lockstep and self.gripper.goals_sent > sent:
            with self._cond:
                if not self._cond.wait_for(lambda: self._grip_count > count,
                                           self.bridge_config.step_timeout_s):
                    raise InfrastructureError(
                        f'lockstep: gripper goal not acknowledged within '
                        f'{self.bridge_config.step_timeout_s} s')

    def _wait_fresh(self, before: float, at_least: float = -1.0) -> None:
        """Wait until arm (and gripper, cameras, extra) state newer than ``before`` arrived.

        Raises:
            InfrastructureError: nothing fresh within ``step_timeout_s`` (the robot side
                stalled); a stale state is never returned as the step's result.
        """
        def fresh() -> bool:
            if self.spin_error is not None:
                return True
            # Stamps travel as builtin_interfaces/Time (whole nanoseconds): compare with a
            # tolerance, or a reply's float time can sit a fraction of a ns above the stamp.
            arm = self._arm_state
            if arm is None or arm.stamp <= before or arm.stamp < at_least - 1e-6:
                return False
            stamp = arm.stamp
            if self._grip_stamp < stamp - 1e-9 and self._expects_gripper_state():
                return False
            for name in self._cameras:
                image = self._images.get(name)
                if image is None or convert.from_time(image.header.stamp) < stamp - 1e-9:
                    return False
            return self._fresh_extra(stamp)

        with self._cond:
            if not self._cond.wait_for(fresh, self.bridge_config.step_timeout_s):
                raise InfrastructureError(
                    f'lockstep: no fresh state from the robot side within '
                    f'{self.bridge_config.step_timeout_s} s (franka.step_timeout_s) after '
                    f'stamp {before:.3f} s; it stalled or died')
        self._check_alive()

    def _expects_gripper_state(self) -> bool:
        return self.gripper is not None

    def _wait_future(self, future: Any, timeout_s: float) -> Any:
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        if not done.wait(timeout_s):
            return None
        return future.result()

    def _call(self, srv_type: Any, name: str, request: Any, timeout_s: float = 10.0) -> Any:
        client: Any = self.node.create_client(srv_type, name)
        try:
            if not client.wait_for_service(timeout_sec=timeout_s):
                raise EpisodeError(f'service {self.node.get_namespace()}/{name} not available')
            result = self._wait_future(client.call_async(request), timeout_s)
            if result is None:
                raise EpisodeError(f'service {name} did not answer within {timeout_s} s')
            return result
        finally:
            self.node.destroy_client(client)


def _point(t: float, q: np.ndarray, v: np.ndarray, a: np.ndarray) -> JointTrajectoryPoint:
    point = JointTrajectoryPoint()
    point.positions = [float(x) for x in q]
    point.velocities = [float(x) for x in v]
    point.accelerations = [float(x) for x in a]
    sec = int(t)
    point.time_from_start = Duration(sec=sec, nanosec=int(round((t - sec) * 1e9)))
    return point
