"""The live monitor: pure divergence/marker logic, and monitor_node over real DDS."""

import numpy as np
import pytest
from rostest import ros_node, run_process, spin_until
from std_msgs.msg import Float64, Float64MultiArray, String
from visualization_msgs.msg import Marker, MarkerArray

from realm_ros.core import monitor, robot
from realm_ros.core.errors import ConfigError
from realm_ros.core.types import EpisodeSpec, JointState, Progress
from realm_ros.ros import convert, markers, qos

SCENE = {'objects': {'green_block': {'pos': [0.55, 0.12, 0.025], 'quat': [1, 0, 0, 0]},
                     'bowl': {'pos': [0.5, -0.15, 0.03], 'size': [0.15, 0.15, 0.06]}},
         'reset_q': list(robot.RESET_Q)}
INSTRUCTION = 'put the green block in the bowl'


# -- pure ------------------------------------------------------------------------------------

def test_nearest_stamp_matching_and_divergence():
    tracker = monitor.DivergenceTracker(max_gap_s=0.02)
    assert tracker.latest() is None
    for k in range(10):
        tracker.sim.add(k * 0.1, np.full(7, k * 0.01))
    tracker.real.add(0.5 + 0.015, np.full(7, 0.05) + np.arange(7) * 0.001)
    div = tracker.new_divergence()
    assert div.sim_stamp == pytest.approx(0.5)
    np.testing.assert_allclose(div.per_joint, np.arange(7) * 0.001, atol=1e-12)
    assert div.norm == pytest.approx(np.linalg.norm(np.arange(7) * 0.001))
    assert div.worst_joint == 6
    assert tracker.new_divergence() is None  # same pair: not reported twice
    tracker.real.add(0.95 + 0.03, np.zeros(7))  # 30 ms from the nearest sim sample: no match
    div = tracker.latest()  # falls back to the newest sim sample (0.9) vs nearest real (0.98)
    assert div is None
    tracker.sim.add(0.99, np.ones(7))
    div = tracker.latest()
    assert (div.real_stamp, div.sim_stamp) == (pytest.approx(0.98), pytest.approx(0.99))


def test_stamp_going_back_clears_history_and_old_samples_expire():
    hist = monitor.JointHistory(history_s=1.0)
    for t in (0.0, 0.5, 1.0, 1.6):
        hist.add(t, np.zeros(7))
    assert len(hist) == 2  # 0.0 and 0.5 are older than 1.6 - 1.0
    hist.add(0.1, np.zeros(7))  # a reset in lockstep: sim time restarts
    assert len(hist) == 1 and hist.latest()[0] == 0.1


def test_object_poses_and_the_destination_label():
    poses = monitor.extract_object_poses(SCENE)
    assert [p.name for p in poses] == ['bowl', 'green_block']
    assert poses[0].size == (0.15, 0.15, 0.06)
    flat = monitor.extract_object_poses({'mug_pos': [0.4, 0, 0.05], 'mug_quat': [0, 0, 0, 1]})
    assert flat[0].name == 'mug' and flat[0].quat == (0, 0, 0, 1)
    specs = monitor.object_markers(poses, 'initial', alpha=0.3, instruction=INSTRUCTION)
    texts = {s.text for s in specs if s.kind == 'text'}
    assert texts == {'place the green block here', 'green block'}
    block = next(s for s in specs if s.kind == 'cube')
    assert block.rgba == (*monitor.COLOURS['green'], 0.3)
    assert monitor.destination('stack the green block on the yellow block',
                               ['green_block', 'yellow_block']) == (
        'yellow_block', 'place the green block here')
    assert monitor.destination('rotate the mug', ['mug']) is None


def test_progress_text_shows_stage_and_progression():
    p = Progress(task='pick_spoon', stages=('REACH', 'GRASP', 'LIFT_LARGE'),
                 met=(True, False, False), progression=1 / 3, max_progression=1 / 3, step=40,
                 source='operator')
    text = monitor.progress_text('real', p)
    assert 'real (operator) pick_spoon: 1/3 = 0.33' in text and 'next GRASP' in text
    assert '[x] REACH [ ] GRASP' in text


def test_config_validation():
    with pytest.raises(ConfigError, match='match_by'):
        monitor.MonitorConfig(match_by='fuzzy')
    with pytest.raises(ConfigError, match='real_namespace'):
        monitor.MonitorConfig(real_namespace='real')


# -- over DDS --------------------------------------------------------------------------------

def _js(q, stamp):
    return convert.joint_state_to_msg(JointState(
        position=np.asarray(q, float), velocity=np.zeros(7), effort=np.zeros(7), gripper=0.0,
        stamp=stamp))


@pytest.mark.ros
def test_monitor_node_publishes_markers_and_divergence(tmp_path):
    spec = EpisodeSpec(task='put_green_block_in_bowl', instruction=INSTRUCTION,
                       initial_state=SCENE)
    args = ['monitor_node', '--ros-args', '-p', 'rate_hz:=10.0', '-p', 'max_gap_s:=0.01',
            '-p', f"episode_spec:='{spec.to_json()}'"]
    with run_process(args, tmp_path / 'monitor.log'), ros_node('monitor_probe') as (node, ex):
        got = {'markers': [], 'div': [], 'norm': []}
        node.create_subscription(MarkerArray, '/monitor/markers', got['markers'].append, 10)
        node.create_subscription(Float64MultiArray, '/monitor/divergence', got['div'].append, 50)
        node.create_subscription(Float64, '/monitor/divergence_norm', got['norm'].append, 50)
        pubs = {w: node.create_publisher(type(_js(np.zeros(7), 0.0)), f'/{w}/joint_states',
                                         qos.STATE) for w in ('real', 'sim')}
        prog = {w: node.create_publisher(type(convert.progress_to_msg(Progress(
            'x', (), (), 0.0, 0.0))), f'/{w}/progress', qos.STATE) for w in ('real', 'sim')}
        priv = node.create_publisher(String, '/sim/privileged_state', qos.STATE)
        assert spin_until(ex, lambda: got['markers'] and all(
            p.get_subscription_count() for p in [*pubs.values(), *prog.values()]), 30), \
            (tmp_path / 'monitor.log').read_text()

        rng = np.random.default_rng(0)
        q_sim = [robot.RESET_Q + rng.normal(0, 0.05, 7) for _ in range(5)]
        offsets = rng.normal(0, 0.01, (5, 7))
        for k in range(5):
            t = 100.0 + k / 15.0
            pubs['sim'].publish(_js(q_sim[k], t))
            # real stamps 3 ms later than sim: matched (max_gap 10 ms) to the same step
            pubs['real'].publish(_js(q_sim[k] + offsets[k], t + 0.003))
            ex.spin_once(timeout_sec=0.05)
        stages = ('REACH', 'GRASP', 'LIFT_SLIGHT', 'MOVE_CLOSE', 'PLACE_INTO')
        prog['real'].publish(convert.progress_to_msg(Progress(
            spec.task, stages, (True, True, False, False, False), 0.4, 0.4, 70, 'operator'),
            'real'))
        prog['sim'].publish(convert.progress_to_msg(Progress(
            spec.task, stages, (True,) * 3 + (False,) * 2, 0.6, 0.6, 70), 'sim'))
        priv.publish(String(data=convert.privileged_to_json(
            {'objects': {'green_block': {'pos': [0.5, 0.0, 0.2]}}}, 100.3)))
        assert spin_until(ex, lambda: len(got['div']) >= 5 and len(got['norm']) >= 5, 20)

        expected = np.abs(offsets)
        values = np.array([m.data for m in got['div'][-5:]])
        np.testing.assert_allclose(values, expected, atol=1e-9)
        np.testing.assert_allclose([m.data for m in got['norm'][-5:]],
                                   np.linalg.norm(expected, axis=1), atol=1e-9)
        assert got['div'][-1].layout.dim[0].label == markers.DIVERGENCE_LABEL
        assert got['div'][-1].layout.dim[0].size == 7

        def texts():
            out = {}
            for m in got['markers'][-1].markers:
                out.setdefault(m.ns, []).append(m.text)
            return out

        def ready():
            t = texts()
            return (any('0.60' in s for s in t.get('progress', []))
                    and any('0.40' in s for s in t.get('progress', []))
                    and t.get('sim/objects'))
        assert spin_until(ex, ready, 10), texts()
        last = got['markers'][-1].markers
        assert last[0].action == Marker.DELETEALL
        assert all(m.header.frame_id == 'base_link' for m in last)
        t = texts()
        assert 'place the green block here' in t['initial/labels']
        progress = ' | '.join(t['progress'])
        assert 'real (operator) put_green_block_in_bowl: 2/5 = 0.40' in progress
        assert 'sim (privileged) put_green_block_in_bowl: 3/5 = 0.60' in progress
        assert 'next LIFT_SLIGHT' in progress and 'next MOVE_CLOSE' in progress
        worst = robot.JOINT_NAMES[int(np.argmax(expected[-1]))]
        assert worst in t['divergence'][0]
        block = next(m for m in last if m.ns == 'sim/objects')
        assert (block.type, block.pose.position.z) == (Marker.CUBE, pytest.approx(0.2))
        assert {m.type for m in last if m.ns == 'progress'} == {Marker.TEXT_VIEW_FACING}
