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

Parameters: every field of :class:`realm_ros.core.evaluation.EvalConfig` plus those of
:class:`EvaluatorConfig`.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import sys
import threading
import time
from typing import Any, Callable

from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String
from std_srvs.srv import SetBool, Trigger

from realm_ros.core import allocation, perturbations
from realm_ros.core.config import field
from realm_ros.core.episode import EpisodeReferee
from realm_ros.core.errors import ConfigError, DataError, InfrastructureError, RealmError
from realm_ros.core.evaluation import (
    REAL,
    SIM,
    EpisodeLog,
    EvalConfig,
    PolicyEntry,
    format_table,
    plan_pairs,
    skipped_cells,
    summarize,
)
from realm_ros.core.types import EpisodeResult, EpisodeSpec, Progress, record_role
from realm_ros.core.world import initial_state_sampler, perturbed_state_function
from realm_ros.io import episode_bags
from realm_ros.io.video import EpisodeVideo, video_relpath
from realm_ros.ros import convert, qos, services, topics
from realm_ros.ros.params import declare_config
from realm_ros.ros.runner import spin_node


@dataclasses.dataclass(frozen=True)
class EvaluatorConfig:
    """Where the evaluator writes and which worlds it drives."""

    out_dir: str = field('realm_eval', 'output folder: episodes.jsonl, summary.json, report')
    real_ns: str = field('/real', 'namespace of the real world')
    sim_ns: str = field('/sim', 'namespace of the simulated world')
    operator_scored_real: bool = field(
        False, 'real stages come from an operator (real arm) instead of privileged state')
    episode_timeout_s: float = field(
        600.0, 'wall seconds before a stalled episode is ended as an infrastructure failure')
    service_timeout_s: float = field(30.0, 'wall seconds to wait for a service answer')
    stall_timeout_s: float = field(
        60.0, 'wall seconds without a progress message from a running world before its episode '
              'is ended as an infrastructure failure (world or policy down, messages lost)')
    autostart: bool = field(True, 'start evaluating as soon as the graph is up')
    recorders: str = field(
        '', 'comma-separated recorder_node names (fully qualified) to split per pair, so each '
            'pair gets its own bag')
    quiet: bool = field(False, 'no progress bar and no table on stdout')
    videos: str = field(
        '', 'camera whose images are saved as one WebM video per episode and world, '
            'videos/<role>/<episode id>.webm beside episodes.jsonl (the record names it); "" = '
            'no videos and no image subscription')

    def __post_init__(self) -> None:
        for name in ('real_ns', 'sim_ns'):
            if not getattr(self, name).startswith('/'):
                raise ConfigError(f'EvaluatorConfig.{name} must be an absolute namespace, '
                                  f'got {getattr(self, name)!r}')


@dataclasses.dataclass
class _WorldRun:
    """What the evaluator follows of one world during one episode."""

    world: str
    ns: str
    referee: EpisodeReferee
    progress: Progress | None = None
    started: float = 0.0
    finished: threading.Event = dataclasses.field(default_factory=threading.Event)
    error: str = ''
    stamp: float = 0.0
    last_progress: float = 0.0  # monotonic time of the last progress message
    spec: dict[str, Any] = dataclasses.field(default_factory=dict)  # the episode it runs


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
        self._videos: dict[str, EpisodeVideo] = {}
        if self.config.videos:
            for world, ns in self._ns.items():
                self.create_subscription(
                    Image, f'{ns}/{topics.camera_image(self.config.videos)}',
                    lambda msg, w=world: self._on_image(w, msg), qos.IMAGE,
                    callback_group=self._group)
        self._thread: threading.Thread | None = None
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

    def run_all(self, progress_bar: Callable[..., Any] | None = None) -> dict[str, Any]:
        """Run every unfinished pair, then write summary.json and report.html."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        log = EpisodeLog(self.out_dir / 'episodes.jsonl')
        if log.skipped_lines:
            self.get_logger().warning(
                f'{log.skipped_lines} unreadable line(s) in episodes.jsonl; those episodes re-run')
        for cell in skipped_cells(self.eval_config):
            self.get_logger().warning(f'skipped {cell["task"]} / {cell["perturbation"]}: '
                                      f'{cell["reason"]}')
        decided = None
        if self.eval_config.until_decided:
            decided = self._run_until_decided(log)
        else:
            self._run_plan(log)
        summary = summarize(log.records, skipped=skipped_cells(self.eval_config))
        if decided is not None:
            summary['until_decided'] = decided
        summary['config'] = dataclasses.asdict(self.eval_config)
        # Judgments of this run's videos (realm-ros arena), if any, beside the rubric ranking.
        from realm_ros.arena.ranking import attach
        attach(summary, self.out_dir)
        (self.out_dir / 'summary.json').write_text(json.dumps(summary, indent=2))
        from realm_ros.report import write_report
        write_report(self.out_dir, summary, _report_meta(self.eval_config))
        if not self.config.quiet:
            print(format_table(summary), flush=True)
            print(f'report: {self.out_dir / "report.html"}', flush=True)
        return summary

    def _run_plan(self, log: EpisodeLog) -> None:
        """Run every unfinished pair of the fixed plan, in order."""
        specs = plan_pairs(self.eval_config, sampler=initial_state_sampler())
        todo = [s for s in specs if not (log.done(s.pair_id, REAL) and log.done(s.pair_id, SIM))]
        self.get_logger().info(
            f'{len(specs)} pairs planned, {len(specs) - len(todo)} already done, '
            f'{len(todo)} to run; writing {self.out_dir}')
        bar = _progress_bar(len(specs), len(specs) - len(todo), self.config.quiet)
        for spec in todo:
            if self._stopping.is_set():
                raise KeyboardInterrupt
            self.run_pair(spec, log)
            bar.update(1)
            bar.set_postfix_str(spec.pair_id)
        bar.close()

    def _run_until_decided(self, log: EpisodeLog) -> dict[str, Any]:
        """Choose pairs one at a time until the real ranking is decided (or the budget is
        spent); return the decision for summary.json (docs/deciding-rankings.md).

        A re-run replays the finished pairs in the order they were chosen, so it resumes the
        same sequence. A pair whose real episode failed (infrastructure) ends the run: the
        choice of the next pair needs its score, and a re-run retries it.
        """
        ranking = allocation.decided_ranking(self.eval_config, seed=self.eval_config.seed)
        sampler = initial_state_sampler()
        bar = _progress_bar(ranking.budget, 0, self.config.quiet)
        bar.set_description('pairs (until decided)')
        stopped = ''
        while (request := ranking.next()) is not None:
            if self._stopping.is_set():
                raise KeyboardInterrupt
            spec = allocation.spec_for(self.eval_config, request, sampler)
            if not (log.done(spec.pair_id, REAL) and log.done(spec.pair_id, SIM)):
                self.run_pair(spec, log)
            real = next((r for r in reversed(log.records) if r['pair_id'] == spec.pair_id
                         and record_role(r) == REAL and r.get('outcome') != 'infra_failure'),
                        None)
            if real is None or not log.done(spec.pair_id, SIM):
                stopped = (f'pair {spec.pair_id} did not finish (infrastructure); re-run the '
                           'same command to retry it and go on')
                self.get_logger().warning(stopped)
                break
            state = ranking.record(request, float(real['progression']))
            bar.update(1)
            bar.set_postfix_str(' > '.join(state.order) + f' (min P '
                                f'{min(state.pair_probability):.2f})')
        bar.close()
        result = ranking.state.as_dict()
        result['budget'] = ranking.budget
        result['allocation'] = ranking.allocation
        result['stopped'] = stopped or ('decided' if ranking.state.decided else
                                        'budget spent before the ranking was decided')
        scores = {p: v for p, v in ranking.scores.items()}
        if all(scores.values()):
            rows = allocation.fixed_design_power(scores, self.eval_config.until_decided)
            result['fixed_design'] = [r.as_dict() for r in rows]
            needed = [r.episodes_per_policy for r in rows]
            result['fixed_design_total'] = (None if None in needed
                                            else max(needed) * len(scores))  # type: ignore
        return result

    def run_pair(self, spec: EpisodeSpec, log: EpisodeLog) -> None:
        """Run ``spec`` in each world that has not finished it yet, concurrently."""
        worlds = [w for w in (REAL, SIM) if not log.done(spec.pair_id, w)]
        runs = {w: _WorldRun(world=w, ns=self._ns[w],
                             referee=EpisodeReferee(self.eval_config.max_steps),
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
            run.started = run.last_progress = time.monotonic()
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
            if videos.get(world):
                record['video'] = video_relpath(world, spec.pair_id)
            episode_bags.note_bag(self.out_dir, record, self._ns[world], bags)  # before log
            log.append(record)

    def _start_videos(self, spec: EpisodeSpec, worlds: list[str]) -> None:
        """Open one video per running world; its images are appended until the episode ends."""
        if not self.config.videos:
            return
        with self._lock:
            for world in worlds:
                self._videos[world] = EpisodeVideo(
                    self.out_dir / video_relpath(world, spec.pair_id))

    def _end_videos(self, keep: bool) -> dict[str, int]:
        """Close (or, for a pair that is not recorded, drop) the videos; frames per world."""
        with self._lock:
            videos, self._videos = self._videos, {}
        if not keep:
            for video in videos.values():
                video.abandon()
            return {}
        return {world: video.close() for world, video in videos.items()}

    def _on_image(self, world: str, msg: Image) -> None:
        with self._lock:
            video = self._videos.get(world)
            run = self._runs.get(world)
        # A world whose episode ended first (a real arm keeps publishing) adds no idle frames.
        if video is not None and run is not None and not run.finished.is_set():
            try:
                video.add(convert.image_from_msg(msg))
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
                now = time.monotonic()
                step = run.progress.step if run.progress else None
                if now >= deadline:
                    run.error = (f'episode stalled: no end after '
                                 f'{self.config.episode_timeout_s:g} s (last step {step})')
                elif now - run.last_progress > self.config.stall_timeout_s:
                    run.error = (f'no progress from {run.ns} for {now - run.last_progress:.1f} '
                                 f's (last step {step}): world or policy down, or messages lost')
                else:
                    continue
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
        lines = [f'[{spec.pair_id}] set up the real scene: task {spec.task!r}, perturbation '
                 f'{spec.perturbation} (intensity {spec.intensity:g})']
        state, changes = perturbation_setup(spec)
        if spec.perturbation != 'Default':
            scored = perturbations.scored_task(spec.task, spec.perturbation, spec.intensity,
                                               spec.seed)
            params = perturbations.sample(spec.task, spec.perturbation, spec.intensity,
                                          spec.seed)
            lines.append(f'    instruction: "{params.get("instruction", scored.instruction)}"; '
                         f'stages {", ".join(scored.stages)}')
        for key, value in sorted(state.items()):
            lines.append(f'    {key}: {value}')
        if changes:
            lines.append('  change by hand before this episode:')
            lines += [f'    - {change}' for change in changes]
        lines.append(f'  then confirm: press r in the operator terminal, or ros2 service call '
                     f'{ns}/operator/confirm_reset std_srvs/srv/Trigger')
        print('\n'.join(lines), flush=True)
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
        self._operator_setups[spec.pair_id] = {
            'perturbation': spec.perturbation, 'changes': changes, 'confirmed': True,
            'confirmed_at': time.time()}

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
        progress = convert.progress_from_msg(msg)
        run.progress = progress
        run.last_progress = time.monotonic()
        if run.referee.update(progress.step, progress.max_progression):
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
        """A policy or world that fails for infrastructure reasons ends its episode, unscored."""
        if msg.level != DiagnosticStatus.ERROR:
            return
        with self._lock:
            run = self._runs.get(world)
        if run is not None and not run.finished.is_set():
            run.error = f'{msg.name or "policy"} infrastructure failure: {msg.message}'
            run.finished.set()

    def _record(self, spec: EpisodeSpec, run: _WorldRun) -> dict[str, Any]:
        progress = run.progress
        stages = list(progress.stages) if progress else []
        reached = progress.reached if progress else ()
        record = EpisodeResult(
            spec=spec, role=run.world, backend=self._backends[run.world],
            outcome=run.referee.outcome(run.error), progression=run.referee.progression,
            stages=tuple(stages), stages_reached=reached,
            steps=progress.step if progress else 0, sim_time_s=None,
            wall_time_s=time.monotonic() - run.started if run.started else 0.0,
            error=run.error, scored_by=progress.source if progress else '').to_record()
        if run.world == REAL and spec.pair_id in self._operator_setups:
            record['operator_setup'] = self._operator_setups[spec.pair_id]
        return record


def perturbation_setup(spec: EpisodeSpec) -> tuple[dict[str, Any], list[str]]:
    """Return the initial state the real scene must show (perturbed as the twin perturbs it:
    VB-POSE's poses, added objects' places) and the changes the operator makes by hand."""
    if spec.perturbation == 'Default':
        return dict(spec.initial_state), []
    params = perturbations.sample(spec.task, spec.perturbation, spec.intensity, spec.seed)
    perturbed = perturbed_state_function()
    state = dict(spec.initial_state)
    if perturbed is not None and state:
        state = perturbed(spec, params)
    return state, perturbations.operator_instructions(spec.task, spec.perturbation, params)


def _progress_bar(total: int, initial: int, quiet: bool) -> Any:
    from tqdm import tqdm
    return tqdm(total=total, initial=initial, desc='pairs', unit='pair', disable=quiet,
                dynamic_ncols=True, file=sys.stderr)


def _report_meta(config: EvalConfig) -> dict[str, Any]:
    meta: dict[str, Any] = {
        'real': 'digital real (MuJoCo with hidden dynamics, via the franka '
                'bridge)' if config.real == 'digital_real' else 'Franka arm via franka_ros2',
        'sim': f'{config.sim} twin, '
               + (f'identified parameters {config.sim_params_file}' if config.sim_params_file
                  else 'default parameters'),
    }
    if config.sim_params_file:
        from realm_ros.core.config import DynamicsParams
        params = DynamicsParams.from_yaml(config.sim_params_file)
        meta['sim_params'] = {'friction': list(params.friction),
                              'armature': list(params.armature)}
    return meta


def main(args: list[str] | None = None) -> int:
    """Run ``evaluator_node``: 0 when every pair is done, 2 on bad parameters or data, 1 if
    the evaluation failed, 130 when stopped (SIGINT/SIGTERM) before the end."""
    return spin_node('evaluator_node', EvaluatorNode, args, close=lambda node: node.stop(),
                     until=lambda node: node.finished.is_set(),
                     executor=lambda: MultiThreadedExecutor(num_threads=4),
                     result=_exit_code, stopped=130)


def _exit_code(node: EvaluatorNode) -> int:
    """Map the worker's outcome onto the exit code (one line on stderr for a failure)."""
    if node.error is None:
        return 0
    if isinstance(node.error, (ConfigError, DataError)):
        print(f'evaluator_node: {node.error}', file=sys.stderr)
        return 2
    print(f'evaluator_node: evaluation failed: {node.error}', file=sys.stderr)
    return 1

if __name__ == '__main__':
    sys.exit(main())
