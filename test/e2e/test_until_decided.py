"""``paired-eval --until-decided`` end to end (real nodes over DDS) and ``metrics --power``."""

import json
import os
import subprocess

import pytest
from rostest import BIN

from realm_ros.commands import metrics as metrics_cmd

SMALL = ['--tasks', 'push_switch', '--policies', 'scripted:0', 'scripted:3',
         '--max-steps', '80', '--quiet']


def _realm(*args, timeout=300):
    return subprocess.run([str(BIN / 'realm-ros'), *args], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ))


@pytest.mark.ros
@pytest.mark.slow
def test_until_decided_stops_when_decided_and_resumes(tmp_path):
    out = tmp_path / 'eval'
    args = ['paired-eval', '--out', str(out), *SMALL, '--until-decided', '0.8',
            '--budget', '10']
    proc = _realm(*args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / 'summary.json').read_text())
    decided = summary['until_decided']
    assert decided['stopped'] == 'decided' and decided['decided']
    assert decided['order'] == ['scripted-0', 'scripted-3']
    assert decided['adjacent_pairs'][0]['probability'] >= 0.8
    records = [json.loads(line) for line in (out / 'episodes.jsonl').read_text().splitlines()]
    assert len(records) == 2 * decided['total_episodes'] < 2 * 10
    pair_ids = {r['pair_id'] for r in records}
    assert {'push_switch/Default/0/scripted-0', 'push_switch/Default/1/scripted-3'} <= pair_ids
    # Both policies ran at least the minimum (two episodes each) before the ranking stopped.
    assert min(decided['episodes'].values()) >= 2

    # A re-run replays the same choices from the log and runs nothing new.
    before = (out / 'episodes.jsonl').read_text()
    proc = _realm(*args[:-1] + ['10'])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (out / 'episodes.jsonl').read_text() == before

    # The run is a pilot for a fixed design of the same confidence.
    result = metrics_cmd.power(out, 0.8, 'real')
    assert result['pilot_episodes'] == decided['episodes']
    assert result['adjacent_pairs'][0]['above'] == 'scripted-0'
    assert result['episodes_per_policy'] >= 1


@pytest.mark.parametrize('extra, message', [
    (['--until-decided', '1.5'], '--until-decided: must be 0 (off) or a probability'),
    (['--until-decided', '0.9', '--budget', '-1'], 'budget'),
    (['--until-decided', '0.9', '--allocation', 'greedy'], 'invalid choice'),
])
def test_bad_until_decided_is_one_line_and_exit_2(tmp_path, extra, message):
    proc = _realm('paired-eval', '--out', str(tmp_path / 'eval'), *SMALL, *extra, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and 'Traceback' not in proc.stderr
    assert not (tmp_path / 'eval' / 'episodes.jsonl').exists()


def _write_run(path, rows):
    path.mkdir()
    with open(path / 'episodes.jsonl', 'w') as f:
        for k, (policy, world, prog, outcome) in enumerate(rows):
            f.write(json.dumps({'pair_id': f't/Default/{k}/{policy}', 'policy': policy,
                                'world': world, 'progression': prog,
                                'outcome': outcome}) + '\n')


def test_metrics_power_reads_a_pilot_run(tmp_path):
    rows = [('a', 'real', 1.0, 'success'), ('a', 'real', 0.8, 'timeout'),
            ('b', 'real', 0.2, 'timeout'), ('b', 'real', 0.3, 'timeout'),
            ('b', 'real', 0.0, 'infra_failure'), ('a', 'sim', 0.0, 'timeout'),
            ('b', 'sim', 1.0, 'success')]
    _write_run(tmp_path / 'run', rows)
    proc = _realm('metrics', '--power', '0.95', str(tmp_path / 'run'), timeout=60)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result['pilot_episodes'] == {'a': 2, 'b': 2}  # infra failure and sim left out
    (pair,) = result['adjacent_pairs']
    assert (pair['above'], pair['below']) == ('a', 'b')
    assert result['total_episodes'] == 2 * result['episodes_per_policy']
    sim = json.loads(_realm('metrics', '--power', '0.95', '--world', 'sim',
                            str(tmp_path / 'run' / 'episodes.jsonl'), timeout=60).stdout)
    assert sim['adjacent_pairs'][0]['above'] == 'b'


@pytest.mark.parametrize('args, message', [
    (['--power', '0.4'], '--power: must be a probability'),
    (['--power', '0.9', '/no/such/run'], 'does not exist'),
])
def test_metrics_power_bad_input(tmp_path, args, message):
    if len(args) == 2:
        _write_run(tmp_path / 'run', [('a', 'real', 1.0, 'success'), ('b', 'real', 0, 'x')])
        args = [*args, str(tmp_path / 'run')]
    proc = _realm('metrics', *args, timeout=60)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert 'Traceback' not in proc.stderr


def test_sweep_until_decided_spends_episodes_where_they_decide_and_resumes(tmp_path):
    """The sweep's cells chosen one at a time (in-process MuJoCo, no cameras): two policies far
    apart; the run stops once their order is decided, well before the budget."""
    out = tmp_path / 'sweep'
    args = ['sweep', '--out', str(out), '--tasks', 'push_switch', '--policies', 'scripted:0',
            'scripted:3', '--max-steps', '60', '--episodes-per-cell', '3', '--quiet',
            '--until-decided', '0.8', '--budget', '12']
    proc = _realm(*args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / 'summary.json').read_text())
    decided = summary['until_decided']
    assert decided['decided'] and decided['stopped'] == 'decided'
    assert decided['order'] == ['scripted-0', 'scripted-3']
    assert decided['world'] == 'mujoco' and decided['allocation'] == 'adaptive'
    records = [json.loads(line) for line in (out / 'episodes.jsonl').read_text().splitlines()]
    assert len(records) == decided['episodes_spent'] == decided['cells_spent'] < 12
    assert min(decided['episodes'].values()) >= 2
    # The cells are the fixed grid's (same pair ids), the k-th of a policy on its k-th index.
    assert 'push_switch/Default@1/0/scripted-0' in {r['pair_id'] for r in records}
    assert f'{decided["episodes_spent"]} episodes spent' in proc.stdout
    again = _realm(*args)
    assert again.returncode == 0, again.stderr[-3000:]
    assert len((out / 'episodes.jsonl').read_text().splitlines()) == len(records)
    assert json.loads((out / 'summary.json').read_text())['until_decided']['order'] == \
        decided['order']
    bad = _realm('sweep', '--out', str(tmp_path / 'bad'), '--until-decided', '1.5', '--quiet')
    assert bad.returncode == 2 and '--until-decided' in bad.stderr and 'Traceback' not in \
        bad.stderr
