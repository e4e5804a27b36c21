"""Round 16's shipping rule (bench/scorer_cameras.py ``round16_rule``, docs/scoring.md
"Round 16"): the committed verdict is the rule's on the committed figures, each condition
decides as written, and what ships is the verdict's (the measured file, by digest), or nothing
ships and no file exists."""

from scorer_rounds import (
    BarRound,
    bench,
    check_committed_verdict,
    check_each_condition_decides,
    check_targets_are_measured,
    check_what_ships,
)

ROUND = BarRound.of(16)


def test_the_committed_verdict_is_the_rules_on_the_committed_figures():
    # Every reading measured is one of ROUND16_CHECKPOINTS with the decoder it carries (a
    # median of 3, no thresholds: 'greedy'), all of them read.
    check_committed_verdict(
        ROUND, ['eval16_demo_ladder, all', 'held-out looks 7151-7153, all'],
        {f'{name} greedy' for name in bench.ROUND16_CHECKPOINTS})


def test_what_ships_is_the_verdicts():
    from realm_ros.scorers import learned
    check_what_ships(ROUND, learned.FAMILIES_NOW3_CHECKPOINT, 'FAMILIES_DIST3_CHECKPOINT')


def test_each_condition_decides_as_written():
    check_each_condition_decides(ROUND)


def test_the_targets_are_the_measured_ones():
    check_targets_are_measured(ROUND)
