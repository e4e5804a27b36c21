"""``evaluator_node``: run paired episodes in the real world and the twin, record, summarise.

The evaluator only orchestrates (docs/evaluation.md): for each pair it sets the episode spec on
both worlds (parameter ``episode_spec`` of ``<ns>/world``), resets them (``<ns>/reset``),
configures and resets each world's policy node, starts both policies at once, follows each
world's ``progress`` until the episode ends (max steps, or 15 steps after success, REALM's
rule), stops the policies and appends one record per world to ``episodes.jsonl``. At the end it
writes ``summary.json`` and ``report.html`` and prints the summary table.

On a real arm the operator sets up the scene: the evaluator prints what to place where and
waits for ``<real_ns>/operator/confirm_reset``; the operator's stage marks arrive on the real
world's ``progress`` topic like the twin's.

The orchestration that is not ROS plumbing (which pairs run, the records, the summary and the
report, the operator's text, when a silent world's episode ends) is
:mod:`realm_ros.programs.paired`'s; this node sets parameters, calls services and follows topics.

Parameters: every field of :class:`realm_ros.core.evaluation.EvalConfig` plus those of
:class:`realm_ros.programs.paired.EvaluatorConfig`.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import sys
import threading
import time
from typing import Any, cast

from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String
from std_srvs.srv import SetBool, Trigger

from realm_ros.core import safety
from realm_ros.core.config import parse_cameras
from realm_ros.core.episode import EpisodeState
from realm_ros.core.errors import ConfigError, DataError, InfrastructureError, RealmError
from realm_ros.core.evaluation import REAL, SIM, EpisodeLog, EvalConfig, PolicyEntry
from realm_ros.core.types import EpisodeSpec, Progress
from realm_ros.io import episode_bags
from realm_ros.io.video import (
    STEP_SLOP_S,
    EpisodeVideo,
    camera_relpath,
    matched_images,
    video_fields,
    video_relpath,
)
from realm_ros.programs.paired import (  # noqa: F401 - EvaluatorConfig: its old home's name
    EvaluatorConfig,
    PairedEvaluation,
    operator_confirmation,
    operator_setup_text,
    overdue,
    world_record,
)
from realm_ros.ros import convert, qos, services, topics
from realm_ros.ros.params import declare_config
from realm_ros.ros.runner import spin_node


@dataclasses.dataclass
class _WorldRun:
    """What the evaluator follows of one world during one episode: the world's ROS side and
    its :class:`EpisodeState` (scored by the world, its progress received from messages)."""

    world: str
    ns: str
    episode: EpisodeState
    finished: threading.Event = dataclasses.field(default_factory=threading.Event)
    stamp: float = 0.0
    last_progress: float = 0.0  # monotonic time of the last progress message
    spec: dict[str, Any] = dataclasses.field(default_factory=dict)  # the episode it runs
    rejected: int = 0  # commands the world's safety rules refused (world/status)

    @property
    def progress(self) -> Progress | None:
        """The last progress the world sent (None before the first)."""
        return self.episode.progress if self.episode.received else None

    @property
    def started(self) -> bool:
        return self.episode.wall_start is not None

    @property
    def error(self) -> str:
        return self.episode.error

    @error.setter
    def error(self, value: str) -> None:
        self.episode.fail(value)


class EvaluatorNode(Node):
    """Orchestrates paired episodes over ROS and writes the records and the report."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__('evaluator', **kwargs)
        self.eval_config = declare_config(self, EvalConfig)
        self.config = declare_config(self, EvaluatorConfig)
        self.out_dir = pathlib.Path(self.config.out_dir)
        self._group = ReentrantCallbackGroup()
        self._service_clients: dict = {}
        self._runs: dict[str, _WorldRun] = {}
        self._lock = threading.Lock()
        self.finished = threading.Event()
        self._stopping = threading.Event()
        self.error: BaseException | None = None
        self.summary: dict[str, Any] | None = None
        self._entries = {e.label: e for e in self.eval_config.policy_entries()}
        self._ns = {REAL: self.config.real_ns, SIM: self.config.sim_ns}
        self._backends = {REAL: self.eval_config.real, SIM: self.eval_config.sim}
        for world, ns in self._ns.items():
            self.create_subscription(
                DiagnosticStatus, f'{ns}/{topics.PROGRESS}',
                lambda msg, w=world: self._on_progress(w, msg), qos.STATE,
                callback_group=self._group)
            # A world that publishes another episode mid-run was restarted (a respawned node)
            # or reset by someone else: its episode no longer is the pair's.
            self.create_subscription(
                String, f'{ns}/{topics.EPISODE}', lambda msg, w=world: self._on_episode(w, msg),
                qos.LATCHED, callback_group=self._group)
            self.create_subscription(
                DiagnosticStatus, f'{ns}/{topics.POLICY_STATUS}',
                lambda msg, w=world: self._on_policy_status(w, msg), qos.STATE,
                callback_group=self._group)
            self.create_subscription(
                DiagnosticStatus, f'{ns}/{topics.WORLD_STATUS}',
                lambda msg, w=world: self._on_policy_status(w, msg), qos.STATE,
                callback_group=self._group)
        # Real arm: the operator confirms resets and ends episodes (operator_node's state).
        self._operator: dict[str, Any] = {}
        self._operator_changed = threading.Condition()
        self._operator_setups: dict[str, dict[str, Any]] = {}
        if self.config.operator_scored_real:
            self.create_subscription(
                String, f'{self.config.real_ns}/operator/state', self._on_operator_state,
                qos.LATCHED, callback_group=self._group)
        # Episode videos (docs/arena.md): subscribed only when asked for, so a headless run
        # never receives an image.
        # Several cameras (a comma list): one video each, the first the arena's (io/video.py).
        self._videos: dict[tuple[str, str], EpisodeVideo] = {}
        self._cameras = parse_cameras(self.config.videos, 'parameter videos')
        # Per world and camera, the images not yet written (time from their stamp, message).
        self._pending: dict[str, dict[str, list[tuple[float, Image]]]] = {}
        for world, ns in self._ns.items():
            for camera in self._cameras:
                self.create_subscription(
                    Image, f'{ns}/{topics.camera_image(camera)}',
                    lambda msg, w=world, c=camera: self._on_image(w, msg, c), qos.IMAGE,
                    callback_group=self._group)
        self._thread: threading.Thread | None = None
        # The ROS-free half: which pairs run, the records (and what made them), the summary.
        self._evaluation = PairedEvaluation(self.eval_config, self.config, self.run_pair,
                                            self.get_logger(), self._stopping.is_set)
        if self.config.autostart:
            self.start()

    # -- public -----------------------------------------------------------------------------

    def start(self) -> None:
        """Run the whole evaluation in a worker thread (never inside an executor callback)."""
        self._thread = threading.Thread(target=self._main, name='evaluator', daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the evaluation early: the running pair is dropped, finished pairs are kept."""
        self._stopping.set()
        with self._lock:
            for run in self._runs.values():
                run.finished.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            # Between two service calls the worker ends at once; inside one (waiting up to
            # service_timeout_s) it ends when the node is destroyed under it, quietly.
            self._thread.join(timeout=0.5)
        if not self.finished.is_set():
            self.get_logger().warning(
                f'stopped before the end: finished pairs are kept in '
                f'{self.out_dir / "episodes.jsonl"}; run again with the same out_dir to resume')

    def _main(self) -> None:
        try:
            self.summary = self.run_all()
        except BaseException as err:  # noqa: BLE001 - reported to the caller, then re-raised
            if self._stopping.is_set():
                return  # stopped while waiting on a service: not an evaluation failure
            self.error = err
            self.get_logger().error(f'evaluation stopped: {err}')
        finally:
            self.finished.set()

    def run_all(self) -> dict[str, Any]:
        """Run every unfinished pair, then write summary.json and report.html
        (:class:`~realm_ros.programs.paired.PairedEvaluation`, each pair over ROS by
        :meth:`run_pair`)."""
        return self._evaluation.run()

    def run_pair(self, spec: EpisodeSpec, log: EpisodeLog) -> None:
        """Run ``spec`` in each of its worlds that has not finished it yet, concurrently."""
        worlds = [w for w in self._evaluation.worlds(spec) if not log.done(spec.pair_id, w)]
        runs = {w: _WorldRun(world=w, ns=self._ns[w],
                             episode=EpisodeState(spec, tracked=False, started=False),
                             spec=json.loads(spec.to_json()))
                for w in worlds}
        try:  # before the resets, so a pair's bag holds its reset too (io/episode_bags.py)
            self._split_bags(spec)
        except InfrastructureError as err:
            # No bag for this pair: it is not run, and a re-run retries it (issue 15).
            for run in runs.values():
                run.error = run.error or f'recording: {err}'
                run.finished.set()
        for world in worlds:
            try:
                self._prepare(world, spec)
            except InfrastructureError as err:
                runs[world].error = str(err)
                runs[world].finished.set()
        with self._lock:
            self._runs = {w: r for w, r in runs.items() if not r.finished.is_set()}
        self._start_videos(spec, list(self._runs))
        active: list[_WorldRun] = []
        for run in self._runs.values():  # both worlds start together: no client waits between
            try:
                services.ready_client(self, SetBool, f'{run.ns}/policy/set_active',
                                      self.config.service_timeout_s, self._service_clients)
            except InfrastructureError as err:
                run.error = str(err)
                run.finished.set()
        for run in [r for r in self._runs.values() if not r.finished.is_set()]:
            run.last_progress = run.episode.start()
            try:
                self._activate(run.ns, True)
                active.append(run)
            except InfrastructureError as err:
                run.error = str(err)
                run.finished.set()
        self._wait_for_end(runs, active)
        if self._stopping.is_set():
            self._end_videos(keep=False)
            raise KeyboardInterrupt  # an unfinished pair is not recorded; it re-runs on resume
        with self._lock:
            self._runs = {}
        videos = self._end_videos(keep=True)
        bags = services.recorder_status(self, self.config.recorders,
                                        self.config.service_timeout_s, self._service_clients)
        for world in worlds:
            record = self._record(spec, runs[world])
            record.update(video_fields(self._video_relpaths(world, spec), {
                camera: frames for (w, camera), frames in videos.items() if w == world}))
            episode_bags.note_bag(self.out_dir, record, self._ns[world], bags)  # before log
            log.append(record)

    def _start_videos(self, spec: EpisodeSpec, worlds: list[str]) -> None:
        """Open one video per running world; its images are appended until the episode ends."""
        with self._lock:
            for world in worlds:
                for camera, relpath in self._video_relpaths(world, spec).items():
                    self._videos[(world, camera)] = EpisodeVideo(self.out_dir / relpath)

    def _video_relpaths(self, world: str, spec: EpisodeSpec) -> dict[str, str]:
        """Each recorded camera's video of ``world``'s episode, relative to ``out_dir``."""
        first = video_relpath(world, spec.pair_id)
        return {c: camera_relpath(first, c, self._cameras) for c in self._cameras}

    def _end_videos(self, keep: bool) -> dict[tuple[str, str], int]:
        """Close (or, for a pair that is not recorded, drop) the videos; frames per (world,
        camera)."""
        with self._lock:
            videos, self._videos = self._videos, {}
            self._pending = {}
        if not keep:
            for video in videos.values():
                video.abandon()
            return {}
        return {key: video.close() for key, video in videos.items()}

    def _on_image(self, world: str, msg: Image, camera: str) -> None:
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        with self._lock:
            run = self._runs.get(world)
            # A world whose episode ended first (a real arm keeps publishing) adds no idle
            # frames.
            if run is None or run.finished.is_set() or (world, camera) not in self._videos:
                return
            pending = self._pending.setdefault(world, {c: [] for c in self._cameras})
            pending[camera].append((stamp, msg))
            try:  # under the lock: a step's frames go to every video before the next step's
                for step in matched_images(pending, STEP_SLOP_S):
                    for name, image in step.items():
                        self._videos[(world, name)].add(convert.image_from_msg(image))
            except RealmError as err:
                self.get_logger().error(f'{world} video: {err}')

    def _wait_for_end(self, runs: dict[str, _WorldRun], active: list[_WorldRun]) -> None:
        """Wait until every run ends; a stalled or silent world ends as infrastructure failure.

        Each world's policy in ``active`` is stopped as soon as its own run ends: a world that
        finished first (a fast twin, a real arm whose episode was judged) must not go on
        moving while the other world still runs."""
        deadline = time.monotonic() + self.config.episode_timeout_s
        to_stop = list(active)
        while True:
            for run in runs.values():
                if run.finished.is_set():
                    continue
                error = overdue(run.episode, run.ns, time.monotonic(), deadline,
                                run.last_progress, self.config)
                if not error:
                    continue
                run.error = error
                self.get_logger().error(f'{run.world}: {run.error}')
                run.finished.set()
            if self._stopping.is_set():
                return
            for run in [r for r in to_stop if r.finished.is_set()]:
                to_stop.remove(run)
                try:
                    self._activate(run.ns, False)
                except InfrastructureError as err:
                    run.error = run.error or str(err)
            waiting = [r for r in runs.values() if not r.finished.is_set()]
            if not waiting and not to_stop:
                return
            if waiting:
                waiting[0].finished.wait(0.05)

    # -- per world ----------------------------------------------------------------------------

    def _prepare(self, world: str, spec: EpisodeSpec) -> None:
        ns = self._ns[world]
        entry = self._entries.get(spec.policy) or PolicyEntry.parse(spec.policy)
        timeout = self.config.service_timeout_s
        services.set_parameters(self, f'{ns}/world', {'episode_spec': spec.to_json()},
                                timeout, self._service_clients)
        response = services.call(self, Trigger, f'{ns}/{topics.RESET}', timeout_s=timeout,
                                 clients=self._service_clients)
        if not response.success:
            raise InfrastructureError(f'{ns} reset failed: {response.message}')
        if world == REAL and self.config.operator_scored_real:
            self._operator_setup(ns, spec)  # the arm is home: the operator sets the scene
        # The policy's own seed stays as configured: the episode seed reaches it through the
        # spec, exactly as in core.episode.run_episode.
        services.set_parameters(self, f'{ns}/policy', {
            'policy': entry.policy, 'policy_args': json.dumps(dict(entry.args))},
            timeout, self._service_clients)
        response = services.call(self, Trigger, f'{ns}/policy/reset', timeout_s=timeout,
                                 clients=self._service_clients)
        if not response.success:
            raise InfrastructureError(f'{ns} policy reset failed: {response.message}')

    def _operator_setup(self, ns: str, spec: EpisodeSpec) -> None:
        """Tell the operator what to set up and wait until they confirm the reset."""
        with self._operator_changed:
            previous = self._operator.get('episode_index', -1)
        services.set_parameters(self, f'{ns}/operator', {'episode_spec': spec.to_json()},
                                self.config.service_timeout_s, self._service_clients)
        text, changes = operator_setup_text(spec, ns)
        print(text, flush=True)
        self.get_logger().info(f'waiting for the operator to confirm the reset of '
                               f'{spec.pair_id}')

        def confirmed() -> bool:
            return (self._operator.get('state') == 'running'
                    and self._operator.get('episode_index', -1) > previous)

        with self._operator_changed:
            if not self._operator_changed.wait_for(confirmed, self.config.episode_timeout_s):
                raise InfrastructureError(
                    f'the operator did not confirm the reset of {spec.pair_id} within '
                    f'{self.config.episode_timeout_s:g} s')
        # Recorded with the real episode: what was asked, and that the operator confirmed it.
        self._operator_setups[spec.pair_id] = operator_confirmation(spec, changes)

    def _on_operator_state(self, msg: String) -> None:
        try:
            state = json.loads(msg.data)
        except json.JSONDecodeError:
            self.get_logger().error(f'malformed operator state: {msg.data!r}')
            return
        with self._operator_changed:
            self._operator = state
            self._operator_changed.notify_all()
        with self._lock:
            run = self._runs.get(REAL)
        # The operator ended the episode (judged, ended or aborted): the real run is over.
        if run is not None and run.started and state.get('state') != 'running':
            run.finished.set()

    def _split_bags(self, spec: EpisodeSpec) -> None:
        """Start a new bag in every recorder for this pair (the bag name is logged)."""
        for name in filter(None, (r.strip() for r in self.config.recorders.split(','))):
            response = services.call(self, Trigger, f'{name}/split',
                                     timeout_s=self.config.service_timeout_s,
                                     clients=self._service_clients)
            if not response.success:
                raise InfrastructureError(f'{name} could not start a bag: {response.message}')
            opened = json.loads(response.message).get('opened', '')
            self.get_logger().info(f'{spec.pair_id}: recording to {opened}')

    def _activate(self, ns: str, active: bool) -> None:
        request = SetBool.Request(data=active)
        response = services.call(self, SetBool, f'{ns}/policy/set_active', request,
                                 self.config.service_timeout_s, self._service_clients)
        if not response.success:
            raise InfrastructureError(f'{ns} policy refused set_active={active}: '
                                      f'{response.message}')

    def _on_progress(self, world: str, msg: DiagnosticStatus) -> None:
        with self._lock:
            run = self._runs.get(world)
        if run is None or run.finished.is_set():
            return
        run.last_progress = time.monotonic()
        if run.episode.receive(convert.progress_from_msg(msg)):
            run.finished.set()

    def _on_episode(self, world: str, msg: String) -> None:
        with self._lock:
            run = self._runs.get(world)
        if run is None or not run.started or run.finished.is_set():
            return
        try:
            spec = json.loads(msg.data).get('spec')
        except (json.JSONDecodeError, AttributeError):
            spec = None
        if spec != run.spec:
            task = spec.get('task') if isinstance(spec, dict) else spec
            run.error = (f'{run.ns} started another episode (task {task!r}) mid-episode: the '
                         'world restarted or was reset')
            self.get_logger().error(f'{world}: {run.error}')
            run.finished.set()

    def _on_policy_status(self, world: str, msg: DiagnosticStatus) -> None:
        """A policy or world that fails for infrastructure reasons ends its episode, unscored;
        a world's refused command (safety) is counted for the record."""
        if msg.level == DiagnosticStatus.WARN and msg.name == safety.REJECTED_STATUS:
            count = next((int(v.value) for v in msg.values if v.key == 'rejected'), 0)
            with self._lock:
                run = self._runs.get(world)
                if run is not None:
                    run.rejected = max(run.rejected, count)
            return
        if msg.level != DiagnosticStatus.ERROR:
            return
        with self._lock:
            run = self._runs.get(world)
        if run is not None and not run.finished.is_set():
            run.error = f'{msg.name or "policy"} infrastructure failure: {msg.message}'
            run.finished.set()

    def _record(self, spec: EpisodeSpec, run: _WorldRun) -> dict[str, Any]:
        setup = self._operator_setups.get(spec.pair_id) if run.world == REAL else None
        record = world_record(spec, run.world, self._backends[run.world], run.episode, setup)
        record['rejected'] = run.rejected  # commands the world's safety rules refused
        return record


def main(args: list[str] | None = None) -> int:
    """Run ``evaluator_node``: 0 when every pair is done, 2 on bad parameters or data, 1 if
    the evaluation failed, 130 when stopped (SIGINT/SIGTERM) before the end."""
    return spin_node('evaluator_node', EvaluatorNode, args,
                     close=lambda node: cast(EvaluatorNode, node).stop(),
                     until=lambda node: cast(EvaluatorNode, node).finished.is_set(),
                     executor=lambda: MultiThreadedExecutor(num_threads=4),
                     result=_exit_code, stopped=130)


def _exit_code(node: Node) -> int:
    """Map the worker's outcome onto the exit code (one line on stderr for a failure)."""
    assert isinstance(node, EvaluatorNode)
    if node.error is None:
        return 0
    if isinstance(node.error, (ConfigError, DataError)):
        print(f'evaluator_node: {node.error}', file=sys.stderr)
        return 2
    print(f'evaluator_node: evaluation failed: {node.error}', file=sys.stderr)
    return 1

if __name__ == '__main__':
    sys.exit(main())
