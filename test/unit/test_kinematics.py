"""The fast kinematics path (FK, Jacobian, IK) against the simple reference path it replaced."""

import math

import numpy as np
import pytest

from realm_ros.backends.mujoco.world import MujocoWorld
from realm_ros.core import kinematics, robot, tasks
from realm_ros.core.config import WorldConfig
from realm_ros.core.errors import ConfigError
from realm_ros.core.types import Action, ActionMode, EpisodeSpec
from realm_ros.policies.scripted import ScriptedPolicy


def _random_q(rng: np.random.Generator, spread: float = 0.5) -> np.ndarray:
    return np.clip(robot.RESET_Q + rng.normal(0.0, spread, 7), robot.JOINT_LOWER + 0.01,
                   robot.JOINT_UPPER - 0.01)


def test_fast_pose_and_jacobian_equal_the_reference_and_finite_differences():
    rng = np.random.default_rng(1)
    for _ in range(300):
        q = _random_q(rng, 1.0)
        pose, jac = kinematics.tcp_jacobian(q)
        ref_pose, ref_jac = kinematics.tcp_jacobian_reference(q)
        np.testing.assert_allclose(pose, ref_pose, rtol=0, atol=1e-12)
        np.testing.assert_allclose(kinematics.tcp_pose(q), ref_pose, rtol=0, atol=1e-12)
        np.testing.assert_allclose(jac, ref_jac, rtol=0, atol=1e-12)
    # The linear rows are d(position)/dq: an independent check of both.
    q = _random_q(rng)
    eps = 1e-6
    fd = np.column_stack([(kinematics.tcp_pose(q + eps * e)[:3, 3]
                           - kinematics.tcp_pose(q - eps * e)[:3, 3]) / (2 * eps)
                          for e in np.eye(7)])
    np.testing.assert_allclose(kinematics.tcp_jacobian(q)[1][:3], fd, atol=1e-8)
    with pytest.raises(ValueError, match='shape'):
        kinematics.tcp_pose(np.zeros(6))


def test_down_rotation_is_the_column_stack_it_documents():
    for yaw in np.linspace(-math.pi, math.pi, 17):
        y = np.array([math.cos(yaw), math.sin(yaw), 0.0])
        z = np.array([0.0, 0.0, -1.0])
        np.testing.assert_array_equal(kinematics.down_rotation(yaw),
                                      np.column_stack([np.cross(y, z), y, z]))


def test_fast_ik_returns_the_reference_joints_on_many_poses():
    """Converged solves agree to 1e-9 rad; unreachable ones (stopped at the iteration limit,
    wandering along a joint limit) to 1e-4 rad; both reach the same error."""
    rng = np.random.default_rng(0)
    converged = 0
    for trial in range(600):
        q0 = _random_q(rng)
        pose = kinematics.tcp_pose_reference(q0)
        position = pose[:3, 3] + rng.normal(0.0, 0.03 if trial % 2 else 0.2, 3)
        rotation = kinematics.down_rotation(rng.uniform(-math.pi, math.pi)) if trial % 3 \
            else pose[:3, :3]
        q_start = q0 if trial % 4 else robot.RESET_Q
        for iterations in (8, 30):
            fast, err = kinematics.solve_ik(position, rotation, q_start, iterations=iterations)
            ref, ref_err = kinematics.solve_ik_reference(position, rotation, q_start,
                                                         iterations=iterations)
            assert abs(err - ref_err) < 1e-8
            if ref_err < 1e-4:
                converged += 1
                np.testing.assert_allclose(fast, ref, rtol=0, atol=1e-9)
            else:
                np.testing.assert_allclose(fast, ref, rtol=0, atol=1e-4)
    assert converged > 300  # the comparison covers mostly solved poses, not only failures


def test_fast_ik_handles_the_half_turn_and_the_converged_warm_start():
    q = robot.RESET_Q.copy()
    pose = kinematics.tcp_pose(q)
    # A converged warm start returns the start itself after one forward kinematics.
    out, err = kinematics.solve_ik(pose[:3, 3], pose[:3, :3], q)
    np.testing.assert_array_equal(out, q)
    assert err < 1e-9
    # 180 degrees away about z: the rotation error's symmetric-part branch.
    flip = np.diag([-1.0, -1.0, 1.0]) @ pose[:3, :3]
    fast = kinematics.solve_ik(pose[:3, 3], flip, q, iterations=30)
    ref = kinematics.solve_ik_reference(pose[:3, 3], flip, q, iterations=30)
    np.testing.assert_allclose(fast[0], ref[0], atol=1e-9)


@pytest.mark.parametrize('task', sorted(tasks.TASKS))
def test_scripted_policy_fast_ik_commands_the_reference_joints(task):
    """Replay one reference episode's observations through both paths: same commands."""
    world = MujocoWorld(WorldConfig(task=task, camera_rate_hz=0.0, cameras=()))
    spec = EpisodeSpec(task=task, seed=2, max_steps=300)
    fast, ref = ScriptedPolicy(skill=1, ik='fast'), ScriptedPolicy(skill=1, ik='reference')
    obs = world.reset(spec)
    fast.reset(spec)
    ref.reset(spec)
    for _ in range(120):
        a = ref.infer(obs).values
        np.testing.assert_allclose(fast.infer(obs).values, a, rtol=0, atol=1e-9)
        world.apply(Action(a[0, :7], float(a[0, 7]), ActionMode.POSITION))
        obs = world.step()
    world.close()


def test_scripted_policy_rejects_an_unknown_ik_path():
    with pytest.raises(ConfigError, match='ik'):
        ScriptedPolicy(ik='newton')
