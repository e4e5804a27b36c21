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
import math
import re
from typing import Any, Mapping, Protocol, Sequence

import numpy as np
from numpy.typing import ArrayLike

from realm_ros.core.errors import DataError

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


def agreement_with_rubric(scorer: Sequence[float], rubric: Sequence[float],
                          success_threshold: float = 0.5) -> dict[str, float]:
    """Return how a scorer's episode scores agree with the rubric's progressions.

    ``pearson_r`` of the scores, ``mean_abs_error``, and ``success_accuracy``: the fraction of
    episodes where ``scorer >= success_threshold`` matches the rubric's success (progression 1).
    """
    from realm_ros.core import metrics
    s, r = np.asarray(scorer, dtype=float), np.asarray(rubric, dtype=float)
    if s.shape != r.shape or s.size < 2:
        raise DataError(f'need at least two paired scores, got {s.size} and {r.size}')
    return {
        'pearson_r': metrics.pearson_r(sim=s, real=r),
        'mean_abs_error': float(np.mean(np.abs(s - r))),
        'success_accuracy': float(np.mean((s >= success_threshold) == (r >= 1.0 - 1e-9))),
        'episodes': int(s.size),
    }


__all__ = [
    'EpisodeFrames', 'LAST_FRACTION', 'ProgressScorer', 'RUNS', 'SAMPLE_FPS', 'ScoredEpisode',
    'aggregate', 'agreement_with_rubric', 'last_fraction_mean', 'median_curve',
    'parse_progress', 'rescale', 'sample_indices',
]
