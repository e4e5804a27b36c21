"""operator_node as a process over real DDS: services and the terminal drive an episode record."""

import contextlib
import json
import os
import pty
import subprocess

from diagnostic_msgs.msg import DiagnosticStatus
import numpy as np
import pytest
from rostest import BIN, call_service, ros_node, run_process, spin_until
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import String
from std_srvs.srv import SetBool, Trigger

from realm_ros.core import annotation
from realm_ros.core.types import EpisodeSpec
from realm_ros.core.types import JointState as JointStateRecord
from realm_ros.ros import convert, qos

pytestmark = pytest.mark.ros

SPEC = EpisodeSpec(task='put_green_block_in_bowl', seed=5, policy='scripted', pair_id='pair-7')


@contextlib.contextmanager
def operator_process(tmp_path, *params):
    """Start operator_node under /real with stdin as a pipe (the terminal UI's input)."""
    args = ['operator_node', '--ros-args', '-r', '__ns:=/real',
            '-p', f'record_file:={tmp_path / "ops.jsonl"}', '-p', 'publish_hz:=5.0',
            '-p', f"episode_spec:='{SPEC.to_json()}'", *params]
    with run_process(args, tmp_path / 'operator.log', stdin=subprocess.PIPE) as proc:
        yield proc


class Client:
    def __init__(self, node, executor):
        self.node, self.executor = node, executor
        self.progress, self.states = [], []
        node.create_subscription(DiagnosticStatus, '/real/progress', self.progress.append,
                                 qos.LATCHED)
        node.create_subscription(String, '/real/operator/state',
                                 lambda m: self.states.append(json.loads(m.data)), qos.LATCHED)
        self.js = node.create_publisher(JointState, '/real/joint_states', qos.STATE)
        self._clients, self._settled = {}, set()

    def call(self, name, data=None):
        srv = SetBool if name == 'success' else Trigger
        client = self._clients.get(name) or self.node.create_client(srv, f'/real/operator/{name}')
        self._clients[name] = client
        request = srv.Request()
        if data is not None:
            request.data = data
        return call_service(self.executor, client, request, settled=self._settled)

    def latest(self):
        return convert.progress_from_msg(self.progress[-1]) if self.progress else None


def test_services_drive_an_episode_into_the_record(tmp_path):
    with operator_process(tmp_path, '-p', 'terminal_ui:=false'), \
            ros_node('operator_client') as (node, executor):
        c = Client(node, executor)
        refused = c.call('mark_stage')
        assert not refused.success and 'confirm the scene reset' in refused.message
        assert c.call('confirm_reset').success
        assert spin_until(executor, lambda: c.states and c.states[-1]['state'] == 'running', 10)
        for _ in range(12):  # the world's control steps, as world_node would publish them
            c.js.publish(convert.joint_state_to_msg(JointStateRecord(
                position=np.zeros(7), velocity=np.zeros(7), effort=np.zeros(7), gripper=0.0)))
            executor.spin_once(timeout_sec=0.02)
        assert 'REACH' in c.call('mark_stage').message
        assert 'GRASP' in c.call('mark_stage').message
        assert spin_until(executor, lambda: c.latest() and c.latest().met[:3] == (
            True, True, False), 10)
        p = c.latest()
        assert p.source == 'operator' and p.task == SPEC.task and p.progression == 0.4
        assert c.progress[-1].hardware_id == 'real'
        assert 'GRASP' in c.call('undo').message
        result = c.call('success', data=False)
        assert result.success, result.message
        summary = json.loads(result.message)
        assert summary['outcome'] == 'timeout' and summary['progression'] == 0.2
        assert c.call('confirm_reset').success
        result = c.call('success', data=True)
        assert json.loads(result.message)['outcome'] == 'success'
        assert not c.call('end_episode').success  # nothing running any more

    records = [json.loads(line) for line in (tmp_path / 'ops.jsonl').read_text().splitlines()]
    assert [r['outcome'] for r in records] == ['timeout', 'success']
    first = records[0]
    assert first['pair_id'] == 'pair-7' and first['world'] == 'real'
    assert first['stages_reached'] == ['REACH']
    assert first['steps'] >= 10  # joint states counted while running (DDS may drop none here)
    times = [e['time'] for e in first['annotations']]
    assert times == sorted(times) and times[-1] > times[0] > 1e9  # ROS time stamps, s
    assert [e['event'] for e in first['annotations']] == [
        'reset_confirmed', 'stage', 'stage', 'undo', 'ended']


def test_terminal_keys_drive_an_episode_and_q_quits(tmp_path):
    with operator_process(tmp_path) as proc, ros_node('operator_watch') as (node, executor):
        c = Client(node, executor)
        assert spin_until(executor, lambda: bool(c.states), 20)

        def send(line):
            proc.stdin.write(line + '\n')
            proc.stdin.flush()

        send('s')  # refused: no episode yet (must not crash or mark anything)
        send('r')
        assert spin_until(executor, lambda: c.states[-1]['state'] == 'running', 10)
        for line in ('s', 's', 'mark_stage'):
            send(line)
        assert spin_until(executor, lambda: c.latest() and sum(c.latest().met) == 3, 10)
        send('u')
        assert spin_until(executor, lambda: sum(c.latest().met) == 2, 10)
        send('e')
        assert spin_until(executor, lambda: c.states[-1]['state'] == 'awaiting_reset', 10)
        send('q')
        proc.wait(timeout=10)
        assert proc.returncode == 0
    log = (tmp_path / 'operator.log').read_text()
    assert 'refused: cannot mark a stage' in log
    record = json.loads((tmp_path / 'ops.jsonl').read_text())
    assert record['stages_reached'] == ['REACH', 'GRASP'] and record['outcome'] == 'timeout'


def test_bad_parameter_exits_2(tmp_path):
    proc = subprocess.run([str(BIN / 'operator_node'), '--ros-args', '-p', 'publish_hz:=-3.0'],
                          capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert 'publish_hz' in proc.stderr


def test_a_scorer_that_reads_two_cameras_proposes_from_both(tmp_path):
    """The wrist checkpoint reads exterior_1 and wrist: operator_node keeps each wrist frame
    beside scorer_camera's and proposes from both; a scorer_camera that is not the
    checkpoint's first camera is refused in one line at start."""
    pytest.importorskip('torch')
    from scorer_bars import bar_frame

    from realm_ros.ros.convert import image_to_msg
    from realm_ros.scorers import learned
    wrist_checkpoint = f'scorer_checkpoint:={learned.WRIST_CHECKPOINT}'
    proc = subprocess.run([str(BIN / 'operator_node'), '--ros-args', '-p', 'scorer:=learned',
                           '-p', wrist_checkpoint, '-p', 'scorer_camera:=wrist'],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, proc.stderr
    assert 'parameter scorer_camera: the checkpoint reads exterior_1, wrist' in proc.stderr
    assert 'Traceback' not in proc.stderr
    spec = EpisodeSpec(task='pick_spoon', seed=1, policy='scripted', pair_id='pick-1')
    with operator_process(tmp_path, '-p', 'terminal_ui:=false', '-p', 'scorer:=learned',
                          '-p', wrist_checkpoint, '-p', 'scorer_fps:=50.0',
                          '-p', f"episode_spec:='{spec.to_json()}'"), \
            ros_node('operator_two_camera_client') as (node, executor):
        c = Client(node, executor)
        cameras = {name: node.create_publisher(Image, f'/real/cameras/{name}/image', qos.IMAGE)
                   for name in ('exterior_1', 'wrist')}
        rng = np.random.default_rng(0)

        def show(names):
            for stage in (0, 1, 2, 2):
                stamp = node.get_clock().now().to_msg()
                for name in names:
                    cameras[name].publish(image_to_msg(bar_frame(stage, rng, (180, 320)),
                                                       stamp, name))
                spin_until(executor, lambda: False, 0.08)
            spin_until(executor, lambda: False, 0.5)

        assert spin_until(executor, lambda: bool(c.states), 90)
        assert c.call('confirm_reset').success
        assert spin_until(executor, lambda: c.states and c.states[-1]['state'] == 'running', 10)
        assert spin_until(executor, lambda: all(p.get_subscription_count() > 0
                                                for p in cameras.values()), 10)
        show(['exterior_1'])  # no wrist frame yet: nothing the scorer can read
        refused = c.call('propose_stages')
        assert not refused.success and "no frames of camera 'exterior_1'" in refused.message
        show(['wrist', 'exterior_1'])
        proposed = c.call('propose_stages')
        assert proposed.success, proposed.message
        assert 'learned:progress_scorer_wrist@' in proposed.message
        assert c.call('end_episode').success


def test_single_keys_on_a_terminal_act_without_enter(tmp_path):
    """A pseudo-terminal as stdin: cbreak mode, so 'r', 's', 's' act with no newline at all."""
    master, slave = pty.openpty()
    args = [str(BIN / 'operator_node'), '--ros-args', '-r', '__ns:=/real',
            '-p', f'record_file:={tmp_path / "ops.jsonl"}',
            '-p', f"episode_spec:='{SPEC.to_json()}'"]
    log = open(tmp_path / 'operator.log', 'w')
    proc = subprocess.Popen(args, stdin=slave, stdout=log, stderr=subprocess.STDOUT,
                            env=dict(os.environ))
    os.close(slave)
    try:
        with ros_node('operator_tty_watch') as (node, executor):
            c = Client(node, executor)
            assert spin_until(executor, lambda: bool(c.states), 20)
            # The help line is printed once the terminal is in cbreak mode: then type.
            assert spin_until(executor, lambda: annotation.HELP in (
                tmp_path / 'operator.log').read_text(), 20)
            os.write(master, b'rss')
            assert spin_until(executor, lambda: c.latest() and sum(c.latest().met) == 2, 10), \
                (tmp_path / 'operator.log').read_text()
            os.write(master, b'q')
            proc.wait(timeout=10)
        assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
        log.close()


def test_perturbed_spec_gives_the_perturbed_stages_and_the_changes_by_hand(tmp_path):
    """SB-VRB: the operator marks the new skill's stages; the prompt says what to add."""
    from realm_ros.core import perturbations
    seed = next(s for s in range(50) if perturbations.sample(
        'pick_spoon', 'SB-VRB', 1.0, s)['scored']['skill'] == 'put')
    spec = EpisodeSpec(task='pick_spoon', seed=seed, perturbation='SB-VRB', pair_id='p')
    with operator_process(tmp_path, '-p', f"episode_spec:='{spec.to_json()}'") as proc, \
            ros_node('operator_watch') as (node, executor):
        c = Client(node, executor)
        assert spin_until(executor, lambda: bool(c.states), 20)
        # The evaluator sets the spec at run time: the operator's log shows the prompt.
        from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
        from rcl_interfaces.srv import SetParameters
        client = node.create_client(SetParameters, '/real/operator/set_parameters')
        request = SetParameters.Request(parameters=[Parameter(
            name='episode_spec', value=ParameterValue(
                type=ParameterType.PARAMETER_STRING, string_value=spec.to_json()))])
        assert call_service(executor, client, request).results[0].successful
        assert c.call('confirm_reset').success
        assert spin_until(executor, lambda: c.latest() is not None and len(
            c.latest().stages) == 5, 10)
        assert c.latest().stages == ('REACH', 'GRASP', 'LIFT_SLIGHT', 'MOVE_CLOSE', 'PLACE_INTO')
        proc.stdin.write('q\n')
        proc.stdin.flush()
        proc.wait(timeout=10)
    log = (tmp_path / 'operator.log').read_text()
    assert 'change by hand: add a' in log and 'as the receiver' in log


def test_confirm_motion_is_forwarded_to_the_franka_bridge(tmp_path):
    """operator/confirm_motion: the operator's yes for the next homing move reaches the bridge's
    SetBool service (here served by the probe, as franka_bridge serves it)."""
    with operator_process(tmp_path, '-p', 'confirm_motion_service:=/lab/franka_bridge/'
                                          'confirm_motion'), \
            ros_node('probe') as (node, executor):
        client = Client(node, executor)
        # No bridge yet: refused with the reason.
        refused = client.call('confirm_motion')
        assert not refused.success and '/lab/franka_bridge/confirm_motion is not available' \
            in refused.message
        received = []

        def serve(request, response):
            received.append(request.data)
            response.success = True
            return response
        node.create_service(SetBool, '/lab/franka_bridge/confirm_motion', serve)
        spin_until(executor, lambda: False, 1.0)
        answer = client.call('confirm_motion')
        assert answer.success and 'next reset move' in answer.message, answer.message
        assert spin_until(executor, lambda: received == [True], 10), received


def test_a_scorer_proposes_the_stages_and_the_record_keeps_who_decided(tmp_path):
    """The learned scorer (a tiny one trained on drawn frames) proposes stages from the camera
    frames of the running episode; accepted unchanged, the scorer decided; corrected, the
    operator did."""
    pytest.importorskip('torch')
    from scorer_bars import bar_frame, train_tiny

    from realm_ros.ros.convert import image_to_msg
    from realm_ros.scorers.learned import LearnedScorer

    checkpoint = train_tiny(tmp_path / 'tiny.pt')
    name = LearnedScorer(checkpoint).name
    spec = EpisodeSpec(task='pick_spoon', seed=1, policy='scripted', pair_id='pick-1')
    with operator_process(tmp_path, '-p', 'terminal_ui:=false', '-p', 'scorer:=learned',
                          '-p', f'scorer_checkpoint:={checkpoint}', '-p', 'scorer_fps:=50.0',
                          '-p', f"episode_spec:='{spec.to_json()}'"), \
            ros_node('operator_scorer_client') as (node, executor):
        c = Client(node, executor)
        camera = node.create_publisher(Image, '/real/cameras/exterior_1/image', qos.IMAGE)
        rng = np.random.default_rng(0)

        def show(stages):
            for stage in stages:  # the camera's frames while the episode runs
                camera.publish(image_to_msg(bar_frame(stage, rng, (180, 320)),
                                            node.get_clock().now().to_msg(), 'exterior_1'))
                spin_until(executor, lambda: False, 0.08)
            spin_until(executor, lambda: False, 0.5)  # the last frames reach the node first

        # The node loads the checkpoint (and torch) before it is up: seconds, more under load.
        assert spin_until(executor, lambda: bool(c.states), 90)
        refused = c.call('propose_stages')
        assert not refused.success and 'no episode is running' in refused.message
        assert c.call('confirm_reset').success
        assert spin_until(executor, lambda: c.states and c.states[-1]['state'] == 'running', 10)
        assert spin_until(executor, lambda: camera.get_subscription_count() > 0, 10)
        show([0, 0, 0, 1, 1, 1, 2, 2, 2, 2])
        proposed = c.call('propose_stages')
        assert proposed.success, proposed.message
        assert f'{name} proposes 2 stage(s): REACH at' in proposed.message
        accepted = c.call('accept_stages')
        assert accepted.success and 'accepted 2 proposed stage(s)' in accepted.message
        assert spin_until(executor, lambda: c.latest() and c.latest().met == (
            True, True, False), 10)
        assert c.call('end_episode').success
        # The next episode: the operator marks the first stage, accepts the rest, corrects.
        assert c.call('confirm_reset').success
        show([0, 0, 1, 1, 2, 2, 2, 2, 2])
        assert c.call('mark_stage').success
        assert c.call('propose_stages').success
        assert 'accepted 1 proposed' in c.call('accept_stages').message
        assert c.call('undo').success
        assert c.call('end_episode').success
    first, second = [json.loads(line)
                     for line in (tmp_path / 'ops.jsonl').read_text().splitlines()]
    assert first['stages_reached'] == ['REACH', 'GRASP']
    assert first['decided_by'] == name and first['stages_decided_by'] == [name, name]
    proposal = first['stage_proposal']
    assert proposal['scorer'] == name and proposal['accepted'] and not proposal['corrected']
    assert [p['stage'] for p in proposal['stages']] == ['REACH', 'GRASP']
    assert second['stages_reached'] == ['REACH']
    assert second['decided_by'] == 'operator' and second['stages_decided_by'] == ['operator']
    assert second['stage_proposal']['corrected']


def test_the_episode_video_is_recorded_and_named_in_the_record(tmp_path):
    """With video_camera set, the camera is written from the confirmed reset at video_fps and
    the record names the video relative to its folder: the record file is a calibration label
    file as it is (``score calibrate --labels``)."""
    from realm_ros.commands import score
    from realm_ros.ros.convert import image_to_msg

    spec = EpisodeSpec(task='pick_spoon', seed=1, policy='scripted', pair_id='pick-1')
    with operator_process(tmp_path, '-p', 'terminal_ui:=false',
                          '-p', 'video_camera:=exterior_1,wrist', '-p', 'video_fps:=10',
                          '-p', f"episode_spec:='{spec.to_json()}'"), \
            ros_node('operator_video_client') as (node, executor):
        c = Client(node, executor)
        cameras = {name: node.create_publisher(Image, f'/real/cameras/{name}/image', qos.IMAGE)
                   for name in ('exterior_1', 'wrist')}
        assert spin_until(executor, lambda: bool(c.states), 20)
        assert spin_until(executor, lambda: all(p.get_subscription_count() > 0
                                                for p in cameras.values()), 10)
        assert c.call('confirm_reset').success
        assert spin_until(executor, lambda: c.states and c.states[-1]['state'] == 'running', 10)
        for k in range(30):  # about 1.5 s of a 20 Hz camera
            stamp = node.get_clock().now().to_msg()
            for shade, (name, camera) in enumerate(cameras.items()):
                frame = np.full((36, 64, 3), 8 * k + 100 * shade, np.uint8)
                camera.publish(image_to_msg(frame, stamp, name))
            spin_until(executor, lambda: False, 0.05)
            if k == 10:
                assert c.call('mark_stage').success
        assert c.call('end_episode').success
    record = json.loads((tmp_path / 'ops.jsonl').read_text())
    assert record['video'].startswith('videos/real/episode_0001_')
    assert record['camera_videos']['exterior_1'] == record['video']
    assert record['camera_videos']['wrist'] == record['video'].replace(
        'videos/real/', 'videos/real/wrist/')
    elapsed = record['end_time'] - record['start_time']
    for shade, path in enumerate(record['camera_videos'].values()):
        frames, times = score.read_video(tmp_path / path)
        assert frames[0].shape == (36, 64, 3) and len(frames) >= 10
        assert len(frames) <= elapsed * 10 + 1  # a constant 10 fps from the confirmed reset
        assert abs(float(frames[0].mean()) - 100 * shade) < 30  # each camera's own frames
    (episode,) = score.calibration_episodes([tmp_path / 'ops.jsonl'])
    assert episode.task == 'pick_spoon' and episode.met.max() == 1 and episode.met[0] == 0
