"""The paired-evaluation report (``realm_ros/programs/report.py``) shows summary.json's agreement
intervals (``ci95``) beside r, MMRV and the mean gap."""

from realm_ros.core.evaluation import summarize


def _record(pair, world, policy, seed, progression):
    return {'pair_id': pair, 'world': world, 'policy': policy, 'task': 't', 'seed': seed,
            'perturbation': 'Default', 'progression': progression,
            'success': progression >= 1.0,
            'outcome': 'success' if progression >= 1 else 'timeout'}


def test_report_shows_the_agreement_intervals(tmp_path):
    from realm_ros.programs.report import write_report
    # Two starts: a resample's mean gap is 0.1 (start 0 twice), 0.3 (start 1 twice) or 0.2.
    records = []
    for seed, gap in ((0, 0.1), (1, 0.3)):
        for policy, real in (('good', 0.9), ('bad', 0.2)):
            pair = f'{seed}/{policy}'
            records += [_record(pair, 'real', policy, seed, real),
                        _record(pair, 'sim', policy, seed, real - gap)]
    summary = summarize(records)
    ci = summary['agreement']['ci95']['mean_abs_gap']
    assert ci[0] < ci[1]
    text = write_report(tmp_path, summary).read_text()
    shown = f'0.200 [{ci[0]:.3f}, {ci[1]:.3f}]'
    assert f'mean |real - sim| = {shown}' in text, text
    assert f'<td>{shown}</td>' in text  # the per-task table too
    assert 'Pearson r [95% CI]' in text
