"""Round 10's shipping rule (bench/scorer_cameras.py, docs/scoring.md "Round 10") read off
measured figures: the committed verdict is what the rule gives on the committed measurements,
and each of its conditions (above families_demo3 in stage accuracy on the held-out family, the
0.03 r margin on both sets, stage accuracy met or beaten on the fresh looks; of two passing, the
more targets met, then the held-out stage accuracy, then the first) decides as written."""

from scorer_rounds import (
    BarRound,
    bench,
    check_each_condition_decides,
    check_shipping_order,
    check_targets_are_measured,
)

ROUND = BarRound.of(10, margin='R_MARGIN', looks_stage_margin=0.0)


def test_the_committed_verdict_is_the_rules_on_the_committed_figures():
    verdict = ROUND.recomputed()
    assert verdict == ROUND.verdict
    assert set(verdict['candidates']) == set(bench.ROUND10_CANDIDATES)
    assert all(v is not None for v in verdict['candidates'].values())
    assert verdict['rows'] == ['eval10_demo_ladder, all', next(iter(ROUND.looks))]
    assert next(iter(ROUND.looks)).startswith('held-out looks 7091-7093')


def test_each_condition_decides_as_written():
    check_each_condition_decides(ROUND)


def test_of_two_passing_more_targets_then_stage_accuracy_then_the_first_ships():
    check_shipping_order(ROUND)


def test_the_targets_are_the_measured_ones():
    check_targets_are_measured(ROUND)
