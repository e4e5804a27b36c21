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
                                       ``franka_bridge/confirm_motion``, in this node's
                                       namespace: the world's); also the stdin line
                                       ``confirm_motion``
    operator/propose_stages  Trigger   the scorer (parameter ``scorer``) proposes the stages of
                                       the running episode from its camera frames (key p)
    operator/accept_stages   Trigger   mark the proposed stages not yet marked (key c); the
                                       operator corrects with undo / mark_stage as usual
Every response's ``message`` says what happened, or why it was refused (``success=false``).
Topics:
    progress (out, latched)        diagnostic_msgs/DiagnosticStatus, ``source='operator'``: the
                                   same message sim worlds publish, so the evaluator and the
                                   monitor treat real and sim alike
    operator/state (out, latched)  std_msgs/String JSON ``{state, episode_index, task, ...}``
    joint_states (in)              counts the world's control steps during an episode
    cameras/<scorer_camera>/image (in)  the frames a scorer reads (only with ``scorer`` set)
    cameras/<camera>/image (in)         each further camera a scorer checkpoint reads (the
                                        wrist checkpoint: wrist), the latest frame kept
                                        beside each of scorer_camera's
    cameras/<video_camera>/image (in)   the episode video's frames (only with ``video_camera``;
                                        a comma list: one video per camera)
Parameters: :class:`realm_ros.core.annotation.OperatorConfig` fields, ``episode_spec`` (JSON
:class:`~realm_ros.core.types.EpisodeSpec`, read at each ``confirm_reset``) and the stage
proposals' ``scorer`` ('' = none, ``learned``, ``vlm``), ``scorer_checkpoint``,
``scorer_endpoint``, ``scorer_model``, ``scorer_camera``, ``scorer_fps``, and the episode
video's ``video_camera`` ('' = none) and ``video_fps``. Each ended episode is appended as one
JSON line to ``record_file``; it keeps who decided each stage (``stages_decided_by``,
``decided_by``: the operator, or the scorer's name and version when the operator accepted its
proposal unchanged) and the proposal itself (``stage_proposal``). With ``video_camera`` set, the
camera is recorded from the confirmed reset (the record's ``start_time``, the video's first
frame) to the episode's end at a constant ``video_fps`` (``annotation.frames_due``) to
``videos/<world>/episode_<index>_<start ms>.webm`` beside ``record_file``, and the record names
it in ``video`` (relative to its folder): a lab's records are ``realm-ros score calibrate
--labels`` lines as they are. With ``video_camera`` a comma list (``exterior_1,wrist``: what the
wrist scorer checkpoint reads), each further camera's video is
``videos/<world>/<camera>/episode_<index>_<start ms>.webm`` and the record names every camera's
in ``camera_videos`` (``realm_ros.io.video``).
Terminal: single keys (``h`` lists them); with stdin a pipe, one key (or command name) per line.
"""

from __future__ import annotations

import json
import pathlib
import queue
import sys
import threading
from typing import Any, Callable, TextIO

from diagnostic_msgs.msg import DiagnosticStatus
import numpy as np
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.node import Node
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import String
from std_srvs.srv import SetBool, Trigger

from realm_ros.core import annotation, perturbations, scoring, tasks
from realm_ros.core.config import parse_cameras
from realm_ros.core.errors import ConfigError, RealmError
from realm_ros.core.types import EpisodeSpec
from realm_ros.io.video import EpisodeVideo, camera_relpath, video_fields
from realm_ros.ros import convert, qos, topics
from realm_ros.ros.params import (
    EPISODE_SPEC,
    declare_config,
    declare_episode_spec,
    episode_spec_text,
)
from realm_ros.ros.runner import spin_node

#: The terminal's keys: the annotator's and the stage proposals' (p: propose, c: accept).
KEYS: dict[str, str] = {**annotation.KEYS, 'p': 'propose_stages', 'c': 'accept_stages'}
HELP = annotation.HELP + '  [p] scorer proposes stages  [c] accept the proposal'
#: Frames kept per episode for the scorer, at most (at 3 per second, 5 minutes: 150 MB of
#: 320x180 frames; REALM's 800-step episode is 53 s).
MAX_FRAMES = 900


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
            'confirm_motion_service', 'franka_bridge/confirm_motion', ParameterDescriptor(
                description="the franka bridge's std_srvs/SetBool that allows the arm's next "
                            'reset move (<world namespace>/franka_bridge/confirm_motion; '
                            "relative: in this node's namespace, the real world's)"))
        self._motion_client: Any = None
        for name, default, text in (
                ('scorer', '', "stage proposals: a registered scorer's name (learned, vlm); "
                               "'' = none"),
                ('scorer_checkpoint', '', "learned scorer checkpoint ('' = the shipped one)"),
                ('scorer_endpoint', '', 'vlm scorer: OpenAI-compatible API base URL'),
                ('scorer_model', '', 'vlm scorer: model name'),
                ('scorer_camera', 'exterior_1', 'camera whose frames the scorer reads'),
                ('video_camera', '', "camera recorded to each episode's video, named in its "
                                     "record ('' = no video; a comma list records one video "
                                     'per camera, all named in camera_videos)')):
            self.declare_parameter(name, default, ParameterDescriptor(description=text))
        self.declare_parameter('scorer_fps', 3.0, ParameterDescriptor(
            description='frames per second kept for the scorer'))
        self.declare_parameter('video_fps', 15, ParameterDescriptor(
            description="the episode video's constant frame rate"))
        if self._param('video_fps') <= 0:
            raise ConfigError(f'parameter video_fps must be positive, got '
                              f'{self._param("video_fps")}')
        self._video_cameras = parse_cameras(self._param('video_camera'),
                                            'parameter video_camera')
        self._videos: dict[str, EpisodeVideo] = {}
        self._video_relpaths: dict[str, str] = {}
        self._video_start = 0.0
        self.review = scoring.StageReview()
        self._scorer: Any = None
        # (time, frame), or with a scorer of several cameras (time, [frame of each camera]).
        self._frames: list[tuple[float, Any]] = []
        self._latest: dict[str, np.ndarray] = {}  # each further scorer camera's latest frame
        self._frame_lock = threading.Lock()
        self.quit_requested = False
        self._steps = 0
        self._keys: queue.Queue[str] = queue.Queue()
        self._progress_pub = self.create_publisher(DiagnosticStatus, topics.PROGRESS, qos.LATCHED)
        self._state_pub = self.create_publisher(String, 'operator/state', qos.LATCHED)
        self.create_subscription(JointState, topics.JOINT_STATES, self._on_joint_state,
                                 qos.ANY_PUBLISHER)
        if self._param('scorer'):
            self.scorer()  # built now (a checkpoint loads in seconds): a bad one exits 2 here
            self.create_subscription(Image, topics.camera_image(self._param('scorer_camera')),
                                     self._on_image, qos.ANY_PUBLISHER)
            for camera in self._scorer_cameras()[1:]:
                self.create_subscription(Image, topics.camera_image(camera),
                                         lambda msg, c=camera: self._on_other_image(c, msg),
                                         qos.ANY_PUBLISHER)
        for camera in self._video_cameras:
            self.create_subscription(Image, topics.camera_image(camera),
                                     lambda msg, c=camera: self._on_video_image(c, msg),
                                     qos.ANY_PUBLISHER)
        commands: dict[str, Callable[[], str]] = {
            'confirm_reset': self._confirm_reset,
            'mark_stage': self._mark_stage,
            'undo': self._undo,
            'end_episode': lambda: self._end(None),
            'abort': lambda: self._end(None, abort=True),
            'confirm_motion': self._confirm_motion,
            'propose_stages': self._propose_stages,
            'accept_stages': self._accept_stages,
        }
        self._commands = {**commands, 'success': lambda: self._end(True),
                          'failure': lambda: self._end(False)}
        for name in commands:
            self.create_service(Trigger, f'operator/{name}', self._trigger_callback(name))
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
            return False, f'unknown command {command!r}; {HELP}'
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
                else EpisodeSpec(task=self.config.task or tasks.EMPTY))
        stages = self.config.stages
        if not stages and spec.perturbation != perturbations.DEFAULT and spec.task in tasks.TASKS:
            # SB-NOUN / SB-VRB: the operator marks the stages of the task as perturbed.
            stages = perturbations.scored_task(spec.task, spec.perturbation, spec.intensity,
                                               spec.seed).stages
        now = self._now()
        message = self.annotator.confirm_reset(now, spec, stages)
        self._start_video(now)
        self._steps = 0
        self.review.reset()
        with self._frame_lock:
            self._frames = []
            self._latest = {}
        return message

    # -- stages: marked by the operator, or proposed by a scorer and accepted -----------------

    def _param(self, name: str) -> Any:
        return self.get_parameter(name).value

    def _met(self) -> int:
        return sum(self.annotator.progress().met)

    def _mark_stage(self) -> str:
        message = self.annotator.mark_stage(self._now())
        self.review.marked(scoring.OPERATOR)
        return message

    def _undo(self) -> str:
        message = self.annotator.undo(self._now())
        self.review.undone()
        return message

    def scorer(self) -> Any:
        """Return the stage-proposing scorer (built on first use from the parameters)."""
        name = self._param('scorer')
        if not name:
            raise ConfigError('no scorer to propose stages: set the parameter scorer '
                              '(learned or vlm)')
        if self._scorer is None:
            kwargs: dict[str, Any] = {}
            if name == 'vlm':
                kwargs = {'endpoint': self._param('scorer_endpoint'),
                          'model': self._param('scorer_model')}
            elif self._param('scorer_checkpoint'):
                kwargs = {'checkpoint': self._param('scorer_checkpoint')}
            try:
                self._scorer = scoring.make_scorer(name, **kwargs)
            except (RealmError, ImportError) as err:  # a bad checkpoint, torch missing
                raise ConfigError(f'parameter scorer {name!r}: {err}') from None
            cameras = list(getattr(self._scorer, 'cameras', None) or [])
            if len(cameras) > 1 and cameras[0] != self._param('scorer_camera'):
                self._scorer = None
                raise ConfigError(f'parameter scorer_camera: the checkpoint reads '
                                  f'{", ".join(cameras)}, the first being {cameras[0]}')
        return self._scorer

    def _scorer_cameras(self) -> list[str]:
        """The cameras the scorer reads, in order (``scorer_camera`` first)."""
        cameras = list(getattr(self.scorer(), 'cameras', None) or [])
        return cameras or [self._param('scorer_camera')]

    def _propose_stages(self) -> str:
        if self.annotator.state is not annotation.State.RUNNING:
            raise ConfigError('no episode is running: confirm the scene reset first (r)')
        scorer = self.scorer()
        with self._frame_lock:
            frames = list(self._frames)
        if not frames:
            raise ConfigError(f'no frames of camera {self._param("scorer_camera")!r} '
                              'received in this episode yet')
        spec = self.annotator.spec
        instruction = spec.instruction or (tasks.TASKS[spec.task].instruction
                                           if spec.task in tasks.TASKS else spec.task)
        t0 = frames[0][0]
        cameras = len(self._scorer_cameras())
        if cameras > 1:  # each kept frame holds every camera's: stacked as the scorer reads
            stacked = scorer.stack([[parts[k] for _, parts in frames] for k in range(cameras)])
            frames = [(t, f) for (t, _), f in zip(frames, stacked)]
        episode = scoring.EpisodeFrames(frames=[f for _, f in frames],
                                        times_s=[t - t0 for t, _ in frames],
                                        instruction=instruction, task=spec.task)
        proposals = scoring.propose_stages(scorer, episode, self.annotator.stages)
        return self.review.propose(scorer.name, proposals)

    def _accept_stages(self) -> str:
        met = self._met()
        todo = self.review.to_accept(met)
        for k, proposal in enumerate(todo):
            expected = self.annotator.stages[met + k]
            if proposal.stage != expected:
                raise ConfigError(f'the proposal names stage {proposal.stage!r} where the '
                                  f"episode's next stage is {expected!r}; mark it by hand")
            self.annotator.mark_stage(self._now())
            self.review.marked(self.review.scorer)
        return (f'accepted {len(todo)} proposed stage(s) of {self.review.scorer} '
                f'({self._met()}/{len(self.annotator.stages)} met)')

    def _on_image(self, msg: Image) -> None:
        if self.annotator.state is not annotation.State.RUNNING:
            return
        now = self._now()
        fps = float(self._param('scorer_fps'))
        with self._frame_lock:
            if self._frames and (now - self._frames[-1][0] < 1.0 / fps - 1e-3
                                 or len(self._frames) >= MAX_FRAMES):
                return
            image = convert.image_from_msg(msg)
            others = self._scorer_cameras()[1:]
            if not others:
                self._frames.append((now, image))
            elif all(c in self._latest for c in others):  # else: kept once every camera sent
                self._frames.append((now, [image, *(self._latest[c] for c in others)]))

    def _on_other_image(self, camera: str, msg: Image) -> None:
        """Keep a further scorer camera's latest frame (stored beside scorer_camera's)."""
        if self.annotator.state is not annotation.State.RUNNING:
            return
        image = convert.image_from_msg(msg)
        with self._frame_lock:
            self._latest[camera] = image

    # -- the episode video --------------------------------------------------------------------

    def _start_video(self, start: float) -> None:
        """Open the videos of the episode confirmed at ``start`` (dropping unended ones)."""
        if not self._video_cameras:
            return
        with self._frame_lock:
            for video in self._videos.values():
                video.abandon()
            first = annotation.video_relpath(self.config.world, self.annotator.episode_index,
                                             start)
            self._video_relpaths = {c: camera_relpath(first, c, self._video_cameras)
                                    for c in self._video_cameras}
            folder = pathlib.Path(self.config.record_file).parent
            self._videos = {c: EpisodeVideo(folder / path, fps=int(self._param('video_fps')))
                            for c, path in self._video_relpaths.items()}
            self._video_start = start

    def _on_video_image(self, camera: str, msg: Image) -> None:
        if self.annotator.state is not annotation.State.RUNNING:
            return
        now = self._now()
        with self._frame_lock:
            video = self._videos.get(camera)
            if video is None:
                return
            due = annotation.frames_due(self._video_start, now, video.frames, video.fps)
            if not due:
                return
            try:
                image = convert.image_from_msg(msg)
                for _ in range(due):
                    video.add(image)
            except RealmError as err:  # a frame of another size: the video keeps the first's
                self.get_logger().error(f'episode video {camera}: {err}')

    def _end_video(self) -> dict[str, Any]:
        """Close the episode's videos; return the record's video fields (paths relative to the
        record file's folder; none when no video was recorded or no frame arrived)."""
        with self._frame_lock:
            videos, self._videos = self._videos, {}
        if not videos:
            return {}
        return video_fields(self._video_relpaths,
                            {c: video.close() for c, video in videos.items()})

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
        before = self._met() if self.annotator.state is annotation.State.RUNNING else 0
        record = self.annotator.end(self._now(), success=success, abort=abort,
                                    steps=self._steps)
        for _ in range(len(record['stages_reached']) - before):
            self.review.marked(scoring.OPERATOR)  # judged success: the rest are the operator's
        record.update(self.review.record_fields())
        record.update(self._end_video())
        annotation.append_record(self.config.record_file, record)
        return json.dumps({k: record[k] for k in (
            'episode_index', 'task', 'outcome', 'progression', 'stages_reached', 'steps')})

    # -- callbacks --------------------------------------------------------------------------

    def _trigger_callback(self, name: str) -> Callable[[Any, Any], Any]:
        """Return the Trigger service callback that runs command ``name``."""
        def callback(request: Any, response: Any) -> Any:
            del request
            return self._on_trigger(name, response)
        return callback

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
            command = KEYS.get(key, key)
            if command == 'help':
                print(HELP, flush=True)
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
    print(HELP, flush=True)
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

    def close(node: Node) -> None:
        del node
        if saved_tty is not None:
            import termios
            termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, saved_tty)

    return spin_node('operator_node', make, args, close=close,
                     until=lambda node: isinstance(node, OperatorNode) and node.quit_requested)


if __name__ == '__main__':
    sys.exit(main())
