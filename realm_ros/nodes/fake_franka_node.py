"""``fake_franka``: the digital real, a fake arm that speaks a franka_ros2-shaped interface.

It is NOT hardware: MuJoCo physics (:class:`DigitalRealWorld`) with hidden dynamics the twin
cannot see, behind the topics a lab's franka_ros2 exposes when configured for policy rollouts
(docs/digital-real.md). Names are relative to the node's namespace (franka_ros2 default: none).

Topics:
    joint_states (out)                      sensor_msgs/JointState, ``<prefix>joint1..7``: rad,
                                            rad/s, N m (actuator torque)
    <gripper_namespace>/joint_states (out)  sensor_msgs/JointState, ``<prefix>finger_joint1/2``,
                                            each at width / 2, m (as franka_gripper)
    <controller_name>/joint_trajectory (in) trajectory_msgs/JointTrajectory, as a
                                            JointTrajectoryController: each point's positions
                                            become the impedance target at its time_from_start
    <gripper_namespace>/width_command (in)  std_msgs/Float64, target opening, m (this package's
                                            stand-in for franka_msgs Move/Grasp, which cannot be
                                            installed here)
    cameras/<name>/image (out)              sensor_msgs/Image rgb8, for each of ``cameras``
                                            (default none), as a lab's camera drivers; with
    cameras/<name>/camera_info (out)        latched pinhole intrinsics
    digital_real/privileged_state (out)     std_msgs/String JSON: object state for scoring;
                                            digital-real-only, no real arm has it
    /clock (out, lockstep only)             rosgraph_msgs/Clock
Services:
    reset                                   std_srvs/Trigger: reset to the ``episode_spec``
                                            parameter (JSON EpisodeSpec), like world_node; the
                                            response is JSON: task, seed, time, target_q (rad),
                                            instruction
Stamps are the digital real's clock: wall time in real time; in lockstep, sim time that keeps
increasing across resets (a reset never sends /clock backwards).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image
from sensor_msgs.msg import JointState as JointStateMsg
from std_msgs.msg import Float64, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from realm_ros.backends.fake_franka import DigitalRealWorld
from realm_ros.core import robot
from realm_ros.core.config import DigitalRealDynamics, FakeFrankaConfig
from realm_ros.core.errors import ConfigError, RealmError
from realm_ros.core.types import Action, EpisodeSpec, JointState
from realm_ros.ros import convert, qos, topics
from realm_ros.ros.params import declare_config
from realm_ros.ros.runner import spin_node


class FakeFrankaNode(Node):
    """Run the digital real's physics and translate franka_ros2-shaped messages."""

    def __init__(self, dynamics_file: str = '', **kwargs: Any) -> None:
        super().__init__('fake_franka', **kwargs)
        overrides = {'dynamics_file': dynamics_file} if dynamics_file else None
        self.config = declare_config(self, FakeFrankaConfig, overrides=overrides)
        self.declare_parameter(
            'episode_spec', '', ParameterDescriptor(
                description='JSON EpisodeSpec used by the reset service ("" = task and seed '
                            'parameters)'))
        cfg = self.config
        hidden = DigitalRealDynamics.from_yaml(cfg.dynamics_file) if cfg.dynamics_file else None
        self.world = DigitalRealWorld(cfg.world_config(), hidden=hidden)
        self._arm_names = robot.prefixed_joint_names(cfg.arm_prefix)
        self._finger_names = [f'{cfg.arm_prefix}finger_joint{i}' for i in (1, 2)]
        self._gripper_g = 0.0
        self._schedule: list[tuple[float, np.ndarray]] = []  # (wall time due, q_d rad)
        self._target_q = robot.RESET_Q.copy()
        self._time_offset = 0.0  # lockstep: sim time of earlier episodes (monotonic stamps)
        self.rejected = 0

        self._js_pub = self.create_publisher(JointStateMsg, 'joint_states', qos.STATE)
        self._grip_pub = self.create_publisher(
            JointStateMsg, f'{cfg.gripper_namespace}/joint_states', qos.STATE)
        self._priv_pub = self.create_publisher(
            String, topics.DIGITAL_REAL_PRIVILEGED_STATE, qos.STATE)
        self._clock_pub = self.create_publisher(Clock, '/clock', qos.CLOCK) if cfg.lockstep \
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

        self.world.reset(self._spec_from_params())
        self._state = self.world.joint_state()
        self._target_q = self.world.target[0]
        self._wall_start = time.monotonic()
        self._sim_start = self.world.time
        self._next_grip = self._next_priv = self._next_image = 0.0
        stamp = self._stamp()
        for name, pub in self._info_pubs.items():
            pub.publish(convert.camera_info(cfg.camera_width, cfg.camera_height,
                                            self.world.camera_fovy(name), stamp,
                                            f'{name}_optical_frame'))
        if cfg.lockstep:
            # Re-publish the unchanged arm state while idle so late subscribers (the bridge)
            # see the arm; the stamp does not change, so nobody mistakes it for a step.
            self.create_timer(0.1, self._publish_arm)
        else:
            self.create_timer(1.0 / cfg.joint_state_rate_hz, self._on_tick)
        self._publish_all()
        self.get_logger().info(
            f'digital real (fake franka_ros2 arm, NOT hardware) up: '
            f'{"lockstep" if cfg.lockstep else "real time"}, joints {self._arm_names[0]}.., '
            f'commands on {cfg.controller_name}/joint_trajectory and '
            f'{cfg.gripper_namespace}/width_command, hidden dynamics '
            f'{cfg.dynamics_file or "(default file)"}')

    # -- commands ---------------------------------------------------------------------------

    def _on_trajectory(self, msg: JointTrajectory) -> None:
        try:
            points = self._parse_trajectory(msg)
        except ConfigError as err:
            self.rejected += 1
            self.get_logger().warning(f'joint_trajectory rejected: {err}')
            return
        if self.config.lockstep:
            # One control step per message (its first point): the bridge sends one target per
            # step and waits for the resulting joint state.
            self._set_target(points[0][1])
            self._lockstep_step()
            return
        now = time.monotonic()
        t0 = points[0][0]
        # As a JointTrajectoryController: a new trajectory replaces the old one.
        self._schedule = [(now + t - t0, q) for t, q in points]
        self._release_due(now)

    def _parse_trajectory(self, msg: JointTrajectory) -> list[tuple[float, np.ndarray]]:
        names = list(msg.joint_names)
        if sorted(names) != sorted(self._arm_names):
            raise ConfigError(
                f'joint_names {names} must be exactly {list(self._arm_names)} (any order)')
        order = [names.index(n) for n in self._arm_names]
        if not msg.points:
            raise ConfigError('trajectory has no points')
        out = []
        for k, point in enumerate(msg.points):
            if len(point.positions) != len(names):
                raise ConfigError(f'point {k} needs {len(names)} positions, got '
                                  f'{len(point.positions)} (this controller takes positions)')
            q = np.array([point.positions[i] for i in order], dtype=float)
            if not np.all(np.isfinite(q)):
                raise ConfigError(f'point {k} has NaN or inf positions')
            t = point.time_from_start.sec + point.time_from_start.nanosec * 1e-9
            out.append((t, q))
        return out

    def _on_width(self, msg: Float64) -> None:
        width = float(msg.data)
        if not np.isfinite(width) or width < 0.0:
            self.rejected += 1
            self.get_logger().warning(f'width_command rejected: {width} is not a width >= 0 m')
            return
        # Widths beyond the opening are clipped (the Robotiq stops at its maximum).
        self._gripper_g = float(np.clip(1.0 - width / robot.GRIPPER_MAX_WIDTH, 0.0, 1.0))
        self.world.apply(Action(arm=self._target_q, gripper=self._gripper_g))
        if self.config.lockstep:
            # Acknowledge at once: the bridge waits for this before its next step, so the width
            # counts from the very next control step (deterministic lockstep).
            self._publish_gripper()

    def _set_target(self, q_d: np.ndarray) -> None:
        self._target_q = np.clip(q_d, robot.JOINT_LOWER, robot.JOINT_UPPER)  # hard stops
        self.world.apply(Action(arm=self._target_q, gripper=self._gripper_g))

    def _release_due(self, now: float) -> None:
        while self._schedule and self._schedule[0][0] <= now:
            _, q = self._schedule.pop(0)
            self._set_target(q)

    def _on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        del request
        try:
            spec = self._spec_from_params()
            if self.config.lockstep:
                # One control period past the last stamp: stamps and /clock only grow.
                self._time_offset += self.world.time + 1.0 / self.config.control_hz
            instruction = self.world.reset(spec).instruction
        except RealmError as err:
            self.get_logger().error(f'reset failed: {err}')
            response.success, response.message = False, str(err)
            return response
        self._schedule = []
        self._gripper_g = 0.0
        self._state = self.world.joint_state()
        self._target_q = self.world.target[0]
        self._wall_start = time.monotonic()
        self._sim_start = self.world.time
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
        self._release_due(now)
        due = int((now - self._wall_start) * self.config.physics_hz) - int(
            round((self.world.time - self._sim_start) * self.config.physics_hz))
        if due > 0:
            # Bounded catch-up: after a stall (a loaded machine) the arm does not jump ahead.
            self.world.step_physics(min(due, int(self.config.physics_hz * 0.1)))
            if due > self.config.physics_hz * 0.1:
                self._sim_start = self.world.time
                self._wall_start = now
        self._state = self.world.joint_state()
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

    def _lockstep_step(self) -> None:
        self.world.step()
        self._state = self.world.joint_state()
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
        """Clock, images, privileged, gripper, then arm: the arm state marks a complete step."""
        if self._clock_pub is not None:
            self._clock_pub.publish(Clock(clock=self._stamp()))
        self._publish_images()
        self._publish_privileged()
        self._publish_gripper()
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
        width = robot.GRIPPER_MAX_WIDTH * (1.0 - self._state.gripper)
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
        return EpisodeSpec(task=self.config.task or 'empty', seed=self.config.seed)


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


def main(args: list[str] | None = None) -> int:
    """Run ``fake_franka [--dynamics FILE] [--ros-args ...]``; exit 2 on a bad parameter."""
    argv = list(sys.argv if args is None else args)
    try:
        argv, dynamics = _split_dynamics_arg(argv)
    except ConfigError as err:
        print(f'fake_franka: {err}', file=sys.stderr)
        return 2
    return spin_node('fake_franka', lambda: FakeFrankaNode(dynamics_file=dynamics), argv,
                     close=lambda node: node.world.close())


if __name__ == '__main__':
    sys.exit(main())
