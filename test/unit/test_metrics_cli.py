"""``realm-ros metrics`` end to end: CSV in, JSON out, clear errors for bad CSVs."""

import json
import subprocess
import sys

import pytest

from realm_ros import cli
from realm_ros.core import metrics

REALM_ROS = [sys.executable, '-m', 'realm_ros.cli', 'metrics']


def _run(path):
    return subprocess.run([*REALM_ROS, str(path)], capture_output=True, text=True, timeout=60)


def test_grouped_csv_gives_per_group_and_mean(tmp_path):
    path = tmp_path / 'scores.csv'
    path.write_text('policy,real,sim,group\n'
                    'a,0.9,0.8,put\nb,0.5,0.6,put\nc,0.1,0.3,put\n'
                    'a,0.7,0.2,pick\nb,0.4,0.5,pick\n')
    proc = _run(path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    put = out['groups']['put']
    assert put['n_policies'] == 3
    assert put['pearson_r'] == pytest.approx(
        metrics.pearson_r(sim=[0.8, 0.6, 0.3], real=[0.9, 0.5, 0.1]))
    assert put['mmrv'] == 0.0
    pick = out['groups']['pick']
    assert pick['mmrv'] == pytest.approx(0.3)  # swapped pair, |0.7 - 0.4| each
    assert pick['pearson_r'] == pytest.approx(-1.0)
    assert out['mean']['mmrv'] == pytest.approx(0.15)
    assert out['mean']['mean_abs_gap'] == pytest.approx(
        (put['mean_abs_gap'] + pick['mean_abs_gap']) / 2)


def test_csv_without_group_is_one_group_all(tmp_path, capsys):
    path = tmp_path / 'scores.csv'
    path.write_text('sim,real,policy\n0.2,0.1,x\n0.4,0.6,y\n')
    assert cli.main(['metrics', str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out['groups']) == ['all']
    assert out['mean']['pearson_r'] == 1.0


@pytest.mark.parametrize('text, message', [
    ('policy,real\na,0.1\n', "missing column(s) ['sim']"),
    ('policy,real,sim\na,0.1,high\nb,0.2,0.3\n', "scores.csv:2: column 'sim' is not a number"),
    ('policy,real,sim\na,nan,0.1\nb,0.2,0.3\n', "column 'real' is nan"),
    ('policy,real,sim\na,0.1,0.1\n', 'at least two policies'),
    ('policy,real,sim\na,0.1,0.1\na,0.2,0.2\n', "policy 'a' appears twice"),
    ('policy,real,sim\n', 'no data rows'),
])
def test_bad_csv_gives_clear_error(tmp_path, capsys, text, message):
    path = tmp_path / 'scores.csv'
    path.write_text(text)
    assert cli.main(['metrics', str(path)]) == 2
    captured = capsys.readouterr()
    assert message in captured.err, captured.err
    assert captured.out == ''


def test_trials_column_adds_kruskal_per_policy(tmp_path):
    from scipy.stats import kruskal
    path = tmp_path / 'rates.csv'
    path.write_text('policy,real,sim,n\na,0.8,0.3,10\nb,0.5,0.5,10\n')
    out = _run(path)
    assert out.returncode == 0, out.stderr
    k = json.loads(out.stdout)['groups']['all']['kruskal']
    ref = kruskal([1] * 3 + [0] * 7, [1] * 8 + [0] * 2)
    assert k['a']['pvalue'] == pytest.approx(ref.pvalue)
    assert k['b']['pvalue'] == 1.0 and k['b']['note'] == 'all same'
    path.write_text('policy,real,sim,n\na,0.8,0.3,0\nb,0.5,0.5,10\n')
    bad = _run(path)
    assert bad.returncode != 0 and "'n' must be >= 1" in bad.stderr
