"""The ``franka`` world: the shared world interface on one side, franka_ros2 on the other.

``world_node backend:=franka`` runs this bridge; policies see the same ``joint_states`` /
``command`` interface as on the twin. Towards the robot it speaks what a lab configures
franka_ros2 with for policy rollouts (docs/franka-bridge.md):

* arm state: ``<namespace>/<joint_states_topic>`` (sensor_msgs/JointState, ``<prefix>jointN``);
* arm command: ``<namespace>/<controller_name>/joint_trajectory`` (trajectory_msgs/
  JointTrajectory, one point = the next joint target, time_from_start = one control period) for
  a JointTrajectoryController (see ``config/franka_controllers.yaml``);
* gripper state: ``<namespace>/<gripper_namespace>/joint_states`` (two fingers at width / 2);
* gripper command, by parameter ``franka.gripper``: ``topic`` (std_msgs/Float64 width in m on
  ``<gripper_namespace>/width_command``: fake_franka), ``franka_action`` (franka_msgs Move/Grasp/
  Homing actions), ``gripper_command`` (control_msgs GripperCommand, position per finger);
* error recovery: franka_msgs ErrorRecovery action ``action_server/error_recovery``
  (:meth:`FrankaBridgeWorld.recover`).

franka_msgs and control_msgs are imported only when chosen: they cannot be installed from PyPI,
so those adapters are written against the documented interface and were not run here.

Every joint target passes :class:`realm_ros.core.safety.SafetyMonitor` (limits with margins,
velocity, per-step change, workspace box, stale state, NaN/shape) and a watchdog holds the arm
when commands stop. The bridge owns an rclpy node in the host node's context, spun by its own
executor thread, so :meth:`step` can wait for the robot's next joint state inside a callback of
``world_node`` without deadlocking it.

``franka.digital_real:=true`` (the embedded default only, never a real arm) re-publishes the
digital real's ``digital_real/privileged_state`` as this world's privileged state and resets it
through fake_franka's ``reset`` service; in lockstep each step sends the target and waits for the
digital real's next joint state, which keeps paired episodes deterministic per seed.
"""

from __future__ import annotations

import importlib
import json
import math
import threading
import time
from typing import Any, Callable, Mapping

from builtin_interfaces.msg import Duration
import numpy as np
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
import rclpy
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import CameraInfo, Image
from sensor_msgs.msg import JointState as JointStateMsg
from std_msgs.msg import Float64, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from realm_ros.core import control, robot
from realm_ros.core.config import FrankaBridgeConfig, SafetyConfig, WorldConfig
from realm_ros.core.errors import BackendUnavailable, CommandRejected, ConfigError, EpisodeError
from realm_ros.core.safety import SafetyMonitor
from realm_ros.core.types import Action, ActionMode, EpisodeSpec, JointState, Observation
from realm_ros.core.world import World
from realm_ros.ros import convert, qos, topics
from realm_ros.ros.params import declare_config

#: Node name of fake_franka, whose ``episode_spec`` parameter the bridge sets before a reset.
FAKE_FRANKA_NODE = 'fake_franka'
#: Tolerance of the real arm's move to the reset pose, rad (per joint).
RESET_TOLERANCE = 0.02


def _import(module: str, what: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise BackendUnavailable(
            f'{what} needs the ROS package {module.split(".")[0]!r} (build it from source in the '
            f'lab workspace; it is not on PyPI): {err}') from err


class TopicGripper:
    """std_msgs/Float64 target width (m) on ``<gripper_namespace>/width_command`` (fake_franka)."""

    def __init__(self, node: Any, config: FrankaBridgeConfig) -> None:
        self._pub = node.create_publisher(
            Float64, f'{config.gripper_namespace}/width_command', qos.COMMAND)
        self._max = config.gripper_max_width

    def command(self, g: float) -> None:
        self._pub.publish(Float64(data=control.gripper_width(g, self._max)))


class FrankaActionGripper:
    """franka_msgs Grasp (closing), Move (opening, partial widths) and Homing actions.

    Written against franka_msgs' action definitions (goal fields width m, speed m/s, force N,
    epsilon inner/outer m); not run here. Goals are sent without waiting: a policy step must
    not block on a grasp.
    """

    def __init__(self, node: Any, config: FrankaBridgeConfig) -> None:
        from rclpy.action import ActionClient
        action = _import('franka_msgs.action', 'the franka_action gripper adapter')
        self._action = action
        ns = config.gripper_namespace
        self._move = ActionClient(node, action.Move, f'{ns}/move')
        self._grasp = ActionClient(node, action.Grasp, f'{ns}/grasp')
        self._homing = ActionClient(node, action.Homing, f'{ns}/homing')
        self._config = config

    def command(self, g: float) -> None:
        cfg = self._config
        if g >= 0.5:
            goal = self._action.Grasp.Goal()
            # Close on whatever is there: any final width in [0, max_width] counts as success.
            goal.width = 0.0
            goal.epsilon.inner = 0.005
            goal.epsilon.outer = cfg.gripper_max_width
            goal.speed = cfg.gripper_speed
            goal.force = cfg.gripper_force
            self._grasp.send_goal_async(goal)
        else:
            goal = self._action.Move.Goal()
            goal.width = control.gripper_width(g, cfg.gripper_max_width)
            goal.speed = cfg.gripper_speed
            self._move.send_goal_async(goal)

    def home(self) -> None:
        self._homing.send_goal_async(self._action.Homing.Goal())


class GripperCommandGripper:
    """control_msgs GripperCommand on ``<gripper_namespace>/gripper_action``.

    franka_gripper reads ``command.position`` per finger (target width = 2 x position); not run
    here.
    """

    def __init__(self, node: Any, config: FrankaBridgeConfig) -> None:
        from rclpy.action import ActionClient
        action = _import('control_msgs.action', 'the gripper_command gripper adapter')
        self._action = action
        self._client = ActionClient(node, action.GripperCommand,
                                    f'{config.gripper_namespace}/gripper_action')
        self._config = config

    def command(self, g: float) -> None:
        goal = self._action.GripperCommand.Goal()
        goal.command.position = control.gripper_width(g, self._config.gripper_max_width) / 2.0
        goal.command.max_effort = self._config.gripper_force
        self._client.send_goal_async(goal)


GRIPPERS: dict[str, Callable[[Any, FrankaBridgeConfig], Any]] = {
    'topic': TopicGripper,
    'franka_action': FrankaActionGripper,
    'gripper_command': GripperCommandGripper,
}


class FrankaBridgeWorld(World):
    """A :class:`World` whose arm is franka_ros2 (a real FR3/Panda or the digital real)."""

    name = 'franka'
    #: make_world passes the hosting ROS node (world_node) as ``host``.
    uses_host_node = True

    def __init__(self, config: WorldConfig, host: Any = None,
                 bridge: FrankaBridgeConfig | None = None,
                 safety: SafetyConfig | None = None) -> None:
        """Build the bridge.

        Args:
            config: the world's config; ``joint_prefix`` names the robot side's joints.
            host: the hosting rclpy node; ``franka.*`` and ``safety.*`` parameters are declared
                on it and the bridge's own node lives in its context. Without a host the bridge
                makes its own context (scripts, tests).
            bridge, safety: explicit configs; used instead of the host's parameters.
        """
        if host is not None:
            bridge = bridge or declare_config(host, FrankaBridgeConfig, prefix='franka.')
            safety = safety or declare_config(host, SafetyConfig, prefix='safety.')
        self.bridge_config = bridge or FrankaBridgeConfig()
        self.safety_config = safety or SafetyConfig()
        self._config = config
        self._dt = 1.0 / config.control_hz
        self.safety = SafetyMonitor(self.safety_config, self._dt)
        self._prefix = config.joint_prefix
        self._arm_names = robot.prefixed_joint_names(self._prefix)
        self._cond = threading.Condition()
        self._arm: JointState | None = None
        self._arm_received = 0.0  # monotonic s
        self._width: float | None = None
        self._grip_count = 0
        self._grip_stamp = -1.0
        self._priv: tuple[float, dict[str, Any]] = (-1.0, {})
        self._target_q = robot.RESET_Q.copy()
        self._target_g = 0.0
        self._sent_g: float | None = None
        self._instruction = ''
        self._scene_instruction = ''
        self._step_count = 0
        self._deadline = 0.0
        self.rejections: list[str] = []

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
        # Cameras: the lab's camera drivers (or fake_franka's renderer) publish rgb8/bgr8 images
        # on <namespace>/cameras/<name>/image and camera_info with every image (volatile).
        self._cameras = tuple(config.cameras) if config.camera_rate_hz > 0 else ()
        self._images: dict[str, Image] = {}
        self._infos: dict[str, CameraInfo] = {}
        for name in self._cameras:
            self.node.create_subscription(
                Image, topics.camera_image(name),
                lambda msg, name=name: self._on_image(name, msg), qos.IMAGE)
            self.node.create_subscription(
                CameraInfo, topics.camera_info(name),
                lambda msg, name=name: self._on_info(name, msg), qos.DRIVER_IN)
        if cfg.digital_real:
            self.node.create_subscription(String, topics.DIGITAL_REAL_PRIVILEGED_STATE,
                                          self._on_privileged, qos.STATE)
        self.gripper = GRIPPERS[cfg.gripper](self.node, cfg) if cfg.gripper != 'none' else None
        self._executor = SingleThreadedExecutor(context=self._context)
        self._executor.add_node(self.node)
        self._thread = threading.Thread(target=self._spin, name='franka_bridge', daemon=True)
        self._thread.start()
        self.log.info(
            f'franka bridge: {"DIGITAL REAL (fake_franka)" if cfg.digital_real else "robot"} '
            f'at {cfg.namespace!r}, joints {self._arm_names[0]}.., arm commands on '
            f'{cfg.controller_name}/joint_trajectory, gripper adapter {cfg.gripper!r}')

    # -- ROS side (bridge executor thread) --------------------------------------------------

    def _spin(self) -> None:
        try:
            self._executor.spin()
        except Exception:  # noqa: BLE001 - context shut down while spinning: just stop
            pass

    def _on_arm(self, msg: JointStateMsg) -> None:
        try:
            state = convert.joint_state_from_msg(msg, self._prefix)
        except (CommandRejected, ConfigError) as err:
            self.log.warning(f'ignoring joint state: {err}', throttle_duration_sec=5.0)
            return
        with self._cond:
            self._arm = state
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

    def _on_privileged(self, msg: String) -> None:
        try:
            stamp, state = convert.privileged_from_json(msg.data)
        except (ValueError, KeyError, TypeError) as err:
            self.log.warning(f'ignoring malformed digital-real privileged state: {err}')
            return
        with self._cond:
            self._priv = (stamp, state)
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
                return self._arm.stamp if self._arm is not None else 0.0
        return time.time()

    def _watch_time(self) -> float:
        # Watchdog clock: sim time in lockstep (deterministic), monotonic wall time otherwise.
        return self.time if self._config.lockstep else time.monotonic()

    def wait_for_state(self, timeout_s: float = 30.0) -> JointState:
        """Block until an arm joint state arrived; return the newest."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._arm is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise EpisodeError(
                        f'no joint state from the robot on '
                        f'{self.node.get_namespace()}/{self.bridge_config.joint_states_topic} '
                        f'within {timeout_s} s; is franka_ros2 (or fake_franka) running with '
                        f'joint prefix {self._prefix!r}?')
                self._cond.wait(left)
            return self._arm

    def reset(self, spec: EpisodeSpec) -> Observation:
        self.wait_for_state()
        if self.bridge_config.digital_real:
            target = self._reset_digital_real(spec)
        else:
            target = self._move_to_reset(spec)
        self._target_q = target
        self._target_g = 0.0
        self._sent_g = None
        self._step_count = 0
        # The spec's instruction; the digital real's task default otherwise (a real arm has none).
        self._instruction = spec.instruction or self._scene_instruction
        self._deadline = time.monotonic()
        self.safety.arm_watchdog(self._watch_time())
        return self.observe()

    def _reset_digital_real(self, spec: EpisodeSpec) -> np.ndarray:
        """Set fake_franka's ``episode_spec`` and call its ``reset``; return its reset target."""
        fake = FAKE_FRANKA_NODE
        params = self._call(SetParameters, f'{fake}/set_parameters', SetParameters.Request(
            parameters=[Parameter(name='episode_spec', value=ParameterValue(
                type=ParameterType.PARAMETER_STRING, string_value=spec.to_json()))]))
        if not params.results or not params.results[0].successful:
            raise EpisodeError(f'digital real refused the episode spec: {params.results}')
        with self._cond:
            before = self._arm.stamp if self._arm is not None else -1.0
        answer = self._call(Trigger, topics.RESET, Trigger.Request())
        if not answer.success:
            raise EpisodeError(f'digital real reset failed: {answer.message}')
        info = json.loads(answer.message)
        # Wait for the state after the reset: stamps only grow, across resets too.
        self._wait_fresh(before, float(info['time']))
        self._scene_instruction = str(info.get('instruction', ''))
        return np.asarray(info['target_q'], dtype=float)

    def _move_to_reset(self, spec: EpisodeSpec) -> np.ndarray:
        """Real arm: move to the reset pose at ``reset_speed`` through the safety rules."""
        goal = np.asarray(spec.initial_state.get('reset_q', robot.RESET_Q), dtype=float)
        self._command_gripper(0.0)
        start = self.wait_for_state().position.copy()
        self._target_q = start
        step = self.bridge_config.reset_speed * self._dt
        limit = time.monotonic() + 5.0 + float(np.max(np.abs(goal - start))) / step * self._dt
        while time.monotonic() < limit:
            q = self.wait_for_state().position
            if np.all(np.abs(q - goal) < RESET_TOLERANCE):
                return goal
            target = self._target_q + np.clip(goal - self._target_q, -step, step)
            self._target_q = self.safety.check(target, self._target_q, q, self._state_age())
            self._publish_target()
            time.sleep(self._dt)
        raise EpisodeError(f'arm did not reach the reset pose {goal.round(3).tolist()} within '
                           f'{RESET_TOLERANCE} rad; check the controller and the arm')

    def apply(self, action: Action) -> Action:
        with self._cond:
            state = self._arm
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
        if self.safety.watchdog_expired(self._watch_time()):
            with self._cond:
                self._target_q = self._arm.position.copy()
            self.log.warning(f'watchdog: no valid command for {self.safety_config.watchdog_s} s;'
                             ' holding the measured position')
        if self._config.lockstep:
            with self._cond:
                before = self._arm.stamp
            self._command_gripper(self._target_g)
            self._publish_target()
            self._wait_fresh(before)
        else:
            if self._state_age() > self.safety_config.state_timeout_s:
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
                    'start the camera drivers there (fake_franka: -p cameras:=[...]) or set '
                    'camera_rate_hz:=0.0')
            info = self._infos[name]
        return math.degrees(2.0 * math.atan(0.5 * info.height / info.k[4]))

    def observe(self, render: bool = True) -> Observation:
        with self._cond:
            arm = self._arm
            width = self._width
            priv = dict(self._priv[1]) if self.bridge_config.digital_real else {}
            frames = dict(self._images) if render else {}
        images = {name: convert.image_from_msg(msg) for name, msg in frames.items()}
        if arm is None:
            raise EpisodeError('no joint state received from the robot yet')
        g = self._target_g if width is None else float(
            np.clip(1.0 - width / self.bridge_config.gripper_max_width, 0.0, 1.0))
        joints = JointState(position=arm.position, velocity=arm.velocity, effort=arm.effort,
                            gripper=g, stamp=arm.stamp)
        return Observation(joints=joints, images=images, instruction=self._instruction,
                           step=self._step_count, privileged=priv)

    def privileged_state(self) -> Mapping[str, Any]:
        """The digital real's object state (only with ``franka.digital_real``); else empty."""
        if not self.bridge_config.digital_real:
            return {}
        with self._cond:
            return dict(self._priv[1])

    def recover(self, timeout_s: float = 10.0) -> bool:
        """Clear a franka reflex (FCI error) with the franka_msgs ErrorRecovery action.

        After it, the lab re-activates the hardware component (`ros2 control
        set_hardware_component_state FrankaHardwareInterface active`; automatic on Jazzy) and the
        bridge holds the measured position. Returns whether recovery succeeded. The digital real
        has no reflexes: nothing to recover.
        """
        if not self.bridge_config.digital_real:
            from rclpy.action import ActionClient
            action = _import('franka_msgs.action', 'error recovery')
            client = ActionClient(self.node, action.ErrorRecovery, 'action_server/error_recovery')
            try:
                if not client.wait_for_server(timeout_sec=timeout_s):
                    self.log.error('error recovery action server not available')
                    return False
                handle = self._wait_future(client.send_goal_async(action.ErrorRecovery.Goal()),
                                           timeout_s)
                if handle is None or not handle.accepted:
                    return False
                if self._wait_future(handle.get_result_async(), timeout_s) is None:
                    return False
            finally:
                client.destroy()
        with self._cond:
            if self._arm is not None:
                self._target_q = self._arm.position.copy()
        self.safety.arm_watchdog(self._watch_time())
        return True

    def close(self) -> None:
        self._executor.shutdown(timeout_sec=1.0)
        self._thread.join(timeout=2.0)
        self.node.destroy_node()
        if self._own_context:
            rclpy.try_shutdown(context=self._context)

    # -- helpers ----------------------------------------------------------------------------

    def _state_age(self) -> float:
        if self._config.lockstep:
            return 0.0  # the robot side's clock stops between steps; each step waits for state
        with self._cond:
            return time.monotonic() - self._arm_received if self._arm is not None else np.inf

    def _publish_target(self) -> None:
        msg = JointTrajectory()
        msg.joint_names = list(self._arm_names)
        point = JointTrajectoryPoint()
        point.positions = [float(v) for v in self._target_q]
        # Reach the target one control period from now, as a policy step intends.
        point.time_from_start = Duration(sec=0, nanosec=int(self._dt * 1e9))
        msg.points = [point]
        self._traj_pub.publish(msg)

    def _command_gripper(self, g: float) -> None:
        """Send the gripper command when it changed; lockstep waits for the digital real's ack."""
        if self.gripper is None or g == self._sent_g:
            return
        with self._cond:
            count = self._grip_count
        self.gripper.command(g)
        self._sent_g = g
        if self._config.lockstep:
            with self._cond:
                if not self._cond.wait_for(lambda: self._grip_count > count,
                                           self.bridge_config.step_timeout_s):
                    self.log.error('lockstep: gripper command not acknowledged')

    def _wait_fresh(self, before: float, at_least: float = -1.0) -> None:
        """Wait until arm (and gripper, privileged) state newer than stamp ``before`` arrived."""
        need_priv = self.bridge_config.digital_real

        def fresh() -> bool:
            # Stamps travel as builtin_interfaces/Time (whole nanoseconds): compare with a
            # tolerance, or a reply's float time can sit a fraction of a ns above the stamp.
            if (self._arm is None or self._arm.stamp <= before
                    or self._arm.stamp < at_least - 1e-6):
                return False
            stamp = self._arm.stamp
            if self.gripper is not None and self._grip_stamp < stamp - 1e-9:
                return False
            for name in self._cameras:
                image = self._images.get(name)
                if image is None or convert.from_time(image.header.stamp) < stamp - 1e-9:
                    return False
            return not need_priv or self._priv[0] >= stamp - 1e-9

        with self._cond:
            if not self._cond.wait_for(fresh, self.bridge_config.step_timeout_s):
                self.log.error(
                    f'no fresh joint state from the robot within '
                    f'{self.bridge_config.step_timeout_s} s; returning the last one')

    def _wait_future(self, future: Any, timeout_s: float) -> Any:
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        if not done.wait(timeout_s):
            return None
        return future.result()

    def _call(self, srv_type: Any, name: str, request: Any, timeout_s: float = 10.0) -> Any:
        client = self.node.create_client(srv_type, name)
        try:
            if not client.wait_for_service(timeout_sec=timeout_s):
                raise EpisodeError(f'service {self.node.get_namespace()}/{name} not available')
            result = self._wait_future(client.call_async(request), timeout_s)
            if result is None:
                raise EpisodeError(f'service {name} did not answer within {timeout_s} s')
            return result
        finally:
            self.node.destroy_client(client)
