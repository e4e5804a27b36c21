"""core/safety.py: each rule refuses what it should and lets valid targets pass."""

import dataclasses

import numpy as np
import pytest

from realm_ros.core import robot
from realm_ros.core.config import SafetyConfig
from realm_ros.core.errors import CommandRejected, ConfigError
from realm_ros.core.safety import SafetyMonitor, tcp_position

DT = 1 / 15
Q0 = robot.RESET_Q.copy()


@pytest.fixture
def monitor():
    return SafetyMonitor(SafetyConfig(), DT)


def _offset(joint, delta):
    q = Q0.copy()
    q[joint] += delta
    return q


def test_valid_targets_pass_unchanged(monitor):
    for delta in (0.0, 0.05, -0.1):
        q = _offset(0, delta)
        np.testing.assert_array_equal(monitor.check(q, Q0, Q0, 0.01), q)


@pytest.mark.parametrize('target, reason', [
    (Q0[:6], 'must have 7 values'),
    (np.r_[Q0[:6], np.nan], 'NaN or inf'),
    (np.r_[Q0[:6], np.inf], 'NaN or inf'),
])
def test_shape_and_nan_are_refused(monitor, target, reason):
    with pytest.raises(CommandRejected, match=reason):
        monitor.check(target, Q0, Q0, 0.01)


def test_stale_state_is_refused(monitor):
    with pytest.raises(CommandRejected, match='stale'):
        monitor.check(Q0, Q0, Q0, 0.3)
    with pytest.raises(CommandRejected, match='stale'):
        monitor.check(Q0, Q0, Q0, float('inf'))
    monitor.check(Q0, Q0, Q0, 0.2)


def test_joint_limit_margin_shapes_and_the_limit_refuses():
    monitor = SafetyMonitor(SafetyConfig(max_target_error_rad=1.0, velocity_scale=3.0), DT)
    near = Q0.copy()
    # Joint 7 turns about the flange axis: the TCP stays put, only the limit rule can object.
    near[6] = robot.JOINT_UPPER[6] - 0.01  # inside the limit, inside the 0.1 margin
    prev = near.copy()
    prev[6] -= 0.15
    # A valid target in the margin band is moved to the margin, with the reason kept.
    shaped = monitor.check(near, prev, prev, 0.0)
    assert shaped[6] == pytest.approx(robot.JOINT_UPPER[6] - 0.1)
    assert 'position_margin_rad 0.1 of a joint limit, moved to the margin: panda_joint7 ' \
        '2.8873 -> 2.7973' in monitor.last_shaped
    ok = near.copy()
    ok[6] = robot.JOINT_UPPER[6] - 0.12
    np.testing.assert_array_equal(monitor.check(ok, prev, prev, 0.0), ok)
    assert monitor.last_shaped == ''
    # Beyond the arm's limit (more than the float tolerance): refused.
    beyond = near.copy()
    beyond[6] = robot.JOINT_UPPER[6] + 0.01
    with pytest.raises(CommandRejected, match=r'beyond a joint limit: panda_joint7=2.9073 not in'):
        monitor.check(beyond, prev, prev, 0.0)


def test_velocity_limit_is_per_control_period(monitor):
    limit = 0.9 * robot.VELOCITY_LIMIT[0] * DT  # 0.1305 rad per step on joint 1
    monitor.check(_offset(0, limit * 0.99), Q0, Q0, 0.0)
    with pytest.raises(CommandRejected, match='panda_joint1 moves 0.14'):
        monitor.check(_offset(0, 0.14), Q0, Q0, 0.0)
    # The same change is fine over a longer control period.
    SafetyMonitor(SafetyConfig(), 0.2).check(_offset(0, 0.14), Q0, Q0, 0.0)
    # Measured relative to the target in force, not to the measured position.
    prev = _offset(0, 0.1)
    monitor.check(_offset(0, 0.2), prev, _offset(0, 0.1), 0.0)


def test_target_far_from_measured_position_is_refused(monitor):
    lagging = _offset(1, -0.25)  # the arm lags its target (blocked, or after a hold)
    with pytest.raises(CommandRejected, match='panda_joint2 off by 0.35'):
        monitor.check(_offset(1, 0.1), Q0, lagging, 0.0)
    monitor.check(_offset(1, 0.02), Q0, lagging, 0.0)


def test_workspace_box_on_the_tcp(monitor):
    tcp = tcp_position(Q0, 0.165)
    np.testing.assert_allclose(tcp, [0.3597, 0.0, 0.3249], atol=1e-3)  # DH table at DROID reset
    # Lower the box floor above the current TCP: the same target is now refused.
    assert SafetyConfig().workspace_min == (0.1, -0.4, -0.05)  # Polymetis's box
    assert SafetyConfig().workspace_max == (1.0, 0.4, 1.0)
    cfg = dataclasses.replace(SafetyConfig(), workspace_min=(0.1, -0.4, 0.35))
    with pytest.raises(CommandRejected, match='leaves the workspace box'):
        SafetyMonitor(cfg, DT).check(Q0, Q0, Q0, 0.0)
    # Bending the elbow down drives the fingertips below the table top (z < 0).
    relaxed = SafetyConfig(velocity_scale=3.0, max_target_error_rad=1.0,
                           workspace_min=(0.1, -0.4, 0.0))
    down = Q0.copy()
    down[1] += 1.2
    down[3] += 0.3
    prev = Q0.copy()
    prev[1] += 1.0
    prev[3] += 0.3
    assert tcp_position(down, 0.165)[2] < 0.0
    with pytest.raises(CommandRejected, match='workspace'):
        SafetyMonitor(relaxed, 1.0).check(down, prev, prev, 0.0)
    SafetyMonitor(relaxed, 1.0).check(prev, prev, prev, 0.0)  # 0.05 m above the table: fine


def test_a_target_the_arm_lags_toward_the_box_wall_is_refused_at_rest_allowed():
    """The look-ahead rule: an arm behind its target overshoots it; a target whose TCP is inside
    the box but whose TCP + lag is outside is refused while the arm lags toward the wall, and the
    same target is fine once the arm has caught up (or when it moves back in)."""
    cfg = SafetyConfig(velocity_scale=3.0, max_target_error_rad=1.0,
                       workspace_max=(1.0, 0.4, 1.0))
    wall = Q0.copy()
    wall[1], wall[3], wall[5] = 0.3, -2.0, 2.3  # stretched out: TCP at x 0.60 m
    near = wall.copy()
    near[0] = np.arcsin(0.385 / np.hypot(*tcp_position(wall, 0.165)[:2]))  # TCP y 0.385
    behind = wall.copy()
    behind[0] = near[0] - 0.15  # the arm 0.08 m behind, toward +y
    assert 0.38 < tcp_position(near, 0.165)[1] < 0.4
    monitor = SafetyMonitor(cfg, DT)
    with pytest.raises(CommandRejected, match='would overshoot the workspace box'):
        monitor.check(near, behind, behind, 0.0)
    np.testing.assert_array_equal(monitor.check(near, near, near, 0.0), near)  # caught up
    monitor.check(behind, near, near, 0.0)  # moving back in from the wall
    # Without the look-ahead (the rule before): accepted while the arm lags.
    SafetyMonitor(dataclasses.replace(cfg, workspace_lookahead=0.0), DT).check(
        near, behind, behind, 0.0)


def test_watchdog_holds_once_until_the_next_valid_command(monitor):
    monitor.accept(10.0)
    assert not monitor.watchdog_expired(10.4)
    assert monitor.watchdog_expired(10.6)
    assert monitor.holding
    assert not monitor.watchdog_expired(11.5)  # the hold is not re-taken (no creeping)
    monitor.accept(12.0)
    assert not monitor.holding
    assert not monitor.watchdog_expired(12.3)
    assert monitor.watchdog_expired(12.51)


@pytest.mark.parametrize('kwargs, field', [
    ({'velocity_scale': 0.0}, 'velocity_scale'),
    ({'watchdog_s': -1.0}, 'watchdog_s'),
    ({'workspace_min': (0.0, 0.0)}, 'workspace_min'),
    ({'workspace_min': (1.0, 0.0, 0.0), 'workspace_max': (0.5, 1.0, 1.0)}, 'workspace_min'),
])
def test_bad_safety_config_names_the_field(kwargs, field):
    with pytest.raises(ConfigError, match=field):
        SafetyConfig(**kwargs)


def test_per_arm_limits_come_from_franka_description():
    fr3, fer = robot.arm_spec('fr3'), robot.arm_spec('panda')
    assert fer is robot.arm_spec('fer') and fer.joint_names[0] == 'fer_joint1'
    assert fr3.joint_names[5] == 'fr3_joint6' and fr3.finger_names[0] == 'fr3_finger_joint1'
    # franka_description 1.0.1 robots/fr3/joint_limits.yaml and robots/fer/joint_limits.yaml
    assert (fr3.lower[0], fr3.upper[0], fr3.lower[5], fr3.upper[5]) == (
        -2.7437, 2.7437, 0.5445, 4.5169)
    assert (fer.lower[5], fer.upper[3], fer.velocity[4]) == (-0.0175, -0.0698, 2.61)
    np.testing.assert_array_equal(fr3.velocity, [2.62] * 4 + [5.26, 4.18, 5.26])
    with pytest.raises(ConfigError, match="arm_id 'fr2' unknown"):
        robot.arm_spec('fr2')


def test_an_fr3_target_the_panda_allows_is_rejected_by_the_fr3_rules():
    q = Q0.copy()
    q[5] = 0.45  # fine on a Panda (>= -0.0175), beyond an FR3's joint 6 (>= 0.5445)
    prev = q.copy()
    config = SafetyConfig(max_target_error_rad=1.0, workspace_min=(-2.0, -2.0, -2.0),
                          workspace_max=(2.0, 2.0, 2.0))
    SafetyMonitor(config, DT, robot.arm_spec('fer')).check(q, prev, q, 0.0)
    with pytest.raises(CommandRejected, match=r'fr3_joint6=0.4500 not in \[0.5445.*fr3 limits'):
        SafetyMonitor(config, DT, robot.arm_spec('fr3')).check(q, prev, q, 0.0)


def test_robot_fault_reads_franka_robot_mode_and_errors():
    from realm_ros.core.safety import robot_fault
    assert robot_fault(2, {'joint_reflex': False}) is None  # MOVE, no error
    assert robot_fault(1, {}) is None  # IDLE
    assert robot_fault(4, {}) == 'robot_mode REFLEX, current_errors none'
    assert 'cartesian_reflex' in robot_fault(2, {'cartesian_reflex': True})
    assert robot_fault(5, {}).startswith('robot_mode USER_STOPPED')
    assert 'unknown (9)' in robot_fault(9, {})


def test_franka_hardware_state_machine_as_the_digital_real_imitates_it():
    """The digital real's franka_hardware states, without ROS: reflex -> error recovery ->
    hardware active -> controller active; automaticErrorRecovery keeps last_motion_errors."""
    from realm_ros.backends.franka.hardware_state import FrankaHardwareState

    state = FrankaHardwareState(controller_manager=True)
    assert state.active and state.robot_mode() == 'MOVE'
    state.reflex('joint_reflex', now=10.0)
    assert not state.active and state.robot_mode() == 'REFLEX'
    assert state.errors == {'joint_reflex'} == state.last_motion_errors
    assert not state.activate_controller()  # not before recovery and the hardware
    state.error_recovery()
    assert state.mode == 'recovered' and not state.errors and state.robot_mode() == 'IDLE'
    state.set_hardware_active()
    assert state.mode == 'inactive_controller' and not state.active
    assert state.activate_controller() and state.active
    state.reflex('joint_reflex', now=20.0)
    assert not state.auto_recover_due(20.5, 1.0) and not state.auto_recover_due(30.0, -1.0)
    assert state.auto_recover_due(21.0, 1.0)
    state.auto_recover()
    assert state.active and state.last_motion_errors == {'joint_reflex'} and not state.errors
    plain = FrankaHardwareState()  # no controller_manager: recovery is immediate
    plain.reflex('cartesian_reflex', now=0.0)
    plain.error_recovery()
    assert plain.active
