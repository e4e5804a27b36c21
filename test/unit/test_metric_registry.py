"""An agreement metric is one record (``core.metrics.Metric``): registered in one place, it is
computed into ``summary.json`` (with its paired-bootstrap interval) and printed by the
paired-eval console table and ``report.html``; nothing else is told about it."""

import json

import numpy as np
import pytest

from realm_ros.core import metrics
from realm_ros.core.errors import DataError
from realm_ros.core.evaluation import format_table, summarize


def _max_gap(*, sim, real) -> float:
    """A toy metric: the largest per-policy |real - sim|."""
    return float(np.max(np.abs(np.asarray(sim) - np.asarray(real))))


TOY = metrics.Metric('max_gap', _max_gap, 'max |real - sim|', 'max gap', column='max |gap|',
                     format='.4f', better='lower')


@pytest.fixture
def toy():
    metrics.register(TOY)
    try:
        yield TOY
    finally:
        del metrics.METRICS[TOY.name]


def _records():
    out = []
    for seed, gap in ((0, 0.1), (1, 0.3)):
        for policy, real in (('good', 0.9), ('bad', 0.2)):
            pair = f'{seed}/{policy}'
            for world, value in (('real', real), ('sim', real - gap)):
                out.append({'pair_id': pair, 'world': world, 'policy': policy, 'task': 't',
                            'seed': seed, 'perturbation': 'Default', 'progression': value,
                            'success': value >= 1.0, 'outcome': 'timeout'})
    return out


def test_a_toy_metric_reaches_summary_table_and_report(toy, tmp_path):
    from realm_ros.programs.report import write_report
    summary = json.loads(json.dumps(summarize(_records())))  # as summary.json holds it
    agreement = summary['agreement']
    assert agreement['max_gap'] == pytest.approx(0.2)  # per-policy means: both 0.2 apart
    assert list(agreement)[:4] == ['pearson_r', 'mmrv', 'mean_abs_gap', 'max_gap']
    low, high = agreement['ci95']['max_gap']
    assert low <= 0.2 <= high and agreement['per_task']['t']['max_gap'] == pytest.approx(0.2)
    shown = f'0.2000 [{low:.4f}, {high:.4f}]'
    table = format_table(summary)
    assert f'max |real - sim| = {shown}' in table and f'max gap = {shown}' in table
    report = write_report(tmp_path, summary).read_text()
    assert f'max |real - sim| = {shown}' in report and 'max |gap| [95% CI]' in report
    assert f'<td>{shown}</td>' in report


def test_without_the_toy_the_figures_are_the_three():
    agreement = summarize(_records())['agreement']
    assert [k for k in agreement if k in metrics.METRICS] == ['pearson_r', 'mmrv',
                                                              'mean_abs_gap']
    assert 'max_gap' not in format_table(summarize(_records()))


def test_a_metric_record_is_checked():
    with pytest.raises(DataError, match='better'):
        metrics.Metric('x', _max_gap, 'x', 'x', better='up')
    with pytest.raises(DataError, match='already registered'):
        metrics.register(metrics.Metric('mmrv', _max_gap, 'x', 'x'))


def test_the_extending_md_metric_recipe_reaches_the_table_and_report(tmp_path):
    """docs/extending.md's "An agreement metric" registration, run as written."""
    from docrecipes import recipe

    from realm_ros.programs.report import write_report
    exec(recipe('An agreement metric'), {})  # noqa: S102 - the documented code
    try:
        summary = summarize(_records())
        assert summary['agreement']['max_gap'] == pytest.approx(0.2)
        assert 'max |real - sim| = 0.200' in format_table(summary)
        assert 'max |gap| [95% CI]' in write_report(tmp_path, summary).read_text()
    finally:
        del metrics.METRICS['max_gap']
