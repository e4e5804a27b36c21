"""Round 12's shipping rule (bench/scorer_cameras.py ``round12_rule``, docs/scoring.md
"Round 12"): the committed verdict is the rule's on the committed figures, each condition
decides as written, and what ships is the verdict's."""

import copy
import hashlib
import json
import pathlib

from bench_module import load_bench

REPO = pathlib.Path(__file__).resolve().parents[2]
bench = load_bench('scorer_cameras')
LADDER, LOOKS, RULE = (json.loads((REPO / p).read_text()) for p in bench.ROUND12_FILES)
BAR = f'{bench.ROUND12_BAR} ('


def _column(figures, prefix):
    """The figures (the measurement's own dict) of a reading in a set's first row."""
    return bench.checkpoint_figures(figures[next(iter(figures))], prefix)


def _bar():
    ladder, looks = _column(LADDER, BAR), _column(LOOKS, BAR)
    return (ladder['pearson_r'], ladder['stage_accuracy'], looks['pearson_r'],
            looks['stage_accuracy'])


def _set(name, r, stage, looks_r, looks_stage, ladder=None, looks=None):
    """The measurements with candidate ``name``'s r and stage accuracy set as given."""
    ladder = copy.deepcopy(LADDER) if ladder is None else ladder
    looks = copy.deepcopy(LOOKS) if looks is None else looks
    mine = _column(ladder, f'{name} (')
    mine['pearson_r'], mine['stage_accuracy'] = r, stage
    theirs = _column(looks, f'{name} (')
    theirs['pearson_r'], theirs['stage_accuracy'] = looks_r, looks_stage
    return ladder, looks


def _targets(figures, name, met):
    column = _column(figures, f'{name} (')
    column['targets'] = {key: met for key in column['targets']}


def test_the_committed_verdict_is_the_rules_on_the_committed_figures():
    verdict = json.loads(json.dumps(bench.round12_rule(LADDER, LOOKS), default=float))
    assert verdict == RULE
    assert set(verdict['candidates']) == set(bench.ROUND12_CANDIDATES)
    assert all(v is not None for v in verdict['candidates'].values())
    assert verdict['rows'] == ['eval12_demo_ladder, all', 'held-out looks 7111-7113, all']
    # Every reading measured is one of ROUND12_CHECKPOINTS with the greedy decoder.
    columns = {c.split(' (')[0] for c in LADDER[verdict['rows'][0]]}
    assert columns == {f'{name} greedy' for name in bench.ROUND12_CHECKPOINTS}
    assert {c['episodes'] for c in LADDER[verdict['rows'][0]].values()} == {96}
    assert {c['episodes'] for c in LOOKS[verdict['rows'][1]].values()} == {144}


def test_what_ships_is_the_verdicts():
    from realm_ros.scorers import learned
    ships = RULE['ships']
    if RULE['passing']:
        name = ships.split(' as ')[0]
        path = learned.DEFAULT_CHECKPOINT.with_name(bench.ROUND12_SHIPS_AS[name])
        assert path == learned.FAMILIES_HJK_CHECKPOINT and path.is_file()
        column = next(c for c in LADDER[RULE['rows'][0]] if c.startswith(f'{name} ('))
        # The measured file's digest is the shipped file's.
        assert column.endswith(f'@{hashlib.sha256(path.read_bytes()).hexdigest()[:8]})')
    else:
        assert ships == bench.ROUND12_NOTHING_SHIPS


def test_each_condition_decides_as_written():
    r, stage, looks_r, looks_stage = _bar()
    name, *others = bench.ROUND12_CANDIDATES
    ladder, looks = copy.deepcopy(LADDER), copy.deepcopy(LOOKS)
    for other in others:  # the others fail: only ``name`` decides
        ladder, looks = _set(other, -1.0, 0.0, -1.0, 0.0, ladder, looks)
    ladder, looks = _set(name, r - 0.02, stage + 0.001, looks_r - 0.02, looks_stage - 0.02,
                         ladder, looks)
    verdict = bench.round12_rule(ladder, looks)
    assert verdict['passing'] == [name] and verdict['ships'].startswith(name)
    assert bench.ROUND12_SHIPS_AS[name] in verdict['ships']
    for figures, key, value in (
            (ladder, 'stage_accuracy', stage),  # a tie in held-out stage accuracy fails
            (ladder, 'pearson_r', r - 0.04),  # 0.04 below in r on the held-out family
            (looks, 'pearson_r', looks_r - 0.04),  # 0.04 below in r on the fresh looks
            (looks, 'stage_accuracy', looks_stage - 0.04)):  # 0.04 below in looks stage
        column = _column(figures, f'{name} (')
        kept, column[key] = column[key], value
        verdict = bench.round12_rule(ladder, looks)
        assert verdict['passing'] == [], key
        assert verdict['ships'] == bench.ROUND12_NOTHING_SHIPS
        column[key] = kept
    assert bench.round12_rule(ladder, looks)['passing'] == [name]


def test_of_both_passing_more_targets_then_stage_accuracy_then_the_first_ships():
    r, stage, looks_r, looks_stage = _bar()
    first, second = bench.ROUND12_CANDIDATES
    ladder, looks = _set(first, r, stage + 0.05, looks_r, looks_stage)
    ladder, looks = _set(second, r, stage + 0.02, looks_r, looks_stage, ladder, looks)
    for figures in (ladder, looks):
        _targets(figures, first, False)
        _targets(figures, second, False)
    _targets(looks, second, True)  # three targets more: it ships, its lower stage accuracy
    verdict = bench.round12_rule(ladder, looks)
    assert verdict['passing'] == [first, second] and verdict['ships'].startswith(second)
    _targets(looks, first, True)  # as many targets: the higher held-out stage accuracy
    assert bench.round12_rule(ladder, looks)['ships'].startswith(first)
    _column(ladder, f'{second} (')['stage_accuracy'] = stage + 0.05  # a full tie: the first
    assert bench.round12_rule(ladder, looks)['ships'].startswith(first)


def test_the_targets_are_the_measured_ones():
    verdict = bench.round12_rule(LADDER, LOOKS)
    for row, table in ((verdict['rows'][0], LADDER), (verdict['rows'][1], LOOKS)):
        for column, figures in table[row].items():
            assert verdict['targets'][row][column] == figures['targets']
            assert figures['targets']['stage_accuracy>=0.8'] == (figures['stage_accuracy']
                                                                 >= 0.8)
