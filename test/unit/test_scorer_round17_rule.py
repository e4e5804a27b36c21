"""Round 17's shipping rule (bench/scorer_cameras.py ``round17_rule``, docs/scoring.md
"Round 17"): the committed verdict is the rule's on the committed figures, each condition
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

ROUND = BarRound.of(17)
#: Each reading measured: ROUND17_CHECKPOINTS with the decoder each carries.
READINGS = {'families_dist3 greedy', 'families_dist3_read greedy(measured)',
            'families_now3 greedy', 'q_ctrl_m3 greedy'}


def test_the_committed_verdict_is_the_rules_on_the_committed_figures():
    assert {n.split()[0] for n in READINGS} == set(bench.ROUND17_CHECKPOINTS)
    check_committed_verdict(
        ROUND, ['eval17_demo_ladder, all', 'held-out looks 7161-7163, all'], READINGS)


def test_what_ships_is_the_verdicts():
    from realm_ros.scorers import learned

    def measured_decoder(path):  # families_dist3's networks, carrying the measured decoder
        assert learned.LearnedScorer(path).decoder == learned.Decoder(measured=True)

    check_what_ships(ROUND, learned.FAMILIES_DIST3_CHECKPOINT, 'FAMILIES_DIST3R_CHECKPOINT',
                     measured_decoder)


def test_each_condition_decides_as_written():
    check_each_condition_decides(ROUND)


def test_the_targets_are_the_measured_ones():
    check_targets_are_measured(ROUND)
