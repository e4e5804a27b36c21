"""The paired evaluation's ROS-free half: what ``evaluator_node`` decides, writes and says.

``evaluator_node`` is ROS plumbing around this module (as ``world_node`` is around a
``World``): it sets parameters, calls services and follows topics, and hands each pair to
:class:`PairedEvaluation`, which owns the rest: which pairs run (the fixed plan, or one at a
time until the real ranking is decided), the record of each world's episode (from its
:class:`~realm_ros.core.episode.EpisodeState`), ``summary.json`` and ``report.html``, the
operator's setup text for a real arm, the report's description of the worlds, and the rules
that end a silent or stalled episode. Its configuration, :class:`EvaluatorConfig`, lives
here, beside the code it configures (docs/architecture.md, "Where a config lives").
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import sys
import time
from typing import Any, Callable, Mapping, Protocol, Sequence

from realm_ros.core import allocation, backends, perturbations, provenance
from realm_ros.core.config import field
from realm_ros.core.episode import EpisodeState
from realm_ros.core.errors import ConfigError
from realm_ros.core.evaluation import (
    REAL,
    SIM,
    EpisodeLog,
    EvalConfig,
    format_table,
    plan_pairs,
    scored,
    skipped_cells,
    summarize,
)
from realm_ros.core.types import EpisodeResult, EpisodeSpec, record_role
from realm_ros.core.world import initial_state_sampler, perturbed_state_function


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
        '', 'cameras (a comma list) whose images are saved as one WebM video per episode, '
            'world and camera: the first as videos/<role>/<episode id>.webm beside '
            'episodes.jsonl (the record names it in video), each further one as '
            'videos/<role>/<camera>/<episode id>.webm (with several, the record names all in '
            'camera_videos); "" = no videos and no image subscription')
    execute_horizon: int = field(
        0, "actions the policy nodes execute open loop per chunk (0 = each policy's own); "
           'recorded with each episode (made_by), as the policy nodes were given it')
    rerun_changed: bool = field(
        False, 'episodes in out_dir made with other settings run again into it (instead of '
               'the run being refused)')

    def __post_init__(self) -> None:
        for name in ('real_ns', 'sim_ns'):
            if not getattr(self, name).startswith('/'):
                raise ConfigError(f'EvaluatorConfig.{name} must be an absolute namespace, '
                                  f'got {getattr(self, name)!r}')


class Logger(Protocol):
    """What :class:`PairedEvaluation` logs through (an rclpy node's logger is one)."""

    def info(self, message: str) -> Any: ...

    def warning(self, message: str) -> Any: ...


#: ``run_pair(spec, log)``: run ``spec`` in each of its worlds (:meth:`PairedEvaluation.worlds`)
#: that has not finished it and append the records to ``log`` (``evaluator_node.run_pair``,
#: over ROS).
RunPair = Callable[[EpisodeSpec, EpisodeLog], None]


class PairedEvaluation:
    """Which pairs run, in which order, and what is written at the end.

    Args:
        eval_config: the evaluation (:class:`EvalConfig`); ``config`` the evaluator's.
        run_pair: runs one pair (:data:`RunPair`).
        logger: where progress and skipped cells are logged.
        stopping: returns True once the evaluation is to end early (a pair in flight is not
            recorded; ``KeyboardInterrupt`` is raised between pairs).
    """

    def __init__(self, eval_config: EvalConfig, config: EvaluatorConfig, run_pair: RunPair,
                 logger: Logger, stopping: Callable[[], bool] = lambda: False) -> None:
        self.eval_config = eval_config
        self.config = config
        self.out_dir = pathlib.Path(config.out_dir)
        self._run_pair = run_pair
        self._logger = logger
        self._stopping = stopping
        self._settings = settings_of(eval_config, config.execute_horizon)

    def made_by(self, record: Mapping[str, Any]) -> dict[str, Any] | None:
        """The settings this run gives the episode of ``record`` (a record or a spec's
        ``{'policy', 'role'}``); None for a policy not in this run."""
        return self._settings(record)

    def run(self) -> dict[str, Any]:
        """Run every unfinished pair, then write summary.json and report.html."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        log = EpisodeLog(self.out_dir / 'episodes.jsonl', made_by=self.made_by)
        if log.skipped_lines:
            self._logger.warning(
                f'{log.skipped_lines} unreadable line(s) in episodes.jsonl; those episodes re-run')
        changed = provenance.reconcile(log, self.made_by, self.config.rerun_changed,
                                       str(self.out_dir), FLAGS)
        if changed:
            self._logger.info(provenance.rerun_line(changed, FLAGS))
        for cell in skipped_cells(self.eval_config):
            self._logger.warning(f'skipped {cell["task"]} / {cell["perturbation"]}: '
                                 f'{cell["reason"]}')
        decided = None
        if self.eval_config.until_decided:
            decided = self.run_until_decided(log)
        else:
            self.run_plan(log)
        summary = summarize(log.records, skipped=skipped_cells(self.eval_config))
        if decided is not None:
            summary['until_decided'] = decided
        summary['config'] = dataclasses.asdict(self.eval_config)
        # What the records were actually run with (each record carries its own made_by).
        summary['made_by'] = provenance.summarize(scored(log.records))
        # Commands each world's safety rules refused (the same rules in both: issue 37).
        summary['rejections'] = rejections(log.records)
        # Judgments of this run's videos (realm-ros arena), if any, beside the rubric ranking.
        from realm_ros.arena.ranking import attach
        attach(summary, self.out_dir)
        (self.out_dir / 'summary.json').write_text(json.dumps(summary, indent=2))
        from realm_ros.programs.report import write_report
        write_report(self.out_dir, summary, report_meta(self.eval_config))
        if not self.config.quiet:
            print(format_table(summary), flush=True)
            print(f'report: {self.out_dir / "report.html"}', flush=True)
        return summary

    def worlds(self, spec: EpisodeSpec) -> tuple[str, ...]:
        """The worlds ``spec`` runs in: the twin alone for a policy of ``twin_only`` (its real
        score is predicted in ``summary.json["prediction"]``), else both."""
        return (SIM,) if spec.policy in self.eval_config.twin_only else (REAL, SIM)

    def run_plan(self, log: EpisodeLog) -> None:
        """Run every unfinished pair of the fixed plan, in order."""
        specs = plan_pairs(self.eval_config, sampler=initial_state_sampler())
        todo = [s for s in specs if not all(log.done(s.pair_id, w) for w in self.worlds(s))]
        self._logger.info(
            f'{len(specs)} pairs planned, {len(specs) - len(todo)} already done, '
            f'{len(todo)} to run; writing {self.out_dir}')
        bar = progress_bar(len(specs), len(specs) - len(todo), self.config.quiet)
        for spec in todo:
            if self._stopping():
                raise KeyboardInterrupt
            self._run_pair(spec, log)
            bar.update(1)
            bar.set_postfix_str(spec.pair_id)
        bar.close()

    def run_until_decided(self, log: EpisodeLog) -> dict[str, Any]:
        """Choose pairs one at a time until the real ranking is decided (or the budget is
        spent); return the decision for summary.json (docs/deciding-rankings.md).

        A re-run replays the finished pairs in the order they were chosen, so it resumes the
        same sequence. A pair whose real episode failed (infrastructure) ends the run: the
        choice of the next pair needs its score, and a re-run retries it.
        """
        ranking = allocation.decided_ranking(self.eval_config, seed=self.eval_config.seed)
        sampler = initial_state_sampler()
        bar = progress_bar(ranking.budget, 0, self.config.quiet)
        bar.set_description('pairs (until decided)')
        stopped = ''
        while (request := ranking.next()) is not None:
            if self._stopping():
                raise KeyboardInterrupt
            spec = allocation.spec_for(self.eval_config, request, sampler)
            if not (log.done(spec.pair_id, REAL) and log.done(spec.pair_id, SIM)):
                self._run_pair(spec, log)
            real = next((r for r in reversed(log.records) if r['pair_id'] == spec.pair_id
                         and record_role(r) == REAL and r.get('outcome') != 'infra_failure'),
                        None)
            if real is None or not log.done(spec.pair_id, SIM):
                stopped = (f'pair {spec.pair_id} did not finish (infrastructure); re-run the '
                           'same command to retry it and go on')
                self._logger.warning(stopped)
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


#: Settings set by a flag other than ``--<setting>`` (provenance's messages name the flag).
FLAGS = {'real_appearance': '--appearance'}


def settings_of(config: EvalConfig, execute_horizon: int = 0
                ) -> Callable[[Mapping[str, Any]], dict[str, Any] | None]:
    """Return ``record -> made_by``: the settings that change a paired episode in its world
    (:mod:`realm_ros.core.provenance`; parameter files by content, read once here)."""
    common = {'max_steps': config.max_steps, 'intensity': config.intensity,
              'cameras': config.cameras, 'execute_horizon': execute_horizon,
              'code': provenance.code_version()}
    worlds = {
        REAL: {'real': config.real,
               'real_dynamics': provenance.file_setting(config.real_dynamics_file),
               'real_appearance': provenance.file_setting(config.real_appearance_file)},
        SIM: {'sim': config.sim, 'sim_params': provenance.file_setting(config.sim_params_file),
              'visual_match': provenance.dir_setting(config.visual_match_dir)}}
    policies = {e.label: provenance.policy_setting(e.policy, e.args)
                for e in config.policy_entries()}

    def made_by(record: Mapping[str, Any]) -> dict[str, Any] | None:
        world, label = record_role(record), record.get('policy')
        if world not in worlds or label not in policies:
            return None
        return {'policy': policies[label], **worlds[world], **common}
    return made_by


def rejections(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per world, the commands its safety rules refused over the scored episodes, and in
    how many episodes (records written before the count existed count as none)."""
    out: dict[str, Any] = {}
    for world in (REAL, SIM):
        counts = [int(r.get('rejected') or 0) for r in scored(records)
                  if record_role(r) == world]
        out[world] = {'commands': sum(counts), 'episodes': sum(1 for c in counts if c)}
    return out


def world_record(spec: EpisodeSpec, role: str, backend: str, episode: EpisodeState,
                 operator_setup: dict[str, Any] | None = None) -> dict[str, Any]:
    """Return the ``episodes.jsonl`` record of one world's episode, scored by the world (its
    progress received): stages and scorer empty when no progress came."""
    progress = episode.progress if episode.received else None
    record = EpisodeResult(
        spec=spec, role=role, backend=backend, outcome=episode.outcome(),
        progression=episode.referee.progression,
        stages=tuple(progress.stages) if progress else (),
        stages_reached=progress.reached if progress else (), steps=episode.steps,
        sim_time_s=None, wall_time_s=episode.wall_time(), error=episode.error,
        scored_by=progress.source if progress else '').to_record()
    if operator_setup is not None:
        record['operator_setup'] = operator_setup
    return record


def overdue(episode: EpisodeState, ns: str, now: float, deadline: float,
            last_progress: float, config: EvaluatorConfig) -> str:
    """Return why a running episode ends now as an infrastructure failure ('' if it goes on):
    past ``deadline`` (``episode_timeout_s`` after the pair started), or no progress message
    from ``ns`` for ``stall_timeout_s``."""
    step = episode.progress.step if episode.received else None
    if now >= deadline:
        return f'episode stalled: no end after {config.episode_timeout_s:g} s (last step {step})'
    if now - last_progress > config.stall_timeout_s:
        return (f'no progress from {ns} for {now - last_progress:.1f} s (last step {step}): '
                'world or policy down, or messages lost')
    return ''


def operator_setup_text(spec: EpisodeSpec, ns: str) -> tuple[str, list[str]]:
    """Return what the operator of a real arm is told before ``spec`` (the scene, the
    perturbation's instruction and stages, the changes by hand, how to confirm) and the
    changes by hand alone (recorded with the episode)."""
    lines = [f'[{spec.pair_id}] set up the real scene: task {spec.task!r}, perturbation '
             f'{spec.perturbation} (intensity {spec.intensity:g})']
    state, changes = perturbation_setup(spec)
    if spec.perturbation != perturbations.DEFAULT:
        scored = perturbations.scored_task(spec.task, spec.perturbation, spec.intensity,
                                           spec.seed)
        params = perturbations.sample(spec.task, spec.perturbation, spec.intensity, spec.seed)
        lines.append(f'    instruction: "{params.get("instruction", scored.instruction)}"; '
                     f'stages {", ".join(scored.stages)}')
    for key, value in sorted(state.items()):
        lines.append(f'    {key}: {value}')
    if changes:
        lines.append('  change by hand before this episode:')
        lines += [f'    - {change}' for change in changes]
    lines.append(f'  then confirm: press r in the operator terminal, or ros2 service call '
                 f'{ns}/operator/confirm_reset std_srvs/srv/Trigger')
    return '\n'.join(lines), changes


def operator_confirmation(spec: EpisodeSpec, changes: list[str]) -> dict[str, Any]:
    """What is recorded with the real episode: what was asked, and that it was confirmed."""
    return {'perturbation': spec.perturbation, 'changes': changes, 'confirmed': True,
            'confirmed_at': time.time()}


def perturbation_setup(spec: EpisodeSpec) -> tuple[dict[str, Any], list[str]]:
    """Return the initial state the real scene must show (perturbed as the twin perturbs it:
    VB-POSE's poses, added objects' places) and the changes the operator makes by hand."""
    if spec.perturbation == perturbations.DEFAULT:
        return dict(spec.initial_state), []
    params = perturbations.sample(spec.task, spec.perturbation, spec.intensity, spec.seed)
    perturbed = perturbed_state_function()
    state = dict(spec.initial_state)
    if perturbed is not None and state:
        state = perturbed(spec, params)
    return state, perturbations.operator_instructions(spec.task, spec.perturbation, params)


def progress_bar(total: int, initial: int, quiet: bool) -> Any:
    """The pairs' tqdm bar on stderr (disabled with ``quiet``)."""
    from tqdm import tqdm
    return tqdm(total=total, initial=initial, desc='pairs', unit='pair', disable=quiet,
                dynamic_ncols=True, file=sys.stderr)


def report_meta(config: EvalConfig) -> dict[str, Any]:
    """The report's description of the two worlds (and the twin's identified parameters)."""
    meta: dict[str, Any] = {
        'real': 'digital real (MuJoCo with hidden dynamics, via the franka '
                'bridge)' if backends.get(config.real).hidden else 'Franka arm via franka_ros2',
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
