"""Run bags: rosbag2/MCAP round trip, rosbags and mcap_ros2 readers, clear errors on bad data."""

import pathlib

from mcap_ros2.reader import read_ros2_messages
import numpy as np
import pytest
import yaml

from realm_ros.core import robot
from realm_ros.core.errors import DataError
from realm_ros.io import bags


def _run(k=20, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(k + 1) / 15.0
    return bags.RunData(
        path=pathlib.Path('x'), command_t=t[:-1],
        command_q=robot.RESET_Q + rng.normal(0, .1, (k, 7)),
        command_gripper=np.r_[np.zeros(k // 2), np.ones(k - k // 2)], state_t=t,
        state_q=robot.RESET_Q + rng.normal(0, .1, (k + 1, 7)),
        state_dq=rng.normal(0, .5, (k + 1, 7)), state_effort=np.zeros((k + 1, 7)),
        state_gripper=rng.uniform(0, 1, k + 1),
        images={'wrist': (t[:3], [rng.integers(0, 255, (4, 6, 3), dtype=np.uint8)
                                  for _ in range(3)])})


def test_round_trip_is_exact(tmp_path):
    run = _run()
    bags.write_run(tmp_path / 'bag', run)
    back = bags.read_run(tmp_path / 'bag', namespace='/real', cameras=['wrist'])
    for name in ('command_t', 'command_q', 'command_gripper', 'state_t', 'state_q', 'state_dq',
                 'state_gripper'):
        np.testing.assert_allclose(getattr(back, name), getattr(run, name), atol=1e-9,
                                   err_msg=name)
    for a, b in zip(back.images['wrist'][1], run.images['wrist'][1]):
        np.testing.assert_array_equal(a, b)
    traj = bags.run_to_trajectory(back)
    np.testing.assert_allclose(traj.q0, run.state_q[0])
    np.testing.assert_allclose(traj.measured, run.state_q[1:], atol=1e-9)
    np.testing.assert_allclose(traj.targets, run.command_q)


def test_bag_is_rosbag2_v9_mcap_and_readable_by_mcap_ros2(tmp_path):
    bags.write_run(tmp_path / 'bag', _run(k=5))
    meta = yaml.safe_load((tmp_path / 'bag' / 'metadata.yaml').read_text())
    info = meta['rosbag2_bagfile_information']
    assert info['version'] == 9 and info['storage_identifier'] == 'mcap'
    assert info['message_count'] == 5 + 6 + 3
    seen = {}
    for item in read_ros2_messages(str(tmp_path / 'bag' / 'bag.mcap')):
        seen.setdefault(item.channel.topic, []).append(item.ros_msg)
    assert sorted(seen) == ['/real/cameras/wrist/image', '/real/command', '/real/joint_states']
    assert seen['/real/joint_states'][0].name == list(robot.JOINT_NAMES) + ['gripper']
    assert len(seen['/real/command'][2].points[0].positions) == 8


def _write(path, states=(), commands=(), extra=()):
    with bags.BagWriter(path) as bag:
        for t, q, names in states:
            bag.write_joint_state('/real/joint_states', t, q, names=names)
        for t, q, names in commands:
            bag.write_command('/real/command', t, q, names=names)
        for topic, t in extra:
            bag.write_joint_state(topic, t, robot.RESET_Q)


def test_bad_bags_give_clear_errors(tmp_path):
    q, names = robot.RESET_Q, robot.JOINT_NAMES
    with pytest.raises(DataError, match='cannot read bag'):
        bags.read_run(tmp_path / 'missing')
    _write(tmp_path / 'empty')
    with pytest.raises(DataError, match='is empty'):
        bags.read_run(tmp_path / 'empty')
    _write(tmp_path / 'wrong', extra=[('/real/joint_state_typo', 0.0)])
    with pytest.raises(DataError, match="no 'command' topic.*joint_state_typo"):
        bags.read_run(tmp_path / 'wrong')
    _write(tmp_path / 'ns', states=[(0.0, q, names)], commands=[(0.0, q, names)])
    with pytest.raises(DataError, match="no 'command' topic in namespace '/sim'"):
        bags.read_run(tmp_path / 'ns', namespace='/sim')
    fr3 = robot.prefixed_joint_names('fr3_')
    _write(tmp_path / 'names', states=[(0.0, q, names)], commands=[(0.0, q, fr3)])
    with pytest.raises(DataError, match="joint name 'fr3_joint1' does not match panda_joint"):
        bags.read_run(tmp_path / 'names')
    with pytest.raises(DataError, match="joint_states, message 0: joint name 'panda_joint1'"):
        bags.read_run(tmp_path / 'names', prefix='fr3_')  # commands fr3_, states panda_
    _write(tmp_path / 'short', states=[(0.0, q, names)], commands=[(0.0, q[:6], names[:6])])
    with pytest.raises(DataError, match='lack'):
        bags.read_run(tmp_path / 'short')
    bad = q.copy()
    bad[3] = np.nan
    _write(tmp_path / 'nan', states=[(0.0, q, names), (0.1, bad, names)],
           commands=[(0.0, q, names)])
    with pytest.raises(DataError, match=r'joint_states, message 1: NaN or inf joint position'):
        bags.read_run(tmp_path / 'nan')
    with pytest.raises(DataError, match='exists already'):
        bags.BagWriter(tmp_path / 'nan')
