"""Round 6's shipping rule (bench/scorer_cameras.py, docs/scoring.md "Round 6") read off
measured figures: the committed verdict is what the rule gives on the committed measurements,
and its margin on the fresh looks decides as written."""

import copy
import json
import pathlib

from bench_module import load_bench

REPO = pathlib.Path(__file__).resolve().parents[2]
bench = load_bench('scorer_cameras')

LADDER, LOOKS, RULE = (json.loads((REPO / p).read_text()) for p in bench.ROUND6_FILES)


def test_the_committed_verdict_is_the_rules_on_the_committed_figures():
    verdict = json.loads(json.dumps(bench.round6_rule(LADDER, LOOKS), default=float))
    assert verdict == RULE
    assert verdict['passes'] is False and verdict['ships'].startswith('nothing')


def _with_looks_r(delta):
    """The measurements with every candidate seed's r on the fresh looks set to families3's
    plus ``delta``."""
    looks = copy.deepcopy(LOOKS)
    row = looks[next(iter(looks))]
    base = next(v for k, v in row.items() if k.startswith('shipped families3 ('))
    for key, value in row.items():
        if key.startswith(bench.ROUND6_CANDIDATE):
            value['pearson_r'] = base['pearson_r'] + delta
    return looks


def test_the_looks_margin_decides_as_written():
    # On the new ladder set every seed beats families3 in r and stage accuracy (measured), so
    # the fresh looks' margin alone decides.
    assert bench.round6_rule(LADDER, _with_looks_r(-0.02))['passes'] is True
    assert bench.round6_rule(LADDER, _with_looks_r(-0.02))['ships'] == bench.ROUND6_CANDIDATE
    assert bench.round6_rule(LADDER, _with_looks_r(-0.04))['passes'] is False


def test_one_seed_losing_on_the_ladder_fails_the_candidate():
    ladder = copy.deepcopy(LADDER)
    row = ladder[next(iter(ladder))]
    base = next(v for k, v in row.items() if k.startswith('shipped families3 ('))
    seed1 = next(v for k, v in row.items()
                 if k.startswith(f'{bench.checkpoint_name(bench.ROUND6_CANDIDATE, 1)} ('))
    seed1['stage_accuracy'] = base['stage_accuracy']  # a tie is not a win
    assert bench.round6_rule(ladder, _with_looks_r(0.0))['passes'] is False
