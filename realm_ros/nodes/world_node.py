"""``world_node``: the shared world interface (docs/interface.md) over any World backend.

Topics (relative; launched under ``/real`` or ``/sim``):
    joint_states (out)           sensor_msgs/JointState, 7 arm joints + ``gripper``
    command (in)                 trajectory_msgs/JointTrajectory, one point per control step
    cameras/<name>/image (out)   sensor_msgs/Image rgb8; camera_info (out, latched)
    instruction (out, latched)   std_msgs/String
    episode (out, latched)       std_msgs/String: JSON {"spec": EpisodeSpec, "stamp": reset time};
                                 published on every reset (policy_node resets its policy on it)
    progress (out)               diagnostic_msgs/DiagnosticStatus: REALM tiered progression,
                                 updated every control step, reset on ``reset``
    /clock (out, lockstep only)  rosgraph_msgs/Clock
Services:
    reset                        std_srvs/Trigger; resets to the ``episode_spec`` parameter
Parameters: every field of :class:`realm_ros.core.config.WorldConfig`, plus ``episode_spec``
(JSON of :class:`realm_ros.core.types.EpisodeSpec`).
"""

from __future__ import annotations

import collections
import dataclasses
import json
import sys
import time
from typing import Any, cast

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import String
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory

from realm_ros.core import robot, safety, tasks
from realm_ros.core.config import SafetyConfig, WorldConfig
from realm_ros.core.episode import EpisodeState
from realm_ros.core.errors import CommandRejected, InfrastructureError, RealmError
from realm_ros.core.types import Action, EpisodeSpec, Observation, Progress
from realm_ros.core.world import World, make_world
from realm_ros.ros import convert, qos, topics
from realm_ros.ros.params import declare_config, declare_episode_spec, episode_spec_text
from realm_ros.ros.runner import events_executor, spin_node


class WorldNode(Node):
    """Publish a world's observations and execute its commands, in real time or in lockstep."""

    def __init__(self, world: World | None = None, start: bool = True, **kwargs: Any) -> None:
        """``start=False``: publish nothing until :meth:`start` (a container pairs the node's
        publishers for in-process delivery first)."""
        super().__init__('world', **kwargs)
        self.config = declare_config(self, WorldConfig)
        declare_episode_spec(self, 'used by the reset service ("" = task and seed parameters)')
        self.world = world if world is not None else make_world(self.config, host=self)
        if not safety.filters_commands(self.world):
            # The franka bridge filters its commands itself; any other world takes the same
            # rules when asked (a paired evaluation's twin), so both worlds hold alike.
            rules = declare_config(self, SafetyConfig, prefix='safety.')
            if rules.filter_commands:
                self.world = safety.SafetyFilter(self.world, rules, robot.ARMS[rules.arm_id])
        self._queue: collections.deque[Action] = collections.deque()
        self._last_step_wall = time.monotonic()
        self._last_image_time = -1e9
        self.rejected = 0
        #: Commands refused in the running episode (reported on world/status with each one).
        self.episode_rejected = 0
        self.last_rejection = ''

        self._js_pub = self.create_publisher(JointState, topics.JOINT_STATES, qos.STATE)
        self._instr_pub = self.create_publisher(String, topics.INSTRUCTION, qos.LATCHED)
        # Simulator-only state for scoring and scripted policies (JSON); never on a real arm.
        self._privileged_pub = self.create_publisher(String, topics.PRIVILEGED_STATE, qos.STATE)
        self._progress_pub = self.create_publisher(DiagnosticStatus, topics.PROGRESS, qos.STATE)
        self._episode_pub = self.create_publisher(String, topics.EPISODE, qos.LATCHED)
        self._status_pub = self.create_publisher(DiagnosticStatus, topics.WORLD_STATUS, qos.STATE)
        #: Set when the world failed (InfrastructureError); no steps until the next reset.
        self.fault = ''
        #: The running episode (None before the first successful reset).
        self.episode: EpisodeState | None = None
        self._image_pubs = {}
        self._info_pubs = {}
        for name in self.config.cameras if self.config.camera_rate_hz > 0 else ():
            self._image_pubs[name] = self.create_publisher(
                Image, topics.camera_image(name), qos.IMAGE)
            self._info_pubs[name] = self.create_publisher(
                CameraInfo, topics.camera_info(name), qos.LATCHED)
        self._clock_pub = (self.create_publisher(Clock, topics.CLOCK, qos.CLOCK)
                           if self.config.lockstep else None)
        self.create_subscription(JointTrajectory, topics.COMMAND, self._on_command, qos.COMMAND)
        self.create_service(Trigger, topics.RESET, self._on_reset)
        # A reflex on a real arm stops it until error recovery; calling this service with
        # data=true is the operator's confirmation that the arm may be re-activated.
        self.create_service(SetBool, topics.RECOVER, self._on_recover)

        self._obs: Observation | None = None
        try:
            self._reset_world(self._spec_from_params())
        except RealmError as err:
            # A late, stopped or unconfirmed arm must not kill the node: it waits for a reset.
            self.fault = f'start-up reset failed: {err}'
            self.get_logger().error(f'{self.fault}; waiting for a reset (service {topics.RESET})')
        if self.config.lockstep:
            if self.config.lockstep_timeout_s > 0:
                self.create_timer(min(0.05, self.config.lockstep_timeout_s), self._on_idle)
        else:
            self.create_timer(self.world.control_dt, self._on_control_tick)
        mode = 'lockstep' if self.config.lockstep else 'real time'
        self.get_logger().info(
            f'world {self.config.backend!r} up ({mode}, {self.config.control_hz:g} Hz control, '
            f'cameras {list(self._image_pubs)})')
        if start:
            self.start()

    def start(self) -> None:
        """Publish the latched facts (instruction, episode, camera_info) and the first
        observation."""
        if self._obs is None:
            return  # the start-up reset failed: nothing to publish until a reset succeeds
        self._publish_static()
        self._publish_observation(self._obs)

    # -- callbacks --------------------------------------------------------------------------

    def _on_command(self, msg: JointTrajectory) -> None:
        stamp = msg.header.stamp
        if self.config.lockstep and (stamp.sec or stamp.nanosec) and \
                abs(convert.from_time(stamp) - self.world.time) > 1e-6:
            # A command stamped for another observation (e.g. sent before a reset): answering
            # it would shift the lockstep episode by one step.
            self.get_logger().warning(
                f'dropping stale command stamped {convert.from_time(stamp):.3f} s '
                f'(world time {self.world.time:.3f} s)')
            return
        if self._obs is None:
            self._reject('world not reset yet (the start-up reset failed)')
            return
        try:
            actions = convert.trajectory_to_actions(msg, self._obs.joints.gripper)
        except CommandRejected as err:
            self._reject(str(err))
            return
        self._queue.clear()
        self._queue.extend(actions)
        if self.config.lockstep:
            while self._queue:
                self._control_step()

    def _on_control_tick(self) -> None:
        self._control_step()

    def _on_idle(self) -> None:
        """Lockstep: step with the held target if no command came within the timeout."""
        if time.monotonic() - self._last_step_wall >= self.config.lockstep_timeout_s:
            self._control_step()

    def _on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        del request
        try:
            spec = self._spec_from_params()
            self._queue.clear()
            self._reset_world(spec)
        except RealmError as err:
            self.get_logger().error(f'reset failed: {err}')
            response.success, response.message = False, str(err)
            return response
        obs = self._observation()
        self._publish_static()
        self._publish_observation(obs)
        response.success = True
        response.message = json.dumps({
            'task': spec.task, 'seed': spec.seed, 'time': self.world.time,
            'instruction': obs.instruction})
        return response

    def _on_recover(self, request: SetBool.Request,
                    response: SetBool.Response) -> SetBool.Response:
        """Clear a reflex (``World.recover`` where the backend has one) if ``data`` confirms."""
        recover = getattr(self.world, 'recover', None)
        if recover is None:
            response.success = False
            response.message = f'world {self.config.backend!r} has no reflexes to recover from'
            return response

        def confirm(question: str) -> bool:
            self.get_logger().warning(f'recovery: {question} operator says '
                                      f'{"yes" if request.data else "no"}')
            return bool(request.data)
        try:
            response.success = bool(recover(confirm=confirm))
        except RealmError as err:
            self.get_logger().error(f'recovery failed: {err}')
            response.success, response.message = False, str(err)
            return response
        response.message = (
            'recovered: the arm holds its position; reset before the next episode'
            if response.success else 'not confirmed: the arm stays stopped')
        if response.success:
            self.fault = ''
        return response

    # -- helpers ----------------------------------------------------------------------------

    def _reset_world(self, spec: EpisodeSpec) -> None:
        """Reset the world and the progress tracker to ``spec``."""
        self._obs = self.world.reset(spec)
        self.fault = ''
        self.episode_rejected = 0
        self.episode = EpisodeState(spec)
        self.episode.begin(self._obs, self.world.time)

    def _control_step(self) -> None:
        """Apply the next queued action (if any) and advance one control period."""
        if self.fault:
            self._queue.clear()
            return
        try:
            self._advance()
        except InfrastructureError as err:
            # The episode ends as an infrastructure failure (never scored); the world holds.
            self.fault = str(err)
            self._queue.clear()
            self.get_logger().error(f'world failed, holding until the next reset: {err}')
            self._status_pub.publish(DiagnosticStatus(
                level=DiagnosticStatus.ERROR, name='world', message=self.fault))

    def _advance(self) -> None:
        if self._queue:
            action = self._queue.popleft()
            try:
                self.world.apply(action)
            except CommandRejected as err:
                self._reject(str(err))
        # One observation per step: the world renders its images inside step() when they are
        # due (MuJoCo: at camera_rate_hz of sim time), never a second time here.
        obs = self.world.step()
        if obs.images and not self._image_due():
            obs = dataclasses.replace(obs, images={})
        self._obs = obs
        if self.episode is not None:
            self.episode.advance(obs)
        self._last_step_wall = time.monotonic()
        self._publish_observation(self._obs)

    @property
    def progress(self) -> Progress:
        """The running episode's progress (the empty table's before the first reset)."""
        if self.episode is None:
            return tasks.empty_progress('empty')
        return self.episode.progress

    def _image_due(self) -> bool:
        if not self._image_pubs:
            return False
        if self.config.lockstep:
            return True
        return self.world.time - self._last_image_time >= 1.0 / self.config.camera_rate_hz - 1e-9

    def _reject(self, reason: str) -> None:
        self.rejected += 1
        self.episode_rejected += 1
        self.last_rejection = reason
        self.get_logger().warning(f'command rejected, holding the last valid target: {reason}')
        # The evaluator counts each world's refused commands per episode (the record's
        # ``rejected``): the running count, so a lost message loses nothing but itself.
        self._status_pub.publish(DiagnosticStatus(
            level=DiagnosticStatus.WARN, name=safety.REJECTED_STATUS, message=reason,
            values=[KeyValue(key='rejected', value=str(self.episode_rejected))]))

    def _spec_from_params(self) -> EpisodeSpec:
        text = episode_spec_text(self)
        if text:
            return EpisodeSpec.from_json(text)
        return EpisodeSpec(task=self.config.task or tasks.EMPTY, seed=self.config.seed)

    def _stamp(self) -> Any:
        if self.config.lockstep:
            return convert.to_time(self.world.time)
        return self.get_clock().now().to_msg()

    def _observation(self) -> Observation:
        """The last observation (after a successful reset; a RealmError before one)."""
        if self._obs is None:
            raise RealmError('world not reset yet (the start-up reset failed)')
        return self._obs

    def _publish_static(self) -> None:
        stamp = self._stamp()
        instruction = self._observation().instruction
        self._instr_pub.publish(String(data=instruction))
        if self.episode is not None:
            self._episode_pub.publish(String(data=json.dumps({
                'spec': json.loads(self.episode.spec.to_json()), 'stamp': self.world.time,
                'instruction': instruction})))
        for name, pub in self._info_pubs.items():
            pub.publish(convert.camera_info(
                self.config.camera_width, self.config.camera_height,
                self.world.camera_fovy(name), stamp, f'{name}_optical_frame'))

    def _publish_observation(self, obs: Observation) -> None:
        """Publish clock, images, then joint states: joint states mark a complete observation.

        A message on a topic that nothing subscribes to is not built (an image is then not
        rendered, the privileged state's JSON not written): these topics are volatile, and DDS
        sends a message to no reader that has not matched the publisher when it is published.
        """
        stamp = self._stamp()
        if self._clock_pub is not None and self._clock_pub.get_subscription_count():
            self._clock_pub.publish(Clock(clock=stamp))
        if obs.images:
            self._last_image_time = self.world.time
            for name, image in obs.images.items():
                pub = self._image_pubs.get(name)
                # An image nobody subscribes to is not read (a world renders on first read).
                if pub is not None and pub.get_subscription_count():
                    pub.publish(convert.image_to_msg(image, stamp, f'{name}_optical_frame'))
        if obs.privileged:
            if self._privileged_pub.get_subscription_count():
                self._privileged_pub.publish(String(data=convert.privileged_to_json(
                    obs.privileged, self.world.time)))
            # Scored from privileged state. A real arm has none: its progress comes from the
            # operator (operator_node publishes on the same topic), never from this node.
            if self._progress_pub.get_subscription_count():
                self._progress_pub.publish(
                    convert.progress_to_msg(self.progress, self.world.name))
        if self._js_pub.get_subscription_count():
            msg = convert.joint_state_to_msg(obs.joints)
            msg.header.stamp = stamp
            self._js_pub.publish(msg)


def main(args: list[str] | None = None) -> int:
    """Run ``world_node`` until interrupted; exit 2 on a bad parameter."""
    return spin_node('world_node', WorldNode, args,
                     close=lambda node: cast(WorldNode, node).world.close(),
                     executor=events_executor)


if __name__ == '__main__':
    sys.exit(main())
