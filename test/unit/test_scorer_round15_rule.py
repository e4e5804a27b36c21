"""Round 15's shipping rule (bench/scorer_cameras.py ``round15_rule``, docs/scoring.md
"Round 15"): the committed verdict is the rule's on the committed figures, each condition
decides as written, and what ships is the verdict's (the measured file, by digest), or nothing
ships and no file exists."""

import hashlib

from scorer_rounds import BarRound, bench, check_each_condition_decides, check_targets_are_measured

ROUND = BarRound.of(15)
LADDER, LOOKS, RULE = ROUND.ladder, ROUND.looks, ROUND.verdict
BAR = f'{bench.ROUND15_BAR} ('
(NAME,) = bench.ROUND15_CANDIDATES


def test_the_committed_verdict_is_the_rules_on_the_committed_figures():
    verdict = ROUND.recomputed()
    assert verdict == RULE
    assert set(verdict['candidates']) == {NAME}
    assert verdict['candidates'][NAME] is not None
    assert verdict['rows'] == ['eval15_demo_ladder, all', 'held-out looks 7141-7143, all']
    # Every reading measured is one of ROUND15_CHECKPOINTS with the decoder it carries, all
    # of them read.
    labels = {'n_ensemble': 'greedy(median 1)', 'n_ensemble_m3_prior': 'greedy(thresholds)'}
    columns = {c.split(' (')[0] for c in LADDER[verdict['rows'][0]]}
    assert columns == {f'{name} {labels.get(name, "greedy")}'
                       for name in bench.ROUND15_CHECKPOINTS}
    assert {bench.ROUND15_BAR, NAME} <= columns
    assert columns == {c.split(' (')[0] for c in LOOKS[verdict['rows'][1]]}
    assert {c['episodes'] for c in LADDER[verdict['rows'][0]].values()} == {192}
    assert {c['episodes'] for c in LOOKS[verdict['rows'][1]].values()} == {144}


def test_what_ships_is_the_verdicts():
    from realm_ros.scorers import learned
    bar = next(c for c in LADDER[RULE['rows'][0]] if c.startswith(BAR))
    # The bar read is the shipped families_now3, by digest.
    digest = hashlib.sha256(learned.FAMILIES_NOW3_CHECKPOINT.read_bytes()).hexdigest()[:8]
    assert bar.endswith(f'@{digest})')
    path = learned.DEFAULT_CHECKPOINT.with_name(bench.ROUND15_SHIPS_AS[NAME])
    if RULE['passing']:
        assert RULE['ships'] == f'{NAME} as realm_ros/data/{bench.ROUND15_SHIPS_AS[NAME]}'
        assert path == learned.FAMILIES_NOW3P_CHECKPOINT and path.is_file()
        # The shipped file is the measured one, by digest, on both sets; its networks are
        # families_now3's and its decoder carries the thresholds.
        shipped = hashlib.sha256(path.read_bytes()).hexdigest()[:8]
        for table, row in ((LADDER, RULE['rows'][0]), (LOOKS, RULE['rows'][1])):
            column = next(c for c in table[row] if c.startswith(f'{NAME} ('))
            assert column.endswith(f'@{shipped})')
        assert learned.LearnedScorer(path).decoder.thresholds is not None
    else:
        assert RULE['passing'] == [] and RULE['ships'] == bench.ROUND15_NOTHING_SHIPS
        assert not path.exists()
        assert not hasattr(learned, 'FAMILIES_NOW3P_CHECKPOINT')


def test_each_condition_decides_as_written():
    check_each_condition_decides(ROUND)


def test_the_targets_are_the_measured_ones():
    check_targets_are_measured(ROUND)
