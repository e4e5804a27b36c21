"""The MuJoCo twin: model, impedance law, step response, dynamics, determinism, cameras."""

import mujoco
import numpy as np
import pytest
import scipy.linalg

from realm_ros.backends.mujoco import model as mjcf
from realm_ros.backends.mujoco.world import MujocoWorld
from realm_ros.core import control, robot
from realm_ros.core.config import DynamicsParams, WorldConfig
from realm_ros.core.errors import CommandRejected
from realm_ros.core.types import Action, ActionMode, EpisodeSpec


@pytest.fixture
def world():
    w = MujocoWorld(WorldConfig(camera_rate_hz=0))
    w.reset(EpisodeSpec())
    yield w
    w.close()


def test_mjcf_joint_names_order_and_limits_match_core():
    m = mujoco.MjModel.from_xml_string(mjcf.build_mjcf())
    names = [m.joint(i).name for i in range(7)]
    assert tuple(names) == robot.JOINT_NAMES
    np.testing.assert_allclose(m.jnt_range[:7, 0], robot.JOINT_LOWER)
    np.testing.assert_allclose(m.jnt_range[:7, 1], robot.JOINT_UPPER)
    np.testing.assert_allclose(m.jnt_actfrcrange[:7, 1], robot.EFFORT_LIMIT)


def test_mjcf_kinematics_match_dh_table():
    m = mujoco.MjModel.from_xml_string(mjcf.build_mjcf())
    d = mujoco.MjData(m)
    rng = np.random.default_rng(1)
    for _ in range(20):
        q = rng.uniform(robot.JOINT_LOWER, robot.JOINT_UPPER)
        d.qpos[:7] = q
        mujoco.mj_kinematics(m, d)
        for i, pose in enumerate(robot.forward_kinematics(q)):
            body = m.body(f'panda_link{i + 1}').id
            np.testing.assert_allclose(d.xpos[body], pose[:3, 3], atol=1e-9)
            np.testing.assert_allclose(d.xmat[body].reshape(3, 3), pose[:3, :3], atol=1e-9)


def test_arm_holds_reset_pose_under_gravity(world):
    for _ in range(30):
        obs = world.step()
    np.testing.assert_allclose(obs.joints.position, robot.RESET_Q, atol=1e-6)


def test_actuator_torque_equals_hybrid_impedance_law_to_first_order(world):
    """Small errors: the twin's torque is Polymetis' (J^T Kx J + Kq) dq - (J^T Kxd J + Kqd) dq."""
    m, d = world.model, world.data
    rng = np.random.default_rng(2)
    world.apply(Action(robot.RESET_Q + rng.uniform(-0.01, 0.01, 7), 0.0))
    world.step_physics(2)  # nonzero velocity too
    mujoco.mj_forward(m, d)
    jac = np.zeros((6, m.nv))
    mujoco.mj_jacSite(m, d, jac[:3], jac[3:], m.site('ee').id)
    expected = control.impedance_torque(
        d.qpos[:7], d.qvel[:7], world.target[0], jac[:, :7], control.ImpedanceGains())
    np.testing.assert_allclose(d.qfrc_actuator[:7], expected, rtol=0.03, atol=0.02)


def test_step_response_tracks_linearised_impedance_prediction(world):
    """A 0.02 rad step follows M ddq + Kd dq + Kp (q - q_d) = 0, M with armature."""
    m, d = world.model, world.data
    q0 = robot.RESET_Q.copy()
    step = np.full(7, 0.02)
    mass = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, mass)
    jac = np.zeros((6, m.nv))
    mujoco.mj_jacSite(m, d, jac[:3], jac[3:], m.site('ee').id)
    j = jac[:, :7]
    kp = j.T @ np.diag(robot.KX) @ j + np.diag(robot.KQ)
    kd = j.T @ np.diag(robot.KXD) @ j + np.diag(robot.KQD)
    minv = np.linalg.inv(mass[:7, :7])
    system = np.block([[np.zeros((7, 7)), np.eye(7)], [-minv @ kp, -minv @ kd]])

    world.apply(Action(q0 + step, 0.0))
    simulated, predicted = [], []
    for k in range(1, 16):
        simulated.append(world.step().joints.position - q0)
        x = scipy.linalg.expm(system * k * world.control_dt) @ np.r_[-step, np.zeros(7)]
        predicted.append(x[:7] + step)
    simulated, predicted = np.array(simulated), np.array(predicted)
    # Fingers and second-order terms make small differences; the response is the law's.
    assert np.max(np.abs(simulated - predicted)) < 0.1 * 0.02
    np.testing.assert_allclose(simulated[-1], step, atol=0.002)


def test_friction_is_settable_and_leaves_a_steady_state_error(world):
    target = robot.RESET_Q + np.r_[0, 0, 0, 0, 0.01, 0, 0]
    world.set_dynamics(DynamicsParams(friction=(0, 0, 0, 0, 0.3, 0, 0)))
    world.apply(Action(target, 0.0))
    for _ in range(30):
        obs = world.step()
    # Coulomb friction 0.3 N m against the joint-5 stiffness stalls the arm short of the target.
    error = target[4] - obs.joints.position[4]
    assert 0.002 < error < 0.01
    assert world.dynamics().friction[4] == pytest.approx(0.3)


def test_armature_slows_the_response(world):
    target = robot.RESET_Q + 0.05

    def rise(armature):
        world.reset(EpisodeSpec())
        world.set_dynamics(DynamicsParams(armature=(armature,) * 7))
        world.apply(Action(target, 0.0))
        return world.step().joints.position[6] - robot.RESET_Q[6]

    # Joint 7 has the smallest link inertia, so its armature matters most.
    assert rise(0.5) < 0.5 * rise(0.05)


def test_rejected_command_keeps_previous_target(world):
    good = robot.RESET_Q + 0.03
    world.apply(Action(good, 0.0))
    with pytest.raises(CommandRejected):
        world.apply(Action(np.full(7, np.nan), 0.0))
    np.testing.assert_allclose(world.target[0], good)


def test_velocity_actions_move_relative_to_measured_position(world):
    applied = world.apply(Action(np.r_[1.0, np.zeros(6)], 0.0, ActionMode.VELOCITY))
    assert applied.arm[0] == pytest.approx(robot.RESET_Q[0] + 0.2)


def test_gripper_closes_and_opens(world):
    world.apply(Action(robot.RESET_Q, 1.0))
    for _ in range(15):
        obs = world.step()
    assert obs.joints.gripper > 0.95
    world.apply(Action(robot.RESET_Q, 0.0))
    for _ in range(15):
        obs = world.step()
    assert obs.joints.gripper < 0.05


def test_same_seed_same_trajectory():
    def run():
        w = MujocoWorld(WorldConfig(camera_rate_hz=0), joint_noise_std=0.001)
        w.reset(EpisodeSpec(seed=7))
        out = []
        for k in range(20):
            w.apply(Action(robot.RESET_Q + 0.1 * np.sin(k / 5.0), float(k > 10)))
            out.append(w.step().joints.position)
        return np.array(out)

    np.testing.assert_array_equal(run(), run())


def test_latency_delays_the_response():
    w = MujocoWorld(WorldConfig(camera_rate_hz=0), latency_s=0.05)
    w.reset(EpisodeSpec())
    w.apply(Action(robot.RESET_Q + 0.05, 0.0))
    w.step_physics(10)  # 10 / 240 s < 50 ms: nothing commanded yet
    np.testing.assert_allclose(w.joint_state().position, robot.RESET_Q, atol=1e-9)
    w.step()
    assert np.all(w.target[0] == pytest.approx(robot.RESET_Q + 0.05))


def test_three_cameras_render_distinct_images():
    w = MujocoWorld(WorldConfig())
    obs = w.reset(EpisodeSpec())
    assert set(obs.images) == {'exterior_1', 'exterior_2', 'wrist'}
    for image in obs.images.values():
        assert image.shape == (180, 320, 3) and image.dtype == np.uint8
        assert image.std() > 5  # not a blank frame
    assert np.abs(obs.images['exterior_1'].astype(int)
                  - obs.images['exterior_2'].astype(int)).mean() > 5
    w.close()
