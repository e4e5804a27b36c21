"""``policy_node``: host any registered Policy against a world's topics.

Topics (relative; launch it in the world's namespace, ``/sim`` or ``/real``):
    joint_states (in)            an observation is complete when joint_states arrives
    cameras/<name>/image (in)    each camera the policy declares (``Policy.needs``: openpi
                                 DROID exterior_1 and wrist, GR00T N1.5 all three) plus those
                                 in ``cameras``; same stamp as joint_states
    privileged_state (in)        if the policy reads it (scripted) or ``use_privileged``; same
                                 stamp as joint_states
    instruction (in, latched)    the language instruction
    episode (in, latched)        world_node's episode spec; a new one resets the policy
    command (out)                trajectory_msgs/JointTrajectory, one point per control step
    ~/status (out)               diagnostic_msgs/DiagnosticStatus: OK after each answer, ERROR
                                 when the policy fails (InfrastructureError: server down,
                                 timeout, malformed answer); the evaluator then ends the episode
                                 as an infrastructure failure
Services:
    ~/reset                      std_srvs/Trigger: reset the policy now with the last episode spec
    ~/set_active                 std_srvs/SetBool: answer observations (true) or stay silent
Parameters ``policy``, ``skill``, ``seed``, ``host``, ``port``, ``policy_args`` and
``execute_horizon`` may be changed at run time; the policy is rebuilt at its next reset (this
is how the evaluator switches the policy under test between episodes).

Policy reset: world_node publishes the latched ``episode`` message on every reset (spec JSON
and the reset time); this node resets its policy when a new one arrives, before it answers the
first observation of that episode. ``~/reset`` exists for worlds without that topic.

Lockstep (default): each new complete observation is answered with exactly one command point
(stamped with the observation's stamp), so the world advances exactly one control step per
policy step, as in :func:`realm_ros.core.episode.run_episode`. Otherwise a timer at
``control_hz`` answers the latest observation. The policy is wrapped
``JointRateLimiter(ActionClipper(GripperBinarizer(ActionChunker(policy, execute_horizon))))``
(:func:`realm_ros.core.policy.standard_chain`).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from diagnostic_msgs.msg import DiagnosticStatus
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import String
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory

from realm_ros.core.config import PolicyNodeConfig, from_mapping
from realm_ros.core.errors import ConfigError, RealmError
from realm_ros.core.policy import Policy, make_policy, standard_chain
from realm_ros.core.types import EpisodeSpec, Observation
from realm_ros.ros import convert, qos, topics
from realm_ros.ros.params import declare_config
from realm_ros.ros.runner import events_executor, spin_node


def build_policy(config: PolicyNodeConfig) -> Policy:
    """Return the configured policy in its wrapper chain (chunking, binarising, clipping).

    The chunk's open-loop length is ``execute_horizon``, or the policy's declared horizon
    (:attr:`Policy.needs`) when it is 0.
    """
    common: dict[str, Any] = {'skill': config.skill, 'seed': config.seed, 'host': config.host,
                              'port': config.port}
    if config.execute_horizon:
        # a chunk-planning policy commits its plan where the chunker re-queries (a policy that
        # does not declare ``execute`` does not plan and is not given it)
        common['execute'] = config.execute_horizon
    # Each policy gets the common settings it declares; a policy_args key it does not declare
    # is a ConfigError naming it (the node exits 2).
    inner = make_policy(config.policy, common=common, **config.extra_kwargs())
    return standard_chain(inner, execute=config.execute_horizon or inner.needs.horizon)


class PolicyNode(Node):
    """Turn complete observations into commands with one hosted policy."""

    def __init__(self, policy: Policy | None = None, **kwargs: Any) -> None:
        super().__init__('policy', **kwargs)
        self.config = declare_config(self, PolicyNodeConfig)
        self.policy = policy if policy is not None else build_policy(self.config)
        self._spec: EpisodeSpec | None = None
        self._needs_reset = True
        self._instruction = ''
        self._images: dict[str, tuple[float, Any]] = {}
        self._privileged: tuple[float, dict[str, Any]] | None = None
        self._pending: JointState | None = None
        self._latest: Observation | None = None
        self._last_answered = -1.0
        #: Lockstep: the stamp of the episode's first observation (its reset), until answered.
        self._reset_stamp: float | None = None
        self._step = 0
        self.commands = 0
        self.errors = 0
        self._active = self.config.start_active
        self._rebuild = False
        self._fixed_policy = policy is not None
        self._camera_subs: dict[str, Any] = {}
        self._privileged_sub: Any = None
        self.cameras: tuple[str, ...] = ()
        self.use_privileged = False
        self._waiting_since: float | None = None

        # Subscriptions are created in the order their messages are published per step
        # (episode at reset, images, privileged state, then joint states).
        self.create_subscription(String, topics.EPISODE, self._on_episode, qos.LATCHED)
        self.create_subscription(String, topics.INSTRUCTION, self._on_instruction, qos.LATCHED)
        self._wire()
        self.create_subscription(JointState, topics.JOINT_STATES, self._on_joint_states,
                                 qos.STATE)
        self._cmd_pub = self.create_publisher(JointTrajectory, topics.COMMAND, qos.COMMAND)
        self._status_pub = self.create_publisher(DiagnosticStatus, '~/status', qos.STATE)
        self.create_service(Trigger, '~/reset', self._on_reset)
        self.create_service(SetBool, '~/set_active', self._on_set_active)
        self.add_on_set_parameters_callback(self._on_parameters)
        if not self.config.lockstep:
            self.create_timer(1.0 / self.config.control_hz, self._on_tick)
        self.get_logger().info(
            f'policy {self.policy.label!r} up ({"lockstep" if self.config.lockstep else "timer"}'
            f', chunk k={self.config.execute_horizon or self.policy.needs.horizon}, cameras '
            f'{list(self.cameras)}{", privileged state" if self.use_privileged else ""})')

    def _wire(self) -> None:
        """Subscribe to what the policy declares it needs, plus the ``cameras`` parameter.

        Called at start and after the policy is rebuilt; subscriptions are only added (a
        camera no longer needed is not waited for, its messages are ignored).
        """
        needs = self.policy.needs
        cameras = tuple(dict.fromkeys((*needs.cameras, *self.config.camera_names)))
        for name in cameras:
            if name not in self._camera_subs:
                self._camera_subs[name] = self.create_subscription(
                    Image, topics.camera_image(name),
                    lambda msg, n=name: self._on_image(n, msg), qos.IMAGE)
        self.cameras = cameras
        self.use_privileged = self.config.use_privileged or needs.privileged
        if self.use_privileged and self._privileged_sub is None:
            self._privileged_sub = self.create_subscription(
                String, topics.PRIVILEGED_STATE, self._on_privileged, qos.STATE)

    # -- inputs -------------------------------------------------------------------------------

    def _on_episode(self, msg: String) -> None:
        try:
            data = json.loads(msg.data)
            self._spec = EpisodeSpec.from_dict(data['spec'])
        except (ValueError, KeyError, TypeError, RealmError) as err:
            self.get_logger().error(f'ignoring malformed episode message: {err}')
            return
        self._instruction = data.get('instruction', self._instruction)
        self._needs_reset = True
        self._last_answered = -1.0
        stamp = data.get('stamp')
        self._reset_stamp = float(stamp) if self.config.lockstep and \
            isinstance(stamp, (int, float)) else None
        self._try_complete()

    def _on_instruction(self, msg: String) -> None:
        self._instruction = msg.data

    def _on_image(self, name: str, msg: Image) -> None:
        self._images[name] = (convert.from_time(msg.header.stamp), convert.image_from_msg(msg))
        self._try_complete()

    def _on_privileged(self, msg: String) -> None:
        try:
            self._privileged = convert.privileged_from_json(msg.data)
        except (ValueError, KeyError) as err:
            self.get_logger().error(f'ignoring malformed privileged_state: {err}')
            return
        self._try_complete()

    def _on_joint_states(self, msg: JointState) -> None:
        self._pending = msg
        self._try_complete()

    def _on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        del request
        self._needs_reset = True
        response.success = True
        response.message = 'policy will reset before the next observation'
        return response

    def _on_set_active(self, request: SetBool.Request,
                       response: SetBool.Response) -> SetBool.Response:
        self._active = bool(request.data)
        response.success = True
        response.message = 'active' if self._active else 'inactive'
        if self._active:
            self._try_complete()  # answer the observation that arrived while inactive
        return response

    _REBUILD = ('policy', 'skill', 'seed', 'host', 'port', 'policy_args', 'execute_horizon')

    def _on_parameters(self, params: list) -> SetParametersResult:
        """Validate policy parameter changes; the policy is rebuilt at its next reset."""
        changed = {p.name: p.value for p in params if p.name in self._REBUILD}
        if not changed:
            return SetParametersResult(successful=True)
        if self._fixed_policy:
            return SetParametersResult(successful=False,
                                       reason='this node hosts a fixed policy object')
        values = {f: getattr(self.config, f) for f in self.config.__dataclass_fields__}
        values.update(changed)
        try:
            config = from_mapping(PolicyNodeConfig, values, where='policy_node parameters')
        except ConfigError as err:
            return SetParametersResult(successful=False, reason=str(err))
        self.config = config
        self._rebuild = True
        self._needs_reset = True
        return SetParametersResult(successful=True)

    # -- observation assembly and answering -----------------------------------------------------

    def _try_complete(self) -> None:
        """Build the observation once joint states, images and privileged state share a stamp."""
        msg = self._pending
        if msg is None or not self._active:
            return  # inactive: keep the observation, answer it on activation
        stamp = convert.from_time(msg.header.stamp)
        lockstep = self.config.lockstep
        if stamp <= self._last_answered and lockstep and not self._needs_reset:
            return  # sim time went back: a reset whose episode message has not arrived yet
        if lockstep and self._reset_stamp is not None and abs(stamp - self._reset_stamp) > 1e-6:
            # An observation of the previous episode taken after this episode's message (the
            # executor serves the episode topic first): answering it would leave the reset's
            # own observation unanswered as "older" and stall the lockstep world.
            return
        # Lockstep: every part of the observation carries the step's stamp. Real time: images
        # come at their own rate and privileged_state is stamped in sim time, so the latest
        # of each is used.
        images = {}
        for name in self.cameras:
            got = self._images.get(name)
            if got is None or (lockstep and abs(got[0] - stamp) > 1e-6):
                self._warn_waiting(topics.camera_image(name))
                return  # wait for this step's image
            images[name] = got[1]
        privileged: dict[str, Any] = {}
        if self.use_privileged:
            if self._privileged is None or (lockstep and abs(self._privileged[0] - stamp) > 1e-6):
                self._warn_waiting(topics.PRIVILEGED_STATE)
                return
            privileged = self._privileged[1]
        self._pending = None
        self._waiting_since = None
        try:
            joints = convert.joint_state_from_msg(msg)
        except RealmError as err:
            self.get_logger().error(f'ignoring joint state: {err}')
            return
        if self._needs_reset:
            self._reset_policy()
            self._step = 0
        self._latest = Observation(joints=joints, images=images, instruction=self._instruction,
                                   step=self._step, privileged=privileged)
        if self.config.lockstep:
            self._last_answered = stamp
            self._reset_stamp = None
            self._answer(self._latest, msg.header.stamp)

    def _warn_waiting(self, topic: str) -> None:
        """Say (every 5 s) which input a joint state has been waiting for, and why it may be."""
        now = time.monotonic()
        if self._waiting_since is None:
            self._waiting_since = now
        elif now - self._waiting_since > 5.0:
            self.get_logger().warning(
                f'policy {self.policy.label!r} needs {topic} and none matches the latest '
                'joint_states: is the world rendering that camera (world_node cameras, '
                'camera_rate_hz > 0; realm-ros paired-eval --cameras)?',
                throttle_duration_sec=5.0)

    def _reset_policy(self) -> None:
        spec = self._spec or EpisodeSpec()
        try:
            if self._rebuild:
                self.policy.close()
                self.policy = build_policy(self.config)
                self._rebuild = False
                self._wire()
            self.policy.reset(spec)
        except RealmError as err:  # e.g. a policy server that is down
            self._report_failure(err)
            return
        self._needs_reset = False
        self.get_logger().info(f'policy reset for task {spec.task!r} seed {spec.seed}')

    def _on_tick(self) -> None:
        if self._latest is not None:
            self._answer(self._latest, self.get_clock().now().to_msg())

    def _answer(self, obs: Observation, stamp: Any) -> None:
        try:
            chunk = self.policy.infer(obs)
        except RealmError as err:
            # Send nothing: the world holds its target; ~/status tells the evaluator, which
            # records the episode as an infrastructure failure (never as a policy failure).
            self._report_failure(err)
            return
        msg = convert.actions_to_trajectory([chunk[0]], 1.0 / self.config.control_hz, stamp)
        self._cmd_pub.publish(msg)
        self._step += 1
        self.commands += 1

    def _report_failure(self, err: RealmError) -> None:
        self.errors += 1
        text = f'{type(err).__name__}: {err}'
        self.get_logger().error(f'policy failed: {text}')
        self._status_pub.publish(DiagnosticStatus(
            level=DiagnosticStatus.ERROR, name=self.get_fully_qualified_name(),
            message=text, hardware_id=self.policy.label))


def main(args: list[str] | None = None) -> int:
    """Run ``policy_node`` until interrupted; exit 2 on a bad parameter."""
    return spin_node('policy_node', PolicyNode, args, close=_close, executor=events_executor)


def _close(node: Node) -> None:
    """Close the hosted policy (its server connection, its model)."""
    if isinstance(node, PolicyNode):
        node.policy.close()


if __name__ == '__main__':
    sys.exit(main())
