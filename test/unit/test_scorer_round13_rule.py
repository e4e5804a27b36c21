"""Round 13's shipping rule (bench/scorer_cameras.py ``round13_rule``, docs/scoring.md
"Round 13"): the committed verdict is the rule's on the committed figures, each condition
decides as written, and what ships is the verdict's (the measured file, by digest)."""

import copy
import hashlib
import json
import pathlib

from bench_module import load_bench

REPO = pathlib.Path(__file__).resolve().parents[2]
bench = load_bench('scorer_cameras')
LADDER, LOOKS, RULE = (json.loads((REPO / p).read_text()) for p in bench.ROUND13_FILES)
BAR = f'{bench.ROUND13_BAR} ('
(NAME,) = bench.ROUND13_CANDIDATES


def _column(figures, prefix):
    """The figures (the measurement's own dict) of a reading in a set's first row."""
    return bench.checkpoint_figures(figures[next(iter(figures))], prefix)


def _bar():
    ladder, looks = _column(LADDER, BAR), _column(LOOKS, BAR)
    return (ladder['pearson_r'], ladder['stage_accuracy'], looks['pearson_r'],
            looks['stage_accuracy'])


def test_the_committed_verdict_is_the_rules_on_the_committed_figures():
    verdict = json.loads(json.dumps(bench.round13_rule(LADDER, LOOKS), default=float))
    assert verdict == RULE
    assert set(verdict['candidates']) == {NAME}
    assert verdict['candidates'][NAME] is not None
    assert verdict['rows'] == ['eval13_demo_ladder, all', 'held-out looks 7121-7123, all']
    # Every reading measured is one of ROUND13_CHECKPOINTS with the decoder it carries (the
    # count heads greedy, the now-heads with no median but n_ensemble_m3), the bar and the
    # candidate among them.
    columns = {c.split(' (')[0] for c in LADDER[verdict['rows'][0]]}
    for column in columns:
        name, label = column.split(' ', 1)
        assert name in bench.ROUND13_CHECKPOINTS
        now = name.startswith('n_') and name != 'n_ensemble_m3'
        assert label == ('greedy(median 1)' if now else 'greedy'), column
    assert {bench.ROUND13_BAR, NAME} <= columns
    assert columns == {c.split(' (')[0] for c in LOOKS[verdict['rows'][1]]}
    assert {c['episodes'] for c in LADDER[verdict['rows'][0]].values()} == {96}
    assert {c['episodes'] for c in LOOKS[verdict['rows'][1]].values()} == {144}


def test_what_ships_is_the_verdicts():
    from realm_ros.scorers import learned
    ships = RULE['ships']
    bar = next(c for c in LADDER[RULE['rows'][0]] if c.startswith(BAR))
    # The bar read is the shipped families_hjk, by digest.
    digest = hashlib.sha256(learned.FAMILIES_HJK_CHECKPOINT.read_bytes()).hexdigest()[:8]
    assert bar.endswith(f'@{digest})')
    if RULE['passing']:
        path = learned.DEFAULT_CHECKPOINT.with_name(bench.ROUND13_SHIPS_AS[NAME])
        assert path == learned.FAMILIES_NOW3_CHECKPOINT and path.is_file()
        column = next(c for c in LADDER[RULE['rows'][0]] if c.startswith(f'{NAME} ('))
        assert column.endswith(f'@{hashlib.sha256(path.read_bytes()).hexdigest()[:8]})')
    else:
        assert RULE['passing'] == [] and ships == bench.ROUND13_NOTHING_SHIPS
        assert not learned.DEFAULT_CHECKPOINT.with_name(bench.ROUND13_SHIPS_AS[NAME]).exists()


def test_each_condition_decides_as_written():
    r, stage, looks_r, looks_stage = _bar()
    ladder, looks = copy.deepcopy(LADDER), copy.deepcopy(LOOKS)
    mine, theirs = _column(ladder, f'{NAME} ('), _column(looks, f'{NAME} (')
    mine['pearson_r'], mine['stage_accuracy'] = r - 0.02, stage + 0.001
    theirs['pearson_r'], theirs['stage_accuracy'] = looks_r - 0.02, looks_stage - 0.02
    verdict = bench.round13_rule(ladder, looks)
    assert verdict['passing'] == [NAME] and verdict['ships'].startswith(NAME)
    assert bench.ROUND13_SHIPS_AS[NAME] in verdict['ships']
    for column, key, value in (
            (mine, 'stage_accuracy', stage),  # a tie in held-out stage accuracy fails
            (mine, 'pearson_r', r - 0.04),  # 0.04 below in r on the held-out family
            (theirs, 'pearson_r', looks_r - 0.04),  # 0.04 below in r on the fresh looks
            (theirs, 'stage_accuracy', looks_stage - 0.04)):  # 0.04 below in looks stage
        kept, column[key] = column[key], value
        verdict = bench.round13_rule(ladder, looks)
        assert verdict['passing'] == [], key
        assert verdict['ships'] == bench.ROUND13_NOTHING_SHIPS
        column[key] = kept
    assert bench.round13_rule(ladder, looks)['passing'] == [NAME]


def test_the_targets_are_the_measured_ones():
    verdict = bench.round13_rule(LADDER, LOOKS)
    for row, table in ((verdict['rows'][0], LADDER), (verdict['rows'][1], LOOKS)):
        for column, figures in table[row].items():
            assert verdict['targets'][row][column] == figures['targets']
            assert figures['targets']['stage_accuracy>=0.8'] == (figures['stage_accuracy']
                                                                 >= 0.8)
