"""Message <-> core conversions (no DDS needed)."""

import numpy as np
import pytest

from realm_ros.core import robot
from realm_ros.core.errors import CommandRejected
from realm_ros.core.types import Action, ActionMode, JointState, Progress
from realm_ros.ros import convert

pytestmark = pytest.mark.ros


def test_joint_state_round_trip_with_prefix_mapping():
    state = JointState(robot.RESET_Q.copy(), np.arange(7.0), np.ones(7), 0.4, stamp=12.5)
    msg = convert.joint_state_to_msg(state, robot.prefixed_joint_names('fr3_'))
    back = convert.joint_state_from_msg(msg, prefix='fr3_')
    np.testing.assert_allclose(back.position, state.position)
    np.testing.assert_allclose(back.velocity, state.velocity)
    assert back.gripper == 0.4 and back.stamp == pytest.approx(12.5)
    with pytest.raises(CommandRejected, match='lacks'):
        convert.joint_state_from_msg(msg, prefix='panda_')


def test_trajectory_round_trip_position_and_velocity():
    actions = [Action(robot.RESET_Q + 0.01 * k, k / 3, ActionMode.POSITION) for k in range(3)]
    msg = convert.actions_to_trajectory(actions, 1 / 15)
    back = convert.trajectory_to_actions(msg, 0.0)
    assert [a.gripper for a in back] == pytest.approx([0, 1 / 3, 2 / 3])
    velocity = convert.actions_to_trajectory([Action(np.full(7, 0.5), 1.0, ActionMode.VELOCITY)],
                                             1 / 15)
    assert convert.trajectory_to_actions(velocity, 0.0)[0].mode is ActionMode.VELOCITY


def test_one_bad_point_rejects_the_whole_chunk():
    actions = [Action(robot.RESET_Q, 0.0), Action(np.full(7, np.nan), 0.0)]
    msg = convert.actions_to_trajectory(actions, 1 / 15)
    with pytest.raises(CommandRejected, match='point 1'):
        convert.trajectory_to_actions(msg, 0.0)


def test_image_round_trip_rgb_and_bgr():
    image = np.random.default_rng(0).integers(0, 255, (4, 5, 3), dtype=np.uint8)
    msg = convert.image_to_msg(image, convert.to_time(1.0), 'wrist')
    np.testing.assert_array_equal(convert.image_from_msg(msg), image)
    msg.encoding = 'bgr8'
    np.testing.assert_array_equal(convert.image_from_msg(msg), image[..., ::-1])


def test_progress_round_trip():
    progress = Progress('pick_spoon', ('REACH', 'GRASP', 'LIFT_LARGE'), (True, True, False),
                        2 / 3, 2 / 3, step=40)
    back = convert.progress_from_msg(convert.progress_to_msg(progress, 'sim'))
    assert back == progress


def test_privileged_state_json_round_trip():
    text = convert.privileged_to_json({'cube': np.array([0.1, 0.2, 0.3]), 'held': np.bool_(True)},
                                      2.0)
    stamp, state = convert.privileged_from_json(text)
    assert stamp == 2.0 and state == {'cube': [0.1, 0.2, 0.3], 'held': True}
