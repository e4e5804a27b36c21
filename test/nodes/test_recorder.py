"""recorder_node as a real process over DDS: records, splits, SIGINT leaves readable bags."""

import json
import pathlib
import signal
import subprocess
import time

from mcap_ros2.reader import read_ros2_messages
import numpy as np
import pytest
from rostest import BIN, call_service, ros_node, run_process, spin_until
from sensor_msgs.msg import Image, JointState
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from realm_ros.core import robot
from realm_ros.core.types import JointState as CoreJointState
from realm_ros.io import bags
from realm_ros.ros import convert, qos

pytestmark = pytest.mark.ros


def _publish_step(js_pub, cmd_pub, k):
    t = k / 15.0
    state = CoreJointState(position=robot.RESET_Q + 0.01 * k, velocity=np.full(7, 0.1),
                           effort=np.zeros(7), gripper=0.0, stamp=t)
    js_pub.publish(convert.joint_state_to_msg(state))
    cmd = JointTrajectory()
    cmd.header.stamp = convert.to_time(t)
    cmd.joint_names = list(robot.JOINT_NAMES) + ['gripper']
    cmd.points = [JointTrajectoryPoint(positions=list(robot.RESET_Q + 0.01 * (k + 1)) + [0.0])]
    cmd_pub.publish(cmd)


def _wait_recorded(executor, status, counts, settled, timeout=20.0):
    """Poll the recorder's ~/status until the open bag holds ``counts`` messages per topic
    (``settled``: :func:`rostest.call_service`'s set of clients past their first call)."""
    seen = {}

    def done():
        answer = call_service(executor, status, Trigger.Request(), settled=settled)
        seen.update(json.loads(answer.message)['counts'])
        return all(seen.get(topic) == n for topic, n in counts.items())

    assert spin_until(executor, done, timeout), seen


def test_recorder_splits_and_sigint_leaves_readable_bags(tmp_path):
    out = tmp_path / 'bags'
    with run_process(['recorder_node', '--ros-args', '-p', f'out_dir:={out}', '-p',
                      'namespace:=/real', '-p', 'cameras:=[wrist]'],
                     tmp_path / 'recorder.log') as proc:
        with ros_node('probe') as (node, executor):
            js_pub = node.create_publisher(JointState, '/real/joint_states', qos.STATE)
            cmd_pub = node.create_publisher(JointTrajectory, '/real/command', qos.COMMAND)
            img_pub = node.create_publisher(Image, '/real/cameras/wrist/image', qos.IMAGE)
            split = node.create_client(Trigger, '/recorder/split')
            status = node.create_client(Trigger, '/recorder/status')
            settled: set = set()
            assert split.wait_for_service(timeout_sec=30), (tmp_path / 'recorder.log').read_text()
            assert spin_until(executor, lambda: js_pub.get_subscription_count() > 0
                              and cmd_pub.get_subscription_count() > 0, 10)
            for k in range(10):
                _publish_step(js_pub, cmd_pub, k)
                executor.spin_once(timeout_sec=0.01)
            _wait_recorded(executor, status, {'/real/joint_states': 10, '/real/command': 10},
                           settled)
            result = json.loads(call_service(executor, split, Trigger.Request()).message)
            assert result['counts'] == {'/real/joint_states': 10, '/real/command': 10}
            assert result['opened'].endswith('run_001')
            image = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)
            for k in range(10, 17):
                _publish_step(js_pub, cmd_pub, k)
                img_pub.publish(convert.image_to_msg(image, convert.to_time(k / 15.0), 'wrist'))
                executor.spin_once(timeout_sec=0.01)
            _wait_recorded(executor, status, {'/real/joint_states': 7, '/real/command': 7,
                                              '/real/cameras/wrist/image': 7}, settled)
        proc.send_signal(signal.SIGINT)  # mid-recording: the open bag must be finalised
        assert proc.wait(timeout=20) == 0
    first = bags.read_run(out / 'run_000')
    np.testing.assert_allclose(first.state_q[:, 0], robot.RESET_Q[0] + 0.01 * np.arange(10))
    second = bags.read_run(out / 'run_001', cameras=['wrist'])
    assert len(second.state_t) == 7 and len(second.command_t) == 7
    stamps, frames = second.images['wrist']
    assert len(frames) == 7
    np.testing.assert_array_equal(frames[-1], image)
    np.testing.assert_allclose(second.state_t, np.arange(10, 17) / 15.0, atol=1e-9)
    mcap_msgs = list(read_ros2_messages(str(out / 'run_001' / 'run_001.mcap')))
    assert len(mcap_msgs) == 21


def test_recorder_compresses_resizes_and_reports_its_window(tmp_path):
    """jpeg at a set size, the latched instruction, and ~/status's log-time window."""
    from std_msgs.msg import String

    from realm_ros.io import episode_bags

    out = tmp_path / 'bags'
    with run_process(['recorder_node', '--ros-args', '-p', f'out_dir:={out}', '-p',
                      'namespace:=/real', '-p', 'cameras:=[wrist]', '-p', 'image_format:=jpeg',
                      '-p', 'image_width:=16', '-p', 'image_height:=16'],
                     tmp_path / 'recorder.log') as proc:
        with ros_node('probe') as (node, executor):
            instr = node.create_publisher(String, '/real/instruction', qos.LATCHED)
            instr.publish(String(data='push the light switch'))
            js_pub = node.create_publisher(JointState, '/real/joint_states', qos.STATE)
            cmd_pub = node.create_publisher(JointTrajectory, '/real/command', qos.COMMAND)
            img_pub = node.create_publisher(Image, '/real/cameras/wrist/image', qos.IMAGE)
            status = node.create_client(Trigger, '/recorder/status')
            settled: set = set()
            assert status.wait_for_service(timeout_sec=30), (tmp_path / 'recorder.log').read_text()
            assert spin_until(executor, lambda: img_pub.get_subscription_count() > 0
                              and cmd_pub.get_subscription_count() > 0, 10)
            image = np.full((12, 24, 3), 200, np.uint8)  # 2:1, padded to 16x16
            for n, k in enumerate(range(3, 9), start=1):
                img_pub.publish(convert.image_to_msg(image, convert.to_time(k / 15.0), 'wrist'))
                _publish_step(js_pub, cmd_pub, k)
                # One step at a time, as a lockstep world: the image QoS keeps only 3.
                _wait_recorded(executor, status, {'/real/joint_states': n, '/real/command': n,
                                                  '/real/cameras/wrist/image/compressed': n},
                               settled)
            _wait_recorded(executor, status, {'/real/instruction': 1}, settled)
            answer = json.loads(call_service(executor, status, Trigger.Request(),
                                             settled=settled).message)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
    assert answer['namespace'] == '/real'
    assert answer['last_ns'] == round(8 / 15.0 * 1e9)
    assert answer['first_ns'] in (0, round(3 / 15.0 * 1e9))  # the instruction may come first
    ep = episode_bags.read_episode(answer['bag'], '/real', answer['first_ns'],
                                   answer['last_ns'], ['wrist'])
    assert ep.instruction == 'push the light switch' and len(ep.t) == 6 and ep.lag_s == 0.0
    frame = ep.images['wrist'][0]
    assert frame.shape == (16, 16, 3)
    # The picture in the middle, black bands above and below (jpeg rings a little near them).
    assert abs(int(frame[8, 8, 0]) - 200) <= 5 and float(frame[:2].mean()) < 60


def test_recorder_without_out_dir_exits_2():
    proc = subprocess.run([str(BIN / 'recorder_node')], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2
    assert 'RecorderConfig.out_dir must be set' in proc.stderr


def test_sysid_record_on_the_digital_real_replays_exactly_in_the_twin(tmp_path):
    """`sysid record --backend digital_real`: the digital real behind the franka bridge, over DDS;
    one bag per trajectory, exact replay. ``--quiet`` (docs/cli.md): the bar and the bags
    written stay on the console, the per-trajectory lines go."""
    from realm_ros.backends.mujoco.rollout import TwinRollout
    from realm_ros.core import sysid
    from realm_ros.core.config import DigitalRealDynamics

    dynamics = (pathlib.Path(__file__).resolve().parents[2] / 'config'
                / 'dynamics/sysid_demo_ideal.yaml')
    proc = subprocess.run(
        [str(BIN / 'realm-ros'), 'sysid', 'record', '--backend', 'digital_real', '--out',
         str(tmp_path / 'bags'), '--dynamics', str(dynamics), '--trajectories', '2',
         '--duration', '3', '--seed', '4', '--quiet'], capture_output=True, text=True,
        timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f'recorded 2 bags in {tmp_path / "bags"}' in proc.stdout, proc.stdout
    assert 'trajectory 0:' not in proc.stdout, proc.stdout
    assert 'sysid record' in proc.stderr and '2/2' in proc.stderr, proc.stderr  # the bar
    names = sorted(p.name for p in (tmp_path / 'bags').iterdir())
    assert names == ['traj_000', 'traj_001']
    trajs = [bags.run_to_trajectory(bags.read_run(tmp_path / 'bags' / n)) for n in names]
    assert [t.steps for t in trajs] == [45, 45]
    np.testing.assert_allclose(trajs[0].targets,
                               sysid.excitation_trajectory(
                                   sysid.ExcitationSpec(3.0, arm_id='fr3'), 4000))
    truth = DigitalRealDynamics.from_yaml(dynamics).joint_params()
    sims = TwinRollout().simulate([truth], trajs)
    assert sysid.joint_rmse(sims, trajs).max() < 1e-6  # the bag holds the whole run, aligned


def test_sysid_record_watchdog_stops_an_arm_that_cannot_follow(tmp_path):
    stuck = tmp_path / 'stuck.yaml'  # dry friction far above what the impedance law can beat
    stuck.write_text('friction: [80, 80, 80, 80, 80, 80, 80]\narmature: [0.1, 0.1, 0.1, 0.1, '
                     '0.1, 0.1, 0.1]\n')
    proc = subprocess.run(
        [str(BIN / 'realm-ros'), 'sysid', 'record', '--backend', 'digital_real', '--out',
         str(tmp_path / 'bags'), '--dynamics', str(stuck), '--trajectories', '1',
         '--duration', '6'], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert 'exceeds 0.28 rad; stopped the excitation' in proc.stderr
    assert bags.read_run(tmp_path / 'bags' / 'traj_000').state_q.shape[0] > 1  # kept, readable


def test_real_time_watchdog_allows_the_pipeline_lag_and_stops_a_stuck_arm():
    """Real time: a state shows a target some steps old (REAL_TIME_LAG_STEPS); a stuck arm
    still trips the tracking limit, and lockstep keeps comparing with the next target."""
    import collections
    import importlib
    from types import SimpleNamespace

    from realm_ros.core.errors import DataError

    # The package re-exports the function record(); the module is what holds the driver.
    record = importlib.import_module('realm_ros.commands.sysid.record')

    def driver(lockstep):
        d = object.__new__(record.ExcitationDriver)
        d.lockstep = lockstep
        d.states = []
        d.recent = collections.deque(maxlen=record.REAL_TIME_LAG_STEPS + 1)
        return d

    step = np.full(7, 0.08)  # rad per control step, a fast excitation
    targets = [robot.RESET_Q + k * step for k in range(12)]
    lagging, stuck = driver(False), driver(False)
    for k, q_d in enumerate(targets):
        watchdog = [None, time.monotonic()]
        lag = max(0, k - record.REAL_TIME_LAG_STEPS)
        lagging.states.append(SimpleNamespace(position=list(targets[lag]) + [0.0]))
        lagging.check(q_d, watchdog)  # four steps behind: accepted
        stuck.states.append(SimpleNamespace(position=list(robot.RESET_Q) + [0.0]))
        if k * 0.08 - record.REAL_TIME_LAG_STEPS * 0.08 > record.TRACKING_LIMIT:
            with pytest.raises(DataError, match='tracking error'):
                stuck.check(q_d, watchdog)
            break
        stuck.check(q_d, watchdog)
    else:
        raise AssertionError('the stuck arm never tripped the watchdog')
    strict = driver(True)
    strict.states.append(SimpleNamespace(position=list(targets[0]) + [0.0]))
    with pytest.raises(DataError, match='tracking error'):
        strict.check(targets[4], [None, time.monotonic()])  # lockstep: no lag allowed
