"""Round 8's rule (bench/scorer_cameras.py, docs/scoring.md "Round 8") read off measured
figures: the committed verdict is what the rule gives on the committed measurements, each of
its conditions (above the shipped reading in r and stage accuracy on the held-out family; the
0.03 r and 0.02 stage-accuracy margins on the fresh looks; the higher r of two passing) decides
as written, and a faster reading is scored at the shipped reading's frames."""

import copy
import json
import pathlib

from bench_module import load_bench
import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]
bench = load_bench('scorer_cameras')

RATES, RULE = (json.loads((REPO / p).read_text()) for p in bench.ROUND8_FILES)
LADDER, LOOKS = 'eval8_demo_ladder, all', 'eval8_looks, all'


def _cell(figures, row, reading):
    return figures[row][f'{bench.ROUND8_CHECKPOINT} @ {reading}']


def _with(reading, r, stage, looks_r_delta, looks_stage_delta, figures=None):
    """The measurements with ``reading``'s r and stage accuracy on the ladder set to ``r`` and
    ``stage``, and on the fresh looks the shipped reading's plus the deltas."""
    figures = copy.deepcopy(figures or RATES)
    mine, base = _cell(figures, LADDER, reading), _cell(figures, LOOKS, bench.ROUND8_BASE)
    mine['pearson_r'], mine['stage_accuracy'] = r, stage
    looks = _cell(figures, LOOKS, reading)
    looks['pearson_r'] = base['pearson_r'] + looks_r_delta
    looks['stage_accuracy'] = base['stage_accuracy'] + looks_stage_delta
    return figures


def _fail_all_but(name):
    figures = copy.deepcopy(RATES)
    for other in bench.ROUND8_CANDIDATES:
        if other != name:
            figures = _with(other, -1.0, 0.0, -1.0, -1.0, figures)
    return figures


def test_the_committed_verdict_is_the_rules_on_the_committed_figures():
    verdict = json.loads(json.dumps(bench.round8_rule(RATES), default=float))
    assert verdict == RULE
    assert set(verdict['candidates']) == set(bench.ROUND8_CANDIDATES)


def test_each_condition_decides_as_written():
    base = _cell(RATES, LADDER, bench.ROUND8_BASE)
    r, stage = base['pearson_r'], base['stage_accuracy']
    name = bench.ROUND8_CANDIDATES[0]
    figures = _with(name, r + 0.01, stage + 0.01, -0.029, -0.019, _fail_all_but(name))
    verdict = bench.round8_rule(figures)
    assert verdict['passing'] == [name] and verdict['default'].startswith(name)
    for key, value in (('pearson_r', r), ('stage_accuracy', stage)):  # a tie is not a win
        tied = copy.deepcopy(figures)
        _cell(tied, LADDER, name)[key] = value
        assert bench.round8_rule(tied)['passing'] == []
    for key, delta in (('pearson_r', -0.031), ('stage_accuracy', -0.021)):  # past a margin
        lost = copy.deepcopy(figures)
        _cell(lost, LOOKS, name)[key] = _cell(lost, LOOKS, bench.ROUND8_BASE)[key] + delta
        assert bench.round8_rule(lost)['default'].startswith(f'{bench.ROUND8_BASE} (unchanged')


def test_of_two_passing_the_higher_r_wins():
    base = _cell(RATES, LADDER, bench.ROUND8_BASE)
    r, stage = base['pearson_r'], base['stage_accuracy']
    first, second = bench.ROUND8_CANDIDATES[:2]
    figures = _with(first, r + 0.01, stage + 0.01, 0.0, 0.0, _fail_all_but(first))
    figures = _with(second, r + 0.02, stage + 0.01, 0.0, 0.0, figures)
    verdict = bench.round8_rule(figures)
    assert verdict['passing'] == [first, second] and verdict['default'].startswith(second)
    _cell(figures, LADDER, second)['pearson_r'] = r + 0.01  # a tie: the first listed
    assert bench.round8_rule(figures)['default'].startswith(first)


def test_a_faster_reading_is_scored_at_the_shipped_readings_frames():
    # Counts at every step: a touch at steps 6-7 only (between two shipped frames, 5 and 10).
    counts = np.zeros(16, int)
    counts[6:8] = 2
    probs = np.eye(4)[counts]
    assert bench.reading_counts(probs, 5, 3).tolist() == [0, 0, 0, 0]  # never seen
    assert bench.reading_counts(probs, 1, 1).tolist() == [0, 0, 2, 2]  # seen, then kept
    assert bench.reading_counts(probs, 1, 3).tolist() == [0, 0, 2, 2]  # two frames pass 3
    assert bench.reading_counts(probs, 1, 15).tolist() == [0, 0, 0, 0]  # not a 1 s median
    # Every 3rd step: frames 0, 3, 6, 9, 12, 15; at step 5 the value of frame 3, at 10 of 9.
    assert bench.reading_counts(probs, 3, 1).tolist() == [0, 0, 2, 2]
    assert len(bench.reading_counts(probs, 3, 5)) == len(range(0, 16, 5))
