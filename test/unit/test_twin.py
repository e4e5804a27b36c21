"""The twins: what every simulated twin must do, then the MuJoCo twin's own checks.

The first part runs once per backend: ``mujoco``, and ``physx`` (the PhysX twin on kit-less
``ovphysx``, skipped with the import error where ``ovphysx`` cannot be imported): hold under
gravity, the impedance law's step response, friction, armature, rejected commands, the gripper,
determinism, latency. Each backend keeps its own tolerances (:data:`TWINS`). The PhysX twin's
other checks (USD export, agreement with the MuJoCo twin, batched rollout) are in
``test_physx_twin.py``; the MuJoCo part checks the model, the torque, velocity actions, cameras.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import mujoco
import numpy as np
import pytest
import scipy.linalg
from twin_helpers import import_or_skip

from realm_ros.backends.mujoco import model as mjcf
from realm_ros.backends.mujoco.world import MujocoWorld
from realm_ros.core import control, robot
from realm_ros.core.config import DynamicsParams, WorldConfig
from realm_ros.core.errors import CommandRejected
from realm_ros.core.types import Action, ActionMode, EpisodeSpec


@dataclasses.dataclass(frozen=True)
class Twin:
    """A simulated backend, the world its tests build and the tolerances they hold it to."""

    name: str
    config: dict[str, Any]  # WorldConfig fields of the test world
    hold_steps: int  # control steps the reset pose is held under gravity
    hold_atol: float  # rad, after them
    latency_atol: float  # rad: how still the arm is while a command waits out the delay

    def make(self, **kwargs: Any) -> Any:
        """Build this backend's world (kwargs: the twin's latency_s, joint_noise_std)."""
        config = WorldConfig(**self.config)
        if self.name == 'physx':
            import_or_skip('ovphysx')
            from realm_ros.backends.physx.world import PhysxWorld
            return PhysxWorld(config, **kwargs)
        return MujocoWorld(config, **kwargs)

    def arm_mass(self, world: Any) -> np.ndarray:
        """The arm's 7 x 7 joint-space inertia (armature included) at the reset pose."""
        m = world.model
        if self.name == 'physx':  # the MuJoCo mirror's model, posed at the reset pose
            d = mujoco.MjData(m)
            d.qpos[:7] = robot.RESET_Q
            mujoco.mj_forward(m, d)
        else:  # the twin's own state after reset
            d = world.data
        mass = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, mass)
        return mass[:7, :7]


TWINS = (
    Twin('mujoco', {'camera_rate_hz': 0}, hold_steps=30, hold_atol=1e-6, latency_atol=1e-9),
    Twin('physx', {'camera_rate_hz': 0, 'cameras': ()}, hold_steps=15, hold_atol=1e-5,
         latency_atol=1e-6),
)


@pytest.fixture(params=TWINS, ids=[t.name for t in TWINS])
def twin(request):
    return request.param


@pytest.fixture(scope='module')
def physx_world():
    w = TWINS[1].make()
    yield w
    w.close()


@pytest.fixture
def world(twin, request):
    """The twin at the reset pose, default dynamics: a new MuJoCo world per test; PhysX's one
    world of this module (its build is the slow part), reset."""
    if twin.name == 'physx':
        w = request.getfixturevalue('physx_world')
        w.set_dynamics(DynamicsParams())
        w.reset(EpisodeSpec())
        yield w
        return
    w = twin.make()
    w.reset(EpisodeSpec())
    yield w
    w.close()


# -- every twin ----------------------------------------------------------------------------

def test_arm_holds_reset_pose_under_gravity(twin, world):
    for _ in range(twin.hold_steps):
        obs = world.step()
    np.testing.assert_allclose(obs.joints.position, robot.RESET_Q, atol=twin.hold_atol)


def test_step_response_tracks_linearised_impedance_prediction(twin, world):
    """A 0.02 rad step follows M ddq + Kd dq + Kp (q - q_d) = 0, M with armature."""
    step = np.full(7, 0.02)
    j = robot.flange_jacobian(robot.RESET_Q)  # = MuJoCo's ee site Jacobian (to 2e-15)
    kp = j.T @ np.diag(robot.KX) @ j + np.diag(robot.KQ)
    kd = j.T @ np.diag(robot.KXD) @ j + np.diag(robot.KQD)
    minv = np.linalg.inv(twin.arm_mass(world))
    system = np.block([[np.zeros((7, 7)), np.eye(7)], [-minv @ kp, -minv @ kd]])

    world.apply(Action(robot.RESET_Q + step, 0.0))
    simulated, predicted = [], []
    for k in range(1, 16):
        simulated.append(world.step().joints.position - robot.RESET_Q)
        x = scipy.linalg.expm(system * k * world.control_dt) @ np.r_[-step, np.zeros(7)]
        predicted.append(x[:7] + step)
    # Fingers and second-order terms make small differences; the response is the law's.
    gap = np.max(np.abs(np.array(simulated) - np.array(predicted)))
    assert gap < 0.1 * 0.02, gap
    np.testing.assert_allclose(simulated[-1], step, atol=0.002)


def test_friction_is_settable_and_leaves_a_steady_state_error(world):
    target = robot.RESET_Q + np.r_[0, 0, 0, 0, 0.01, 0, 0]
    world.set_dynamics(DynamicsParams(friction=(0, 0, 0, 0, 0.3, 0, 0)))
    world.apply(Action(target, 0.0))
    for _ in range(30):
        obs = world.step()
    # Coulomb friction 0.3 N m against the joint-5 stiffness stalls the arm short of the target.
    error = target[4] - obs.joints.position[4]
    assert 0.002 < error < 0.01, error
    assert world.dynamics().friction[4] == pytest.approx(0.3)


@pytest.mark.parametrize('dynamics_first', [False, True], ids=['reset_then_set',
                                                               'set_then_reset'])
def test_armature_slows_the_response(world, dynamics_first):
    """Set before a reset (it must survive it) or after one: the same slower response."""
    target = robot.RESET_Q + 0.05

    def rise(armature):
        params = DynamicsParams(armature=(armature,) * 7)
        if dynamics_first:
            world.set_dynamics(params)
            world.reset(EpisodeSpec())
        else:
            world.reset(EpisodeSpec())
            world.set_dynamics(params)
        world.apply(Action(target, 0.0))
        return world.step().joints.position[6] - robot.RESET_Q[6]

    # Joint 7 has the smallest link inertia, so its armature matters most.
    assert rise(0.5) < 0.5 * rise(0.05)
    assert world.dynamics().armature[6] == pytest.approx(0.05)


def test_rejected_command_keeps_previous_target(world):
    good = robot.RESET_Q + 0.03
    world.apply(Action(good, 0.0))
    with pytest.raises(CommandRejected):
        world.apply(Action(np.full(7, np.nan), 0.0))
    np.testing.assert_allclose(world.target[0], good)


def test_gripper_closes_and_opens(world):
    world.apply(Action(robot.RESET_Q, 1.0))
    for _ in range(15):
        obs = world.step()
    assert obs.joints.gripper > 0.95
    world.apply(Action(robot.RESET_Q, 0.0))
    for _ in range(15):
        obs = world.step()
    assert obs.joints.gripper < 0.05


def test_same_seed_same_trajectory(twin):
    """Two new worlds with joint noise, one seed: bit-identical trajectories."""
    def run():
        w = twin.make(joint_noise_std=0.001)
        w.reset(EpisodeSpec(seed=7))
        out = []
        for k in range(20):
            w.apply(Action(robot.RESET_Q + 0.1 * np.sin(k / 5.0), float(k > 10)))
            out.append(w.step().joints.position)
        w.close()
        return np.array(out)

    np.testing.assert_array_equal(run(), run())


def test_a_reset_to_the_same_seed_repeats_the_trajectory(world):
    """One world used twice: nothing of the first run leaks through the reset."""
    def run():
        world.reset(EpisodeSpec(seed=7))
        out = []
        for k in range(12):
            world.apply(Action(robot.RESET_Q + 0.1 * np.sin(k / 5.0), float(k > 6)))
            out.append(world.step().joints.position)
        return np.array(out)

    np.testing.assert_array_equal(run(), run())


def test_latency_delays_the_response(twin):
    w = twin.make(latency_s=0.05)
    w.reset(EpisodeSpec())
    w.apply(Action(robot.RESET_Q + 0.05, 0.0))
    w.step_physics(10)  # 10 / 240 s < 50 ms: nothing commanded yet
    np.testing.assert_allclose(w.joint_state().position, robot.RESET_Q, atol=twin.latency_atol)
    w.step()
    assert np.all(w.target[0] == pytest.approx(robot.RESET_Q + 0.05))
    w.close()


def test_velocity_actions_move_relative_to_measured_position(world):
    applied = world.apply(Action(np.r_[1.0, np.zeros(6)], 0.0, ActionMode.VELOCITY))
    assert applied.arm[0] == pytest.approx(robot.RESET_Q[0] + 0.2)


# -- the MuJoCo twin -----------------------------------------------------------------------

@pytest.fixture
def mujoco_world():
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


def test_actuator_torque_equals_hybrid_impedance_law_to_first_order(mujoco_world):
    """Small errors: the twin's torque is Polymetis' (J^T Kx J + Kq) dq - (J^T Kxd J + Kqd) dq."""
    world = mujoco_world
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
