"""Gripper adapters of the franka bridge: goals only on a change, at a bounded rate, only to a
server that is up, within the hand's range (std_msgs width_topic adapter, real rclpy node)."""

import pytest
from rostest import ros_node, spin_until
from std_msgs.msg import Float64

from realm_ros.backends.franka.grippers import make_gripper
from realm_ros.core.config import FrankaBridgeConfig
from realm_ros.core.errors import BackendUnavailable, ConfigError
from realm_ros.ros import qos

pytestmark = pytest.mark.ros


def test_width_goals_follow_the_rules():
    now = [100.0]
    config = FrankaBridgeConfig(gripper='width_topic', gripper_min_interval_s=0.5)
    with ros_node('gripper_test') as (node, executor):
        gripper = make_gripper(node, config, clock=lambda: now[0])
        gripper.command(1.0)  # nobody serves width_command yet: pending, nothing sent
        assert gripper.goals_sent == 0 and not gripper.ready()
        widths = []
        node.create_subscription(Float64, 'franka_gripper/width_command',
                                 lambda m: widths.append(m.data), qos.COMMAND)
        assert spin_until(executor, gripper.ready, 10)
        gripper.command(0.9)  # the same binarised command (closed): sent once, now
        assert gripper.goals_sent == 1
        for g in (0.8, 1.0, 0.6):  # still closed: no new goal
            gripper.command(g)
        now[0] += 0.1
        gripper.command(0.2)  # open, but within 0.5 s of the last goal: held back
        assert gripper.goals_sent == 1
        now[0] += 0.5
        gripper.command(0.3)  # the interval is over: the open goal goes out
        assert gripper.goals_sent == 2
        assert spin_until(executor, lambda: len(widths) == 2, 5)
        assert widths == [0.0, pytest.approx(0.085)]  # closed, then the 2F-85's full opening


def test_hand_widths_and_choices():
    assert FrankaBridgeConfig(gripper='franka_hand').gripper_max_width == 0.08
    assert FrankaBridgeConfig(gripper='robotiq_2f_85').gripper_max_width == 0.085
    with pytest.raises(ConfigError, match='gripper'):
        FrankaBridgeConfig(gripper='topic')
    with pytest.raises(ConfigError, match='arm_id'):
        FrankaBridgeConfig(arm_id='fr2')


def test_missing_interface_package_is_a_clear_error(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, 'franka_msgs', None)  # as on a pip-only machine
    monkeypatch.setitem(sys.modules, 'franka_msgs.action', None)
    with ros_node('gripper_test2') as (node, _):
        with pytest.raises(BackendUnavailable, match="'franka_msgs'.*not on PyPI"):
            make_gripper(node, FrankaBridgeConfig(gripper='franka_hand'))
