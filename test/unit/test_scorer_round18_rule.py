"""Round 18's shipping rule (bench/scorer_cameras.py ``round18_rule``, docs/scoring.md
"Round 18"): the veto multiple is the one its rule names, the committed verdict is the rule's on
the committed figures, each condition decides as written, and what ships is the verdict's (the
measured file, by digest), or nothing ships and no file exists."""

from scorer_rounds import (
    BarRound,
    bench,
    check_committed_verdict,
    check_each_condition_decides,
    check_targets_are_measured,
    check_what_ships,
)

ROUND = BarRound.of(18)
#: Each reading measured: ROUND18_CHECKPOINTS with the decoder each carries.
READINGS = {'families_dist3 greedy', 'families_dist3_veto greedy(veto)',
            'families_dist3_read greedy(measured)', 'families_now3 greedy'}


def test_the_candidate_carries_the_veto_the_rule_chose_on_the_training_sets():
    assert bench.ROUND18_VETO in bench.ROUND18_VETO_STEPS
    assert bench.VARIANTS['families_dist3_veto']['decoder']['veto'] == bench.ROUND18_VETO
    assert bench.VARIANTS['families_dist3_veto']['decoder_of'] == 'families_dist3'
    assert bench.ROUND18_VETO_SETS == bench.VARIANTS['q_dist']['sets']
    # None of the sets the veto was chosen on is one the rule reads.
    assert not set(bench.ROUND18_VETO_SETS) & {'eval18_demo_ladder', 'eval18_looks'}


def test_the_committed_verdict_is_the_rules_on_the_committed_figures():
    assert {n.split()[0] for n in READINGS} == set(bench.ROUND18_CHECKPOINTS)
    check_committed_verdict(
        ROUND, ['eval18_demo_ladder, all', 'held-out looks 7171-7173, all'], READINGS)


def test_what_ships_is_the_verdicts():
    from realm_ros.scorers import learned

    def vetoed(path):  # families_dist3's networks, carrying the veto decoder
        assert learned.LearnedScorer(path).decoder == learned.Decoder(veto=bench.ROUND18_VETO)

    check_what_ships(ROUND, learned.FAMILIES_DIST3_CHECKPOINT, 'FAMILIES_DIST3V_CHECKPOINT',
                     vetoed)


def test_each_condition_decides_as_written():
    check_each_condition_decides(ROUND)


def test_the_targets_are_the_measured_ones():
    check_targets_are_measured(ROUND)
