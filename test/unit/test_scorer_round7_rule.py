"""Round 7's shipping rule (bench/scorer_cameras.py, docs/scoring.md "Round 7") read off
measured figures: the committed verdict is what the rule gives on the committed measurements,
and each of its conditions (above families3 and above h's seed mean, in r and stage accuracy on
the held-out family; the 0.03 margin on the fresh looks; the higher r of two passing) decides
as written."""

import copy
import json
import pathlib

from bench_module import load_bench

REPO = pathlib.Path(__file__).resolve().parents[2]
bench = load_bench('scorer_cameras')

LADDER, LOOKS, RULE = (json.loads((REPO / p).read_text()) for p in bench.ROUND7_FILES)


def _column(figures, prefix):
    """The figures (the measurement's own dict) of a checkpoint in a set's first row."""
    return bench.checkpoint_figures(figures[next(iter(figures))], prefix)


def _set(name, r, stage, looks_delta):
    """The measurements with candidate ``name``'s r and stage accuracy on the ladder set to
    ``r`` and ``stage``, and its r on the fresh looks to families3's plus ``looks_delta``."""
    ladder, looks = copy.deepcopy(LADDER), copy.deepcopy(LOOKS)
    mine = _column(ladder, f'{name} (')
    mine['pearson_r'], mine['stage_accuracy'] = r, stage
    _column(looks, f'{name} (')['pearson_r'] = (
        _column(looks, 'shipped families3 (')['pearson_r'] + looks_delta)
    return ladder, looks


def _bar():
    """The higher of families3's and h's seed mean, in r and in stage accuracy, on the ladder."""
    verdict = bench.round7_rule(LADDER, LOOKS)
    return (max(verdict['families3']['pearson_r'], verdict['h_mean_of_seeds']['pearson_r']),
            max(verdict['families3']['stage_accuracy'],
                verdict['h_mean_of_seeds']['stage_accuracy']))


def test_the_committed_verdict_is_the_rules_on_the_committed_figures():
    verdict = json.loads(json.dumps(bench.round7_rule(LADDER, LOOKS), default=float))
    assert verdict == RULE
    assert set(verdict['candidates']) == set(bench.ROUND7_CANDIDATES)
    assert all(v is not None for v in verdict['candidates'].values())


def test_each_condition_decides_as_written():
    r, stage = _bar()
    other = bench.ROUND7_CANDIDATES[1]
    name = bench.ROUND7_CANDIDATES[0]
    # Make the other candidate fail, so that only ``name``'s figures decide.
    ladder, looks = _set(other, -1.0, 0.0, -1.0)
    for key, value in (('pearson_r', r + 0.01), ('stage_accuracy', stage + 0.01)):
        _column(ladder, f'{name} (')[key] = value
    _column(looks, f'{name} (')['pearson_r'] = (
        _column(looks, 'shipped families3 (')['pearson_r'] - 0.02)
    verdict = bench.round7_rule(ladder, looks)
    assert verdict['passing'] == [name] and verdict['ships'].startswith(name)
    assert bench.ROUND7_SHIPS_AS[name] in verdict['ships']
    _column(looks, f'{name} (')['pearson_r'] -= 0.02  # 0.04 below families3
    assert bench.round7_rule(ladder, looks)['passing'] == []
    _column(looks, f'{name} (')['pearson_r'] += 0.02
    _column(ladder, f'{name} (')['stage_accuracy'] = stage  # a tie is not a win
    assert bench.round7_rule(ladder, looks)['passing'] == []
    _column(ladder, f'{name} (')['stage_accuracy'] = stage + 0.01
    _column(ladder, f'{name} (')['pearson_r'] = r  # nor in r
    assert bench.round7_rule(ladder, looks)['ships'].startswith('nothing')


def test_of_two_passing_the_higher_r_ships():
    r, stage = _bar()
    first, second = bench.ROUND7_CANDIDATES
    ladder, looks = _set(first, r + 0.01, stage + 0.01, 0.0)
    for key, value in (('pearson_r', r + 0.02), ('stage_accuracy', stage + 0.01)):
        _column(ladder, f'{second} (')[key] = value
    _column(looks, f'{second} (')['pearson_r'] = _column(looks, 'shipped families3 (')['pearson_r']
    verdict = bench.round7_rule(ladder, looks)
    assert verdict['passing'] == [first, second] and verdict['ships'].startswith(second)
    _column(ladder, f'{second} (')['pearson_r'] = r + 0.01  # a tie: the first
    assert bench.round7_rule(ladder, looks)['ships'].startswith(first)
