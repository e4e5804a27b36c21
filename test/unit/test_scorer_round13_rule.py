"""Round 13's shipping rule (bench/scorer_cameras.py ``round13_rule``, docs/scoring.md
"Round 13"): the committed verdict is the rule's on the committed figures, each condition
decides as written, and what ships is the verdict's (the measured file, by digest)."""

import hashlib

from scorer_rounds import BarRound, bench, check_each_condition_decides, check_targets_are_measured

ROUND = BarRound.of(13)
LADDER, LOOKS, RULE = ROUND.ladder, ROUND.looks, ROUND.verdict
BAR = f'{bench.ROUND13_BAR} ('
(NAME,) = bench.ROUND13_CANDIDATES


def test_the_committed_verdict_is_the_rules_on_the_committed_figures():
    verdict = ROUND.recomputed()
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
        # Round 13's candidate is not shipped. Its file name was taken by round 14's verdict
        # for n_ensemble_m3 (the same networks with a median of 3): a file there is that one.
        path = learned.DEFAULT_CHECKPOINT.with_name(bench.ROUND13_SHIPS_AS[NAME])
        if path.exists():
            digest = hashlib.sha256(path.read_bytes()).hexdigest()[:8]
            row = LADDER[RULE['rows'][0]]
            assert not next(c for c in row if c.startswith(f'{NAME} (')).endswith(f'@{digest})')
            assert next(c for c in row
                        if c.startswith('n_ensemble_m3 greedy (')).endswith(f'@{digest})')
            assert bench.ROUND14_SHIPS_AS['n_ensemble_m3 greedy'] == path.name


def test_each_condition_decides_as_written():
    check_each_condition_decides(ROUND)


def test_the_targets_are_the_measured_ones():
    check_targets_are_measured(ROUND)
