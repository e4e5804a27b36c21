"""world_node over real DDS: commands in, joint states and images out, bad input rejected."""

import subprocess

import numpy as np
import pytest
from rclpy.qos import qos_profile_sensor_data  # noqa: F401 - ensures rclpy import works
from rostest import (
    BIN,
    call_service,
    ros_node,
    run_process,
    spin_until,
    trajectory_command,
)
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import String
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory

from realm_ros.core import robot
from realm_ros.ros import qos

pytestmark = pytest.mark.ros


class Probe:
    """Collects what one world publishes."""

    def __init__(self, node, ns):
        self.states, self.images, self.instructions = [], [], []
        node.create_subscription(JointState, f'{ns}/joint_states', self.states.append, qos.STATE)
        node.create_subscription(Image, f'{ns}/cameras/wrist/image', self.images.append,
                                 qos.IMAGE)
        node.create_subscription(String, f'{ns}/instruction', self.instructions.append,
                                 qos.LATCHED)
        self.cmd = node.create_publisher(JointTrajectory, f'{ns}/command', qos.COMMAND)

    def arm(self, k=-1):
        msg = self.states[k]
        return np.array(msg.position[:7])


def test_lockstep_world_executes_commands_and_publishes_images(tmp_path):
    args = ['world_node', '--ros-args', '-r', '__ns:=/sim', '-p', 'lockstep:=true',
            '-p', 'lockstep_timeout_s:=0.5', '-p', 'cameras:=[wrist]']
    with run_process(args, tmp_path / 'world.log'), ros_node('probe') as (node, executor):
        probe = Probe(node, '/sim')
        assert spin_until(executor, lambda: probe.states and probe.images, 30), \
            (tmp_path / 'world.log').read_text()
        first = probe.states[-1]
        assert list(first.name) == list(robot.JOINT_NAMES) + ['gripper']
        np.testing.assert_allclose(probe.arm(), robot.RESET_Q, atol=1e-3)
        image = probe.images[-1]
        assert (image.height, image.width, image.encoding) == (180, 320, 'rgb8')

        target = robot.RESET_Q + np.array([0.1, -0.1, 0.1, 0.1, -0.1, 0.1, 0.2])
        for _ in range(20):  # one command = one control step in lockstep
            n = len(probe.states)
            probe.cmd.publish(trajectory_command(target, gripper=1.0))
            assert spin_until(executor, lambda n=n: len(probe.states) > n, 10)
        np.testing.assert_allclose(probe.arm(), target, atol=0.01)
        assert probe.states[-1].position[7] > 0.9  # gripper closed

        # Sim time advances by exactly one control period per step.
        t = [s.header.stamp.sec + s.header.stamp.nanosec * 1e-9 for s in probe.states[-3:]]
        np.testing.assert_allclose(np.diff(t), 1 / 15, atol=1e-6)

        # Bad commands: NaN, beyond limits, wrong names; the arm holds the last valid target.
        bad = [
            trajectory_command(np.r_[target[:6], np.nan]),
            trajectory_command(np.r_[target[:3], 0.5, target[4:]]),
            trajectory_command(target, names=robot.prefixed_joint_names('fr3_')),
            trajectory_command(target[:6], names=robot.JOINT_NAMES[:6]),
        ]
        for msg in bad:
            probe.cmd.publish(msg)
        n = len(probe.states)
        assert spin_until(executor, lambda: len(probe.states) >= n + 3, 10)  # held steps
        np.testing.assert_allclose(probe.arm(), target, atol=0.01)
    log = (tmp_path / 'world.log').read_text()
    assert log.count('command rejected') >= 4, log
    for reason in ('NaN', 'beyond joint limits', 'unknown joint name', 'lacks joint'):
        assert reason in log, reason


def test_real_time_world_publishes_at_control_rate_and_resets(tmp_path):
    args = ['world_node', '--ros-args', '-r', '__ns:=/real', '-p', 'camera_rate_hz:=0.0']
    with run_process(args, tmp_path / 'world.log'), ros_node('probe') as (node, executor):
        probe = Probe(node, '/real')
        assert spin_until(executor, lambda: len(probe.states) >= 20, 30)
        stamps = [s.header.stamp.sec + s.header.stamp.nanosec * 1e-9 for s in probe.states[-15:]]
        rate = (len(stamps) - 1) / (stamps[-1] - stamps[0])
        assert 10 < rate < 20, rate
        probe.cmd.publish(trajectory_command(robot.RESET_Q + 0.1))
        assert spin_until(executor, lambda: abs(probe.arm()[0] - robot.RESET_Q[0] - 0.1) < 0.01)

        answer = call_service(executor, node.create_client(Trigger, '/real/reset'),
                              Trigger.Request())
        assert answer.success, answer.message
        assert spin_until(executor, lambda: np.allclose(probe.arm(), robot.RESET_Q, atol=0.02))

        # The twin has no reflexes: the operator's recover call is refused, saying why.
        answer = call_service(executor, node.create_client(SetBool, '/real/recover'),
                              SetBool.Request(data=True))
        assert not answer.success
        assert 'no reflexes' in answer.message


@pytest.mark.parametrize('param, expected', [
    ('backend:=gazebo', "backend = 'gazebo' is not allowed; choose one of"),
    ('physics_hz:=100.0', 'physics_hz must be a positive multiple of control_hz'),
    ('cameras:=[side]', "unknown camera 'side'"),
])
def test_bad_parameter_fails_at_startup_naming_the_field(param, expected):
    proc = subprocess.run([str(BIN / 'world_node'), '--ros-args', '-p', param],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert expected in proc.stderr, proc.stderr


def test_twin_with_the_safety_filter_refuses_as_the_bridge_and_reports_it(tmp_path):
    """``safety.filter_commands`` (what paired-eval's graph sets for the twin, issue 37): a
    jump the real side's rules refuse is refused by the twin too, the arm holds, and each
    refusal goes out on world/status with the episode's count, which the evaluator records."""
    from diagnostic_msgs.msg import DiagnosticStatus

    from realm_ros.core.safety import REJECTED_STATUS

    # A lockstep timeout: the world steps (and publishes its state) while it waits, so a probe
    # that joins after the first state message still sees one (joint_states is volatile).
    args = ['world_node', '--ros-args', '-r', '__ns:=/sim', '-p', 'lockstep:=true',
            '-p', 'lockstep_timeout_s:=0.5', '-p', 'camera_rate_hz:=0.0',
            '-p', 'safety.filter_commands:=true', '-p', 'safety.arm_id:=fr3']
    with run_process(args, tmp_path / 'world.log'), ros_node('probe') as (node, executor):
        probe = Probe(node, '/sim')
        status = []
        node.create_subscription(DiagnosticStatus, '/sim/world/status', status.append,
                                 qos.STATE)
        assert spin_until(executor, lambda: probe.states, 30), \
            (tmp_path / 'world.log').read_text()
        start = probe.arm()
        for k, jump in enumerate((0.5, 0.6)):  # > velocity_scale * limit * dt: refused
            n = len(probe.states)
            probe.cmd.publish(trajectory_command(start + jump, gripper=0.0))
            assert spin_until(executor, lambda n=n: len(probe.states) > n, 10)
            assert spin_until(executor, lambda k=k: len(status) > k, 10)
            assert status[k].level == DiagnosticStatus.WARN and status[k].name == REJECTED_STATUS
            assert status[k].message.startswith('safety: target change exceeds')
            assert [(v.key, v.value) for v in status[k].values] == [('rejected', str(k + 1))]
        np.testing.assert_allclose(probe.arm(), start, atol=2e-3)  # held
        n = len(probe.states)
        probe.cmd.publish(trajectory_command(start + 0.02, gripper=0.0))  # a valid step
        assert spin_until(executor, lambda: len(probe.states) > n, 10)
        spin_until(executor, lambda: False, 0.3)
        assert len(status) == 2
