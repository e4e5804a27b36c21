"""The digital real's arm logic without ROS (``backends/franka/digital_arm.py``): trajectories
followed as a JointTrajectoryController, the joint-limit reflex and its recoveries, the fingers,
and physics time; ``nodes/digital_real_node.py`` only turns messages into these calls."""

import numpy as np
import pytest

from realm_ros.backends.franka.digital_arm import DigitalArm, StallInjector, parse_trajectory
from realm_ros.core import robot
from realm_ros.core.config import WorldConfig
from realm_ros.core.errors import ConfigError
from realm_ros.core.types import EpisodeSpec

ARM = robot.arm_spec('fr3')
NAMES = list(ARM.joint_names)


@pytest.fixture(scope='module')
def world():
    from realm_ros.backends.digital_real import DigitalRealWorld
    w = DigitalRealWorld(WorldConfig(backend='digital_real', task='', cameras=(),
                                     camera_rate_hz=0.0))
    yield w
    w.close()


def _arm(world, lockstep: bool) -> DigitalArm:
    arm = DigitalArm(world, ARM, robot.GRIPPER_WIDTHS['franka_hand'], lockstep, 15.0)
    arm.reset(EpisodeSpec(task='empty', seed=0))
    arm.start(100.0)
    return arm


def test_a_trajectory_is_read_in_the_arm_s_joint_order():
    q = np.arange(7) * 0.1
    points = parse_trajectory(NAMES[::-1], [(list(q[::-1]), 0.5)], NAMES)
    assert points[0][0] == 0.5
    np.testing.assert_array_equal(points[0][1], q)
    for names, pts, message in (
            (NAMES[:6], [(list(q[:6]), 0.0)], 'must be exactly'),
            (NAMES, [], 'no points'),
            (NAMES, [(list(q[:6]), 0.0)], 'needs 7 positions'),
            (NAMES, [([np.nan] * 7, 0.0)], 'NaN or inf')):
        with pytest.raises(ConfigError, match=message):
            parse_trajectory(names, pts, NAMES)


def test_lockstep_takes_the_point_at_the_end_of_the_control_period(world):
    arm = _arm(world, lockstep=True)
    start = robot.RESET_Q.copy()
    points = [(0.0, start), (1 / 15, start + 0.01), (0.5, start + 0.2)]
    assert arm.follow(points, 100.0)
    np.testing.assert_allclose(arm.target_q, start + 0.01)
    time_before = world.time
    arm.step()
    assert world.time > time_before and arm.state is not None


def test_real_time_schedules_the_points_and_releases_them_when_due(world):
    arm = _arm(world, lockstep=False)
    start = robot.RESET_Q.copy()
    assert arm.follow([(0.2, start + 0.01), (0.4, start + 0.02)], 100.0)
    np.testing.assert_allclose(arm.target_q, start + 0.01)  # the first point is due now
    arm.release_due(100.1)
    np.testing.assert_allclose(arm.target_q, start + 0.01)
    arm.release_due(100.2)
    np.testing.assert_allclose(arm.target_q, start + 0.02)
    assert arm.schedule == []


def test_targets_are_clipped_to_the_hard_stops(world):
    arm = _arm(world, lockstep=True)
    arm.set_target(np.full(7, 10.0))
    np.testing.assert_array_equal(arm.target_q, arm.upper)


def test_a_target_beyond_the_limits_is_a_reflex_until_recovered(world):
    arm = _arm(world, lockstep=True)
    beyond = [(0.0, np.full(7, 10.0))]
    assert arm.beyond_limits(beyond) and not arm.beyond_limits([(0.0, robot.RESET_Q)])
    arm.reflex('joint_position_limits_violation', 5.0)
    assert arm.hardware_state.robot_mode() == 'REFLEX' and arm.schedule == []
    # It holds where it is measured (the encoders are noisy: each reading differs a little).
    np.testing.assert_allclose(arm.target_q, world.joint_state().position, atol=1e-2)
    assert not arm.follow([(0.0, robot.RESET_Q)], 5.1) and arm.rejected == 1
    modes = []
    assert not arm.auto_recover(5.5, 1.0)  # not yet
    assert arm.auto_recover(6.0, 1.0, lambda: modes.append(arm.hardware_state.robot_mode()))
    assert arm.hardware_state.active and modes  # AUTOMATIC_ERROR_RECOVERY was published
    assert arm.follow([(0.0, robot.RESET_Q)], 6.1)


def test_the_fingers_go_to_the_width_asked(world):
    arm = _arm(world, lockstep=True)
    arm.set_width('move', 0.04)
    assert arm.gripper_goals == [('move', 0.04)] and 0.0 < arm.gripper_g < 1.0
    arm.reset(EpisodeSpec(task='empty', seed=0))
    assert arm.gripper_g == 0.0


def test_real_time_catches_up_at_most_a_tenth_of_a_second(world):
    arm = _arm(world, lockstep=False)
    sim = world.time
    arm.advance(100.05)
    assert world.time - sim == pytest.approx(0.05, abs=2 / world.config.physics_hz)
    arm.advance(105.0)  # a 5 s stall: 0.1 s of physics, then the clocks restart
    assert world.time - sim == pytest.approx(0.15, abs=2 / world.config.physics_hz)
    assert arm.wall_start == 105.0


def test_stalls_come_every_period_after_the_first():
    stall = StallInjector()
    assert not stall.stalled(1.0, every_s=2.0, stall_s=0.5)  # arms it
    assert not stall.stalled(2.0, 2.0, 0.5)
    assert stall.stalled(3.0, 2.0, 0.5) and stall.stalled(3.4, 2.0, 0.5)
    assert not stall.stalled(3.6, 2.0, 0.5) and stall.stalls == 1
