"""Round 15's shipping rule (bench/scorer_cameras.py ``round15_rule``, docs/scoring.md
"Round 15"): the committed verdict is the rule's on the committed figures, each condition
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

ROUND = BarRound.of(15)


def test_the_committed_verdict_is_the_rules_on_the_committed_figures():
    # Every reading measured is one of ROUND15_CHECKPOINTS with the decoder it carries, all
    # of them read.
    labels = {'n_ensemble': 'greedy(median 1)', 'n_ensemble_m3_prior': 'greedy(thresholds)'}
    check_committed_verdict(
        ROUND, ['eval15_demo_ladder, all', 'held-out looks 7141-7143, all'],
        {f'{name} {labels.get(name, "greedy")}' for name in bench.ROUND15_CHECKPOINTS})


def test_what_ships_is_the_verdicts():
    from realm_ros.scorers import learned

    def decoder_has_thresholds(path):  # families_now3's networks, the thresholds carried
        assert learned.LearnedScorer(path).decoder.thresholds is not None

    check_what_ships(ROUND, learned.FAMILIES_NOW3_CHECKPOINT, 'FAMILIES_NOW3P_CHECKPOINT',
                     decoder_has_thresholds)


def test_each_condition_decides_as_written():
    check_each_condition_decides(ROUND)


def test_the_targets_are_the_measured_ones():
    check_targets_are_measured(ROUND)
