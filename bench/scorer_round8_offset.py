"""Round 8's diagnostic, run after its verdict (docs/scoring.md, "Round 8"): which frames a
vision-ladder set keeps, and where the readings differ.

    python bench/scorer_round8_offset.py   # from the repository root, after ``collect``

1. ``eval8_demo_ladder`` (kept at every control step) read at 3 per second from its first kept
   frame (frames 0, 5, 10, ...: what a scripted set keeps, the world rendering every 5th step)
   and from its 5th (frames 4, 9, 14, ...: what rounds 5-7's vision-ladder sets kept, their
   policy making the world render every step and ``labelled_run`` keeping the steps that are
   multiples of 5, counted from 1), each against the rubric at its own frames.
2. families3 at each of ``ROUND8_READINGS``: push_switch frames the rubric says TOUCH (2) read
   right, toggled (3) read right, pick_spoon frames before REACH (0) read as REACH or more, and
   touched-not-toggled episodes called a success.
"""

from __future__ import annotations

import dataclasses
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import scorer_cameras as bench  # noqa: E402

from realm_ros.scorers import learned  # noqa: E402

DATA = pathlib.Path('data/progress_scorer/cameras')
SET = 'eval8_demo_ladder'


def offsets() -> None:
    reference = bench.load_set(DATA, 'train', ('exterior_1',))
    for label, path in (('families3', learned.FAMILIES3_CHECKPOINT),
                        ('wrist', learned.WRIST_CHECKPOINT),
                        ('i_ensemble', DATA / 'i_ensemble.pt')):
        scorer = learned.LearnedScorer(path)
        episodes = bench.load_set(DATA, SET, tuple(scorer.cameras))
        for start in (0, 4):
            view = [dataclasses.replace(e, frames=e.frames[start::5], times_s=e.times_s[start::5],
                                        met=e.met[start::5]) for e in episodes]
            r = bench.measure_one(scorer, view, reference)
            print(f'{label} {scorer.name}, frames from {start} every 5th: r {r["pearson_r"]:.2f} '
                  f'{np.round(r["pearson_r_ci"], 2).tolist()}, stage accuracy '
                  f'{r["stage_accuracy"]:.3f} {np.round(r["stage_accuracy_ci"], 2).tolist()}, '
                  f'success accuracy {r["success_accuracy"]:.3f} '
                  f'{np.round(r["success_accuracy_ci"], 2).tolist()} (always failure '
                  f'{r["baselines"]["always_failure_accuracy"]:.3f}), rubric successes '
                  f'{round(r["rubric_success_rate"] * len(view))}', flush=True)


def where() -> None:
    scorer = learned.LearnedScorer(learned.FAMILIES3_CHECKPOINT)
    episodes = bench.load_set(DATA, SET, tuple(scorer.cameras))
    probs = [scorer.probabilities(list(e.frames), e.task) for e in episodes]
    met = [e.met[::5] for e in episodes]
    for reading, (stride, median) in bench.ROUND8_READINGS.items():
        counts = [bench.reading_counts(p, stride, median) for p in probs]

        def frames(task: str, label: int, counts: list[np.ndarray] = counts) -> np.ndarray:
            return np.concatenate([c[m == label] for c, m, e in zip(counts, met, episodes)
                                   if e.task == task])

        touch, toggled = frames('push_switch', 2), frames('push_switch', 3)
        before = frames('pick_spoon', 0)
        touched = [c[-1] for c, m, e in zip(counts, met, episodes)
                   if e.task == 'push_switch' and m[-1] == 2]
        print(f'families3 @ {reading}: TOUCH frames right {int(np.sum(touch == 2))} of '
              f'{len(touch)}, toggled right {int(np.sum(toggled == 3))} of {len(toggled)}, '
              f'pick_spoon before REACH read >= 1 {int(np.sum(before >= 1))} of {len(before)}, '
              f'touched-not-toggled called a success {sum(int(v == 3) for v in touched)} of '
              f'{len(touched)}', flush=True)


if __name__ == '__main__':
    offsets()
    where()
