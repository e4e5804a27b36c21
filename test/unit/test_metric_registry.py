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


def _sweep_records():
    out = []
    for world, shift in (('mujoco', 0.0), ('physx', 0.1)):
        for policy, base in (('a', 0.2), ('b', 0.5), ('c', 0.8), ('new', 0.6)):
            if world == 'mujoco' and policy == 'new':
                continue  # run in the later world only: its mujoco score is predicted
            for k, noise in enumerate((-0.05, 0.0, 0.05)):
                value = base + shift + noise
                out.append({'role': world, 'policy': policy, 'task': 't', 'seed': k,
                            'perturbation': 'Default', 'intensity': 1.0,
                            'progression': value, 'success': False, 'outcome': 'timeout'})
    return out


def test_a_toy_metric_reaches_the_sweep_table_and_report(toy, tmp_path):
    """The sweep's agreement line and report table are the registry's columns too."""
    from realm_ros.core.sweep import format_sweep_table, summarize_sweep
    from realm_ros.sweep.report import write_sweep_report

    summary = json.loads(json.dumps(summarize_sweep(_sweep_records())))
    agreement = summary['agreement']['physx vs mujoco']
    assert agreement['max_gap'] == pytest.approx(0.1)
    line = next(x for x in format_sweep_table(summary).splitlines()
                if x.startswith('agreement physx vs mujoco'))
    assert line.endswith(', mean |gap| = 0.100, max |gap| = 0.1000')
    assert line.index('Pearson r') < line.index('MMRV') < line.index('max |gap|')
    report = write_sweep_report(tmp_path, summary).read_text()
    assert ('<th>worlds</th><th>Pearson r</th><th>MMRV</th><th>mean |gap|</th>'
            '<th>max |gap|</th><th>policies</th>') in report
    assert '<td>0.1000</td>' in report


def test_a_toy_metric_reaches_the_vision_demo_table(toy):
    """vision_demo's agreement rows (and their paired-bootstrap intervals) are the
    registry's: a metric registered once gets its row, its '|' escaped for Markdown."""
    from realm_ros.programs import vision_demo

    config = vision_demo.VisionDemoConfig(
        tasks=('push_switch',), policies=('a=scripted:0', 'b=scripted:1', 'c=scripted:2'),
        episodes=3, max_steps=10, width=32, height=18, columns=('raw',))
    records = []
    for column, shift in (('real', 0.0), ('raw', 0.2)):
        for policy, base in (('a', 0.1), ('b', 0.4), ('c', 0.7)):
            records += [{'column': column, 'task': 'push_switch', 'policy': policy, 'seed': k,
                         'variant': 0, 'progression': base + shift + 0.01 * k,
                         'success': False, 'outcome': 'timeout', 'image_mae': {}}
                        for k in range(3)]
    summary = vision_demo.summarize(records, config, vision_demo.Inputs())
    block = summary['columns']['raw']['all']
    assert block['agreement']['max_gap'] == pytest.approx(0.2)
    assert list(block['agreement_ci']) == ['pearson_r', 'mmrv', 'mean_abs_gap', 'max_gap']
    rows = [x.split(' | ')[0] for x in vision_demo.format_table(summary).splitlines()]
    titles = ['| Pearson r [95 % CI]', '| MMRV [95 % CI]', '| mean \\|gap\\| [95 % CI]',
              '| max \\|gap\\| [95 % CI]']
    assert [r for r in rows if r in titles] == titles


def test_a_toy_metric_reaches_the_demo_before_after_table(toy):
    """``realm-ros demo``'s before/after agreement lines are the registry's columns."""
    from realm_ros.commands.demo import agreement_table

    summary = json.loads(json.dumps(summarize(_records())))
    lines = agreement_table(summary, summary).splitlines()
    assert lines[0].split() == ['Pearson', 'r', 'MMRV', 'mean', '|gap|', 'max', '|gap|']
    low, high = summary['agreement']['ci95']['max_gap']
    assert lines[1].endswith(f'0.200 [{low:.2f}, {high:.2f}]')
