"""``operator_node``: a person marks the stages of real episodes and confirms scene resets.

Run it in a terminal in the real world's namespace (it reads keys from stdin, so not through
``ros2 launch``)::

    ros2 run realm_ros operator_node --ros-args -r __ns:=/real -p record_file:=real.jsonl

Services (relative; std_srvs only, so any client can drive it):
    operator/confirm_reset   Trigger   the scene is reset for ``episode_spec``: episode starts
    operator/mark_stage      Trigger   the next stage in order is met now
    operator/undo            Trigger   retract the latest mark (operator mistake)
    operator/end_episode     Trigger   end as marked (success iff every stage is marked)
    operator/success         SetBool   judge the episode: true = success (marks the remaining
                                       stages), false = failure (marks stay); then end it
    operator/abort           Trigger   end as ``aborted`` (safety stop, disturbed scene)
    operator/confirm_motion  Trigger   the arm may make its next reset move (homing): forwarded
                                       as ``data: true`` to the franka bridge's
                                       ``confirm_motion_service`` (parameter, default
                                       ``/franka_bridge/confirm_motion``); also the stdin line
                                       ``confirm_motion``
Every response's ``message`` says what happened, or why it was refused (``success=false``).
Topics:
    progress (out, latched)        diagnostic_msgs/DiagnosticStatus, ``source='operator'``: the
                                   same message sim worlds publish, so the evaluator and the
                                   monitor treat real and sim alike
    operator/state (out, latched)  std_msgs/String JSON ``{state, episode_index, task, ...}``
    joint_states (in)              counts the world's control steps during an episode
Parameters: :class:`realm_ros.core.annotation.OperatorConfig` fields and ``episode_spec`` (JSON
:class:`~realm_ros.core.types.EpisodeSpec`, read at each ``confirm_reset``). Each ended episode is
appended as one JSON line to ``record_file``.
Terminal: single keys (``h`` lists them); with stdin a pipe, one key (or command name) per line.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
from typing import Any, Callable, TextIO

from diagnostic_msgs.msg import DiagnosticStatus
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import SetBool, Trigger

from realm_ros.core import annotation, perturbations, tasks
from realm_ros.core.errors import RealmError
from realm_ros.core.types import EpisodeSpec
from realm_ros.ros import convert, qos, topics
from realm_ros.ros.params import (
    EPISODE_SPEC,
    declare_config,
    declare_episode_spec,
    episode_spec_text,
)
from realm_ros.ros.runner import spin_node


class OperatorNode(Node):
    """Translate services and terminal keys into :class:`annotation.EpisodeAnnotator` calls."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__('operator', **kwargs)
        self.config = declare_config(self, annotation.OperatorConfig)
        declare_episode_spec(self, 'of the next episode, read at confirm_reset ("" = the task '
                             'parameter)')
        self.add_on_set_parameters_callback(self._on_parameters)
        self.annotator = annotation.EpisodeAnnotator(world=self.config.world)
        self.declare_parameter(
            'confirm_motion_service', '/franka_bridge/confirm_motion', ParameterDescriptor(
                description="the franka bridge's std_srvs/SetBool that allows the arm's next "
                            'reset move (<franka.namespace>/franka_bridge/confirm_motion)'))
        self._motion_client: Any = None
        self.quit_requested = False
        self._steps = 0
        self._keys: queue.Queue[str] = queue.Queue()
        self._progress_pub = self.create_publisher(DiagnosticStatus, topics.PROGRESS, qos.LATCHED)
        self._state_pub = self.create_publisher(String, 'operator/state', qos.LATCHED)
        self.create_subscription(JointState, topics.JOINT_STATES, self._on_joint_state,
                                 qos.ANY_PUBLISHER)
        commands: dict[str, Callable[[], str]] = {
            'confirm_reset': self._confirm_reset,
            'mark_stage': lambda: self.annotator.mark_stage(self._now()),
            'undo': lambda: self.annotator.undo(self._now()),
            'end_episode': lambda: self._end(None),
            'abort': lambda: self._end(None, abort=True),
            'confirm_motion': self._confirm_motion,
        }
        self._commands = {**commands, 'success': lambda: self._end(True),
                          'failure': lambda: self._end(False)}
        for name in commands:
            self.create_service(Trigger, f'operator/{name}',
                                lambda req, res, name=name: self._on_trigger(name, res))
        self.create_service(SetBool, 'operator/success', self._on_success)
        self.create_timer(0.05, self._drain_keys)
        if self.config.publish_hz > 0:
            self.create_timer(1.0 / self.config.publish_hz, self._publish)
        self._publish()
        self.get_logger().info(f'operator for world {self.config.world!r} ready; '
                               f'records -> {self.config.record_file}')

    # -- commands ---------------------------------------------------------------------------

    def execute(self, command: str) -> tuple[bool, str]:
        """Run one command by name (a service's or a key's); return (ok, message)."""
        fn = self._commands.get(command)
        if fn is None:
            return False, f'unknown command {command!r}; {annotation.HELP}'
        try:
            message = fn()
        except RealmError as err:
            self.get_logger().warning(f'{command} refused: {err}')
            return False, str(err)
        self.get_logger().info(f'{command}: {message}')
        self._publish()
        return True, message

    def _confirm_motion(self) -> str:
        """Forward the operator's yes for the next reset move to the franka bridge."""
        name = self.get_parameter('confirm_motion_service').value
        if self._motion_client is None or self._motion_client.srv_name != name:
            self._motion_client = self.create_client(SetBool, name)
        if not self._motion_client.service_is_ready():
            raise RealmError(f'{name} is not available: is world_node backend:=franka running '
                             '(parameter confirm_motion_service)?')
        # Not awaited: this runs in a callback of this node's only executor.
        self._motion_client.call_async(SetBool.Request(data=True))
        return f'the arm may make its next reset move (sent to {name})'

    def _confirm_reset(self) -> str:
        text = episode_spec_text(self)
        spec = (EpisodeSpec.from_json(text) if text
                else EpisodeSpec(task=self.config.task or 'empty'))
        stages = self.config.stages
        if not stages and spec.perturbation != 'Default' and spec.task in tasks.TASKS:
            # SB-NOUN / SB-VRB: the operator marks the stages of the task as perturbed.
            stages = perturbations.scored_task(spec.task, spec.perturbation, spec.intensity,
                                               spec.seed).stages
        message = self.annotator.confirm_reset(self._now(), spec, stages)
        self._steps = 0
        return message

    def _on_parameters(self, params: list[Any]) -> SetParametersResult:
        """Show the operator what to change by hand when the next episode's spec arrives."""
        for param in params:
            if param.name != EPISODE_SPEC or not param.value:
                continue
            try:
                spec = EpisodeSpec.from_json(param.value)
                lines = perturbation_prompt(spec)
            except (RealmError, ValueError, KeyError) as err:
                return SetParametersResult(successful=False, reason=f'episode_spec: {err}')
            for line in lines:
                self.get_logger().info(line)
        return SetParametersResult(successful=True)

    def _end(self, success: bool | None, abort: bool = False) -> str:
        record = self.annotator.end(self._now(), success=success, abort=abort,
                                    steps=self._steps)
        annotation.append_record(self.config.record_file, record)
        return json.dumps({k: record[k] for k in (
            'episode_index', 'task', 'outcome', 'progression', 'stages_reached', 'steps')})

    # -- callbacks --------------------------------------------------------------------------

    def _on_trigger(self, name: str, response: Trigger.Response) -> Any:
        response.success, response.message = self.execute(name)
        return response

    def _on_success(self, request: SetBool.Request, response: SetBool.Response) -> Any:
        response.success, response.message = self.execute(
            'success' if request.data else 'failure')
        return response

    def _on_joint_state(self, msg: JointState) -> None:
        del msg
        if self.annotator.state is annotation.State.RUNNING:
            self._steps += 1

    def _drain_keys(self) -> None:
        """Run keys queued by the terminal thread here, on the executor's thread."""
        while True:
            try:
                key = self._keys.get_nowait()
            except queue.Empty:
                return
            command = annotation.KEYS.get(key, key)
            if command == 'help':
                print(annotation.HELP, flush=True)
            elif command == 'quit':
                self.quit_requested = True
            else:
                ok, message = self.execute(command)
                print(f'{"ok" if ok else "refused"}: {message}', flush=True)
            print(self.annotator.status_line(), flush=True)

    # -- helpers ----------------------------------------------------------------------------

    def queue_key(self, key: str) -> None:
        """Queue a key (or a command name) from any thread."""
        self._keys.put(key)

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _publish(self) -> None:
        a = self.annotator
        if a.stages:
            self._progress_pub.publish(convert.progress_to_msg(
                a.progress(step=self._steps), world=self.config.world))
        self._state_pub.publish(String(data=json.dumps({
            'state': a.state.value, 'episode_index': a.episode_index, 'task': a.spec.task,
            'world': self.config.world, 'steps': self._steps,
            'progression': a.progress().progression if a.stages else 0.0})))


def perturbation_prompt(spec: EpisodeSpec) -> list[str]:
    """Return the lines telling the operator what to set up by hand for ``spec``."""
    if spec.task not in tasks.TASKS:
        return []
    scored = perturbations.scored_task(spec.task, spec.perturbation, spec.intensity, spec.seed)
    params = perturbations.sample(spec.task, spec.perturbation, spec.intensity, spec.seed)
    instruction = spec.instruction or params.get('instruction') or scored.instruction
    lines = [f'next episode: {spec.task}, perturbation {spec.perturbation}; instruction '
             f'"{instruction}"; stages {", ".join(scored.stages)}']
    lines += [f'  change by hand: {change}' for change in
              perturbations.operator_instructions(spec.task, spec.perturbation, params)]
    return lines


def read_terminal(node: OperatorNode, stream: TextIO) -> None:
    """Feed keys from ``stream``: single keys on a terminal, one key or command per line else."""
    print(annotation.HELP, flush=True)
    print(node.annotator.status_line(), flush=True)
    if stream.isatty():  # main() put the terminal in cbreak mode: keys arrive without Enter
        while not node.quit_requested:
            key = stream.read(1)
            if not key:
                return
            node.queue_key(key.lower())
        return
    for line in stream:
        word = line.strip().lower()
        if word:
            node.queue_key(word if word in node._commands else word[0])


def main(args: list[str] | None = None) -> int:
    """Run ``operator_node`` until interrupted or ``q``; exit 2 on a bad parameter."""
    saved_tty = None

    def make() -> OperatorNode:
        nonlocal saved_tty
        node = OperatorNode()
        if node.config.terminal_ui and sys.stdin is not None:
            if sys.stdin.isatty():
                import termios
                import tty
                saved_tty = termios.tcgetattr(sys.stdin.fileno())
                tty.setcbreak(sys.stdin.fileno())  # output processing stays as it was
            threading.Thread(target=read_terminal, args=(node, sys.stdin), daemon=True).start()
        return node

    def close(node: OperatorNode) -> None:
        del node
        if saved_tty is not None:
            import termios
            termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, saved_tty)

    return spin_node('operator_node', make, args, close=close,
                     until=lambda node: node.quit_requested)


if __name__ == '__main__':
    sys.exit(main())
