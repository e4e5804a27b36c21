"""Operator annotation of real episodes: stages marked by a person, with REALM's rubric semantics.

On the real arm nothing computes the stages from privileged state, so an operator watches the
episode and marks each stage as it happens. The marks follow REALM's tiered progression exactly:
stages are in a fixed order, a stage can only be marked after every earlier one (the "first
unmet stage" rule), marks are sticky (only an explicit ``undo`` of the latest mark, for an
operator's mistake, removes one), progression = stages met / N, and the episode score is the
maximum progression. Every event is timestamped and kept in the episode record.

Episode life cycle (``state``)::

    awaiting_reset --confirm_reset--> running --end / judge / abort--> awaiting_reset (+ record)

Pure Python; ``nodes/operator_node.py`` exposes it as ROS services, a ``progress`` topic and a
terminal prompt.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import pathlib
from typing import Any, Mapping, Sequence

from realm_ros.core.config import field
from realm_ros.core.errors import ConfigError, EpisodeError
from realm_ros.core.tasks import SKILL_STAGES, TASKS
from realm_ros.core.types import EpisodeOutcome, EpisodeResult, EpisodeSpec, Progress

#: Single keys of the terminal prompt -> command names (the same names as the services).
KEYS: dict[str, str] = {
    's': 'mark_stage', ' ': 'mark_stage',
    'r': 'confirm_reset',
    'u': 'undo',
    'e': 'end_episode',
    'y': 'success',
    'n': 'failure',
    'a': 'abort',
    'h': 'help', '?': 'help',
    'q': 'quit',
}
HELP = ('keys: [r] scene reset done  [s]/space mark next stage  [u] undo last mark  '
        '[e] end episode as marked  [y] judge success  [n] judge failure  [a] abort  '
        '[h] help  [q] quit')


@dataclasses.dataclass(frozen=True)
class OperatorConfig:
    """Parameters of ``operator_node`` (declared as ROS parameters)."""

    world: str = field('real', 'name of the annotated world, written into records and '
                               'DiagnosticStatus.hardware_id')
    task: str = field('', 'task when episode_spec is empty (its skill gives the stages)')
    stages: tuple[str, ...] = field(
        (), "stage names in order; empty = REALM stages of the task's skill")
    record_file: str = field('operator_episodes.jsonl',
                             'JSONL file that receives one record per annotated episode')
    publish_hz: float = field(2.0, 'rate at which progress is re-published, Hz (0 = only on '
                                   'change)')
    terminal_ui: bool = field(True, 'read single-key commands from stdin')

    def __post_init__(self) -> None:
        if not self.record_file:
            raise ConfigError('OperatorConfig.record_file must name a file')
        if not 0.0 <= self.publish_hz <= 100.0:
            raise ConfigError(f'OperatorConfig.publish_hz must be in [0, 100], '
                              f'got {self.publish_hz}')
        object.__setattr__(self, 'stages', tuple(self.stages))
        if len(set(self.stages)) != len(self.stages):
            raise ConfigError(f'OperatorConfig.stages has duplicates: {list(self.stages)}')


def stages_for_task(task: str) -> tuple[str, ...]:
    """Return REALM's stages for ``task``: a known task's rubric, else its name's skill prefix.

    The stages are :data:`realm_ros.core.tasks.SKILL_STAGES`, the same list the twin scores
    with, so operator marks and privileged scoring name the same stages.

    Raises:
        ConfigError: the task is unknown and its name does not start with a skill.
    """
    if task in TASKS:
        return TASKS[task].stages
    for skill in sorted(SKILL_STAGES, key=len, reverse=True):
        if task == skill or task.startswith(f'{skill}_'):
            return SKILL_STAGES[skill]
    raise ConfigError(
        f'cannot tell the stages of task {task!r}: its name does not start with a skill '
        f'({sorted(SKILL_STAGES)}); set the operator node\'s "stages" parameter')


class State(str, enum.Enum):
    """Where the operator is in an episode."""

    AWAITING_RESET = 'awaiting_reset'
    RUNNING = 'running'


@dataclasses.dataclass(frozen=True)
class Annotation:
    """One timestamped operator event (``time`` in seconds on the node's clock)."""

    event: str
    time: float
    stage: str = ''
    note: str = ''


class EpisodeAnnotator:
    """The operator's view of one world's episodes; every method is one operator action."""

    def __init__(self, world: str = 'real') -> None:
        self.world = world
        self.state = State.AWAITING_RESET
        self.spec = EpisodeSpec()
        self.stages: tuple[str, ...] = ()
        self.episode_index = 0
        self._met = 0
        self._max_met = 0
        self._events: list[Annotation] = []
        self._start = 0.0

    # -- operator actions -------------------------------------------------------------------

    def confirm_reset(self, time: float, spec: EpisodeSpec,
                      stages: Sequence[str] | None = None) -> str:
        """The scene is reset by hand for ``spec``: start annotating a new episode.

        Raises:
            EpisodeError: an episode is still running (end or abort it first).
            ConfigError: no stages are known for the task.
        """
        if self.state is State.RUNNING:
            raise EpisodeError(
                f'episode {self.episode_index} is still running: end it (e), judge it (y/n) '
                'or abort it (a) before confirming the next reset')
        self.stages = tuple(stages) if stages else stages_for_task(spec.task)
        self.spec = spec
        self.state = State.RUNNING
        self.episode_index += 1
        self._met = self._max_met = 0
        self._start = time
        self._events = [Annotation('reset_confirmed', time, note=spec.task)]
        return f'episode {self.episode_index} ({spec.task}) running; next stage {self.stages[0]}'

    def mark_stage(self, time: float) -> str:
        """Mark the next unmet stage as met (stages can only be marked in order).

        Raises:
            EpisodeError: no episode is running or every stage is already met.
        """
        self._require_running('mark a stage')
        if self._met == len(self.stages):
            raise EpisodeError(f'all {len(self.stages)} stages are already met; end the '
                               'episode (e or y)')
        stage = self.stages[self._met]
        self._met += 1
        self._max_met = max(self._max_met, self._met)
        self._events.append(Annotation('stage', time, stage=stage))
        return f'marked {stage} ({self._met}/{len(self.stages)})'

    def undo(self, time: float) -> str:
        """Remove the latest stage mark (an operator mistake, not a regression of the episode).

        Raises:
            EpisodeError: no episode is running or no stage is marked.
        """
        self._require_running('undo')
        if self._met == 0:
            raise EpisodeError('no stage is marked; nothing to undo')
        self._met -= 1
        stage = self.stages[self._met]
        # A retracted mark was never met, so it does not count toward the maximum either.
        self._max_met = self._met
        self._events.append(Annotation('undo', time, stage=stage))
        return f'unmarked {stage} ({self._met}/{len(self.stages)})'

    def end(self, time: float, success: bool | None = None, abort: bool = False,
            steps: int = 0) -> dict[str, Any]:
        """End the running episode and return its record.

        Args:
            time: seconds on the node's clock.
            success: ``True``: the operator judges the task done, so every remaining stage is
                marked met now (the rubric's final stage implies the earlier ones); ``False``:
                judged failed, the marks stay as they are; ``None``: end as marked.
            abort: the episode was stopped (safety stop, scene disturbed): outcome ``aborted``.
            steps: control steps the world ran during the episode.

        Raises:
            EpisodeError: no episode is running, or ``success=False`` while every stage is met.
        """
        self._require_running('end the episode')
        if success is False and self._met == len(self.stages):
            raise EpisodeError('every stage is marked met, so it cannot be judged a failure; '
                               'undo (u) the wrong marks first')
        if success:
            while self._met < len(self.stages):
                self.mark_stage(time)
        if abort:
            outcome, event = EpisodeOutcome.ABORTED, 'aborted'
        elif self._met == len(self.stages):
            outcome, event = EpisodeOutcome.SUCCESS, 'ended'
        else:
            # REALM's only non-success ending: the policy ran out of steps or the operator
            # called it finished; recorded as "timeout" (EpisodeOutcome's not-successful end).
            outcome, event = EpisodeOutcome.TIMEOUT, 'ended'
        note = {None: '', True: 'judged success', False: 'judged failure'}[success]
        self._events.append(Annotation(event, time, note=note))
        result = EpisodeResult(
            spec=self.spec, role=self.world, outcome=outcome, scored_by='operator',
            progression=self._max_met / len(self.stages), stages=self.stages,
            stages_reached=self.stages[:self._max_met], steps=steps,
            wall_time_s=time - self._start)
        record = result.to_record()
        record.update({
            'source': 'operator',
            'episode_index': self.episode_index,
            'start_time': self._start,
            'end_time': time,
            'annotations': [dataclasses.asdict(a) for a in self._events],
        })
        self.state = State.AWAITING_RESET
        return record

    # -- views -----------------------------------------------------------------------------

    def progress(self, step: int = 0) -> Progress:
        """Return the current :class:`Progress` (``source='operator'``)."""
        n = len(self.stages)
        return Progress(
            task=self.spec.task, stages=self.stages,
            met=tuple(i < self._met for i in range(n)),
            progression=self._met / n if n else 0.0,
            max_progression=self._max_met / n if n else 0.0,
            step=step, source='operator')

    @property
    def events(self) -> tuple[Annotation, ...]:
        """The running (or last) episode's events, oldest first."""
        return tuple(self._events)

    def status_line(self) -> str:
        """Return a one-line summary for the terminal prompt."""
        if self.state is State.AWAITING_RESET:
            return (f'[{self.world}] waiting for the scene reset of the next episode '
                    f'(task {self.spec.task!r}); press r when done')
        marks = ' '.join(f'[{"x" if i < self._met else " "}] {s}'
                         for i, s in enumerate(self.stages))
        nxt = self.stages[self._met] if self._met < len(self.stages) else '(all met)'
        return (f'[{self.world}] episode {self.episode_index} {self.spec.task}: {marks}  '
                f'next: {nxt}')

    def _require_running(self, what: str) -> None:
        if self.state is not State.RUNNING:
            raise EpisodeError(f'cannot {what}: no episode is running; confirm the scene '
                               'reset first (r / operator/confirm_reset)')


def append_record(path: str | pathlib.Path, record: Mapping[str, Any]) -> None:
    """Append ``record`` as one JSON line to ``path`` (parent folders are created)."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open('a') as handle:
        handle.write(json.dumps(record, sort_keys=True) + '\n')


#: Folder (beside the record file) and suffix of the episode videos ``operator_node`` records.
VIDEO_DIR = 'videos'
VIDEO_SUFFIX = '.webm'


def video_relpath(world: str, episode_index: int, start_time: float) -> str:
    """Return where ``operator_node`` writes an episode's video, relative to its record file's
    folder: ``videos/<world>/episode_<index>_<start ms>.webm`` (the start time keeps a node
    restarted on the same record file, whose indices start again, from overwriting one)."""
    if not world or '/' in world or world.startswith('.'):
        raise ConfigError(f'world {world!r} cannot name a video folder')
    return (f'{VIDEO_DIR}/{world}/episode_{int(episode_index):04d}_'
            f'{int(round(start_time * 1000))}{VIDEO_SUFFIX}')


def frames_due(start: float, now: float, written: int, fps: float) -> int:
    """How many copies of the frame arriving at ``now`` a constant-rate video started at
    ``start`` (``written`` frames so far, ``fps`` per second) needs, so that its frame k shows
    the scene at ``start`` + k / fps whatever rate the camera sends at: 0 for a frame that
    arrives before the next one is due, more than 1 to fill a gap."""
    if fps <= 0:
        raise ConfigError(f'a video needs a positive frame rate, got {fps}')
    return max(0, math.floor((now - start) * fps + 1e-6) + 1 - int(written))
