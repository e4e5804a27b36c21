"""Command fuzzing (issue 15): malformed, extreme and random commands never move an arm unsafely.

Two layers. Pure: ``ros.convert.trajectory_to_actions`` and ``core.safety.SafetyMonitor`` take
hundreds of thousands of generated inputs, and every outcome is either a refusal with a reason
or a target that satisfies every safety rule. Over DDS: ``world_node`` on the twin (mujoco) and
on the digital real (digital_real behind ``world_node backend:=franka``, wired as
``realm_ros/graph.py`` wires them) each take thousands of commands as fast as they can be
published; the joint states never leave the joint limits, no process dies and every refusal is
logged with its reason. Counts and outcomes are printed (``pytest -s``).
"""

from __future__ import annotations

import re
import time

from fuzzing import commands, random_target
import numpy as np
import pytest
from rclpy.qos import QoSProfile
from rostest import ros_node, run_process, spin_until
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from realm_ros.core import robot
from realm_ros.core.config import SafetyConfig
from realm_ros.core.errors import CommandRejected
from realm_ros.core.safety import SafetyMonitor, tcp_position
from realm_ros.ros import convert, qos

DT = 1 / 15
#: Physics may overshoot a limit-hugging target by a hair; the arm's own limits are hard stops
#: ~0.01 rad further out (libfranka's ``q_max`` vs the URDF's soft limits).
LIMIT_SLACK_RAD = 5e-3


def test_convert_refuses_every_malformed_command_with_a_reason():
    counts = {'invalid': 0, 'stale': 0, 'random': 0, 'rejected': 0}
    for kind, msg in commands(10_000, seed=1):
        counts[kind] += 1
        try:
            actions = convert.trajectory_to_actions(msg, 0.0)
        except CommandRejected as err:
            counts['rejected'] += 1
            assert kind == 'invalid', (kind, str(err))
            assert len(str(err)) > 10
            continue
        assert kind != 'invalid', msg
        for action in actions:
            assert np.all(np.isfinite(action.arm)) and 0.0 <= action.gripper <= 1.0
    print(f'\nconvert fuzz: {sum(counts[k] for k in ("invalid", "stale", "random"))} commands, '
          f'{counts["rejected"]} rejected (all {counts["invalid"]} malformed), no other error')
    assert counts['rejected'] == counts['invalid'] > 2500


def _fuzz_target(rng, q_prev):
    case = rng.integers(6)
    if case == 0:
        return random_target(rng, margin=-0.2)  # anywhere, also past the limits
    if case == 1:
        q = q_prev.copy()
        q[rng.integers(7)] = rng.choice([np.nan, np.inf, -np.inf, 1e300])
        return q
    if case == 2:
        return rng.uniform(-1, 1, int(rng.choice([0, 6, 8])))
    return q_prev + rng.normal(0, 0.02 * (1 + 3 * (case == 3)), 7)  # near: mostly valid


def test_safety_monitor_fuzz_every_accepted_target_satisfies_every_rule():
    """60,000 random targets, histories and state ages through the real-arm safety rules."""
    config = SafetyConfig()
    monitor = SafetyMonitor(config, DT)
    lower = robot.JOINT_LOWER + config.position_margin_rad
    upper = robot.JOINT_UPPER - config.position_margin_rad
    max_step = config.velocity_scale * robot.VELOCITY_LIMIT * DT
    rng = np.random.default_rng(2)
    q_prev = robot.RESET_Q.copy()
    accepted = rejected = 0
    reasons = set()
    for _ in range(60_000):
        target = _fuzz_target(rng, q_prev)
        q_meas = q_prev + rng.normal(0, 0.05, 7)
        age = float(rng.choice([0.0, 0.01, 0.2, 0.3, 5.0, np.inf, np.nan]))
        try:
            q = monitor.check(target, q_prev, q_meas, age)
        except CommandRejected as err:
            rejected += 1
            assert str(err).startswith('safety: ')
            reasons.add(re.sub(r'[\d.\-e]+|\[.*', '', str(err))[:40])
            continue
        accepted += 1
        assert q.shape == (7,) and np.all(np.isfinite(q))
        assert np.all(q >= lower) and np.all(q <= upper)
        assert np.all(np.abs(q - q_prev) <= max_step + 1e-12)
        assert np.all(np.abs(q - q_meas) <= config.max_target_error_rad + 1e-12)
        assert 0.0 <= age <= config.state_timeout_s
        tcp = tcp_position(q, config.tcp_offset_m)
        assert np.all(tcp >= config.workspace_min) and np.all(tcp <= config.workspace_max)
        q_prev = q
    print(f'\nsafety fuzz: {accepted + rejected} targets, {accepted} accepted (all within '
          f'every rule), {rejected} refused for {len(reasons)} distinct reasons')
    assert accepted > 5000 and rejected > 5000
    assert len(reasons) >= 6  # shape, NaN, stale, limits, velocity, distance (+ workspace)


# -- over DDS --------------------------------------------------------------------------------

N_PER_WORLD = 5000
BATCH = 8  # below the command QoS depth (10): nothing is overwritten before it is read


def _fuzz_world(tmp_path, ns, processes, n, seed):
    """Publish ``n`` fuzz commands to ``ns``/command; return counts and the world's log."""
    import contextlib

    log_path = tmp_path / f'{processes[-1][0]}.log'
    with contextlib.ExitStack() as stack:
        procs = [stack.enter_context(run_process(args, tmp_path / f'{name}.log'))
                 for name, args in processes]
        node, executor = stack.enter_context(ros_node('fuzzer'))
        states: list = []
        # A deep queue: every joint state the world publishes is checked.
        sub = node.create_subscription(JointState, f'{ns}/joint_states', states.append,
                                       QoSProfile(depth=10_000, reliability=qos.STATE.reliability))
        pub = node.create_publisher(JointTrajectory, f'{ns}/command', qos.COMMAND)
        assert spin_until(executor, lambda: pub.get_subscription_count()
                          and sub.get_publisher_count(), 60), log_path.read_text()
        kinds = {'invalid': 0, 'stale': 0, 'random': 0}
        started = time.monotonic()
        sent = 0
        gen = commands(n, seed=seed)
        for batch_index in range(0, n, BATCH):
            for kind, msg in [next(gen) for _ in range(min(BATCH, n - batch_index))]:
                kinds[kind] += 1
                pub.publish(msg)
                sent += 1
            # A unique, surely refused sentinel: once it is logged, the batch was handled.
            mark = f'sentinel_{batch_index}'
            pub.publish(_sentinel(mark))
            deadline = time.monotonic() + 20
            while mark + "'" not in log_path.read_text():
                executor.spin_once(timeout_sec=0.002)
                assert time.monotonic() < deadline, f'{mark} never handled'
                assert all(p.poll() is None for p in procs), 'a node died'
        spin_until(executor, lambda: False, 0.3)
        elapsed = time.monotonic() - started
        alive = all(p.poll() is None for p in procs)
    return sent, kinds, states, elapsed, alive, log_path.read_text()


def _sentinel(mark):
    msg = JointTrajectory()
    msg.joint_names = [mark]
    msg.points = [JointTrajectoryPoint(positions=[0.0])]
    return msg


def _check(sent, kinds, states, elapsed, alive, log, world, lower=None, upper=None):
    """``lower``/``upper``: the arm's joint limits, rad (default: the twin's, the Panda's)."""
    lower = robot.JOINT_LOWER if lower is None else lower
    upper = robot.JOINT_UPPER if upper is None else upper
    assert alive, log[-3000:]
    assert 'Traceback' not in log, log[-3000:]
    rejections = [line for line in log.splitlines() if 'command rejected' in line]
    stale = [line for line in log.splitlines() if 'dropping stale command' in line]
    # Every refusal names its reason after the colon.
    for line in rejections:
        assert re.search(r'holding the last valid target: \S.{8,}', line), line
    fuzz_rejections = [line for line in rejections if 'sentinel_' not in line]
    assert len(fuzz_rejections) >= kinds['invalid'], (len(fuzz_rejections), kinds)
    q = np.array([s.position[:7] for s in states])
    assert len(q) > 100
    assert np.all(np.isfinite(q))
    low = (q < lower - LIMIT_SLACK_RAD).any(axis=1)
    high = (q > upper + LIMIT_SLACK_RAD).any(axis=1)
    assert not np.any(low | high), q[low | high][:3]
    print(f'\n{world}: {sent} fuzz commands in {elapsed:.1f} s ({kinds}); '
          f'{len(fuzz_rejections)} rejections logged with a reason, {len(stale)} stale dropped, '
          f'{len(q)} joint states all within the joint limits; no node died')


@pytest.fixture(autouse=True)
def _unbuffered_logs(monkeypatch):
    # The test reads the nodes' logs while they run: no stdio buffering in the children.
    monkeypatch.setenv('RCUTILS_LOGGING_BUFFERED_STREAM', '0')
    monkeypatch.setenv('PYTHONUNBUFFERED', '1')


@pytest.mark.ros
@pytest.mark.slow
def test_twin_world_node_survives_command_fuzz(tmp_path):
    world = ['world_node', '--ros-args', '-r', '__ns:=/sim', '-p', 'lockstep:=true',
             '-p', 'lockstep_timeout_s:=0.0', '-p', 'camera_rate_hz:=0.0']
    result = _fuzz_world(tmp_path, '/sim', [('world', world)], N_PER_WORLD, seed=3)
    _check(*result, 'twin (mujoco, lockstep)')


@pytest.mark.ros
@pytest.mark.slow
def test_digital_real_bridge_survives_command_fuzz(tmp_path):
    # As realm_ros/graph.py wires the digital real: digital_real under /real/franka (an FR3,
    # fr3_ names) behind world_node backend:=franka under /real, safety monitor on every target.
    from realm_ros.graph import ROBOT_NS, bridge_parameters, digital_real_parameters
    digital_real = [
        'digital_real', '--ros-args', '-r', f'__ns:={ROBOT_NS}', '-p', 'lockstep:=true',
        *[a for k, v in digital_real_parameters('fr3').items() for a in ('-p', f'{k}:={v}')]]
    bridge = bridge_parameters('fr3', 'franka_hand', digital_real=True)
    world = ['world_node', '--ros-args', '-r', '__ns:=/real', '-p', 'backend:=franka',
             '-p', 'lockstep:=true', '-p', 'lockstep_timeout_s:=0.0',
             *[arg for k, v in bridge.items() for arg in ('-p', f'{k}:={v}')],
             '-p', f'franka.namespace:={ROBOT_NS}', '-p', 'franka.digital_real:=true',
             '-p', 'camera_rate_hz:=0.0']
    result = _fuzz_world(tmp_path, '/real', [('digital_real', digital_real), ('world', world)],
                         N_PER_WORLD, seed=4)
    fr3 = robot.arm_spec('fr3')
    _check(*result, 'digital real (digital_real + franka bridge, lockstep)', fr3.lower, fr3.upper)
    log = result[-1]
    assert 'safety: ' in log  # random jumps reach the bridge's safety monitor and are refused
