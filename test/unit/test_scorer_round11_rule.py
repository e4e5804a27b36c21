"""Round 11's decoder choice and shipping rule (bench/scorer_cameras.py, docs/scoring.md
"Round 11"): the committed cost is what the tuning rule gives on the committed tuning figures
(training sets only), and each condition of the shipping rule decides as written."""

import copy
import json
import pathlib

from bench_module import load_bench

REPO = pathlib.Path(__file__).resolve().parents[2]
bench = load_bench('scorer_cameras')
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
