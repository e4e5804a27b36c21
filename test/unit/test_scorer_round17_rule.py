"""Round 17's shipping rule (bench/scorer_cameras.py ``round17_rule``, docs/scoring.md
"Round 17"): the committed verdict is the rule's on the committed figures, each condition
decides as written, and what ships is the verdict's (the measured file, by digest), or nothing
ships and no file exists."""

import hashlib

from scorer_rounds import BarRound, bench, check_each_condition_decides, check_targets_are_measured

ROUND = BarRound.of(17)
LADDER, LOOKS, RULE = ROUND.ladder, ROUND.looks, ROUND.verdict
BAR = f'{bench.ROUND17_BAR} ('
(NAME,) = bench.ROUND17_CANDIDATES
CANDIDATE = NAME.split()[0]
#: Each reading measured: ROUND17_CHECKPOINTS with the decoder each carries.
READINGS = {'families_dist3 greedy', 'families_dist3_read greedy(measured)',
            'families_now3 greedy', 'q_ctrl_m3 greedy'}


def test_the_committed_verdict_is_the_rules_on_the_committed_figures():
    verdict = ROUND.recomputed()
    assert verdict == RULE
    assert set(verdict['candidates']) == {NAME}
    assert verdict['candidates'][NAME] is not None
    assert verdict['rows'] == ['eval17_demo_ladder, all', 'held-out looks 7161-7163, all']
    assert {n.split()[0] for n in READINGS} == set(bench.ROUND17_CHECKPOINTS)
    columns = {c.split(' (')[0] for c in LADDER[verdict['rows'][0]]}
    assert columns == READINGS
    assert {bench.ROUND17_BAR, NAME} <= columns
    assert columns == {c.split(' (')[0] for c in LOOKS[verdict['rows'][1]]}
    assert {c['episodes'] for c in LADDER[verdict['rows'][0]].values()} == {192}
    assert {c['episodes'] for c in LOOKS[verdict['rows'][1]].values()} == {144}


def test_what_ships_is_the_verdicts():
    from realm_ros.scorers import learned
    # The bar read is the shipped families_dist3, by digest.
    bar = next(c for c in LADDER[RULE['rows'][0]] if c.startswith(BAR))
    digest = hashlib.sha256(learned.FAMILIES_DIST3_CHECKPOINT.read_bytes()).hexdigest()[:8]
    assert bar.endswith(f'@{digest})')
    path = learned.DEFAULT_CHECKPOINT.with_name(bench.ROUND17_SHIPS_AS[NAME])
    if RULE['passing']:
        assert RULE['ships'] == f'{NAME} as realm_ros/data/{bench.ROUND17_SHIPS_AS[NAME]}'
        assert path == learned.FAMILIES_DIST3R_CHECKPOINT and path.is_file()
        shipped = hashlib.sha256(path.read_bytes()).hexdigest()[:8]
        for table, row in ((LADDER, RULE['rows'][0]), (LOOKS, RULE['rows'][1])):
            column = next(c for c in table[row] if c.startswith(f'{CANDIDATE} '))
            assert column.endswith(f'@{shipped})')
        # The same networks as families_dist3, carrying the measured decoder.
        scorer = learned.LearnedScorer(path)
        assert scorer.decoder == learned.Decoder(measured=True)
    else:
        assert RULE['passing'] == [] and RULE['ships'] == bench.ROUND17_NOTHING_SHIPS
        assert not path.exists()
        assert not hasattr(learned, 'FAMILIES_DIST3R_CHECKPOINT')


def test_each_condition_decides_as_written():
    check_each_condition_decides(ROUND)


def test_the_targets_are_the_measured_ones():
    check_targets_are_measured(ROUND)
