"""Round 11's decoder choice and shipping rule (bench/scorer_cameras.py, docs/scoring.md
"Round 11"): the committed cost is what the tuning rule gives on the committed tuning figures
(training sets only), and each condition of the shipping rule decides as written."""

import copy
import json

from scorer_rounds import (
    REPO,
    BarRound,
    bench,
    check_each_condition_decides,
    check_shipping_order,
    check_targets_are_measured,
)

TUNE = json.loads((REPO / 'docs/scorer-round11-tune.json').read_text())


def test_the_committed_cost_is_the_tuning_rules_on_training_sets_only():
    tune = TUNE['tune']
    assert bench.round11_tune({k: v for k, v in TUNE.items() if k != 'tune'}) == tune
    assert tune['chosen'] == bench.ROUND11_STEP_COST
    best = max(tune['pooled_stage_accuracy'].values())
    assert tune['pooled_stage_accuracy'][f'{bench.ROUND11_STEP_COST:g}'] == best
    row = next(iter(TUNE))
    assert row == ' + '.join(bench.ROUND11_TUNE_SETS)
    assert all(name.startswith('train') for name in bench.ROUND11_TUNE_SETS)
    assert {column.split(' ')[0] for column in TUNE[row]} == set(bench.ROUND11_TUNE_CHECKPOINTS)


def test_a_lower_cost_wins_a_tie():
    figures = copy.deepcopy({k: v for k, v in TUNE.items() if k != 'tune'})
    for column in figures[next(iter(figures))].values():
        column['stage_accuracy'] = 0.5
    assert bench.round11_tune(figures)['chosen'] == min(bench.ROUND11_STEP_COSTS)


ROUND = BarRound.of(11, sep='(')


def test_the_committed_verdict_is_the_rules_on_the_committed_figures():
    verdict = ROUND.recomputed()
    assert verdict == ROUND.verdict
    assert set(verdict['candidates']) == set(bench.ROUND11_CANDIDATES)
    assert all(v is not None for v in verdict['candidates'].values())
    assert verdict['rows'] == ['eval11_demo_ladder, all', 'held-out looks 7101-7103, all']
    # Every reading measured is the cost chosen on training sets, or the greedy one.
    columns = {c.split(' (')[0] for c in ROUND.ladder[verdict['rows'][0]]}
    assert columns == {f'{name} {label}' for name in bench.ROUND11_CHECKPOINTS
                       for label in ('greedy', f'monotone({bench.ROUND11_STEP_COST:g})')}


def test_each_condition_decides_as_written():
    check_each_condition_decides(ROUND)


def test_of_several_passing_more_targets_then_stage_accuracy_then_the_first_ships():
    check_shipping_order(ROUND)


def test_the_targets_are_the_measured_ones():
    check_targets_are_measured(ROUND)
