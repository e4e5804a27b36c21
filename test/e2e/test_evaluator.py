"""The paired evaluator end to end: real nodes over DDS, records, resume, operator, bad input."""

import json
import os
import subprocess
import threading

import pytest
from rostest import BIN, call_service, ros_node, run_process, spin_until
from std_msgs.msg import String
from std_srvs.srv import Trigger

from realm_ros.ros import qos

pytestmark = [pytest.mark.ros, pytest.mark.slow]

SMALL = ['--tasks', 'push_switch', '--policies', 'scripted:0', 'scripted:3',
         '--episodes-per-cell', '1', '--max-steps', '80', '--quiet']


def _paired_eval(out, *extra, timeout=240):
    return subprocess.run([str(BIN / 'realm-ros'), 'paired-eval', '--out', str(out), *extra],
                          capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ))


def _lines(path):
    return path.read_text().splitlines()


def test_paired_run_writes_records_summary_report_and_resumes(tmp_path):
    out = tmp_path / 'eval'
    proc = _paired_eval(out, *SMALL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [json.loads(line) for line in _lines(out / 'episodes.jsonl')]
    assert sorted((r['policy'], r['world']) for r in records) == [
        ('scripted-0', 'real'), ('scripted-0', 'sim'), ('scripted-3', 'real'),
        ('scripted-3', 'sim')]
    for r in records:
        assert r['stages'] == ['REACH', 'TOUCH', 'TOGGLED_ON'] and r['outcome'] != 'infra_failure'
        assert 0.0 <= r['progression'] <= 1.0 and r['steps'] > 0 and r['scored_by'] == 'privileged'
    expert = {r['world']: r for r in records if r['policy'] == 'scripted-0'}
    assert expert['real']['success'] and expert['sim']['success']
    assert expert['real']['seed'] == expert['sim']['seed']

    summary = json.loads((out / 'summary.json').read_text())
    assert summary['pairs'] == 2
    entry = summary['per_policy'][0]
    for key in ('policy', 'real_progress', 'sim_progress', 'real_success', 'sim_success',
                'real_progress_ci', 'sim_success_ci'):
        assert key in entry
    assert set(summary['agreement']) >= {'pearson_r', 'mmrv', 'mean_abs_gap', 'per_task'}
    html = (out / 'report.html').read_text()
    for figure in ('agreement_scatter.png', 'policy_bars.png', 'ranking.png'):
        assert figure in html and (out / figure).stat().st_size > 5000

    # Re-running the same command runs nothing again.
    before = _lines(out / 'episodes.jsonl')
    proc = _paired_eval(out, *SMALL[:-1])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _lines(out / 'episodes.jsonl') == before
    assert 'agreement over 2 pairs' in proc.stdout

    # An interrupted run (its last episode's line cut short) re-runs exactly that episode.
    (out / 'episodes.jsonl').write_text('\n'.join(before[:-1]) + '\n' + before[-1][:25])
    proc = _paired_eval(out, *SMALL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    after = _lines(out / 'episodes.jsonl')
    assert after[:3] == before[:3] and after[3] == before[-1][:25]  # the cut line stays
    redone = [json.loads(line) for line in after[4:]]
    assert [(r['pair_id'], r['world']) for r in redone] == [
        (json.loads(before[-1])['pair_id'], json.loads(before[-1])['world'])]


def test_a_rerun_with_other_settings_is_refused_or_runs_the_changed_world(tmp_path):
    """Each record names what made it; a re-run with another --sim-params, the same label
    for another policy, or another --max-steps is refused in one line naming the flag;
    --rerun-changed runs the changed episodes (a new --sim-params: the sim side alone)."""
    out = tmp_path / 'eval'
    base = ['--tasks', 'push_switch', '--episodes-per-cell', '1', '--quiet']
    proc = _paired_eval(out, *base, '--policies', 'scripted:3', '--max-steps', '30')
    assert proc.returncode == 0, proc.stderr[-3000:]
    first = _lines(out / 'episodes.jsonl')
    made = {json.loads(line)['world']: json.loads(line)['made_by'] for line in first}
    assert made['real']['policy'] == made['sim']['policy'] == 'scripted:skill=3'
    assert made['sim']['sim_params'] == '' and made['real']['max_steps'] == 30
    params = os.path.join(os.path.dirname(__file__), '..', '..', 'config', 'dynamics',
                          'sysid_demo.yaml')
    changes = [
        (['--policies', 'scripted:3', '--max-steps', '30', '--sim-params', params],
         '--sim-params none, not '),
        (['--policies', 'scripted-3=scripted:skill=1', '--max-steps', '30'],
         "--policies (this label) 'scripted:skill=3', not 'scripted:skill=1'"),
        (['--policies', 'scripted:3', '--max-steps', '100'], '--max-steps 30, not 100'),
    ]
    for change, message in changes:
        proc = _paired_eval(out, *base, *change, timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert _lines(out / 'episodes.jsonl') == first
    proc = _paired_eval(out, *base, *changes[0][0], '--rerun-changed')
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert 'running 1 changed episode(s) again' in proc.stderr
    after = _lines(out / 'episodes.jsonl')
    assert after[:2] == first and len(after) == 3
    rerun = json.loads(after[2])
    assert rerun['world'] == 'sim' and rerun['made_by']['sim_params']['sha256']
    summary = json.loads((out / 'summary.json').read_text())
    assert summary['made_by']['sim_params'] == rerun['made_by']['sim_params']
    assert summary['pairs'] == 1
    # Each world's refused commands (the same safety rules in both), counted per record.
    assert set(summary['rejections']) == {'real', 'sim'} and rerun['rejected'] >= 0


def test_commands_the_real_side_refuses_are_refused_by_the_twin_and_counted(tmp_path):
    """Both worlds get the same commands (issue 37): a replayed ramp of joint 1 (within the
    policy chain's limits) toward the workspace's y wall. The franka bridge refuses commands
    there (the arm would overshoot the box, then the velocity rule against the target it
    holds); the twin, under the same rules, refuses them too. Each record counts its world's
    refusals and summary.json totals them per world. (Which step the look-ahead first refuses
    depends on each world's measured lag, so the counts may differ by a few; the exact
    same-stream check is test_franka_safety.py's.)"""
    import numpy as np

    from realm_ros.core import robot

    actions = []
    for k in range(30):
        q = np.array(robot.RESET_Q, dtype=float)
        q[0] += min(0.08 * k, 1.6)
        actions.append([*map(float, q), 0.0])
    path = tmp_path / 'ramp.json'
    path.write_text(json.dumps({'actions': actions}))
    out = tmp_path / 'eval'
    proc = _paired_eval(out, '--tasks', 'push_switch', '--policies', f'ramp=replay:path={path}',
                        '--episodes-per-cell', '1', '--max-steps', '30', '--quiet')
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = {json.loads(line)['world']: json.loads(line) for line in
               _lines(out / 'episodes.jsonl')}
    real, sim = records['real']['rejected'], records['sim']['rejected']
    # Both refuse a run of commands; how many depends on each arm's measured lag (under a
    # loaded CI machine the bridge's side lags more: 16 vs 22 seen), not on the rules.
    assert real >= 5 and sim >= 5 and abs(real - sim) <= max(5, (real + sim) // 3), \
        (real, sim)
    summary = json.loads((out / 'summary.json').read_text())
    assert summary['rejections'] == {'real': {'commands': real, 'episodes': 1},
                                     'sim': {'commands': sim, 'episodes': 1}}
    logs = ''.join(p.read_text() for p in (out / 'logs').rglob('*.log'))
    for world in ('real', 'sim'):
        assert f'[{world}.world]: command rejected, holding the last valid target: safety: ' \
               'the arm lags its target' in logs, world


@pytest.mark.parametrize('args, message', [
    (['--tasks', 'pick_spon'], "unknown task 'pick_spon'"),
    (['--policies', 'scripted:x'], "skill 'x' unknown"),
    (['--perturbations', 'B-HOBJ', '--tasks', 'push_switch'], 'incompatible'),
    (['--sim-params', '/no/such.yaml'], 'file not found'),
    (['--real', 'franka', '--policies', 'scripted:0', 'scripted:1'], 'privileged'),
])
def test_bad_specs_fail_before_anything_runs(tmp_path, args, message):
    proc = _paired_eval(tmp_path / 'eval', *args, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert not (tmp_path / 'eval' / 'episodes.jsonl').exists()


def test_operator_scores_the_real_arm(tmp_path):
    """A real arm (digital_real in real time stands in for franka_ros2): the operator confirms
    the reset and marks stages through operator_node's services; the record says so."""
    import shutil
    if not (shutil.which('gcc') and shutil.which('g++')):
        pytest.skip('needs gcc/g++ to build franka_msgs for the Franka Hand actions')
    import ros_interfaces
    ros_interfaces.activate()  # franka_msgs: digital_real serves franka_gripper's actions
    out = tmp_path / 'eval'
    robot = ['digital_real', '--ros-args', '-p', 'arm_id:=fr3', '-p', 'gripper:=franka_hand']
    evaluation = [str(BIN / 'realm-ros'), 'paired-eval', '--out', str(out), '--real', 'franka',
                  '--tasks', 'push_switch', '--policies', 'hold', '--episodes-per-cell', '1',
                  '--perturbations', 'V-LIGHT', '--max-steps', '30', '--quiet']
    with run_process(robot, tmp_path / 'robot.log'), ros_node('operator') as (node, executor):
        states = []
        node.create_subscription(String, '/real/operator/state',
                                 lambda m: states.append(json.loads(m.data)), qos.LATCHED)
        proc = subprocess.Popen(evaluation, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env=dict(os.environ))
        lines = []
        reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
        reader.start()
        try:
            calls: dict = {}
            settled: set = set()

            def call(name):
                client = calls.setdefault(name, node.create_client(Trigger, name))
                return call_service(executor, client, Trigger.Request(), timeout=30,
                                    ready_timeout=60, settled=settled)

            # The evaluator homes the arm, tells the operator what to set up, and waits. Each
            # homing move (world_node's start-up reset, the evaluator's reset) waits for the
            # operator's confirmation on the bridge (issue 26): confirm while it asks.
            from std_srvs.srv import SetBool
            motion = node.create_client(SetBool, '/real/franka_bridge/confirm_motion')
            assert motion.wait_for_service(timeout_sec=90), ''.join(lines)

            def homed(pair):
                if sum('set up the real scene' in line for line in lines) > pair:
                    return True
                # Fire and forget, again every second: a lost answer costs nothing here.
                motion.call_async(SetBool.Request(data=True))
                spin_until(executor, lambda: False, 1.0)
                return False
            # Two pairs: V-LIGHT's baseline, Default, runs too (its delta needs it), first.
            for pair in range(2):
                assert spin_until(executor, lambda p=pair: homed(p), 120), ''.join(lines)
                assert call('/real/operator/confirm_reset').success
                assert spin_until(executor,
                                  lambda: states and states[-1]['state'] == 'running')
                assert states[-1]['task'] == 'push_switch'  # the spec the evaluator set
                assert call('/real/operator/mark_stage').success   # REACH
                assert call('/real/operator/mark_stage').success   # TOUCH
                assert call('/real/operator/end_episode').success  # judged: not toggled
                assert spin_until(executor, lambda: states[-1]['state'] != 'running', 30)
            proc.wait(timeout=120)
            reader.join(timeout=10)
            output = ''.join(lines)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, output[-3000:]
    assert 'set up the real scene' in output
    # What to change by hand for the perturbation, and the record that it was confirmed.
    assert 'change by hand before this episode' in output and 'room light' in output
    assert 'Default runs too' in output
    everything = [json.loads(line) for line in _lines(out / 'episodes.jsonl')]
    assert sorted(r['perturbation'] for r in everything) == ['Default'] * 2 + ['V-LIGHT'] * 2
    records = {r['world']: r for r in everything if r['perturbation'] == 'V-LIGHT'}
    real = records['real']
    assert real['scored_by'] == 'operator'
    assert real['stages_reached'] == ['REACH', 'TOUCH']
    assert real['progression'] == pytest.approx(2 / 3) and not real['success']
    assert records['sim']['scored_by'] == 'privileged'
    setup = real['operator_setup']
    assert setup['perturbation'] == 'V-LIGHT' and setup['confirmed'] is True
    assert any('room light' in change for change in setup['changes'])
    assert 'operator_setup' not in records['sim']
    # The operator's timestamped annotations are kept with the run.
    annotated = [json.loads(line) for line in _lines(out / 'operator_annotations.jsonl')][-1]
    assert [a['event'] for a in annotated['annotations']][:3] == [
        'reset_confirmed', 'stage', 'stage']


def test_evaluator_node_is_a_console_script():
    proc = subprocess.run([str(BIN / 'evaluator_node'), '--ros-args', '-p', 'real_ns:=real'],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert 'real_ns must be an absolute namespace' in proc.stderr
