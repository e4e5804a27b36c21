"""Issue 26: a real arm left alone with an evaluator.

Pure: the jerk-limited shaper over fuzzed 15 Hz target streams (maxima measured by finite
differences at libfranka's 1 kHz, against libfranka's limits for the FR3 and the Panda), the
planned reset move, the robot-mode rules; the twin taking a target at each joint's limit from the
start pose. Over DDS, against the franka_ros2-shaped digital real: a target at each joint's
limit; late joint states (stalls of 0.1-2 s) during the reset and mid-episode never kill
``world_node backend:=franka``; homing waits for the operator; a reflex followed by
franka_hardware's automatic recovery ends the episode and nothing moves until the operator
confirms.
"""

from __future__ import annotations

import shutil
import time

import numpy as np
import pytest

from realm_ros.core import motion, robot
from realm_ros.core.config import SafetyConfig, WorldConfig
from realm_ros.core.safety import mode_change_fault

DT = 1 / 15
MOVE, IDLE, REFLEX, AUTO = 2, 1, 4, 6


def _fuzz_goal(rng, arm, goal):
    case = rng.integers(5)
    if case == 0:
        return rng.uniform(arm.lower, arm.upper)  # a jump anywhere
    if case == 1:  # exactly at the limits
        return np.where(rng.random(7) < 0.5, arm.upper, arm.lower)
    if case == 2:
        return goal + rng.normal(0, 0.1, 7)  # small steps, some past the limits
    return goal  # held


@pytest.mark.parametrize('arm_id', ['fr3', 'fer'])
def test_shaped_trajectories_stay_below_libfranka_limits_over_fuzzed_streams(arm_id):
    arm = robot.arm_spec(arm_id)
    config = SafetyConfig()
    limits = motion.rate_limits(arm, config.velocity_scale, config.rate_limit_scale)
    libfranka_acc = motion.FR3_MAX_ACCELERATION if arm_id == 'fr3' else \
        motion.FER_MAX_ACCELERATION
    libfranka_jerk = motion.FR3_MAX_JERK if arm_id == 'fr3' else motion.FER_MAX_JERK
    lower = arm.lower + config.position_margin_rad
    upper = arm.upper - config.position_margin_rad
    shaper = motion.JerkLimitedShaper(limits, lower, upper)
    start = np.clip(robot.RESET_Q, lower, upper)
    shaper.reset(start)
    rng = np.random.default_rng(26)
    goal = start.copy()
    executed = [start]
    tails = []
    n = int(round(DT / motion.FRANKA_DT))
    for _ in range(300):
        goal = _fuzz_goal(rng, arm, goal)
        plan = shaper.plan(goal, DT)
        executed.extend(plan.q[:n])  # the next command replaces the rest
        if rng.random() < 0.05:  # a dropped command: the braking tail runs to rest
            tails.append((plan.q[n - 1], plan.v[n - 1], plan.a[n - 1], plan.q[n:]))
    q = np.array(executed)
    v, a, j = motion.measured_maxima(q, motion.FRANKA_DT)
    eps = 1e-6
    assert np.all(v <= limits.velocity * (1 + eps)), v / limits.velocity
    assert np.all(a <= limits.acceleration * (1 + eps)), a / limits.acceleration
    assert np.all(j <= limits.jerk * (1 + eps)), j / limits.jerk
    assert np.all(a < libfranka_acc) and np.all(j < libfranka_jerk)
    assert np.all(v < arm.velocity)
    assert np.all(q >= lower - 1e-12) and np.all(q <= upper + 1e-12)
    # The tails (sampled every TAIL_STRIDE ms) brake within the same limits and end at rest.
    assert len(tails) > 10
    dt_tail = motion.FRANKA_DT * motion.TAIL_STRIDE
    for q0, v0, a0, tail in tails:
        tv, ta, tj = motion.measured_maxima(tail, dt_tail, q0, v0, a0)
        assert np.all(tv <= limits.velocity * (1 + eps))
        assert np.all(ta <= limits.acceleration * (1 + eps))
        assert np.all(tj <= limits.jerk * (1 + eps))
        assert np.all(tail >= lower - 1e-12) and np.all(tail <= upper + 1e-12)
        np.testing.assert_allclose(np.diff(tail[-2:], axis=0), 0.0, atol=1e-5)
    print(f'\n{arm_id}: {len(q)} samples at 1 kHz; peak/limit v {np.max(v / limits.velocity):.3f}'
          f' a {np.max(a / limits.acceleration):.3f} j {np.max(j / limits.jerk):.3f} '
          f"(limits = {config.rate_limit_scale} x libfranka's); min distance to a joint limit "
          f'{np.min(np.minimum(q - arm.lower, arm.upper - q)):.4f} rad')


def test_planned_move_is_time_scaled_within_the_limits_and_ends_at_the_goal():
    arm = robot.arm_spec('fr3')
    limits = motion.rate_limits(arm)
    start = np.array([1.0, 0.3, -0.5, -1.0, 0.4, 2.5, 1.0])
    goal = robot.RESET_Q
    path = motion.plan_move(start, goal, limits, motion.FRANKA_DT)
    np.testing.assert_allclose(path[-1], goal)
    v, a, j = motion.measured_maxima(np.vstack([start, path]), motion.FRANKA_DT)
    assert np.all(v <= limits.velocity * 1.001)
    assert np.all(a <= limits.acceleration * 1.01)
    # A quintic's jerk jumps at its ends (60 d / T^3), within the limit by construction.
    assert np.all(j <= limits.jerk * 1.01)
    slow = motion.plan_move(start, goal, limits, motion.FRANKA_DT, speed_scale=0.5)
    assert len(slow) == pytest.approx(2 * len(path), rel=0.01)


def test_thin_keeps_the_period_end_and_the_last_sample():
    t = motion.FRANKA_DT * np.arange(1, 301)
    keep = motion.thin(t, 0.01, DT)
    assert 66 in keep and keep[-1] == 299  # 0.0667 s: where the next command takes over
    assert np.all(np.diff(t[keep]) <= 0.01 + 1e-9)


def test_robot_mode_changes_and_new_motion_errors_are_faults():
    none = frozenset()
    assert mode_change_fault(None, MOVE, none, none) is None
    assert mode_change_fault(IDLE, MOVE, none, none) is None  # the controller started
    assert mode_change_fault(MOVE, MOVE, none, none) is None
    assert mode_change_fault(MOVE, IDLE, none, none) == 'robot_mode MOVE -> IDLE'
    assert 'AUTOMATIC_ERROR_RECOVERY' in mode_change_fault(MOVE, AUTO, none, none)
    # A reflex recovered by franka_hardware before any REFLEX message was seen.
    fault = mode_change_fault(MOVE, MOVE, none, frozenset({'joint_reflex'}))
    assert "['joint_reflex']" in fault and 'automaticErrorRecovery' in fault
    # The baseline's errors (from before a confirmed recovery) are not new.
    old = frozenset({'cartesian_reflex'})
    assert mode_change_fault(MOVE, MOVE, old, old) is None


def test_reset_arm_checks_name_what_is_wrong():
    from realm_ros.backends.franka import reset_motion
    from realm_ros.core.errors import EpisodeError
    arm = robot.arm_spec('fr3')
    q = np.clip(robot.RESET_Q, arm.lower, arm.upper)
    reset_motion.check_arm(q, np.zeros(7), arm, 'before')
    with pytest.raises(EpisodeError, match='before: not at rest'):
        reset_motion.check_arm(q, np.r_[0.2, np.zeros(6)], arm, 'before')
    low = q.copy()
    low[5] = 0.5
    with pytest.raises(EpisodeError, match=r'fr3_joint6=0.5000 outside \[0.5445'):
        reset_motion.check_arm(low, np.zeros(7), arm, 'before')
    with pytest.raises(EpisodeError, match='after: fr3_joint1 0.100 rad from the goal'):
        reset_motion.check_arm(q + np.r_[0.1, np.zeros(6)], np.zeros(7), arm, 'after', q)


def _at_each_limit(world_reset, apply_step, lower, upper, steps=60):
    """Command a target at each joint's limit from the start pose; return the worst excursion
    past the limit (rad, > 0 = past) and the commanded targets seen."""
    worst = -np.inf
    for j in range(7):
        for limit, sign in ((upper[j], 1.0), (lower[j], -1.0)):
            start = world_reset()
            target = start.copy()
            target[j] = limit
            for _ in range(steps):
                q = apply_step(target)
                worst = max(worst, sign * (q[j] - limit))
    return worst


def _twin_worst(margin, shape):
    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.core.types import Action, EpisodeSpec
    world = MujocoWorld(WorldConfig(camera_rate_hz=0.0, cameras=(), joint_margin_rad=margin,
                                    shape_targets=shape))
    shaped = []

    def reset():
        return world.reset(EpisodeSpec(task='empty', seed=0)).joints.position

    def step(target):
        applied = world.apply(Action(arm=target, gripper=0.0))
        shaped.append(not np.allclose(applied.arm, target))
        return world.step().joints.position

    try:
        return _at_each_limit(reset, step, robot.JOINT_LOWER, robot.JOINT_UPPER), shaped
    finally:
        world.close()


def test_twin_target_at_each_joint_limit_stays_inside():
    # Shaped (the returned target differs from the command): >= 0.09 rad inside every limit.
    worst, shaped = _twin_worst(0.1, True)
    assert worst < -0.09, worst
    assert all(shaped)
    # Without margin or shaping (main before issue 26) the arm swings past joint 1's limit.
    before, _ = _twin_worst(0.0, False)
    assert before > 0.03, before
    print(f'\ntwin, target at each joint limit from the start pose: worst excursion past a '
          f'limit {before:+.4f} rad before, {worst:+.4f} rad with margin 0.1 and shaping')


# -- against the digital real over DDS -------------------------------------------------------

def _interfaces():
    if not (shutil.which('gcc') and shutil.which('g++')):
        pytest.skip('needs gcc and g++ to compile the generated franka_msgs/control_msgs')
    import ros_interfaces
    return ros_interfaces.activate()


@pytest.mark.ros
@pytest.mark.slow
@pytest.mark.parametrize('lookahead', [1.0, 0.0])
def test_digital_real_ramp_into_the_workspace_wall_stays_inside_the_box(lookahead):
    """The soak's workspace violation: targets ramped at 0.8 x joint 1's velocity limit toward
    the box's y wall, every one checked by the bridge's SafetyMonitor, on the digital real's
    physics (FR3, in-process, lockstep: what digital_real runs). The arm lags the ramp and
    overshoots the last target it accepted: with only the target's TCP checked
    (``workspace_lookahead:=0``) the TCP ends 0.026 m outside the box (y 0.426 m); with the
    look-ahead it stays inside."""
    from realm_ros.backends.digital_real import DigitalRealWorld
    from realm_ros.core.config import DigitalRealConfig
    from realm_ros.core.errors import CommandRejected
    from realm_ros.core.safety import SafetyMonitor, tcp_position
    from realm_ros.core.types import Action, EpisodeSpec

    arm = robot.arm_spec('fr3')
    config = SafetyConfig(workspace_lookahead=lookahead)
    world = DigitalRealWorld(DigitalRealConfig(arm_id='fr3', lockstep=True).world_config())
    start = [0.0, 0.3, 0.0, -2.0, 0.0, 2.3, 0.8]  # stretched out: TCP at x 0.60 m, y 0
    world.reset(EpisodeSpec(task='empty', seed=0, max_steps=60,
                            initial_state={'reset_q': start}))
    monitor = SafetyMonitor(config, DT, arm)
    target = world.joint_state().position.copy()
    worst = -1.0
    box_min, box_max = np.array(config.workspace_min), np.array(config.workspace_max)
    for _ in range(60):
        q = world.joint_state().position
        want = target.copy()
        want[0] += 0.8 * arm.velocity[0] * DT
        try:
            target = monitor.check(want, target, q, 0.0)
        except CommandRejected:
            pass  # the arm holds the target in force
        world.apply(Action(arm=target, gripper=0.0))
        world.step()
        tcp = tcp_position(world.joint_state().position, config.tcp_offset_m)
        worst = max(worst, float(np.max(np.maximum(box_min - tcp, tcp - box_max))))
    print(f'workspace_lookahead {lookahead}: worst TCP excursion {worst:+.4f} m')
    if lookahead:
        assert worst < 0.0
    else:
        assert worst > 0.02  # the soak's violation: > 0.02 m outside


def test_digital_real_target_at_each_joint_limit_is_shaped_or_refused(tmp_path):
    from rostest import run_process

    from realm_ros.backends.franka import make_bridge_world
    from realm_ros.core.config import FrankaBridgeConfig
    from realm_ros.core.errors import CommandRejected
    from realm_ros.core.types import Action, EpisodeSpec

    arm = robot.arm_spec('fr3')
    # The limit a command can name: the FR3's, where the shared interface (the Panda's limits,
    # checked first) allows it (FR3 joints 3 and 7 reach further).
    lower = np.maximum(arm.lower, robot.JOINT_LOWER)
    upper = np.minimum(arm.upper, robot.JOINT_UPPER)
    digital_real = ['digital_real', '--ros-args', '-r', '__ns:=/lim', '-p', 'arm_id:=fr3',
                    '-p', 'lockstep:=true']
    config = WorldConfig(backend='franka', cameras=(), camera_rate_hz=0.0, lockstep=True)
    refusals, shaped = [], []
    with run_process(digital_real, tmp_path / 'digital_real.log'):
        world = make_bridge_world(config, bridge=FrankaBridgeConfig(
            arm_id='fr3', gripper='width_topic', namespace='/lim', digital_real=True),
            safety=SafetyConfig(shape_trajectory='always'))  # as a real arm's
        try:
            def reset():
                return world.reset(EpisodeSpec(task='empty', seed=0)).joints.position

            def jump(target):
                try:
                    world.apply(Action(arm=target, gripper=0.0))
                except CommandRejected as err:
                    refusals.append(str(err))
                return world.step().joints.position

            # A jump to the limit in one step: refused with the velocity rule's reason.
            worst_jump = _at_each_limit(reset, jump, lower, upper, steps=3)
            assert len(refusals) == 42 and all(r.startswith('safety: ') for r in refusals)
            step = 0.5 * arm.velocity * DT
            ramp_refusals = []

            def ramp(target):
                # A valid stream toward the limit (one velocity-rule step per control step),
                # then held at the limit: the bridge moves it to the margin and shapes it.
                q_now = world._target_q
                try:
                    applied = world.apply(Action(
                        arm=q_now + np.clip(target - q_now, -step, step), gripper=0.0))
                except CommandRejected as err:  # e.g. the arm lags too far behind: it holds
                    ramp_refusals.append(str(err))
                    return world.step().joints.position
                shaped.append(world.safety.last_shaped)
                assert np.all(applied.arm >= arm.lower + 0.1 - 1e-9)
                assert np.all(applied.arm <= arm.upper - 0.1 + 1e-9)
                return world.step().joints.position

            worst = _at_each_limit(reset, ramp, lower, upper, steps=45)
        finally:
            world.close()
    assert worst < -0.02, worst  # inside the limit, with room to spare
    assert sum('moved to the margin' in s for s in shaped) >= 14
    # The rest were refused with a reason (the workspace box: joint 1 swings the TCP out of
    # Polymetis's y +-0.4 m; the arm lagging its target by more than max_target_error_rad).
    assert all(r.startswith('safety: ') for r in ramp_refusals)
    reasons = sorted({r.split(':')[0 if r.startswith('pos') else 1].strip()[:40]
                      for r in refusals})
    print(f'\ndigital real (fr3, lockstep): jumps refused ({len(refusals)}: {reasons}, worst '
          f'{worst_jump:+.4f}); ramps to each limit: {len(shaped)} targets, '
          f"{sum('moved to the margin' in s for s in shaped)} moved to the margin, "
          f'{len(ramp_refusals)} refused; worst excursion {worst:+.4f} rad')


def _call(node, executor, srv_type, name, request, timeout=30.0):
    from rostest import call_service
    client = node.create_client(srv_type, name)
    return call_service(executor, client, request, timeout=timeout, ready_timeout=timeout)


def _set_param(node, executor, target, name, value):
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters
    result = _call(node, executor, SetParameters, f'{target}/set_parameters',
                   SetParameters.Request(parameters=[Parameter(name=name, value=ParameterValue(
                       type=ParameterType.PARAMETER_DOUBLE, double_value=float(value)))]))
    assert result.results[0].successful, result


@pytest.mark.ros
@pytest.mark.slow
def test_late_joint_states_never_kill_world_node_on_a_franka_ros2_shaped_arm(tmp_path):
    """Stalls of 0.1-2 s during the start-up reset, later resets and episodes."""
    _interfaces()
    from diagnostic_msgs.msg import DiagnosticStatus
    from rostest import ros_node, run_process, spin_until, trajectory_command
    from sensor_msgs.msg import JointState
    from std_srvs.srv import SetBool, Trigger
    from trajectory_msgs.msg import JointTrajectory

    from realm_ros.ros import qos

    ns = '/late'
    digital_real = ['digital_real', '--ros-args', '-r', f'__ns:={ns}', '-p', 'arm_id:=fer',
                    '-p', 'gripper:=franka_hand', '-p', 'inject_state_stall_s:=0.4',
                    '-p', 'inject_state_stall_every_s:=0.7']
    world = ['world_node', '--ros-args', '-r', '__ns:=/real', '-p', 'backend:=franka',
             '-p', 'franka.arm_id:=fer', '-p', f'franka.namespace:={ns}',
             '-p', 'camera_rate_hz:=0.0', '-p', 'franka.confirm_timeout_s:=30.0']
    log = tmp_path / 'world.log'
    outcomes = {}
    with run_process(digital_real, tmp_path / 'digital_real.log') as dr, \
            run_process(world, log) as wn, ros_node('probe') as (node, executor):
        status, shared = [], []
        node.create_subscription(DiagnosticStatus, '/real/world/status', status.append,
                                 qos.STATE)
        node.create_subscription(JointState, '/real/joint_states', shared.append, qos.STATE)
        cmd = node.create_publisher(JointTrajectory, '/real/command', qos.COMMAND)
        # The start-up reset waits for the operator; stalls of 0.4 s come every 0.7 s.
        assert _call(node, executor, SetBool, '/real/franka_bridge/confirm_motion',
                     SetBool.Request(data=True), 60).success
        assert spin_until(executor, lambda: len(shared) > 3 or wn.poll() is not None, 60), \
            log.read_text()[-3000:]
        for stall in (0.1, 0.5, 1.0, 2.0):
            _set_param(node, executor, f'{ns}/digital_real', 'inject_state_stall_s', stall)
            _set_param(node, executor, f'{ns}/digital_real', 'inject_state_stall_every_s',
                       stall + 0.6)
            assert _call(node, executor, SetBool, '/real/franka_bridge/confirm_motion',
                         SetBool.Request(data=True)).success
            reset = _call(node, executor, Trigger, '/real/reset', Trigger.Request(), 60)
            n_status = len(status)
            base = robot.RESET_Q.copy()
            for k in range(45):  # 3 s of commands through the stalls
                cmd.publish(trajectory_command(base + 0.05 * np.sin(k / 8.0)))
                spin_until(executor, lambda: False, DT)
            errors = [s.message for s in status[n_status:] if s.level == DiagnosticStatus.ERROR]
            outcomes[stall] = (reset.success, reset.message[:120], errors[:1])
            assert wn.poll() is None and dr.poll() is None, log.read_text()[-3000:]
    text = log.read_text()
    assert 'Traceback' not in text, text[-3000:]
    # Stalls below safety.state_loss_s (1 s) hold the arm and the episode goes on; longer
    # ones end the reset or the episode as an infrastructure failure with a clear reason.
    assert outcomes[0.1][0] and not outcomes[0.1][2], outcomes
    assert 'holding, waiting for a fresh one' in text or 'not commanding' in text
    long = outcomes[2.0]
    assert (not long[0] and 'state_loss_s' in long[1]) or any(
        'no fresh joint state' in e for e in long[2]), outcomes
    print(f'\nlate joint states (stall s: reset ok, message, episode errors): {outcomes}')


@pytest.mark.ros
@pytest.mark.slow
def test_real_arm_moves_only_when_the_operator_confirms(tmp_path):
    """Homing waits for the operator; a reflex that franka_hardware recovers from on its own
    ends the episode as an infrastructure failure and nothing moves until confirmation."""
    _interfaces()
    from franka_msgs.msg import FrankaRobotState
    from rostest import ros_node, run_process, spin_until
    from std_srvs.srv import Trigger
    from trajectory_msgs.msg import JointTrajectory

    from realm_ros.backends.franka import make_bridge_world
    from realm_ros.core.config import FrankaBridgeConfig
    from realm_ros.core.errors import EpisodeError, InfrastructureError
    from realm_ros.core.types import Action, EpisodeSpec
    from realm_ros.ros import qos

    ns = '/confirm'
    digital_real = ['digital_real', '--ros-args', '-r', f'__ns:={ns}', '-p', 'arm_id:=fr3',
                    '-p', 'gripper:=franka_hand', '-p', 'auto_recover_s:=0.3']
    config = WorldConfig(backend='franka', cameras=(), camera_rate_hz=0.0)
    with run_process(digital_real, tmp_path / 'digital_real.log'), \
            ros_node('probe') as (node, executor):
        sent, modes = [], []
        node.create_subscription(JointTrajectory,
                                 f'{ns}/joint_trajectory_controller/joint_trajectory',
                                 sent.append, qos.COMMAND)
        node.create_subscription(FrankaRobotState,
                                 f'{ns}/franka_robot_state_broadcaster/robot_state',
                                 lambda m: modes.append(m.robot_mode), qos.STATE)
        world = make_bridge_world(config, bridge=FrankaBridgeConfig(
            arm_id='fr3', gripper='franka_hand', namespace=ns, confirm_timeout_s=1.0))
        try:
            # Homing never starts unconfirmed: the reset fails and nothing was sent.
            with pytest.raises(EpisodeError, match='not confirmed by the operator'):
                world.reset(EpisodeSpec(task='empty', seed=1))
            spin_until(executor, lambda: False, 0.3)
            assert not sent and world.trajectories_sent == 0
            world.confirm_motion()
            obs = world.reset(EpisodeSpec(task='empty', seed=1))
            away = obs.joints.position + np.array([0.1, -0.1, 0.1, 0.1, 0.1, 0.1, 0.1])
            for _ in range(30):
                world.apply(Action(arm=away, gripper=0.0))
                world.step()
            np.testing.assert_allclose(world.wait_for_state().position, away, atol=0.02)
            # Homing from there, unconfirmed: refused, the arm stays away.
            n = world.trajectories_sent
            with pytest.raises(EpisodeError, match='not confirmed'):
                world.reset(EpisodeSpec(task='empty', seed=2))
            assert world.trajectories_sent == n
            np.testing.assert_allclose(world.wait_for_state().position, away, atol=0.02)
            # Confirmed: a planned move home, every shaped trajectory within the limits.
            first = len(sent)
            world.confirm_motion()
            world.reset(EpisodeSpec(task='empty', seed=2))
            np.testing.assert_allclose(world.wait_for_state().position,
                                       np.clip(robot.RESET_Q, world.arm.lower, world.arm.upper),
                                       atol=0.02)
            spin_until(executor, lambda: len(sent) > first, 2)
            assert len(sent) > first and all(len(m.points) > 5 for m in sent[first:])
            assert all(len(m.points[0].accelerations) == 7 for m in sent[first:])

            # A reflex mid-episode, then franka_hardware's automatic recovery (0.3 s later).
            for _ in range(5):
                world.apply(Action(arm=world.wait_for_state().position, gripper=0.0))
                world.step()
            _call(node, executor, Trigger, f'{ns}/digital_real/trigger_reflex',
                  Trigger.Request())
            assert spin_until(executor, lambda: FrankaRobotState.ROBOT_MODE_REFLEX in modes
                              and modes[-1] == FrankaRobotState.ROBOT_MODE_MOVE, 10), modes
            with pytest.raises(InfrastructureError, match='REFLEX|last_motion_errors'):
                for _ in range(10):
                    world.step()
            # The arm is back in MOVE, but nothing is commanded until the operator confirms.
            # (Let it come to rest from the reflex first: under load it was still settling,
            # 2.1 mrad on joint 6 in the next second.)
            spin_until(executor, lambda: False, 0.5)
            held = world.wait_for_state().position.copy()
            n, n_msgs = world.trajectories_sent, len(sent)
            with pytest.raises(InfrastructureError):
                world.step()
            with pytest.raises(InfrastructureError):
                world.confirm_motion()
                world.reset(EpisodeSpec(task='empty', seed=3))
            spin_until(executor, lambda: False, 1.0)
            assert world.trajectories_sent == n and len(sent) == n_msgs
            np.testing.assert_allclose(world.wait_for_state().position, held, atol=2e-3)
            assert not world.recover(confirm=lambda q: False)
            assert world.recover(confirm=lambda q: True)
            target = world.wait_for_state().position + np.r_[0.05, np.zeros(6)]
            for _ in range(20):
                world.apply(Action(arm=target, gripper=0.0))
                world.step()
            time.sleep(0.3)
            np.testing.assert_allclose(world.wait_for_state().position[0], target[0], atol=0.01)
        finally:
            world.close()
    log = (tmp_path / 'digital_real.log').read_text()
    assert 'automatic error recovery' in log, log[-2000:]


@pytest.mark.ros
@pytest.mark.slow
def test_short_soak_loses_nothing_and_violates_no_limit(tmp_path):
    """bench/soak_digital_real.py, short: every injected fault an infra_failure that the re-run
    retries, no record lost, no joint-limit or workspace violation."""
    _interfaces()
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / 'bench'))
    from soak_digital_real import run_soak

    # A generous step timeout: a loaded machine must not add failures of its own (it may).
    figures = run_soak(tmp_path / 'soak', episodes=5, max_steps=30, seed=3, fault_rate=0.5,
                       cameras=True, step_timeout_s=2.0, log=lambda text: print('\n' + text))
    injected = sum(figures['faults_injected'].values())
    assert injected >= 3, figures
    # Every fault ended its episode as an infrastructure failure, re-run until scored.
    assert figures['infra_failures'] >= injected, figures
    assert figures['retries'] == figures['infra_failures'], figures
    assert figures['recoveries'] == figures['infra_failures']
    assert figures['records_lost'] == 0 and figures['unfinished'] == 0
    assert figures['unreadable_lines'] == 0
    assert figures['limit_violations'] == 0 and figures['workspace_violations'] == 0
    assert figures['target_violations'] == 0
    assert figures['dropped_commands'] > 0 and figures['refused_commands'] > 0


@pytest.mark.ros
def test_the_twin_refuses_what_the_real_side_refuses_and_holds_the_same_target(tmp_path):
    """Both worlds of a pair get the same commands (issue 37): a ramp toward the workspace's
    y wall, each next target one step past the target in force, sent to the franka bridge over
    DDS (the digital real behind it, FR3, lockstep) and to the MuJoCo twin under
    :class:`SafetyFilter` with the same rules and arm (what paired-eval's graph sets). The real
    side refuses commands (the arm would overshoot the box); the twin refuses the same ones
    and holds the same target after each."""
    from rostest import run_process

    from realm_ros.backends.franka import make_bridge_world
    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.core.config import FrankaBridgeConfig
    from realm_ros.core.errors import CommandRejected
    from realm_ros.core.safety import SafetyFilter
    from realm_ros.core.types import Action, EpisodeSpec

    arm = robot.arm_spec('fr3')
    rules = SafetyConfig()
    start = [0.0, 0.3, 0.0, -2.0, 0.0, 2.3, 0.8]  # stretched out: TCP at x 0.60 m, y 0
    spec = EpisodeSpec(task='empty', seed=0, max_steps=40, initial_state={'reset_q': start})
    digital_real = ['digital_real', '--ros-args', '-r', '__ns:=/pair', '-p', 'arm_id:=fr3',
                    '-p', 'lockstep:=true']
    config = WorldConfig(backend='franka', cameras=(), camera_rate_hz=0.0, lockstep=True)
    twin = SafetyFilter(MujocoWorld(WorldConfig(task='', cameras=(), camera_rate_hz=0.0)),
                        rules, arm)
    decisions = {'real': [], 'twin': []}
    with run_process(digital_real, tmp_path / 'digital_real.log'):
        real = make_bridge_world(config, bridge=FrankaBridgeConfig(
            arm_id='fr3', gripper='width_topic', namespace='/pair', digital_real=True),
            safety=rules)
        try:
            real.reset(spec)
            twin.reset(spec)
            np.testing.assert_allclose(real._target_q, twin.target, atol=1e-3)  # reset pose
            for k in range(40):
                # The same command to both: one velocity-rule step past the target in force;
                # every third command repeats it (valid: the watchdog, which would hold each
                # world's own measured position, never trips).
                command = real._target_q.copy()
                command[0] += 0.8 * arm.velocity[0] * DT * (k % 3 != 2)
                for name, world in (('real', real), ('twin', twin)):
                    try:
                        world.apply(Action(arm=command, gripper=0.0))
                        decisions[name].append('ok')
                    except CommandRejected as err:
                        decisions[name].append(str(err).split(' by ')[0])
                    world.step()
                # Both hold the last command both accepted (exactly: the same numbers).
                np.testing.assert_allclose(twin.target, real._target_q, rtol=0, atol=1e-9)
        finally:
            real.close()
            twin.close()
    refused = [d for d in decisions['real'] if d != 'ok']
    assert refused and all('the arm lags its target' in d for d in refused), decisions['real']
    assert decisions['twin'] == decisions['real']
    assert twin.rejections and len(twin.rejections) == len(refused)
    print(f'\nreal and twin refused the same {len(refused)} of 40 commands')
