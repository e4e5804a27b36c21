"""Pure tests of core: robot constants, DROID conventions, validation, configs, records."""

import math

import numpy as np
import pytest

from realm_ros.core import control, robot, rotations
from realm_ros.core.config import DynamicsParams, WorldConfig, describe, from_mapping
from realm_ros.core.errors import CommandRejected, ConfigError
from realm_ros.core.types import Action, ActionChunk, ActionMode, EpisodeSpec


def test_limits_and_reset_pose_are_consistent():
    assert len(robot.JOINT_NAMES) == 7 == robot.JOINT_LOWER.size == robot.JOINT_UPPER.size
    assert np.all(robot.JOINT_LOWER < robot.JOINT_UPPER)
    assert np.all((robot.RESET_Q > robot.JOINT_LOWER) & (robot.RESET_Q < robot.JOINT_UPPER))
    for gains, size in ((robot.KQ, 7), (robot.KQD, 7), (robot.KX, 6), (robot.KXD, 6)):
        assert gains.shape == (size,) and np.all(gains > 0)


def test_forward_kinematics_at_zero_matches_published_flange_position():
    # At q = 0 the Panda flange is at x = 0.088, z = 0.333 + 0.316 + 0.384 - 0.107 = 0.926.
    flange = robot.forward_kinematics(np.zeros(7))[-1]
    np.testing.assert_allclose(flange[:3, 3], [0.088, 0.0, 0.926], atol=1e-9)
    # The flange z axis points down.
    np.testing.assert_allclose(flange[:3, 2], [0, 0, -1], atol=1e-9)


@pytest.mark.parametrize('prefix', ['fr3_', 'panda_', 'fer_', ''])
def test_joint_name_mapping_round_trips(prefix):
    names = robot.prefixed_joint_names(prefix)
    assert robot.map_joint_names(names, prefix) == robot.JOINT_NAMES
    assert robot.map_joint_names(names[::-1], prefix) == robot.JOINT_NAMES[::-1]


def test_joint_name_mapping_rejects_foreign_names():
    with pytest.raises(ConfigError, match='fr3_joint1'):
        robot.map_joint_names(['fr3_joint1'], 'panda_')
    with pytest.raises(ConfigError):
        robot.map_joint_names(['panda_joint8'], 'panda_')


def test_velocity_action_follows_droid_convention():
    q = robot.RESET_Q.copy()
    v = np.array([0.5, -0.5, 0, 0, 0, 0, 1.0])
    np.testing.assert_allclose(control.velocity_to_target(q, v), q + 0.2 * v)
    # max|v| > 1 is scaled down uniformly, not clipped per joint.
    big = np.array([2.0, 1.0, 0, 0, 0, 0, 0])
    np.testing.assert_allclose(control.velocity_to_target(q, big), q + 0.2 * big / 2.0)


def test_velocity_target_is_clipped_to_limits():
    q = robot.JOINT_UPPER - 0.01
    # Kept the position margin (Polymetis: 0.1 rad) inside the limits; margin 0 = the limits.
    target = control.velocity_to_target(q, np.ones(7))
    np.testing.assert_allclose(target, robot.JOINT_UPPER - control.POSITION_MARGIN_RAD)
    np.testing.assert_allclose(control.velocity_to_target(q, np.ones(7), margin=0.0),
                               robot.JOINT_UPPER)


def test_gripper_conventions():
    assert control.binarize_gripper(0.51) == 1.0
    assert control.binarize_gripper(0.5) == 0.0
    assert control.gripper_width(0.0) == pytest.approx(robot.GRIPPER_MAX_WIDTH)
    assert control.gripper_width(1.0) == 0.0


@pytest.mark.parametrize('arm, gripper, match', [
    (np.r_[robot.RESET_Q[:6], np.nan], 0.0, 'NaN'),
    (robot.RESET_Q[:6], 0.0, '7 values'),
    (np.r_[robot.RESET_Q[:3], 0.5, robot.RESET_Q[4:]], 0.0, 'panda_joint4'),
    (robot.RESET_Q, 1.5, 'gripper'),
    (robot.RESET_Q, math.inf, 'gripper'),
])
def test_invalid_actions_are_rejected_with_reason(arm, gripper, match):
    with pytest.raises(CommandRejected, match=match):
        control.validate_action(Action(arm=np.asarray(arm), gripper=gripper))


def test_position_target_within_tolerance_is_clipped_not_rejected():
    arm = robot.JOINT_UPPER + 0.0005
    q_d, g = control.action_to_target(Action(arm=arm, gripper=1.0), robot.RESET_Q, margin=0.0)
    np.testing.assert_allclose(q_d, robot.JOINT_UPPER)
    assert g == 1.0
    # With the default margin the same valid command is moved 0.1 rad inside the limits.
    q_d, _ = control.action_to_target(Action(arm=arm, gripper=1.0), robot.RESET_Q)
    np.testing.assert_allclose(q_d, robot.JOINT_UPPER - 0.1)


def test_action_from_named_maps_any_order_and_keeps_gripper():
    names = list(reversed(robot.JOINT_NAMES))
    values = list(range(7))
    action = control.action_from_named(names, values, ActionMode.POSITION, 0.7)
    assert action.arm.tolist() == list(reversed(range(7)))
    assert action.gripper == 0.7


@pytest.mark.parametrize('names, values, match', [
    (list(robot.JOINT_NAMES[:6]), [0.0] * 6, 'lacks'),
    (list(robot.JOINT_NAMES) + ['elbow'], [0.0] * 8, 'unknown'),
    (list(robot.JOINT_NAMES), [0.0] * 6, '7 joint names but 6'),
    (list(robot.JOINT_NAMES[:6]) + ['panda_joint1'], [0.0] * 7, 'duplicate'),
])
def test_action_from_named_rejects_bad_names(names, values, match):
    with pytest.raises(CommandRejected, match=match):
        control.action_from_named(names, values, ActionMode.POSITION, 0.0)


def test_impedance_torque_matches_formula():
    rng = np.random.default_rng(0)
    jac = rng.normal(size=(6, 7))
    gains = control.ImpedanceGains()
    q, dq, q_d = rng.normal(size=7), rng.normal(size=7), rng.normal(size=7)
    tau = control.impedance_torque(q, dq, q_d, jac, gains)
    kp = jac.T @ np.diag(robot.KX) @ jac + np.diag(robot.KQ)
    kd = jac.T @ np.diag(robot.KXD) @ jac + np.diag(robot.KQD)
    np.testing.assert_allclose(tau, kp @ (q_d - q) - kd @ dq)


def test_world_config_names_bad_field_and_allowed_values():
    with pytest.raises(ConfigError, match=r"backend = 'gazebo'.*'mujoco'"):
        WorldConfig(backend='gazebo')
    with pytest.raises(ConfigError, match='physics_hz'):
        WorldConfig(physics_hz=100.0)
    with pytest.raises(ConfigError, match='cameras'):
        WorldConfig(cameras=('exterior_3',))
    with pytest.raises(ConfigError, match=r"unknown field\(s\) \['physic_hz'\]"):
        from_mapping(WorldConfig, {'physic_hz': 240.0})


def test_every_config_field_has_a_description():
    for cls in (WorldConfig, DynamicsParams):
        for name, _, text in describe(cls):
            assert text, f'{cls.__name__}.{name} has no description'


def test_dynamics_params_validation_and_yaml(tmp_path):
    path = tmp_path / 'p.yaml'
    path.write_text('friction: [0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]\n'
                    'armature: [0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2]\nlatency_s: 0.01\n')
    params = DynamicsParams.from_yaml(path)
    assert params.friction == (0.1,) * 7 and params.armature == (0.2,) * 7
    with pytest.raises(ConfigError, match='friction must have 7'):
        DynamicsParams(friction=(0.1,) * 6)
    with pytest.raises(ConfigError, match='armature'):
        DynamicsParams(armature=(float('nan'),) * 7)
    (tmp_path / 'bad.yaml').write_text('friction: [1, 2\n')
    with pytest.raises(ConfigError, match='not valid YAML'):
        DynamicsParams.from_yaml(tmp_path / 'bad.yaml')
    with pytest.raises(ConfigError, match='cannot read'):
        DynamicsParams.from_yaml(tmp_path / 'missing.yaml')


def test_episode_spec_json_round_trip_and_errors():
    spec = EpisodeSpec(task='pick_spoon', seed=3, initial_state={'obj': np.array([0.1, 0.2])})
    back = EpisodeSpec.from_json(spec.to_json())
    assert back.task == 'pick_spoon' and back.seed == 3
    assert back.initial_state['obj'] == [0.1, 0.2]
    with pytest.raises(ConfigError, match='unknown episode spec field'):
        EpisodeSpec.from_json('{"task": "x", "sede": 1}')
    with pytest.raises(ConfigError, match='intensity'):
        EpisodeSpec(intensity=2.0)
    with pytest.raises(ConfigError, match='not valid JSON'):
        EpisodeSpec.from_json('{task')


def test_action_chunk_indexing():
    values = np.arange(16, dtype=float).reshape(2, 8) / 100
    chunk = ActionChunk(values, ActionMode.VELOCITY)
    assert len(chunk) == 2
    assert chunk[1].gripper == pytest.approx(0.15)
    assert chunk[1].mode is ActionMode.VELOCITY
    with pytest.raises(CommandRejected):
        Action.from_array(np.zeros(7))


def test_digital_real_dynamics_file_and_validation(tmp_path):
    from realm_ros.backends.digital_real import DEFAULT_DYNAMICS_FILE
    from realm_ros.core.config import DigitalRealDynamics
    hidden = DigitalRealDynamics.from_yaml(DEFAULT_DYNAMICS_FILE)
    assert hidden.friction[4] == 0.75 and hidden.latency_s > 0
    with pytest.raises(ConfigError, match='latency_s'):
        DigitalRealDynamics(latency_s=-1.0)
    with pytest.raises(ConfigError, match='DigitalRealDynamics.friction must have 7'):
        DigitalRealDynamics(friction=(1.0, 2.0))
    bad = tmp_path / 'd.yaml'
    bad.write_text('frictions: [0, 0, 0, 0, 0, 0, 0]\n')
    with pytest.raises(ConfigError, match=r"unknown field\(s\) \['frictions'\]"):
        DigitalRealDynamics.from_yaml(bad)


def test_unbuilt_backend_says_so():
    from realm_ros.core.errors import BackendUnavailable
    from realm_ros.core.world import make_world
    with pytest.raises(BackendUnavailable, match='Isaac Sim world .* has NOT been run'):
        make_world(WorldConfig(backend='isaac'))


def test_rotation_conventions_agree_with_scipy():
    from scipy.spatial.transform import Rotation
    rng = np.random.default_rng(5)
    for _ in range(20):
        quat = rng.normal(size=4)
        unit = quat / np.linalg.norm(quat)
        scipy_rot = Rotation.from_quat(unit[[1, 2, 3, 0]])  # SciPy is (x, y, z, w)
        matrix = rotations.matrix_from_quat(quat)
        np.testing.assert_allclose(matrix, scipy_rot.as_matrix(), atol=1e-12)
        np.testing.assert_allclose(rotations.rpy_from_matrix(matrix),
                                   scipy_rot.as_euler('xyz'), atol=1e-9)
        other = rng.normal(size=4)
        np.testing.assert_allclose(
            rotations.matrix_from_quat(rotations.quat_mul(quat, other)),
            matrix @ rotations.matrix_from_quat(other), atol=1e-12)
    yaw = 0.7
    np.testing.assert_allclose(rotations.matrix_from_quat(rotations.yaw_quat(yaw)),
                               rotations.matrix_from_rpy((0.0, 0.0, yaw)), atol=1e-15)
    # Gimbal lock: pitch +-pi/2 puts the whole rotation about z into yaw.
    locked = rotations.matrix_from_rpy((0.0, math.pi / 2, 0.4))
    np.testing.assert_allclose(rotations.matrix_from_rpy(rotations.rpy_from_matrix(locked)),
                               locked, atol=1e-9)


def test_gripper_closure_inverts_gripper_width():
    for max_width in robot.GRIPPER_WIDTHS.values():
        for g in (0.0, 0.25, 1.0):
            width = control.gripper_width(g, max_width)
            assert control.gripper_closure(width, max_width) == pytest.approx(g, abs=1e-12)
        assert control.gripper_closure(max_width + 0.002, max_width) == 0.0  # beyond the stroke
        assert control.gripper_closure(-0.001, max_width) == 1.0
