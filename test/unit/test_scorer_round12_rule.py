"""Round 12's shipping rule (bench/scorer_cameras.py ``round12_rule``, docs/scoring.md
"Round 12"): the committed verdict is the rule's on the committed figures, each condition
decides as written, and what ships is the verdict's."""

import hashlib

from scorer_rounds import (
    BarRound,
    bench,
    check_each_condition_decides,
    check_shipping_order,
    check_targets_are_measured,
)

ROUND = BarRound.of(12)


def test_the_committed_verdict_is_the_rules_on_the_committed_figures():
    verdict = ROUND.recomputed()
    assert verdict == ROUND.verdict
    assert set(verdict['candidates']) == set(bench.ROUND12_CANDIDATES)
    assert all(v is not None for v in verdict['candidates'].values())
    assert verdict['rows'] == ['eval12_demo_ladder, all', 'held-out looks 7111-7113, all']
    # Every reading measured is one of ROUND12_CHECKPOINTS with the greedy decoder.
    columns = {c.split(' (')[0] for c in ROUND.ladder[verdict['rows'][0]]}
    assert columns == {f'{name} greedy' for name in bench.ROUND12_CHECKPOINTS}
    assert {c['episodes'] for c in ROUND.ladder[verdict['rows'][0]].values()} == {96}
    assert {c['episodes'] for c in ROUND.looks[verdict['rows'][1]].values()} == {144}


def test_what_ships_is_the_verdicts():
    from realm_ros.scorers import learned
    ships = ROUND.verdict['ships']
    if ROUND.verdict['passing']:
        name = ships.split(' as ')[0]
        path = learned.DEFAULT_CHECKPOINT.with_name(bench.ROUND12_SHIPS_AS[name])
        assert path == learned.FAMILIES_HJK_CHECKPOINT and path.is_file()
        row = ROUND.ladder[ROUND.verdict['rows'][0]]
        column = next(c for c in row if c.startswith(f'{name} ('))
        # The measured file's digest is the shipped file's.
        assert column.endswith(f'@{hashlib.sha256(path.read_bytes()).hexdigest()[:8]})')
    else:
        assert ships == bench.ROUND12_NOTHING_SHIPS


def test_each_condition_decides_as_written():
    check_each_condition_decides(ROUND)


def test_of_both_passing_more_targets_then_stage_accuracy_then_the_first_ships():
    check_shipping_order(ROUND)


def test_the_targets_are_the_measured_ones():
    check_targets_are_measured(ROUND)
