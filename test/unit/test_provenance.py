"""Every record carries what made it, and a re-run into the same folder must match it
(realm_ros.core.provenance): the rule on records, and ``realm-ros sweep`` in process on the
MuJoCo twin for the three changes that once went unnoticed (paired-eval's: test_evaluator.py)."""

import json

import pytest

from realm_ros.cli import main
from realm_ros.core import provenance
from realm_ros.core.errors import ConfigError
from realm_ros.core.evaluation import EpisodeLog

SWEEP = ['--tasks', 'push_switch', '--episodes-per-cell', '1', '--quiet']
PARAMS = 'config/dynamics/sysid_demo.yaml'


def _records(out):
    return [json.loads(line) for line in (out / 'episodes.jsonl').read_text().splitlines()]


def test_a_file_setting_compares_by_content_not_by_path(tmp_path):
    a, b = tmp_path / 'a.yaml', tmp_path / 'b.yaml'
    a.write_text('friction: [0.1]\n')
    b.write_text('friction: [0.1]\n')
    assert provenance.difference({'p': provenance.file_setting(a)},
                                 {'p': provenance.file_setting(b)}) is None
    b.write_text('friction: [0.2]\n')
    setting, was, now = provenance.difference({'p': provenance.file_setting(a)},
                                              {'p': provenance.file_setting(b)})
    assert setting == 'p' and was['file'].endswith('a.yaml') and now['file'].endswith('b.yaml')
    assert provenance.difference(None, {'max_steps': 3})[0] == 'max_steps'  # unrecorded


def test_reconcile_refuses_or_forgets_changed_records_and_keeps_matching_ones(tmp_path):
    def made(steps):
        return lambda record: {'max_steps': steps}
    log = EpisodeLog(tmp_path / 'episodes.jsonl', made_by=made(30))
    for pair in ('a', 'b'):
        log.append({'pair_id': pair, 'role': 'sim', 'outcome': 'success'})
    with pytest.raises(ConfigError, match=r'was run with --max-steps 30, not 40 \(2 episode'):
        provenance.reconcile(EpisodeLog(log.path), made(40), False, 'out')
    again = EpisodeLog(log.path, made_by=made(40))
    changed = provenance.reconcile(again, made(40), True, 'out')
    assert [c.key for c in changed] == [('a', 'sim'), ('b', 'sim')]
    assert again.records == [] and not again.done('a', 'sim')
    again.append({'pair_id': 'a', 'role': 'sim', 'outcome': 'success'})
    # Both settings now have a record of pair a: each run finds its own, b runs again at 40.
    assert provenance.reconcile(EpisodeLog(log.path), made(30), False, 'out') == []
    newer = EpisodeLog(log.path)
    assert [c.key for c in provenance.reconcile(newer, made(40), True, 'out')] == [('b', 'sim')]
    assert newer.done('a', 'sim') and [r['made_by'] for r in newer.records] == [
        {'max_steps': 40}]


@pytest.mark.parametrize('change, flag', [
    (['--policies', 'scripted-3=scripted:skill=1', '--max-steps', '30'], '--policies'),
    (['--policies', 'scripted:3', '--max-steps', '45'], '--max-steps'),
    (['--policies', 'scripted:3', '--max-steps', '30', '--sim-params', PARAMS], '--sim-params'),
])
def test_sweep_refuses_a_rerun_with_other_settings_and_reruns_them_when_asked(
        tmp_path, capsys, change, flag):
    out = tmp_path / 'sweep'
    assert main(['sweep', '--out', str(out), *SWEEP, '--policies', 'scripted:3',
                 '--max-steps', '30']) == 0
    first = _records(out)
    assert len(first) == 1 and first[0]['made_by']['max_steps'] == 30
    capsys.readouterr()
    assert main(['sweep', '--out', str(out), *SWEEP, *change]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count('\n') == 0 and f'was run with {flag}' in err and 'Traceback' not in err
    assert _records(out) == first  # nothing ran
    assert main(['sweep', '--out', str(out), *SWEEP, *change, '--rerun-changed']) == 0
    assert 'running 1 changed episode(s) again' in capsys.readouterr().err
    records = _records(out)
    assert len(records) == 2 and records[0] == first[0]
    summary = json.loads((out / 'summary.json').read_text())
    # The summary reports what its records ran with: the new settings alone.
    assert summary['made_by'] == records[1]['made_by']
    assert records[1]['steps'] == summary['made_by']['max_steps'] == int(change[3])
    if flag == '--sim-params':
        assert summary['made_by']['sim_params']['sha256'] and first[0]['made_by'][
            'sim_params'] == ''
    if flag == '--policies':
        assert summary['made_by']['policy'] == 'scripted:skill=1'


def test_out_naming_a_file_is_refused_in_one_line(tmp_path, capsys):
    path = tmp_path / 'results.json'
    path.write_text('{}')
    for command in ('sweep', 'paired-eval'):
        assert main([command, '--out', str(path), '--quiet']) == 2
        err = capsys.readouterr().err.strip()
        assert err == (f'realm-ros {command}: error: --out: {path} is a file, not a folder; '
                       'name a new or existing output folder')


def test_perturbations_without_default_run_default_too_and_say_so(tmp_path, capsys):
    """A perturbation's delta and RMSD need Default: a list without it gets it (once, first);
    the run says so, and the summary has the deltas it used to leave empty."""
    from realm_ros.core.evaluation import EvalConfig

    config = EvalConfig(tasks=('push_switch',), perturbations=('V-LIGHT', 'VB-POSE'))
    assert config.perturbations == ('Default', 'V-LIGHT', 'VB-POSE')
    assert EvalConfig(perturbations=('V-LIGHT', 'Default')).perturbations == (
        'V-LIGHT', 'Default')
    out = tmp_path / 'sweep'
    assert main(['sweep', '--out', str(out), '--tasks', 'push_switch', '--episodes-per-cell',
                 '1', '--max-steps', '30', '--policies', 'scripted:3', 'scripted:0',
                 '--perturbations', 'V-LIGHT', '--quiet']) == 0
    assert ("warning: --perturbations has no Default: each perturbation's delta and REALM's "
            'RMSD are measured against Default, so Default runs too') in capsys.readouterr().err
    assert sorted({r['perturbation'] for r in _records(out)}) == ['Default', 'V-LIGHT']
    deltas = json.loads((out / 'summary.json').read_text())['per_world']['mujoco'][
        'perturbations']
    assert set(deltas) == {'V-LIGHT@1'} and deltas['V-LIGHT@1']['cells'] == 2


def test_records_written_before_made_by_are_named_as_such(tmp_path):
    log = EpisodeLog(tmp_path / 'episodes.jsonl')
    log.append({'pair_id': 'a', 'role': 'real', 'outcome': 'success'})
    with pytest.raises(ConfigError, match=r'^out has records that do not say their --max-steps '
                                          r'\(made before records named their settings\), '
                                          r'this run uses 30 \(1 episode\(s\), e.g. real a\)'):
        provenance.reconcile(EpisodeLog(log.path), lambda r: {'max_steps': 30}, False, 'out')
