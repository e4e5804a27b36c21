"""Round 14's shipping rule (bench/scorer_cameras.py ``round14_rule``, docs/scoring.md
"Round 14"): the committed verdict is the rule's on the committed figures, each condition
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

ROUND = BarRound.of(14)


def test_the_committed_verdict_is_the_rules_on_the_committed_figures():
    # Every reading measured is one of ROUND14_CHECKPOINTS with the decoder it carries (the
    # count heads and n_ensemble_m3 greedy, n_ensemble with no median), all of them read.
    check_committed_verdict(
        ROUND, ['eval14_demo_ladder, all', 'held-out looks 7131-7133, all'],
        {f'{name} greedy(median 1)' if name == 'n_ensemble' else f'{name} greedy'
         for name in bench.ROUND14_CHECKPOINTS})


def test_what_ships_is_the_verdicts():
    from realm_ros.scorers import learned
    check_what_ships(ROUND, learned.FAMILIES_HJK_CHECKPOINT, 'FAMILIES_NOW3_CHECKPOINT')


def test_each_condition_decides_as_written():
    check_each_condition_decides(ROUND)


def test_the_targets_are_the_measured_ones():
    check_targets_are_measured(ROUND)
