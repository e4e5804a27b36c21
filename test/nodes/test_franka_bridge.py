"""world_node backend:=franka + digital_real as real processes over DDS.

digital_real (the digital real) speaks franka_ros2's names (``fr3_jointN``) under /fr; the
bridge's world_node publishes the shared interface (``panda_jointN`` + ``gripper``) under /real.
The gripper here is the digital real's ``width_topic`` (no franka_msgs needed); the franka_msgs /
control_msgs paths are in test_franka_lab.py.
"""

import contextlib
import json
import subprocess
import time

import numpy as np
import pytest
from rosgraph_msgs.msg import Clock
from rostest import (
    BIN,
    call_service,
    ros_node,
    run_process,
    spin_until,
    trajectory_command,
)
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Float64, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from realm_ros.core import robot
from realm_ros.core.types import EpisodeSpec
from realm_ros.ros import qos

pytestmark = pytest.mark.ros

FR3 = robot.prefixed_joint_names('fr3_')


@contextlib.contextmanager
def _pair(tmp_path, lockstep=False, extra=(), cameras=False):
    mode = f'lockstep:={str(lockstep).lower()}'
    digital_real = ['digital_real', '--ros-args', '-r', '__ns:=/fr', '-p', mode]
    world = ['world_node', '--ros-args', '-r', '__ns:=/real', '-p', 'backend:=franka',
             '-p', 'franka.arm_id:=fr3', '-p', 'franka.gripper:=width_topic',
             '-p', 'franka.namespace:=/fr',
             '-p', 'franka.digital_real:=true', '-p', mode, *extra]
    if cameras:  # the digital real renders the wrist camera; the bridge carries it
        digital_real += ['-p', 'cameras:=[wrist]', '-p', 'camera_width:=64',
                         '-p', 'camera_height:=48']
        world += ['-p', 'cameras:=[wrist]']
    else:
        world += ['-p', 'camera_rate_hz:=0.0']
    with run_process(digital_real, tmp_path / 'digital_real.log'), \
            run_process(world, tmp_path / 'world.log'), ros_node('probe') as (node, executor):
        yield node, executor


def _logs(tmp_path):
    return (tmp_path / 'digital_real.log').read_text() + (tmp_path / 'world.log').read_text()


def test_bridge_maps_names_carries_commands_refuses_unsafe_and_holds_on_watchdog(tmp_path):
    # One point per step (no shaping): the test reads the target sent from each message.
    extra = ('-p', 'safety.watchdog_s:=0.1', '-p', 'safety.shape_trajectory:=never')
    with _pair(tmp_path, extra=extra) as (node, executor):
        shared, robot_side, targets = [], [], []
        node.create_subscription(JointState, '/real/joint_states', shared.append, qos.STATE)
        node.create_subscription(JointState, '/fr/joint_states', robot_side.append, qos.STATE)
        node.create_subscription(
            JointTrajectory, '/fr/joint_trajectory_controller/joint_trajectory', targets.append,
            qos.COMMAND)
        cmd = node.create_publisher(JointTrajectory, '/real/command', qos.COMMAND)
        assert spin_until(executor, lambda: len(shared) > 3 and robot_side, 40), _logs(tmp_path)
        assert list(shared[-1].name) == list(robot.JOINT_NAMES) + ['gripper']
        assert list(robot_side[-1].name) == list(FR3)
        np.testing.assert_allclose(shared[-1].position[:7], robot.RESET_Q, atol=0.01)

        def arm():
            return np.array(shared[-1].position[:7])

        # A valid target, re-sent at the control rate: both sides track it; gripper closes.
        a = robot.RESET_Q + np.array([0.1, 0.1, -0.1, 0.1, 0.1, -0.1, 0.1])
        for _ in range(25):
            cmd.publish(trajectory_command(a, gripper=1.0))
            spin_until(executor, lambda: False, 1 / 15)
        np.testing.assert_allclose(arm(), a, atol=0.01)
        np.testing.assert_allclose(robot_side[-1].position, a, atol=0.01)  # fr3_ names, same q
        assert shared[-1].position[7] > 0.9
        assert list(targets[-1].joint_names) == list(FR3)

        # Unsafe: a 0.5 rad jump in one control step (velocity rule).
        jump = a.copy()
        jump[0] += 0.5
        cmd.publish(trajectory_command(jump))
        spin_until(executor, lambda: False, 0.3)
        np.testing.assert_allclose(arm(), a, atol=0.01)  # the arm held

        # Watchdog: one step command towards b, then silence. Within 0.1 s the bridge holds
        # the measured position, short of b.
        b = a.copy()
        b[0] += 0.12
        n = len(targets)
        cmd.publish(trajectory_command(b))
        spin_until(executor, lambda: False, 1.5)
        after = [np.array(t.points[0].positions) for t in targets[n:]]
        assert any(np.allclose(t, b) for t in after)  # b was sent ...
        held = after[-1]
        assert abs(held[0] - b[0]) > 0.01, held  # ... then replaced by the hold
        np.testing.assert_allclose(arm(), held, atol=0.01)
    log = _logs(tmp_path)
    assert 'safety: target change exceeds velocity_scale' in log, log
    assert 'watchdog: no valid command' in log, log


def _episode(node, executor, probe, cmd, targets):
    """Reset through /real/reset, then run one command per lockstep step; return positions."""
    answer = call_service(executor, node.create_client(Trigger, '/real/reset'),
                          Trigger.Request(), timeout=20)
    assert answer.success, answer.message
    out = []
    for k, q in enumerate(targets):
        n = len(probe)
        cmd.publish(trajectory_command(q, gripper=1.0 if k >= 3 else 0.0))
        assert spin_until(executor, lambda n=n: len(probe) > n, 10)
        out.append(list(probe[-1].position))
    return np.array(out)


def test_lockstep_through_the_bridge_is_deterministic_per_seed(tmp_path):
    spec = EpisodeSpec(task='empty', seed=7)
    extra = ('-p', f'seed:={spec.seed}', '-p', 'lockstep_timeout_s:=0.0')
    with _pair(tmp_path, lockstep=True, extra=extra, cameras=True) as (node, executor):
        states, clock, privileged, images = [], [], [], []
        node.create_subscription(Image, '/real/cameras/wrist/image', images.append, qos.IMAGE)
        sub = node.create_subscription(JointState, '/real/joint_states', states.append,
                                       qos.STATE)
        node.create_subscription(Clock, '/clock', clock.append, qos.CLOCK)
        priv = node.create_subscription(String, '/fr/digital_real/privileged_state',
                                        privileged.append, qos.STATE)
        cmd = node.create_publisher(JointTrajectory, '/real/command', qos.COMMAND)
        # In lockstep nothing is published until a command or a reset: wait for discovery.
        assert spin_until(executor, lambda: cmd.get_subscription_count() and
                          sub.get_publisher_count() and priv.get_publisher_count(),
                          40), _logs(tmp_path)
        ramp = [robot.RESET_Q + 0.012 * k for k in range(1, 9)]
        first = _episode(node, executor, states, cmd, ramp)
        second = _episode(node, executor, states, cmd, ramp)
        # Same seed: the digital real's sensor noise and physics repeat bit for bit.
        np.testing.assert_array_equal(first, second)
        assert first[-1][7] > 0.0  # the gripper command took effect within the episode
        # One command = one control step of sim time on the shared interface.
        t = [s.header.stamp.sec + s.header.stamp.nanosec * 1e-9 for s in states[-4:]]
        np.testing.assert_allclose(np.diff(t), 1 / 15, atol=1e-6)
        assert clock  # the digital real publishes /clock in lockstep
        # The digital real's wrist image of the same step, carried through the bridge.
        assert spin_until(executor, lambda: images and images[-1].header.stamp ==
                          states[-1].header.stamp, 5)
        assert (images[-1].height, images[-1].width) == (48, 64)
        assert json.loads(privileged[-1].data)['stamp'] > 0


def test_digital_real_rejects_foreign_joint_names_and_reports_width(tmp_path):
    args = ['digital_real', '--ros-args', '-r', '__ns:=/ff', '-p', 'lockstep:=true']
    with run_process(args, tmp_path / 'digital_real.log'), ros_node('probe') as (node, executor):
        arm, fingers = [], []
        node.create_subscription(JointState, '/ff/joint_states', arm.append, qos.STATE)
        node.create_subscription(JointState, '/ff/franka_gripper/joint_states', fingers.append,
                                 qos.STATE)
        traj = node.create_publisher(JointTrajectory,
                                     '/ff/joint_trajectory_controller/joint_trajectory',
                                     qos.COMMAND)
        width = node.create_publisher(Float64, '/ff/franka_gripper/width_command', qos.COMMAND)
        assert spin_until(executor, lambda: arm, 30), (tmp_path / 'digital_real.log').read_text()
        stamp = arm[-1].header.stamp.nanosec
        # panda_ names: not this controller's joints
        traj.publish(trajectory_command(robot.RESET_Q))
        width.publish(Float64(data=0.04))
        for _ in range(10):
            n = len(arm)
            traj.publish(trajectory_command(robot.RESET_Q, names=FR3))
            assert spin_until(executor, lambda n=n, s=stamp: len(arm) > n and
                              arm[-1].header.stamp.nanosec != s, 10)
            stamp = arm[-1].header.stamp.nanosec
        assert list(fingers[-1].name) == ['fr3_finger_joint1', 'fr3_finger_joint2']
        # Each finger at width / 2, closing from 0.085 m towards 0.04 m.
        assert fingers[-1].position[0] == pytest.approx(fingers[-1].position[1])
        assert 0.02 <= fingers[-1].position[0] < 0.0425 - 0.002
    assert "joint_names ['panda_joint1'" in (tmp_path / 'digital_real.log').read_text()


def test_digital_real_bad_dynamics_file_exits_2(tmp_path):
    bad = tmp_path / 'dyn.yaml'
    bad.write_text('friction: [0.1, 0.2]\n')
    proc = subprocess.run([str(BIN / 'digital_real'), '--dynamics', str(bad)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert 'friction must have 7 values' in proc.stderr, proc.stderr


def test_bridge_in_process_refuses_unsafe_and_stale_commands(tmp_path):
    """The bridge without world_node (own context), against a real-time digital_real process."""
    from realm_ros.backends.franka import make_bridge_world
    from realm_ros.core.config import FrankaBridgeConfig, WorldConfig
    from realm_ros.core.errors import CommandRejected
    from realm_ros.core.types import Action

    args = ['digital_real', '--ros-args', '-r', '__ns:=/fb', '-p', 'arm_id:=fer']
    config = WorldConfig(backend='franka', cameras=(), camera_rate_hz=0.0)
    with run_process(args, tmp_path / 'digital_real.log') as proc:
        world = make_bridge_world(config, bridge=FrankaBridgeConfig(
            arm_id='panda', gripper='width_topic', namespace='/fb', digital_real=True))
        try:
            obs = world.reset(EpisodeSpec(task='empty', seed=3))
            np.testing.assert_allclose(obs.joints.position, robot.RESET_Q, atol=0.01)
            jump = robot.RESET_Q.copy()
            jump[2] += 0.4
            with pytest.raises(CommandRejected, match='fer_joint3 moves 0.4'):
                world.apply(Action(arm=jump, gripper=0.0))
            target = robot.RESET_Q + 0.05
            executed = world.apply(Action(arm=target, gripper=0.0))
            np.testing.assert_array_equal(executed.arm, target)
            for _ in range(10):
                obs = world.step()
            np.testing.assert_allclose(obs.joints.position, target, atol=0.01)
            assert world.recover()  # the digital real has no reflex: nothing to clear
            proc.send_signal(2)  # the robot side goes away: its joint state turns stale
            proc.wait(timeout=10)
            time.sleep(0.4)
            with pytest.raises(CommandRejected, match='stale'):
                world.apply(Action(arm=target, gripper=0.0))
        finally:
            world.close()
