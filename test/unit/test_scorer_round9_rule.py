"""Round 9's shipping rule (bench/scorer_cameras.py, docs/scoring.md "Round 9") read off
measured figures: the committed verdict is what the rule gives on the committed measurements,
and each of its conditions (meeting or beating families3 in r and in stage accuracy on the
held-out family; the 0.03 margin on the fresh looks; the higher r of two passing, the first on
a tie) decides as written."""

import copy
import json
import pathlib

from bench_module import load_bench

REPO = pathlib.Path(__file__).resolve().parents[2]
bench = load_bench('scorer_cameras')

LADDER, LOOKS, RULE = (json.loads((REPO / p).read_text()) for p in bench.ROUND9_FILES)


def _column(figures, prefix):
    """The figures (the measurement's own dict) of a checkpoint in a set's first row."""
    return bench.checkpoint_figures(figures[next(iter(figures))], prefix)


def _base():
    """families3's r and stage accuracy on the held-out family, and its r on the looks."""
    mine = _column(LADDER, 'shipped families3 (')
    return mine['pearson_r'], mine['stage_accuracy'], _column(LOOKS, 'shipped families3 (')[
        'pearson_r']


def _set(name, r, stage, looks_delta, ladder=None, looks=None):
    """The measurements with candidate ``name``'s r and stage accuracy on the ladder set to
    ``r`` and ``stage``, and its r on the fresh looks to families3's plus ``looks_delta``."""
    ladder = copy.deepcopy(LADDER) if ladder is None else ladder
    looks = copy.deepcopy(LOOKS) if looks is None else looks
    mine = _column(ladder, f'{name} (')
    mine['pearson_r'], mine['stage_accuracy'] = r, stage
    _column(looks, f'{name} (')['pearson_r'] = _base()[2] + looks_delta
    return ladder, looks


def test_the_committed_verdict_is_the_rules_on_the_committed_figures():
    verdict = json.loads(json.dumps(bench.round9_rule(LADDER, LOOKS), default=float))
    assert verdict == RULE
    assert set(verdict['candidates']) == set(bench.ROUND9_CANDIDATES)
    assert all(v is not None for v in verdict['candidates'].values())
    assert verdict['rows'] == ['eval9_demo_ladder, all', next(iter(LOOKS))]
    assert next(iter(LOOKS)).startswith('held-out looks 7081-7083')


def test_each_condition_decides_as_written():
    r, stage, _ = _base()
    name, other = bench.ROUND9_CANDIDATES
    ladder, looks = _set(other, -1.0, 0.0, -1.0)  # the other fails, so only ``name`` decides
    ladder, looks = _set(name, r, stage, -0.02, ladder, looks)  # ties pass: meet or beat
    verdict = bench.round9_rule(ladder, looks)
    assert verdict['passing'] == [name] and verdict['ships'].startswith(name)
    assert bench.ROUND9_SHIPS_AS[name] in verdict['ships']
    _column(looks, f'{name} (')['pearson_r'] -= 0.02  # 0.04 below families3 on the looks
    assert bench.round9_rule(ladder, looks)['passing'] == []
    _column(looks, f'{name} (')['pearson_r'] += 0.02
    _column(ladder, f'{name} (')['stage_accuracy'] = stage - 0.001  # below in stage accuracy
    assert bench.round9_rule(ladder, looks)['passing'] == []
    _column(ladder, f'{name} (')['stage_accuracy'] = stage
    _column(ladder, f'{name} (')['pearson_r'] = r - 0.001  # below in r
    assert bench.round9_rule(ladder, looks)['ships'].startswith('nothing')


def test_of_two_passing_the_higher_r_ships():
    r, stage, _ = _base()
    first, second = bench.ROUND9_CANDIDATES
    ladder, looks = _set(first, r + 0.01, stage, 0.0)
    ladder, looks = _set(second, r + 0.02, stage, 0.0, ladder, looks)
    verdict = bench.round9_rule(ladder, looks)
    assert verdict['passing'] == [first, second] and verdict['ships'].startswith(second)
    _column(ladder, f'{second} (')['pearson_r'] = r + 0.01  # a tie: the first
    assert bench.round9_rule(ladder, looks)['ships'].startswith(first)


def test_the_targets_are_the_measured_ones():
    verdict = bench.round9_rule(LADDER, LOOKS)
    for row, table in ((verdict['rows'][0], LADDER), (verdict['rows'][1], LOOKS)):
        for column, figures in table[row].items():
            assert verdict['targets'][row][column] == figures['targets']
            assert figures['targets']['pearson_r>=0.85'] == ((figures['pearson_r'] or 0) >= 0.85)
