"""The franka bridge against a franka_ros2-shaped robot with the real franka_msgs/control_msgs.

franka_msgs, control_msgs and controller_manager_msgs are generated from their upstream definitions
with rosidl and compiled here (``test/helpers/ros_interfaces.py``; cached). digital_real then
serves franka_ros2's interfaces with those very types: the gripper actions, FrankaRobotState and
the error-recovery action, as franka_gripper and franka_hardware do; world_node ``backend:=franka``
talks to it over DDS with ``fr3_`` names (FR3, franka_ros2) and ``fer_`` names (Panda,
agimus-franka-ros2).
"""

import shutil

import numpy as np
import pytest
from rostest import call_service, ros_node, run_process, spin_until, trajectory_command
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from realm_ros.core import robot
from realm_ros.ros import qos

pytestmark = [pytest.mark.ros, pytest.mark.slow]


@pytest.fixture(scope='module', autouse=True)
def interfaces():
    if not (shutil.which('gcc') and shutil.which('g++')):
        pytest.skip('needs gcc and g++ to compile the generated franka_msgs/control_msgs')
    import ros_interfaces
    return ros_interfaces.activate()


def _goal_statuses(node, topic, out):
    from action_msgs.msg import GoalStatusArray
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    # rclpy action servers publish status transient-local, reliable.
    profile = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
    return node.create_subscription(GoalStatusArray, topic, out.append, profile)


@pytest.mark.parametrize('arm_id,gripper', [('fr3', 'franka_hand'), ('fer', 'franka_hand'),
                                            ('fr3', 'robotiq_2f_85')])
def test_world_node_drives_arm_and_gripper_of_a_franka_ros2_shaped_robot(tmp_path, arm_id,
                                                                         gripper):
    from action_msgs.msg import GoalStatus
    ns = f'/lab_{arm_id}'
    digital_real = ['digital_real', '--ros-args', '-r', f'__ns:={ns}', '-p', f'arm_id:={arm_id}',
            '-p', f'gripper:={gripper}']
    world = ['world_node', '--ros-args', '-r', '__ns:=/real', '-p', 'backend:=franka',
             '-p', f'franka.arm_id:={arm_id}', '-p', f'franka.gripper:={gripper}',
             '-p', f'franka.namespace:={ns}', '-p', 'franka.digital_real:=true',
             '-p', 'camera_rate_hz:=0.0', '-p', 'franka.gripper_min_interval_s:=0.2']
    action = (f'{ns}/franka_gripper/grasp' if gripper == 'franka_hand'
              else f'{ns}/robotiq_gripper_controller/gripper_cmd')
    with run_process(digital_real, tmp_path / 'digital_real.log'), \
            run_process(world, tmp_path / 'world.log'), ros_node('probe') as (node, executor):
        shared, targets, statuses, fingers = [], [], [], []
        node.create_subscription(JointState, '/real/joint_states', shared.append, qos.STATE)
        node.create_subscription(
            JointTrajectory, f'{ns}/joint_trajectory_controller/joint_trajectory',
            targets.append, qos.COMMAND)
        node.create_subscription(JointState, f'{ns}/franka_gripper/joint_states',
                                 fingers.append, qos.STATE)
        _goal_statuses(node, f'{action}/_action/status', statuses)
        cmd = node.create_publisher(JointTrajectory, '/real/command', qos.COMMAND)
        logs = lambda: (tmp_path / 'digital_real.log').read_text() + (  # noqa: E731
            tmp_path / 'world.log').read_text()
        assert spin_until(executor, lambda: len(shared) > 3, 60), logs()
        a = robot.RESET_Q + np.array([0.05, 0.05, -0.05, 0.05, 0.05, -0.05, 0.05])
        for _ in range(30):
            cmd.publish(trajectory_command(a, gripper=1.0))
            spin_until(executor, lambda: False, 1 / 15)
        # The arm command reached the controller topic, with the robot's joint names.
        assert targets, logs()
        names = [f'{arm_id}_joint{i}' for i in range(1, 8)]
        assert list(targets[-1].joint_names) == names
        point = targets[-1].points[0]
        np.testing.assert_allclose(point.positions, a, atol=1e-9)
        assert len(point.velocities) == 7  # spline through targets: no stop at each
        # The gripper close reached the action server as a goal, which succeeded.
        assert spin_until(executor, lambda: any(
            s.status == GoalStatus.STATUS_SUCCEEDED for m in statuses for s in m.status_list),
            10), logs()
        assert list(fingers[-1].name) == [f'{arm_id}_finger_joint1', f'{arm_id}_finger_joint2']
        assert shared[-1].position[7] > 0.5  # fingers closed on the shared interface
        np.testing.assert_allclose(shared[-1].position[:7], a, atol=0.02)
    # One goal for one change of the binarised command, not one per step.
    assert logs().count('gripper goal') <= 2


def test_reflex_is_detected_ends_the_episode_and_recovers_only_when_confirmed(tmp_path):
    """A real-arm bridge (no digital-real shortcuts) against the digital real's robot state."""
    from franka_msgs.msg import FrankaRobotState
    from std_srvs.srv import Trigger

    from realm_ros.backends.franka import make_bridge_world
    from realm_ros.core.config import FrankaBridgeConfig, WorldConfig
    from realm_ros.core.errors import CommandRejected, InfrastructureError
    from realm_ros.core.types import Action, EpisodeSpec

    digital_real = ['digital_real', '--ros-args', '-r', '__ns:=/lab_reflex', '-p', 'arm_id:=fr3',
            '-p', 'gripper:=franka_hand']
    config = WorldConfig(backend='franka', cameras=(), camera_rate_hz=0.0)
    with run_process(digital_real, tmp_path / 'digital_real.log'), \
            ros_node('probe') as (node, executor):
        modes = []
        node.create_subscription(FrankaRobotState,
                                 '/lab_reflex/franka_robot_state_broadcaster/robot_state',
                                 lambda m: modes.append(m.robot_mode), qos.STATE)
        world = make_bridge_world(config, bridge=FrankaBridgeConfig(
            arm_id='fr3', gripper='franka_hand', namespace='/lab_reflex'))
        try:
            world.confirm_motion()  # the operator allows the homing move
            obs = world.reset(EpisodeSpec(task='empty', seed=1))
            assert world.robot_state.received > 0
            # FR3 joint 6 may not go below 0.5445 rad (the Panda's may): rejected cleanly by
            # the bridge, so the arm never sees it and does not reflex.
            low = obs.joints.position.copy()
            low[5] = 0.53
            with pytest.raises(CommandRejected, match=r'fr3_joint6=0.5300 not in \[0.5445'):
                world.apply(Action(arm=low, gripper=0.0))
            for _ in range(5):
                world.step()
            assert spin_until(executor, lambda: len(modes) > 5, 5)
            assert set(modes) == {FrankaRobotState.ROBOT_MODE_MOVE}
            # A reflex (what a collision would cause): the next step fails the episode.
            trigger = node.create_client(Trigger, '/lab_reflex/digital_real/trigger_reflex')
            call_service(executor, trigger, Trigger.Request())
            with pytest.raises(InfrastructureError, match='REFLEX.*joint_reflex'):
                for _ in range(30):
                    world.step()
            with pytest.raises(InfrastructureError, match='REFLEX'):
                world.reset(EpisodeSpec(task='empty', seed=2))
            # Recovery only with the operator's yes: error recovery, hardware active,
            # controller active (franka_hardware's documented sequence).
            questions = []
            assert not world.recover(confirm=lambda q: questions.append(q) or False)
            assert 'workspace is clear' in questions[0]
            assert world.recover(confirm=lambda q: True)
            target = world.wait_for_state().position + np.array([0.03, 0, 0, 0, 0, 0, 0])
            world.apply(Action(arm=target, gripper=0.0))
            for _ in range(20):
                obs = world.step()
            np.testing.assert_allclose(obs.joints.position[0], target[0], atol=0.01)
        finally:
            world.close()
    log = (tmp_path / 'digital_real.log').read_text()
    assert 'reflex (joint_reflex)' in log, log


def test_world_node_reports_a_reflex_as_a_world_failure(tmp_path):
    """world_node backend:=franka (real-arm bridge) publishes ERROR on world/status and holds."""
    from diagnostic_msgs.msg import DiagnosticStatus
    from std_srvs.srv import SetBool, Trigger

    digital_real = ['digital_real', '--ros-args', '-r', '__ns:=/lab_w', '-p', 'arm_id:=fer',
            '-p', 'gripper:=franka_hand']
    world = ['world_node', '--ros-args', '-r', '__ns:=/real', '-p', 'backend:=franka',
             '-p', 'franka.arm_id:=fer', '-p', 'franka.namespace:=/lab_w',
             '-p', 'camera_rate_hz:=0.0']
    with run_process(digital_real, tmp_path / 'digital_real.log'), \
            run_process(world, tmp_path / 'world.log'), ros_node('probe') as (node, executor):
        status, shared = [], []
        node.create_subscription(DiagnosticStatus, '/real/world/status', status.append,
                                 qos.STATE)
        node.create_subscription(JointState, '/real/joint_states', shared.append, qos.STATE)
        # The start-up reset's homing move waits for the operator's confirmation.
        confirm = node.create_client(SetBool, '/real/franka_bridge/confirm_motion')
        call_service(executor, confirm, SetBool.Request(data=True), ready_timeout=60)
        assert spin_until(executor, lambda: len(shared) > 3, 60), (
            tmp_path / 'world.log').read_text()
        trigger = node.create_client(Trigger, '/lab_w/digital_real/trigger_reflex')
        call_service(executor, trigger, Trigger.Request())
        assert spin_until(executor, lambda: status, 10), (tmp_path / 'world.log').read_text()
        assert status[-1].level == DiagnosticStatus.ERROR
        assert 'REFLEX' in status[-1].message and 'joint_reflex' in status[-1].message
    assert 'world failed, holding until the next reset' in (tmp_path / 'world.log').read_text()
