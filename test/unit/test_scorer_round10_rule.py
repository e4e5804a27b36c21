"""Round 10's shipping rule (bench/scorer_cameras.py, docs/scoring.md "Round 10") read off
measured figures: the committed verdict is what the rule gives on the committed measurements,
and each of its conditions (above families_demo3 in stage accuracy on the held-out family, the
0.03 r margin on both sets, stage accuracy met or beaten on the fresh looks; of two passing, the
more targets met, then the held-out stage accuracy, then the first) decides as written."""

import copy
import json
import pathlib

from bench_module import load_bench

REPO = pathlib.Path(__file__).resolve().parents[2]
bench = load_bench('scorer_cameras')

LADDER, LOOKS, RULE = (json.loads((REPO / p).read_text()) for p in bench.ROUND10_FILES)
BAR = f'{bench.ROUND10_BAR} ('


def _column(figures, prefix):
    """The figures (the measurement's own dict) of a checkpoint in a set's first row."""
    return bench.checkpoint_figures(figures[next(iter(figures))], prefix)


def _bar():
    """families_demo3's r and stage accuracy on the held-out family and on the looks."""
    ladder, looks = _column(LADDER, BAR), _column(LOOKS, BAR)
    return (ladder['pearson_r'], ladder['stage_accuracy'], looks['pearson_r'],
            looks['stage_accuracy'])


def _set(name, r, stage, looks_r, looks_stage, ladder=None, looks=None):
    """The measurements with candidate ``name``'s r and stage accuracy on the held-out family
    and on the fresh looks set as given."""
    ladder = copy.deepcopy(LADDER) if ladder is None else ladder
    looks = copy.deepcopy(LOOKS) if looks is None else looks
    mine = _column(ladder, f'{name} (')
    mine['pearson_r'], mine['stage_accuracy'] = r, stage
    theirs = _column(looks, f'{name} (')
    theirs['pearson_r'], theirs['stage_accuracy'] = looks_r, looks_stage
    return ladder, looks


def _targets(figures, name, met):
    """Set candidate ``name``'s three targets in ``figures``' first row to ``met``."""
    column = _column(figures, f'{name} (')
    column['targets'] = {key: met for key in column['targets']}


def test_the_committed_verdict_is_the_rules_on_the_committed_figures():
    verdict = json.loads(json.dumps(bench.round10_rule(LADDER, LOOKS), default=float))
    assert verdict == RULE
    assert set(verdict['candidates']) == set(bench.ROUND10_CANDIDATES)
    assert all(v is not None for v in verdict['candidates'].values())
    assert verdict['rows'] == ['eval10_demo_ladder, all', next(iter(LOOKS))]
    assert next(iter(LOOKS)).startswith('held-out looks 7091-7093')


def test_each_condition_decides_as_written():
    r, stage, looks_r, looks_stage = _bar()
    name, other = bench.ROUND10_CANDIDATES
    ladder, looks = _set(other, -1.0, 0.0, -1.0, 0.0)  # the other fails: only ``name`` decides
    ladder, looks = _set(name, r - 0.02, stage + 0.001, looks_r - 0.02, looks_stage,
                         ladder, looks)
    verdict = bench.round10_rule(ladder, looks)
    assert verdict['passing'] == [name] and verdict['ships'].startswith(name)
    assert bench.ROUND10_SHIPS_AS[name] in verdict['ships']
    for change in ((ladder, 'stage_accuracy', stage),  # a tie in held-out stage accuracy fails
                   (ladder, 'pearson_r', r - 0.04),  # 0.04 below in r on the held-out family
                   (looks, 'pearson_r', looks_r - 0.04),  # 0.04 below on the fresh looks
                   (looks, 'stage_accuracy', looks_stage - 0.001)):  # below in looks stage
        figures, key, value = change
        column = _column(figures, f'{name} (')
        kept, column[key] = column[key], value
        verdict = bench.round10_rule(ladder, looks)
        assert verdict['passing'] == [], key
        assert verdict['ships'] == bench.ROUND10_NOTHING_SHIPS
        column[key] = kept
    assert bench.round10_rule(ladder, looks)['passing'] == [name]


def test_of_two_passing_more_targets_then_stage_accuracy_then_the_first_ships():
    r, stage, looks_r, looks_stage = _bar()
    first, second = bench.ROUND10_CANDIDATES
    ladder, looks = _set(first, r, stage + 0.05, looks_r, looks_stage)
    ladder, looks = _set(second, r, stage + 0.02, looks_r, looks_stage, ladder, looks)
    for figures in (ladder, looks):
        _targets(figures, first, False)
        _targets(figures, second, False)
    _targets(looks, second, True)  # three targets more: it ships, its lower stage accuracy
    verdict = bench.round10_rule(ladder, looks)
    assert verdict['passing'] == [first, second] and verdict['ships'].startswith(second)
    assert verdict['candidates'][second]['targets_met'] == 3
    _targets(looks, first, True)  # as many targets: the higher held-out stage accuracy
    assert bench.round10_rule(ladder, looks)['ships'].startswith(first)
    _column(ladder, f'{second} (')['stage_accuracy'] = stage + 0.05  # a full tie: the first
    assert bench.round10_rule(ladder, looks)['ships'].startswith(first)


def test_the_targets_are_the_measured_ones():
    verdict = bench.round10_rule(LADDER, LOOKS)
    for row, table in ((verdict['rows'][0], LADDER), (verdict['rows'][1], LOOKS)):
        for column, figures in table[row].items():
            assert verdict['targets'][row][column] == figures['targets']
            assert figures['targets']['stage_accuracy>=0.8'] == (figures['stage_accuracy']
                                                                 >= 0.8)
    for name, mine in verdict['candidates'].items():
        assert mine['targets_met'] == sum(
            sum(bench.checkpoint_figures(table[row], f'{name} (')['targets'].values())
            for row, table in ((verdict['rows'][0], LADDER), (verdict['rows'][1], LOOKS)))
