"""Progress scored from an episode's video: the scorer interface and its aggregation (pure).

A scorer reads an episode's frames (and, in sim, its privileged state) and returns a progress
curve in [0, 1] and one episode score. Its scores are reported **beside** the rubric's, never
mixed into them (REALM keeps its learned scorer's rows apart the same way): a record keeps
``scorer_progression`` and ``scorer`` next to the rubric's ``progression``.

The aggregation follows RobotArena-infinity's VLM protocol (``GVL_multithreaded.py``,
``GVL_metrics.py``, as summarised in shared/reference/visual-judging-safety.md):

* frames sampled at 1 per second, the first frame included and defined as 0 % progress;
* one answer per later frame, each shown the initial frame, the frames so far and the current
  frame, answering ``## Reflection`` then ``## Progress Score`` (0-100);
* the whole pass repeated (3 runs); runs of a different length than the others dropped; the
  per-frame **median** across runs;
* the episode's score is the **mean of the last 30 %** of the median curve;
* optionally rescaled per task, ``clip((raw - floor) / (ceiling - floor), 0, 1)`` (REALM's rule
  for its learned scorer, whose finished episodes plateau below 1).
"""

from __future__ import annotations

from collections import Counter
import dataclasses
import importlib
import math
import re
from typing import Any, Mapping, Protocol, Sequence

import numpy as np
from numpy.typing import ArrayLike

from realm_ros.core.errors import ConfigError, DataError
from realm_ros.core.registry import Registry

#: Frames per second a VLM is shown (RobotArena-infinity).
SAMPLE_FPS = 1.0
#: Fraction of the curve, from its end, whose mean is the episode's score.
LAST_FRACTION = 0.3
#: Runs of the whole pass whose per-frame median is the curve.
RUNS = 3

_SCORE = re.compile(r'#+\s*Progress\s*Score\s*:?\s*\**\s*([-+]?\d+(?:\.\d+)?)\s*(%?)',
                    re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class EpisodeFrames:
    """What a scorer sees of one episode.

    Attributes:
        frames: RGB uint8 images (H, W, 3), in time order.
        times_s: each frame's time from the episode's start, seconds.
        instruction: the episode's language instruction.
        task: the task name (per-task rescaling, stage names).
        privileged: optional per-frame privileged state (sim and digital real only), each a
            mapping of names to numbers or short lists, e.g. end-effector pose and object poses.
    """

    frames: Sequence[np.ndarray]
    times_s: Sequence[float]
    instruction: str
    task: str = ''
    privileged: Sequence[Mapping[str, Any]] | None = None

    def __post_init__(self) -> None:
        if len(self.frames) == 0:
            raise DataError('an episode to score needs at least one frame')
        if len(self.frames) != len(self.times_s):
            raise DataError(f'{len(self.frames)} frames but {len(self.times_s)} times')
        if self.privileged is not None and len(self.privileged) != len(self.frames):
            raise DataError(f'{len(self.frames)} frames but {len(self.privileged)} privileged '
                            'states')
        if any(b < a for a, b in zip(self.times_s, self.times_s[1:])):
            raise DataError('frame times must not decrease')


@dataclasses.dataclass(frozen=True)
class ScoredEpisode:
    """A scorer's verdict on one episode.

    Attributes:
        scorer: who scored it (``vlm:<model>``, ``learned:<checkpoint>``), kept in the record.
        times_s: the times of the sampled frames the curve is over.
        curve: per sampled frame progress in [0, 1] (the median over runs).
        score: the episode's score in [0, 1] (mean of the last 30 %, rescaled if asked).
        raw_score: the score before per-task rescaling.
        runs: each run's curve, for the record (the dropped ones included, flagged).
        dropped_runs: indices of runs left out for having a different length.
    """

    scorer: str
    times_s: tuple[float, ...]
    curve: tuple[float, ...]
    score: float
    raw_score: float
    runs: tuple[tuple[float, ...], ...] = ()
    dropped_runs: tuple[int, ...] = ()

    def as_record(self) -> dict[str, Any]:
        """The fields a record keeps beside the rubric's."""
        return {'scorer': self.scorer, 'scorer_progression': self.score,
                'scorer_raw': self.raw_score, 'scorer_curve': list(self.curve),
                'scorer_times_s': list(self.times_s)}


class ProgressScorer(Protocol):
    """Scores an episode from its frames. ``name`` goes into every record it scores."""

    name: str

    def score(self, episode: EpisodeFrames) -> ScoredEpisode:
        """Return the episode's progress curve and score."""


def sample_indices(times_s: Sequence[float], fps: float = SAMPLE_FPS) -> list[int]:
    """Return the indices of the frames nearest to ``0, 1/fps, 2/fps, ...`` seconds (first frame
    always, each frame at most once, the last sample no later than the last frame)."""
    if fps <= 0 or not math.isfinite(fps):
        raise DataError(f'sampling rate must be positive, got {fps}')
    times = np.asarray(times_s, dtype=float)
    start = times[0]
    out: list[int] = []
    k = 0
    while start + k / fps <= times[-1] + 1e-9:
        i = int(np.argmin(np.abs(times - (start + k / fps))))
        if not out or i != out[-1]:
            out.append(i)
        k += 1
    return out


def parse_progress(text: str) -> float:
    """Return the ``## Progress Score`` of an answer as a fraction in [0, 1].

    The score is read as a percentage (``73``, ``73%``, ``73.5``) after the heading; numbers
    outside 0-100 are clipped (a model that answers 105 means "done").

    Raises:
        DataError: the answer has no ``Progress Score`` heading with a number.
    """
    match = _SCORE.search(text or '')
    if match is None:
        raise DataError('the answer has no "## Progress Score" with a number: '
                        f'{(text or "")[:120]!r}')
    return float(np.clip(float(match.group(1)), 0.0, 100.0)) / 100.0


def median_curve(runs: Sequence[Sequence[float]],
                 length: int | None = None) -> tuple[np.ndarray, list[int]]:
    """Return the per-frame median over ``runs`` and the indices of runs dropped for having
    another length than ``length`` (default: the most common one; a tie keeps the longer).

    Raises:
        DataError: no runs, or none of the expected length.
    """
    if not runs:
        raise DataError('no runs to aggregate')
    lengths = Counter(len(r) for r in runs)
    best = max(lengths.values())
    keep_len = length if length is not None else max(
        n for n, c in lengths.items() if c == best)
    if keep_len not in lengths:
        raise DataError(f'no run has the expected {keep_len} frames (lengths {dict(lengths)})')
    kept = [np.asarray(r, dtype=float) for r in runs if len(r) == keep_len]
    dropped = [i for i, r in enumerate(runs) if len(r) != keep_len]
    return np.median(np.stack(kept), axis=0), dropped


def last_fraction_mean(curve: ArrayLike, fraction: float = LAST_FRACTION) -> float:
    """Return the mean of the last ``fraction`` of ``curve`` (at least one point)."""
    values = np.asarray(curve, dtype=float)
    if values.size == 0:
        raise DataError('an empty progress curve has no score')
    n = max(1, int(math.ceil(fraction * values.size)))
    return float(values[-n:].mean())


def rescale(raw: float, floor: float, ceiling: float) -> float:
    """Return ``clip((raw - floor) / (ceiling - floor), 0, 1)``.

    Raises:
        DataError: ``ceiling <= floor``.
    """
    if not ceiling > floor:
        raise DataError(f'rescaling needs ceiling > floor, got floor {floor}, ceiling {ceiling}')
    return float(np.clip((raw - floor) / (ceiling - floor), 0.0, 1.0))


def aggregate(scorer: str, times_s: Sequence[float], runs: Sequence[Sequence[float]],
              task_range: tuple[float, float] | None = None,
              complete_only: bool = True) -> ScoredEpisode:
    """Return the :class:`ScoredEpisode` of per-run curves (RobotArena-infinity's rule).

    With ``complete_only`` a run counts only if it has one value per sampled frame
    (``len(times_s)``); otherwise the most common length wins.
    """
    curve, dropped = median_curve(runs, len(times_s) if complete_only else None)
    raw = last_fraction_mean(curve)
    score = rescale(raw, *task_range) if task_range is not None else raw
    return ScoredEpisode(
        scorer=scorer, times_s=tuple(float(t) for t in times_s),
        curve=tuple(float(v) for v in curve), score=score, raw_score=raw,
        runs=tuple(tuple(float(v) for v in r) for r in runs), dropped_runs=tuple(dropped))


def calls_success(progression: ArrayLike, n_stages: ArrayLike) -> np.ndarray:
    """Return, per episode, whether ``progression`` calls it a success: it reaches the task's
    last stage, ``progression >= (N - 0.5) / N`` for the task's N stages.

    The one success rule of a scorer and of the rubric alike (docs/scoring.md, "Success
    accuracy"): the rubric's progression is k / N, so this is "every stage met"; the learned
    scorer's is its stage count / N, so this is "every stage proposed"; a VLM's continuous
    score is read the way :func:`proposals_from_curve` reads its curve (stage k at
    ``(k - 0.5) / N``).

    Raises:
        DataError: a stage count below 1.
    """
    n = np.asarray(n_stages, dtype=float)
    if np.any(n < 1):
        raise DataError(f'a task has at least one stage, got {n.min():g}')
    return np.asarray(progression, dtype=float) >= (n - 0.5) / n


def agreement_with_rubric(scorer: Sequence[float], rubric: Sequence[float],
                          n_stages: int | Sequence[int]) -> dict[str, float]:
    """Return how a scorer's episode scores agree with the rubric's progressions.

    ``pearson_r`` of the scores, ``mean_abs_error``, and ``success_accuracy``: the fraction of
    episodes where the scorer's success (:func:`calls_success`) matches the rubric's;
    ``n_stages``: each episode's task's stage count (or one for all).
    """
    from realm_ros.core import metrics
    s, r = np.asarray(scorer, dtype=float), np.asarray(rubric, dtype=float)
    if s.shape != r.shape or s.size < 2:
        raise DataError(f'need at least two paired scores, got {s.size} and {r.size}')
    return {
        'pearson_r': metrics.pearson_r(sim=s, real=r),
        'mean_abs_error': float(np.mean(np.abs(s - r))),
        'success_accuracy': float(np.mean(calls_success(s, n_stages)
                                          == calls_success(r, n_stages))),
        'episodes': int(s.size),
    }


# -- the scorer registry ------------------------------------------------------------------------

#: Scorer name -> ``module:Class``, imported only when built (a scorer may need torch or a
#: server). A new scorer is one :func:`register` call; commands and nodes build scorers by name.
SCORERS: Registry[str] = Registry('scorer', {
    'learned': 'realm_ros.scorers.learned:LearnedScorer',
    'vlm': 'realm_ros.scorers.vlm:VlmScorer',
}, lead='choose from', replace=True)


def register(name: str, target: str) -> None:
    """Register a scorer class as ``module:Class`` under ``name``."""
    if ':' not in target:
        raise ConfigError(f'scorer {name!r}: target must be module:Class, got {target!r}')
    SCORERS.add(name, target)


def make_scorer(name: str, /, **kwargs: Any) -> ProgressScorer:
    """Build the scorer registered as ``name`` with its own settings.

    Raises:
        ConfigError: unknown name (the message lists the registered ones).
    """
    target = SCORERS.lookup(name)
    module, _, attr = target.partition(':')
    cls = getattr(importlib.import_module(module), attr)
    scorer: ProgressScorer = cls(**kwargs)
    return scorer


# -- stage proposals (a scorer proposes, the operator decides) ---------------------------------

@dataclasses.dataclass(frozen=True)
class StageProposal:
    """A scorer's proposal for one stage of an episode: the first time it sees it met."""

    stage: str
    time_s: float
    confidence: float = float('nan')


def proposals_from_curve(scored: ScoredEpisode, stages: Sequence[str]) -> list[StageProposal]:
    """Return the stages a progress curve implies: stage k (of N) at the first sample whose
    running maximum reaches ``(k - 0.5) / N`` (a VLM's curve; the learned scorer reads its own
    stage classes instead)."""
    n = len(stages)
    if n == 0:
        return []
    running = np.maximum.accumulate(np.asarray(scored.curve, dtype=float))
    t0 = scored.times_s[0] if scored.times_s else 0.0
    out = []
    for k, stage in enumerate(stages, start=1):
        reached = np.flatnonzero(running >= (k - 0.5) / n)
        if reached.size == 0:
            break
        out.append(StageProposal(stage, float(scored.times_s[int(reached[0])] - t0)))
    return out


def propose_stages(scorer: ProgressScorer, episode: EpisodeFrames,
                   stages: Sequence[str]) -> list[StageProposal]:
    """Return ``scorer``'s stage proposals for ``episode``: its own ``propose_stages`` if it
    has one (the learned scorer's stage classes), else read off its progress curve."""
    own = getattr(scorer, 'propose_stages', None)
    if callable(own):
        return list(own(episode))
    return proposals_from_curve(scorer.score(episode), stages)


OPERATOR = 'operator'


class StageReview:
    """Who decided each stage of an operator's episode: the operator, or a scorer's proposal
    the operator accepted (pure; ``operator_node`` keeps one per world).

    The marks themselves stay the annotator's (REALM's order, sticky, undo); this keeps beside
    them the latest proposal and, for every stage met, ``operator`` or the scorer's name.
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget the proposal and the deciders (a new episode)."""
        self.scorer = ''
        self.proposals: list[StageProposal] = []
        self.decided: list[str] = []
        self.accepted = False
        self.corrected = False

    def propose(self, scorer: str, proposals: Sequence[StageProposal]) -> str:
        """Keep ``scorer``'s proposals; return the line shown to the operator."""
        self.scorer, self.proposals = scorer, list(proposals)
        if not self.proposals:
            return f'{scorer} proposes no stage met yet'
        listed = ', '.join(f'{p.stage} at {p.time_s:.1f} s' for p in self.proposals)
        return f'{scorer} proposes {len(self.proposals)} stage(s): {listed}; accept (c) or mark'

    def to_accept(self, met: int) -> list[StageProposal]:
        """Return the proposed stages past the ``met`` already marked (what accepting marks).

        Raises:
            ConfigError: there is no proposal to accept.
        """
        if not self.scorer:
            raise ConfigError('no stage proposal to accept: ask the scorer first (p)')
        self.accepted = True
        return self.proposals[met:]

    def marked(self, by: str) -> None:
        """A stage was marked, by the operator or (accepting) by the scorer."""
        self.decided.append(by)
        if by == OPERATOR and self.scorer:
            self.corrected = True

    def undone(self) -> None:
        """The latest mark was undone (by the operator)."""
        if self.decided:
            self.decided.pop()
        if self.scorer:
            self.corrected = True

    def record_fields(self) -> dict[str, Any]:
        """The fields an episode record keeps: the proposal, who decided each stage met, and
        ``decided_by``: the scorer if the operator accepted its proposal unchanged, else
        ``operator``."""
        out: dict[str, Any] = {'stages_decided_by': list(self.decided)}
        by_scorer = self.accepted and not self.corrected and bool(self.decided) and all(
            d == self.scorer for d in self.decided)
        out['decided_by'] = self.scorer if by_scorer else OPERATOR
        if self.scorer:
            out['stage_proposal'] = {
                'scorer': self.scorer, 'accepted': self.accepted, 'corrected': self.corrected,
                'stages': [dataclasses.asdict(p) for p in self.proposals]}
        return out


# -- a run folder's scores beside its rubric ---------------------------------------------------

def run_dir_section(records: Sequence[Mapping[str, Any]],
                    scores: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Return the summary's ``scorers`` section: per scorer, per policy and role the mean
    scorer progression beside the mean rubric progression of the same episodes, and the
    scorer's agreement with the rubric over them (never one number of both)."""
    from realm_ros.core.annotation import stages_for_task
    rubric = {(r.get('pair_id'), r.get('role') or r.get('world')): r for r in records}
    out: dict[str, Any] = {}
    for name in sorted({str(s['scorer']) for s in scores}):
        rows: dict[str, dict[str, dict[str, Any]]] = {}
        paired: list[tuple[float, float, int]] = []
        for s in scores:
            if s['scorer'] != name:
                continue
            record = rubric.get((s.get('pair_id'), s.get('role')))
            if record is None:
                continue
            cell = rows.setdefault(str(record.get('policy', '')), {}).setdefault(
                str(s.get('role')), {'episodes': 0, 'scorer': 0.0, 'rubric': 0.0})
            cell['episodes'] += 1
            cell['scorer'] += float(s['scorer_progression'])
            cell['rubric'] += float(record['progression'])
            paired.append((float(s['scorer_progression']), float(record['progression']),
                           len(stages_for_task(str(record.get('task', ''))))))
        for roles in rows.values():
            for cell in roles.values():
                cell['scorer'] /= cell['episodes']
                cell['rubric'] /= cell['episodes']
        section: dict[str, Any] = {'per_policy': rows, 'episodes': len(paired)}
        if len(paired) >= 2:
            try:
                s_vals, r_vals, n_vals = zip(*paired)
                section['agreement'] = agreement_with_rubric(s_vals, r_vals, n_vals)
            except (ConfigError, DataError, ValueError) as err:
                section['agreement_error'] = str(err)
        out[name] = section
    return out


__all__ = [
    'EpisodeFrames', 'LAST_FRACTION', 'OPERATOR', 'ProgressScorer', 'RUNS', 'SAMPLE_FPS',
    'SCORERS', 'ScoredEpisode', 'StageProposal', 'StageReview', 'aggregate',
    'agreement_with_rubric', 'calls_success', 'last_fraction_mean', 'make_scorer', 'median_curve',
    'parse_progress', 'propose_stages', 'proposals_from_curve', 'register', 'rescale',
    'run_dir_section', 'sample_indices',
]
