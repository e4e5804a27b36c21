"""world_policy_container (world and policy in one process, intra-process delivery) gives the
same lockstep episode as run_episode, and a subscriber in another process still sees every
message; IntraProcess delivers every message once, in order, within the QoS depth."""

import threading
import time

from diagnostic_msgs.msg import DiagnosticStatus
import pytest
import rclpy
from rclpy.experimental import EventsExecutor
from rclpy.qos import QoSProfile
from rostest import (
    SEED,
    SKILL,
    TASK,
    call_service,
    core_episode,
    ros_node,
    run_process,
    spin_until,
)
from sensor_msgs.msg import JointState
from std_msgs.msg import Int32
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory

from realm_ros.ros import convert, qos
from realm_ros.ros.intra import IntraProcess

pytestmark = pytest.mark.ros



def test_composed_lockstep_episode_matches_run_episode(tmp_path):
    expected, result = core_episode()
    n = len(expected)
    # ``seed`` is declared by both nodes: the world's goes in a parameters file under its
    # name, so that the policy keeps its default as in test_policy_node's two processes.
    params = tmp_path / 'params.yaml'
    params.write_text(f'/comp/world:\n  ros__parameters:\n    seed: {SEED}\n')
    args = ['python', '-m', 'realm_ros.nodes.world_policy_container', '--ros-args',
            '-r', '__ns:=/comp', '--params-file', str(params), '-p', 'lockstep:=true',
            '-p', 'lockstep_timeout_s:=0.0', '-p', 'camera_rate_hz:=0.0', '-p', f'task:={TASK}',
            '-p', 'policy:=scripted', '-p', f'skill:="{SKILL}"', '-p', 'use_privileged:=true',
            '-p', 'execute_horizon:=8']
    log = tmp_path / 'container.log'
    with _fast_node('probe') as (node, executor), run_process(args, log):
        progress: list = []
        node.create_subscription(DiagnosticStatus, '/comp/progress',
                                 lambda m: progress.append(convert.progress_from_msg(m)),
                                 qos.STATE)
        reset = node.create_client(Trigger, '/comp/reset')
        active = node.create_client(SetBool, '/comp/policy/set_active')
        assert spin_until(executor, lambda: reset.service_is_ready()
                          and active.service_is_ready(), 30), log.read_text()

        settled: set = set()

        def call(client, request):
            answer = call_service(executor, client, request, settled=settled)
            assert answer.success, answer.message

        def this_episode() -> list:
            """The progress since the last reset (a step-0 message)."""
            zero = [i for i, p in enumerate(progress) if p.step == 0]
            return progress[zero[-1]:] if zero else []

        def episode() -> dict:
            """Reset, start the policy, run to step n, stop it; return the progress by step."""
            progress.clear()
            call(reset, Trigger.Request())
            call(active, SetBool.Request(data=True))
            assert spin_until(executor, lambda: any(p.step >= n for p in this_episode()), 60), \
                log.read_text()
            call(active, SetBool.Request(data=False))
            return {p.step: p for p in this_episode()}

        def check(by_step: dict) -> None:
            assert by_step[0].task == TASK and not any(by_step[0].met)
            for step, (met, _q) in enumerate(expected, start=1):
                assert by_step[step].met == met, step
            assert by_step[n].max_progression == result.progression

        # 1. Only progress leaves the process: joint_states, privileged_state and command are
        # delivered in process only.
        check(episode())
        text = log.read_text()
        for topic in ('/comp/command (1 -> 1)', '/comp/episode (1 -> 1)',
                      '/comp/joint_states (1 -> 1)', '/comp/privileged_state (1 -> 1)'):
            assert topic in text, text

        # 2. A subscriber in another process on joint_states and command: it receives every
        # message (on DDS), and the nodes still see each exactly once (the same episode).
        states: list = []
        commands: list = []
        node.create_subscription(JointState, '/comp/joint_states', states.append, qos.STATE)
        node.create_subscription(JointTrajectory, '/comp/command', commands.append, qos.STATE)
        assert spin_until(executor, lambda: node.count_publishers('/comp/command') >= 1, 10)
        time.sleep(0.5)  # let the container's publishers match the new subscriptions
        states.clear()
        commands.clear()
        check(episode())
        assert spin_until(executor, lambda: len(states) > n and len(commands) >= n, 10)
    # The episode's observations, each once, at every step 0..n; its commands likewise.
    stamps = [round(convert.from_time(s.header.stamp) * 15) for s in states]
    first = len(stamps) - 1 - stamps[::-1].index(0)
    assert stamps[first:first + n + 1] == list(range(n + 1))
    assert abs(states[first + n].position[0] - expected[-1][1][0]) < 1e-9
    command_stamps = [round(convert.from_time(c.header.stamp) * 15) for c in commands]
    first = len(command_stamps) - 1 - command_stamps[::-1].index(0)
    assert command_stamps[first:first + n] == list(range(n))
    # A DDS copy of a local command that got through would be answered as a stale command
    # (one warning per step); one may come legitimately at each reset (a command for the
    # previous episode's last observation).
    assert log.read_text().count('dropping stale command') <= 4


def _fast_node(name: str):
    """A probe node on the events executor: the composed lockstep world runs faster than a
    single-threaded executor takes messages, and its publishers keep the last 50 (qos.STATE)."""
    return ros_node(name, EventsExecutor)


def _spin(executor, stop: threading.Event) -> None:
    while not stop.is_set():
        executor.spin_once(timeout_sec=0.05)


def test_intra_process_delivers_each_message_once_in_order_and_on_dds_for_others():
    context = rclpy.Context()
    rclpy.init(context=context)
    stop = threading.Event()
    try:
        talker = rclpy.create_node('talker', context=context)
        listener = rclpy.create_node('listener', context=context)
        pub = talker.create_publisher(Int32, '/intra_test', qos.STATE)
        got: list[int] = []
        listener.create_subscription(Int32, '/intra_test', lambda m: got.append(m.data),
                                     qos.STATE)
        intra = IntraProcess(EventsExecutor(context=context))
        intra.add_node(talker)
        intra.add_node(listener)
        assert intra.connect() == {'/intra_test': (1, 1)}
        local = intra.topics['/intra_test'].subscriptions[0]
        thread = threading.Thread(target=_spin, args=(intra, stop))
        thread.start()

        # Nobody else listens: delivered in process only (batches within the depth of 50).
        for i in range(100):
            pub.publish(Int32(data=i))
            if i % 20 == 19:
                assert _wait(lambda i=i: len(got) > i)
        assert got == list(range(100)) and intra.published_dds == 0

        # A subscriber outside the pairing (its own context and DDS participant, as in
        # another process).
        with ros_node('outsider') as (outsider, outside_executor):
            seen: list[int] = []
            outsider.create_subscription(Int32, '/intra_test', lambda m: seen.append(m.data),
                                         qos.STATE)
            assert _wait(lambda: pub.get_subscription_count() >= 2)
            time.sleep(0.3)
            got.clear()
            for i in range(100, 200):
                pub.publish(Int32(data=i))
                if i % 20 == 19:  # both take them as they come (each keeps the last 50)
                    assert _wait(lambda i=i: len(got) > i - 100)
                    assert spin_until(outside_executor, lambda i=i: len(seen) > i - 100, 10)
            assert _wait(lambda: local.dds_dropped >= 100)  # the DDS copies, not delivered
        time.sleep(0.2)
        assert seen == list(range(100, 200))
        assert got == list(range(100, 200)), 'each message once, in order'
        assert intra.published_dds == 100
        with pytest.raises(TypeError):
            pub.publish(JointState())
    finally:
        stop.set()
        thread.join(timeout=5)
        intra.shutdown()
        rclpy.try_shutdown(context=context)


def test_intra_process_keeps_the_subscription_depth_and_latched_topics_on_dds_too():
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        talker = rclpy.create_node('talker2', context=context)
        listener = rclpy.create_node('listener2', context=context)
        pub = talker.create_publisher(Int32, '/intra_depth', QoSProfile(depth=5))
        latched = talker.create_publisher(Int32, '/intra_latched', qos.LATCHED)
        got: list[int] = []
        listener.create_subscription(Int32, '/intra_depth', lambda m: got.append(m.data),
                                     QoSProfile(depth=5))
        listener.create_subscription(Int32, '/intra_latched', lambda m: None, qos.LATCHED)
        intra = IntraProcess(EventsExecutor(context=context))
        intra.add_node(talker)
        intra.add_node(listener)
        assert intra.connect() == {'/intra_depth': (1, 1), '/intra_latched': (1, 1)}
        latched.publish(Int32(data=-1))  # on DDS as well (its history, for late joiners)
        assert intra.published_dds == 1
        intra.spin_once(timeout_sec=0)
        for i in range(20):  # queued while nothing spins: KEEP_LAST 5 keeps the newest five
            pub.publish(Int32(data=i))
        assert intra.pending == 20
        intra.spin_once(timeout_sec=0)
        assert got == [15, 16, 17, 18, 19] and intra.pending == 0
        assert intra.published_dds == 1  # nobody else listens to /intra_depth
        intra.shutdown()
    finally:
        rclpy.try_shutdown(context=context)


def _wait(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def test_composed_real_time_pair_steps_and_answers(tmp_path):
    """Without lockstep: the world's control timer publishes, the policy's timer answers the
    latest observation in process, and another process sees the commands."""
    args = ['python', '-m', 'realm_ros.nodes.world_policy_container', '--ros-args',
            '-r', '__ns:=/rt', '-p', 'lockstep:=false', '-p', 'camera_rate_hz:=0.0',
            '-p', f'task:={TASK}', '-p', 'policy:=scripted', '-p', 'use_privileged:=true']
    log = tmp_path / 'container.log'
    with _fast_node('rt_probe') as (node, executor), run_process(args, log):
        commands: list = []
        states: list = []
        node.create_subscription(JointTrajectory, '/rt/command', commands.append, qos.COMMAND)
        node.create_subscription(JointState, '/rt/joint_states', states.append, qos.STATE)
        assert spin_until(executor, lambda: len(commands) >= 10 and len(states) >= 10, 30), \
            log.read_text()
    text = log.read_text()
    assert 'real time' in text and '/rt/command (1 -> 1)' in text, text
    assert 'policy reset for task' in text and 'policy failed' not in text, text
    # The world's clock advances (its control timer steps it), the policy answers it.
    times = [convert.from_time(s.header.stamp) for s in states]
    assert times == sorted(times) and times[-1] > times[0]
    assert all(len(c.points) == 1 and len(c.points[0].positions) == 8 for c in commands)
