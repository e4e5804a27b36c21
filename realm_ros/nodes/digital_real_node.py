"""``digital_real``: the digital real, a simulated arm that serves franka_ros2's interface.

It is NOT hardware (the executable was called ``fake_franka`` before; that name still runs it,
with a deprecation line): MuJoCo physics (:class:`DigitalRealWorld`) with hidden dynamics the twin
cannot see, behind the topics a lab's franka_ros2 exposes when configured for policy rollouts
(docs/digital-real.md). Names are relative to the node's namespace (franka_ros2 default: none).

Parameter ``arm_id`` (fr3 | fer; panda = fer) sets the joint names (``<arm_id>_jointN``) and the
joint limits; ``gripper`` (franka_hand | robotiq_2f_85) the imitated hand.

Topics:
    joint_states (out)                      sensor_msgs/JointState, ``<arm_id>_joint1..7``: rad,
                                            rad/s, N m (actuator torque)
    <gripper_namespace>/joint_states (out)  sensor_msgs/JointState, ``<arm_id>_finger_joint1/2``,
                                            each at width / 2, m (as franka_gripper)
    franka_robot_state_broadcaster/robot_state (out, franka_msgs installed)
                                            franka_msgs/FrankaRobotState: robot_mode (MOVE, or
                                            REFLEX after a target beyond the arm's joint limits
                                            or digital_real/trigger_reflex), current_errors
    <controller_name>/joint_trajectory (in) trajectory_msgs/JointTrajectory, as a
                                            JointTrajectoryController: each point's positions
                                            become the impedance target at its time_from_start
    <gripper_namespace>/width_command (in)  std_msgs/Float64, target opening, m (the digital
                                            real's stand-in where franka_msgs/control_msgs are not
                                            installed; the bridge's ``width_topic`` gripper)
    cameras/<name>/image (out)              sensor_msgs/Image rgb8, for each of ``cameras``
                                            (default none), as a lab's camera drivers; with
    cameras/<name>/camera_info (out)        latched pinhole intrinsics
    digital_real/privileged_state (out)     std_msgs/String JSON: object state for scoring;
                                            digital-real-only, no real arm has it
    /clock (out, lockstep only)             rosgraph_msgs/Clock
Actions (served when their interface package is importable):
    <gripper_namespace>/{move,grasp,homing} franka_msgs/action/{Move,Grasp,Homing} (gripper
                                            franka_hand); Move beyond 0.08 m is aborted
    <gripper_command_action>                control_msgs/action/GripperCommand (robotiq_2f_85)
    action_server/error_recovery            franka_msgs/action/ErrorRecovery: clears a reflex; as
                                            on franka_hardware, commands are ignored after it until
                                            the hardware and the controller are re-activated
                                            (controller_manager services, when
                                            controller_manager_msgs is installed; else at once)
Services:
    digital_real/trigger_reflex             std_srvs/Trigger: test hook, a joint reflex now
    reset                                   std_srvs/Trigger: reset to the ``episode_spec``
                                            parameter (JSON EpisodeSpec), like world_node; the
                                            response is JSON: task, seed, time, target_q (rad),
                                            instruction
Fault injection (test hooks, node parameters, changeable at run time; real time only):
    inject_state_stall_s, inject_state_stall_every_s
                                            every ``..._every_s`` wall seconds (0 = never) the
                                            joint states stop for ``inject_state_stall_s`` s (a
                                            late joint state, as a loaded lab PC or DDS shows)
    digital_real/drop_next_state, digital_real/stall_cameras
                                            std_srvs/Trigger (lockstep): the next step publishes
                                            no state at all (a lost message), or no images (a
                                            camera stall)
    auto_recover_s                          > 0: recover from a reflex on its own after this many
                                            seconds, as franka_hardware's
                                            automaticErrorRecovery() does (robot_mode REFLEX ->
                                            AUTOMATIC_ERROR_RECOVERY -> MOVE, last_motion_errors
                                            kept); -1 = only through error_recovery
Stamps are the digital real's clock: wall time in real time; in lockstep, sim time that keeps
increasing across resets (a reset never sends /clock backwards).
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from typing import Any

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.action import ActionServer
from rclpy.node import Node
from rclpy.publisher import Publisher
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image
from sensor_msgs.msg import JointState as JointStateMsg
from std_msgs.msg import Float64, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from realm_ros.backends.franka.digital_arm import DigitalArm, StallInjector, parse_trajectory
from realm_ros.core import robot, tasks
from realm_ros.core.config import (
    DigitalRealConfig,
    DigitalRealDynamics,
    renamed,
    renamed_file,
)
from realm_ros.core.control import gripper_width
from realm_ros.core.errors import ConfigError, RealmError
from realm_ros.core.types import EpisodeSpec, JointState
from realm_ros.ros import convert, qos, topics
from realm_ros.ros.params import declare_config
from realm_ros.ros.runner import spin_node


class DigitalRealNode(Node):
    """Run the digital real's physics and translate franka_ros2-shaped messages."""

    def __init__(self, dynamics_file: str = '', **kwargs: Any) -> None:
        super().__init__('digital_real', **kwargs)
        overrides = {'dynamics_file': dynamics_file} if dynamics_file else None
        self.config = declare_config(self, DigitalRealConfig, overrides=overrides)
        self.declare_parameter(
            'episode_spec', '', ParameterDescriptor(
                description='JSON EpisodeSpec used by the reset service ("" = task and seed '
                            'parameters)'))
        cfg = self.config
        hidden = DigitalRealDynamics.from_yaml(cfg.dynamics_file) if cfg.dynamics_file else None
        # Imported here: a machine without MuJoCo gets spin_node's one line, not a traceback.
        from realm_ros.backends.digital_real import DigitalRealWorld
        self.world = DigitalRealWorld(cfg.world_config(), hidden=hidden)
        self.arm = robot.arm_spec(cfg.arm_id)
        self._arm_names = self.arm.joint_names
        self._finger_names = list(self.arm.finger_names)
        self._max_width = robot.GRIPPER_WIDTHS[cfg.gripper]
        # The arm's logic (trajectories, reflexes, fingers, physics time), ROS-free.
        self.digital = DigitalArm(self.world, self.arm, self._max_width, cfg.lockstep,
                                  cfg.control_hz)
        # franka_hardware-like state (active / reflex / recovered / inactive_controller).
        self.hardware_state = self.digital.hardware_state
        self._time_offset = 0.0  # lockstep: sim time of earlier episodes (monotonic stamps)
        self._stall = StallInjector()
        for name, default, text in (
                ('inject_state_stall_s', 0.0, 'test hook: length of each joint-state stall, s'),
                ('inject_state_stall_every_s', 0.0,
                 'test hook: a joint-state stall every this many wall seconds (0 = never)'),
                ('auto_recover_s', -1.0,
                 'test hook: recover from a reflex on its own after this many s, as '
                 'franka_hardware automaticErrorRecovery (-1 = never)')):
            self.declare_parameter(name, default, ParameterDescriptor(description=text))

        self._js_pub = self.create_publisher(JointStateMsg, topics.JOINT_STATES, qos.STATE)
        self._grip_pub = self.create_publisher(
            JointStateMsg, f'{cfg.gripper_namespace}/joint_states', qos.STATE)
        self._priv_pub = self.create_publisher(
            String, topics.DIGITAL_REAL_PRIVILEGED_STATE, qos.STATE)
        self._clock_pub = self.create_publisher(Clock, topics.CLOCK, qos.CLOCK) if cfg.lockstep \
            else None
        self._image_pubs = {name: self.create_publisher(Image, topics.camera_image(name),
                                                        qos.IMAGE) for name in cfg.cameras}
        self._info_pubs = {name: self.create_publisher(CameraInfo, topics.camera_info(name),
                                                       qos.LATCHED) for name in cfg.cameras}
        self.create_subscription(JointTrajectory, f'{cfg.controller_name}/joint_trajectory',
                                 self._on_trajectory, qos.COMMAND)
        self.create_subscription(Float64, f'{cfg.gripper_namespace}/width_command',
                                 self._on_width, qos.COMMAND)
        self.create_service(Trigger, topics.RESET, self._on_reset)
        self.create_service(Trigger, 'digital_real/trigger_reflex', self._on_trigger_reflex)
        self._drop = {'state': 0, 'images': 0}
        self.create_service(Trigger, 'digital_real/drop_next_state',
                            lambda req, res: self._on_drop('state', res))
        self.create_service(Trigger, 'digital_real/stall_cameras',
                            lambda req, res: self._on_drop('images', res))
        self._franka_msgs = _optional('franka_msgs')
        self._state_pub: Publisher | None = None
        if self._franka_msgs is not None:
            self._serve_franka_msgs()
        if cfg.gripper == 'robotiq_2f_85':
            self._control_msgs = _optional('control_msgs')
            if self._control_msgs is not None:
                ActionServer(self, self._control_msgs.action.GripperCommand,
                             cfg.gripper_command_action, self._on_gripper_command)

        self.world.reset(self._spec_from_params())
        self.digital.start(time.monotonic())
        self._next_grip = self._next_priv = self._next_image = 0.0
        stamp = self._stamp()
        for name, pub in self._info_pubs.items():
            pub.publish(convert.camera_info(cfg.camera_width, cfg.camera_height,
                                            self.world.camera_fovy(name), stamp,
                                            f'{name}_optical_frame'))
        if self._state_pub is not None and not cfg.lockstep:
            self.create_timer(1.0 / cfg.robot_state_rate_hz, self._publish_robot_state)
        if cfg.lockstep:
            # Re-publish the unchanged arm (and robot) state while idle so late subscribers (the
            # bridge) see the arm; the stamp does not change, so nobody mistakes it for a step.
            self.create_timer(0.1, self._publish_idle)
        else:
            self.create_timer(1.0 / cfg.joint_state_rate_hz, self._on_tick)
        self._publish_all()
        self.get_logger().info(
            f'digital real (simulated franka_ros2 arm, NOT hardware) up: '
            f'{"lockstep" if cfg.lockstep else "real time"}, arm {self.arm.arm_id} (joints '
            f'{self._arm_names[0]}..), gripper {cfg.gripper}, commands on '
            f'{cfg.controller_name}/joint_trajectory, franka_msgs '
            f'{"served" if self._franka_msgs else "not installed"}, hidden dynamics '
            f'{cfg.dynamics_file or "(default file)"}')

    @property
    def hardware(self) -> str:
        """The imitated franka_hardware state (:class:`FrankaHardwareState` mode)."""
        return self.hardware_state.mode

    @property
    def rejected(self) -> int:
        """Commands refused or ignored."""
        return self.digital.rejected

    @property
    def gripper_goals(self) -> list[tuple[str, float]]:
        """``(action, width m)`` of every gripper goal, as received."""
        return self.digital.gripper_goals

    @property
    def stalls(self) -> int:
        """Injected joint-state stalls so far (test hook)."""
        return self._stall.stalls

    @property
    def _target_q(self) -> np.ndarray:
        return self.digital.target_q

    @property
    def _state(self) -> JointState:
        return self.digital.state

    # -- commands ---------------------------------------------------------------------------

    def _on_trajectory(self, msg: JointTrajectory) -> None:
        try:
            points = parse_trajectory(
                msg.joint_names,
                [(point.positions,
                  point.time_from_start.sec + point.time_from_start.nanosec * 1e-9)
                 for point in msg.points], self._arm_names)
        except ConfigError as err:
            self.digital.rejected += 1
            self.get_logger().warning(f'joint_trajectory rejected: {err}')
            return
        if self.hardware_state.active and self.digital.beyond_limits(points):
            # libfranka stops the arm on a target beyond the joint limits.
            self._reflex('joint_position_limits_violation')
        if not self.digital.follow(points, time.monotonic()):
            self.get_logger().warning(f'joint_trajectory ignored: hardware {self.hardware}',
                                      throttle_duration_sec=2.0)
            if self.config.lockstep:
                self._lockstep_step()  # time goes on; the arm holds
            return
        if self.config.lockstep:
            # One control step per message: the bridge sends one trajectory per step and waits
            # for the resulting joint state.
            self._lockstep_step()

    def _on_width(self, msg: Float64) -> None:
        width = float(msg.data)
        if not np.isfinite(width) or width < 0.0:
            self.digital.rejected += 1
            self.get_logger().warning(f'width_command rejected: {width} is not a width >= 0 m')
            return
        self._set_width('width_command', width)

    def _set_width(self, source: str, width: float) -> None:
        """Drive the fingers to ``width`` m (clipped to the hand's opening)."""
        self.digital.set_width(source, width)
        if self.config.lockstep:
            # Acknowledge at once: the bridge waits for this before its next step, so the width
            # counts from the very next control step (deterministic lockstep).
            self._publish_gripper()

    # -- franka_msgs / control_msgs interfaces ------------------------------------------------

    def _serve_franka_msgs(self) -> None:
        action, msg = self._franka_msgs.action, self._franka_msgs.msg
        ns = self.config.gripper_namespace
        if self.config.gripper == 'franka_hand':
            ActionServer(self, action.Move, f'{ns}/move', self._on_move)
            ActionServer(self, action.Grasp, f'{ns}/grasp', self._on_grasp)
            ActionServer(self, action.Homing, f'{ns}/homing', self._on_homing)
        ActionServer(self, action.ErrorRecovery, 'action_server/error_recovery',
                     self._on_error_recovery)
        self._state_pub = self.create_publisher(
            msg.FrankaRobotState, 'franka_robot_state_broadcaster/robot_state', qos.STATE)
        cm = _optional('controller_manager_msgs')
        if cm is not None:
            self.create_service(cm.srv.SetHardwareComponentState,
                                'controller_manager/set_hardware_component_state',
                                self._on_set_hardware)
            self.create_service(cm.srv.SwitchController, 'controller_manager/switch_controller',
                                self._on_switch_controller)
        self.hardware_state.controller_manager = cm is not None

    def _finish(self, goal_handle: Any, action_type: Any, ok: bool, error: str = '') -> Any:
        result = action_type.Result()
        if ok:
            goal_handle.succeed()
        else:
            goal_handle.abort()
        if hasattr(result, 'success'):
            result.success, result.error = ok, error
        return result

    def _on_move(self, goal_handle: Any) -> Any:
        width = float(goal_handle.request.width)
        move = self._franka_msgs.action.Move
        if not 0.0 <= width <= self._max_width + 1e-9:
            # franka_gripper aborts widths the hand cannot reach.
            return self._finish(goal_handle, move, False,
                                f'width {width} m outside [0, {self._max_width}] m')
        self._set_width('move', width)
        return self._finish(goal_handle, move, True)

    def _on_grasp(self, goal_handle: Any) -> Any:
        self._set_width('grasp', float(goal_handle.request.width))
        return self._finish(goal_handle, self._franka_msgs.action.Grasp, True)

    def _on_homing(self, goal_handle: Any) -> Any:
        self._set_width('homing', self._max_width)
        return self._finish(goal_handle, self._franka_msgs.action.Homing, True)

    def _on_gripper_command(self, goal_handle: Any) -> Any:
        position = float(goal_handle.request.command.position)
        closed = self.config.gripper_closed_position
        g = float(np.clip(position / closed, 0.0, 1.0)) if closed else 0.0
        self._set_width('gripper_command', gripper_width(g, self._max_width))
        goal_handle.succeed()
        out = self._control_msgs.action.GripperCommand.Result()
        out.position, out.reached_goal = position, True
        return out

    def _reflex(self, error: str) -> None:
        self.digital.reflex(error, time.monotonic())
        self.get_logger().error(f'digital real: reflex ({error}); commands ignored until error '
                                'recovery')
        self._publish_robot_state()

    def _on_trigger_reflex(self, request: Trigger.Request,
                           response: Trigger.Response) -> Trigger.Response:
        del request
        self._reflex('joint_reflex')
        response.success, response.message = True, 'reflex'
        return response

    def _on_error_recovery(self, goal_handle: Any) -> Any:
        # franka_hardware: recovered, but the hardware component is unconfigured until it is
        # set active again (without controller_manager_msgs here: at once).
        self.hardware_state.error_recovery()
        self._publish_robot_state()
        goal_handle.succeed()
        return self._franka_msgs.action.ErrorRecovery.Result()

    def _on_set_hardware(self, request: Any, response: Any) -> Any:
        response.ok = request.target_state.label == 'active' or request.target_state.id == 3
        if response.ok:
            self.hardware_state.set_hardware_active()
        return response

    def _on_switch_controller(self, request: Any, response: Any) -> Any:
        response.ok = self.config.controller_name in list(request.activate_controllers) or \
            not request.activate_controllers
        if response.ok and self.hardware_state.activate_controller():
            self.digital.hold()
        return response

    def _auto_recover(self, now: float) -> None:
        """franka_hardware's automaticErrorRecovery(): clear the reflex without being asked."""
        if not self.digital.auto_recover(now, self.get_parameter('auto_recover_s').value,
                                         self._publish_robot_state):
            return
        self.get_logger().warning('digital real: automatic error recovery (as franka_hardware '
                                  'automaticErrorRecovery); following commands again')
        self._publish_robot_state()

    def _stalled(self, now: float) -> bool:
        """Whether the injected joint-state stall is on now (test hook)."""
        return self._stall.stalled(now, self.get_parameter('inject_state_stall_every_s').value,
                                   self.get_parameter('inject_state_stall_s').value)

    def _publish_robot_state(self) -> None:
        if self._state_pub is None:
            return
        msg = self._franka_msgs.msg.FrankaRobotState()
        msg.header.stamp = self._stamp()
        msg.robot_mode = getattr(type(msg), f'ROBOT_MODE_{self.hardware_state.robot_mode()}')
        for name in self.hardware_state.errors:
            setattr(msg.current_errors, name, True)
        for name in self.hardware_state.last_motion_errors:
            setattr(msg.last_motion_errors, name, True)
        state = self._state
        msg.measured_joint_state.name = list(self._arm_names)
        msg.measured_joint_state.position = [float(v) for v in state.position]
        msg.measured_joint_state.velocity = [float(v) for v in state.velocity]
        msg.measured_joint_state.effort = [float(v) for v in state.effort]
        self._state_pub.publish(msg)

    def _on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        del request
        if not self.hardware_state.active:
            response.success = False
            response.message = (f'digital real in {self.hardware} state '
                                f'({sorted(self.hardware_state.errors)})'
                                '; recover first')
            return response
        try:
            spec = self._spec_from_params()
            if self.config.lockstep:
                # One control period past the last stamp: stamps and /clock only grow.
                self._time_offset += self.world.time + 1.0 / self.config.control_hz
            instruction = self.digital.reset(spec)
        except RealmError as err:
            self.get_logger().error(f'reset failed: {err}')
            response.success, response.message = False, str(err)
            return response
        self.digital.start(time.monotonic())
        self._publish_all()
        response.success = True
        response.message = json.dumps({'task': spec.task, 'seed': spec.seed,
                                       'time': self._now(),
                                       'target_q': [float(v) for v in self._target_q],
                                       'instruction': instruction})
        return response

    # -- stepping ---------------------------------------------------------------------------

    def _on_tick(self) -> None:
        """Real time: advance physics to the wall clock at the physics rate, then publish."""
        now = time.monotonic()
        self._auto_recover(now)
        self.digital.release_due(now)
        self.digital.advance(now)
        if not self._stalled(now):
            self._publish_arm()
        if now >= self._next_grip:
            self._next_grip = now + 1.0 / self.config.gripper_state_rate_hz
            self._publish_gripper()
        if now >= self._next_priv:
            self._next_priv = now + 1.0 / self.config.privileged_rate_hz
            self._publish_privileged()
        if self._image_pubs and now >= self._next_image:
            self._next_image = now + 1.0 / self.config.camera_rate_hz
            self._publish_images()

    def _on_drop(self, what: str, response: Trigger.Response) -> Trigger.Response:
        self._drop[what] += 1
        response.success, response.message = True, f'the next step publishes no {what}'
        return response

    def _lockstep_step(self) -> None:
        self.digital.step()
        if self._drop['state']:
            self._drop['state'] -= 1
            self.get_logger().warning('digital real: injected fault, this step publishes nothing')
            return
        self._publish_all()

    # -- publishing -------------------------------------------------------------------------

    def _now(self) -> float:
        if self.config.lockstep:
            return self._time_offset + self.world.time
        return time.time()

    def _stamp(self) -> Any:
        if self.config.lockstep:
            return convert.to_time(self._now())
        return self.get_clock().now().to_msg()

    def _publish_all(self) -> None:
        """Clock, images, privileged, gripper, robot state, then arm (which marks a step)."""
        if self._clock_pub is not None:
            self._clock_pub.publish(Clock(clock=self._stamp()))
        self._publish_images()
        self._publish_privileged()
        self._publish_gripper()
        self._publish_robot_state()
        self._publish_arm()

    def _publish_idle(self) -> None:
        self._publish_robot_state()
        self._publish_arm()

    def _publish_arm(self) -> None:
        state: JointState = self._state
        msg = JointStateMsg()
        msg.header.stamp = self._stamp()
        msg.name = list(self._arm_names)
        msg.position = [float(v) for v in state.position]
        msg.velocity = [float(v) for v in state.velocity]
        msg.effort = [float(v) for v in state.effort]
        self._js_pub.publish(msg)

    def _publish_gripper(self) -> None:
        width = gripper_width(self._state.gripper, self._max_width)
        msg = JointStateMsg()
        msg.header.stamp = self._stamp()
        msg.name = list(self._finger_names)
        msg.position = [width / 2.0, width / 2.0]
        msg.velocity = [0.0, 0.0]
        msg.effort = [0.0, 0.0]
        self._grip_pub.publish(msg)

    def _publish_images(self) -> None:
        if not self._image_pubs:
            return
        if self._drop['images']:
            self._drop['images'] -= 1
            self.get_logger().warning('digital real: injected camera stall, no images this step')
            return
        stamp = self._stamp()
        cfg = self.config
        for name, image in self.world.render().items():
            self._image_pubs[name].publish(
                convert.image_to_msg(image, stamp, f'{name}_optical_frame'))
            # As camera drivers do: camera_info with every image, same stamp.
            self._info_pubs[name].publish(convert.camera_info(
                cfg.camera_width, cfg.camera_height, self.world.camera_fovy(name), stamp,
                f'{name}_optical_frame'))

    def _publish_privileged(self) -> None:
        self._priv_pub.publish(String(data=convert.privileged_to_json(
            self.world.privileged_state(), self._now())))

    def _spec_from_params(self) -> EpisodeSpec:
        text = self.get_parameter('episode_spec').value
        if text:
            return EpisodeSpec.from_json(text)
        return EpisodeSpec(task=self.config.task or tasks.EMPTY, seed=self.config.seed)


def _optional(package: str) -> Any:
    """Return ``package`` with its msg/srv/action modules, or None if not installed."""
    try:
        module = importlib.import_module(package)
        for sub in ('msg', 'srv', 'action'):
            try:
                setattr(module, sub, importlib.import_module(f'{package}.{sub}'))
            except ImportError:
                pass
        return module
    except ImportError:
        return None


def _renamed_params_files(argv: list[str]) -> list[str]:
    """Point ``--params-file .../fake_franka.yaml`` (renamed) at ``digital_real.yaml``."""
    return [renamed_file(arg, '--params-file') if k and argv[k - 1] == '--params-file' else arg
            for k, arg in enumerate(argv)]


def _split_dynamics_arg(argv: list[str]) -> tuple[list[str], str]:
    """Remove ``--dynamics FILE`` from ``argv``; return the rest and FILE ('' if absent)."""
    out, path, k = [], '', 0
    while k < len(argv):
        if argv[k] == '--dynamics':
            if k + 1 >= len(argv):
                raise ConfigError('--dynamics needs a YAML file path')
            path = argv[k + 1]
            k += 2
            continue
        if argv[k].startswith('--dynamics='):
            path = argv[k].split('=', 1)[1]
        else:
            out.append(argv[k])
        k += 1
    return out, path


def _close_world(node: Node) -> None:
    assert isinstance(node, DigitalRealNode)
    node.world.close()


def main(args: list[str] | None = None) -> int:
    """Run ``digital_real [--dynamics FILE] [--ros-args ...]``; exit 2 on a bad parameter."""
    argv = _renamed_params_files(list(sys.argv if args is None else args))
    try:
        argv, dynamics = _split_dynamics_arg(argv)
    except ConfigError as err:
        print(f'digital_real: {err}', file=sys.stderr)
        return 2
    return spin_node('digital_real', lambda: DigitalRealNode(dynamics_file=dynamics), argv,
                     close=_close_world)


def main_fake_franka(args: list[str] | None = None) -> int:
    """The executable's old name, ``fake_franka``: one deprecation line, then :func:`main`."""
    renamed('fake_franka', 'executable')
    return main(args)


if __name__ == '__main__':
    sys.exit(main())
