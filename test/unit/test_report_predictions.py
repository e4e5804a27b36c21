"""report.html shows summary.json's predictions (``realm_ros/programs/report.py``,
``predictions_html``): the figures the console table prints, read from the same section."""

import html
import json
import re

import pytest

from realm_ros.core import prediction
from realm_ros.core.evaluation import format_table, summarize


def _record(policy, world, k, progression):
    return {'pair_id': f't/Default/{k}/{policy}', 'world': world, 'policy': policy, 'task': 't',
            'seed': k, 'perturbation': 'Default', 'progression': progression,
            'success': progression >= 1.0, 'outcome': 'timeout'}


TWIN = {'a': [0.1, 0.2, 0.0, 0.1], 'b': [0.4, 0.5, 0.4, 0.5], 'c': [0.7, 0.8, 0.7, 0.8],
        'd': [0.9, 1.0, 0.9, 1.0], 'liar': [0.9, 0.9, 1.0, 1.0], 'new': [0.0, 0.0, 0.0, 0.0]}
REAL = {'a': [0.1, 0.0, 0.1, 0.1], 'b': [0.4, 0.4, 0.5, 0.5], 'c': [0.7, 0.7, 0.8, 0.8],
        'd': [1.0, 0.9, 1.0, 1.0], 'liar': [0.0, 0.0, 0.0, 0.0]}


def _summary():
    records = [_record(p, 'sim', k, v) for p, vs in TWIN.items() for k, v in enumerate(vs)]
    records += [_record(p, 'real', k, v) for p, vs in REAL.items() for k, v in enumerate(vs)]
    return summarize(records)


def _section(text):
    start = text.index('<h2>Real scores predicted from the twin</h2>')
    return text[start:text.index('<h2>', start + 1)]


def _cells(text, policy):
    text = _section(text)
    row = re.search(rf'<tr><td>{policy}</td>(.*?)</tr>', text)
    assert row, f'no row for {policy}'
    return [html.unescape(c) for c in re.findall(r'<td>(.*?)</td>', row.group(1))]


def test_report_html_shows_every_prediction_coverage_and_width(tmp_path):
    from realm_ros.programs.report import write_report

    summary = _summary()
    section = summary['prediction']
    # summary.json round trip: the report reads what a later reader of the file reads.
    (tmp_path / 'summary.json').write_text(json.dumps(summary))
    text = write_report(tmp_path, json.loads((tmp_path / 'summary.json').read_text())
                        ).read_text()
    assert '<h2>Real scores predicted from the twin</h2>' in text
    by = {p['policy']: p for p in section['leave_one_out']}
    assert set(by) == {'a', 'b', 'c', 'd', 'liar'}
    for name, p in by.items():
        twin, predicted, interval, real, inside, fit = _cells(text, name)
        assert (twin, predicted, real) == (f'{p["twin"]:.3f}', f'{p["predicted"]:.3f}',
                                           f'{p["real"]:.3f}')
        assert interval == f'[{p["low"]:.3f}, {p["high"]:.3f}]'
        assert inside == ('yes' if p['covered'] else 'NO')
        assert fit == f'{p["model"]}, {p["dof"]} dof, on {", ".join(p["fitted_on"])}'
        assert name not in p['fitted_on'] and len(p['fitted_on']) == 4
    # The twin scores liar near the top and the real arm at 0: outside its interval.
    assert by['liar']['covered'] is False and _cells(text, 'liar')[4] == 'NO'
    cov = section['coverage']
    low, high = cov['coverage_ci95']
    assert cov['covered'] == sum(p['covered'] for p in by.values()) < 5
    assert (f'<b>{cov["covered"]} of 5</b> 90 % intervals hold the measured real mean '
            f'(coverage {cov["coverage"]:.2f}, exact binomial 95 % CI [{low:.2f}, {high:.2f}])'
            f'; mean width <b>{cov["mean_width"]:.3f}</b>') in text
    # The twin-only policy: predicted from all five, no measured mean, and what to do.
    (new,) = section['twin_only']
    cells = _cells(text, 'new')
    assert cells[2:5] == [f'[{new["low"]:.3f}, {new["high"]:.3f}]', 'twin only', 'n/a']
    assert html.escape(new['action']) in text
    # The console table prints the same figures from the same section.
    table = format_table(summary)
    assert f'{cov["covered"]} of 5 90 % intervals' in table
    assert f'[{new["low"]:.2f}, {new["high"]:.2f}]' in table and new['action'] in table


def test_report_html_says_why_there_is_no_prediction(tmp_path):
    from realm_ros.programs.report import predictions_html, write_report

    records = [_record('a', w, k, 0.5) for w in ('sim', 'real') for k in range(2)]
    records += [_record('b', 'sim', k, 0.2) for k in range(2)]
    summary = summarize(records)
    text = write_report(tmp_path, summary).read_text()
    assert ('no leave-one-out prediction: a calibration map needs at least 2 policies with '
            'both worlds, got 1') in text
    assert predictions_html(None) == [] and predictions_html({}) == []
    old = dict(summary)
    del old['prediction']  # a summary.json written before predictions existed
    assert 'predicted from the twin' not in write_report(tmp_path, old).read_text()


def test_placement_says_what_a_lab_does_with_a_twin_only_prediction():
    found = prediction.Prediction(policy='new', twin=0.5, predicted=0.5, low=0.4, high=0.6,
                                  level=0.9, model='linear', dof=3, fitted_on=('a', 'b', 'c'))
    clear = prediction.placement(found, {'a': 0.1, 'b': 0.3, 'c': 0.9})
    assert clear['above'] == ['a', 'b'] and clear['below'] == ['c'] and not clear['overlaps']
    assert 'above a, b; below c' in clear['action'] and 'no real episodes' in clear['action']
    close = prediction.placement(found, {'a': 0.1, 'b': 0.45, 'c': 0.55})
    assert close['overlaps'] == ['b', 'c']
    assert close['action'].startswith('run it on the real arm to order it against b, c')


@pytest.mark.parametrize('covered, policies, low, high', [
    (5, 5, 0.478, 1.0), (0, 5, 0.0, 0.522), (9, 10, 0.555, 0.997)])
def test_coverage_interval_is_clopper_pearson(covered, policies, low, high):
    assert prediction.coverage_interval(covered, policies) == pytest.approx((low, high),
                                                                           abs=1e-3)
    assert prediction.coverage_interval(0, 0) is None


def test_sweep_report_shows_the_prediction_of_a_policy_run_in_the_later_world_only(tmp_path):
    """The sweep's report.html shows summary.json's prediction section as paired-eval's does
    (one code path: programs.report.predictions_html): the coverage and the twin-only
    policy with what a lab does with it."""
    from realm_ros.core.sweep import summarize_sweep
    from realm_ros.sweep.report import write_sweep_report

    records = []
    for world, shift in (('mujoco', 0.0), ('physx', 0.1)):
        for policy, base in (('a', 0.1), ('b', 0.4), ('c', 0.7), ('new', 0.5)):
            if world == 'mujoco' and policy == 'new':
                continue
            records += [{'role': world, 'policy': policy, 'task': 't', 'seed': k,
                         'perturbation': 'Default', 'intensity': 1.0,
                         'progression': base + shift + 0.03 * (k - 1), 'success': False,
                         'outcome': 'timeout'} for k in range(3)]
    summary = summarize_sweep(records)
    section = summary['prediction']['physx vs mujoco']
    (only,) = section['twin_only']
    report = write_sweep_report(tmp_path, summary).read_text()
    assert '<h2>mujoco mean progression predicted from physx</h2>' in report
    assert f'{section["coverage"]["covered"]} of 3</b> 90 % intervals' in report
    assert f'<b>new</b>: {html.escape(only["action"])}' in report
    assert f'<td>new</td><td>{only["twin"]:.3f}</td><td>{only["predicted"]:.3f}</td>' in report
    # The worlds by name: the later one predicts the first (the reference), not twin / real.
    assert ('<th>physx mean</th><th>predicted mujoco</th><th>90 % PI</th>'
            '<th>measured mujoco</th>') in report and '<td>physx only</td>' in report
