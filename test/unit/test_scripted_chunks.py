"""Open-loop chunks of the scripted ladder (``horizon`` H > 1): shape, determinism, timing."""

import numpy as np
import pytest

from realm_ros.backends.mujoco.world import MujocoWorld
from realm_ros.core import robot
from realm_ros.core.config import WorldConfig
from realm_ros.core.errors import ConfigError
from realm_ros.core.evaluation import PolicyEntry
from realm_ros.core.policy import make_policy
from realm_ros.core.types import ActionMode, EpisodeSpec
from realm_ros.policies.scripted import MAX_VELOCITY_DELTA, NOMINAL_TRACKING, ScriptedPolicy

SPEC = EpisodeSpec(task='pick_spoon', seed=3, max_steps=300)


@pytest.fixture(scope='module')
def first_obs():
    world = MujocoWorld(WorldConfig(task='pick_spoon', camera_rate_hz=0.0, cameras=()))
    obs = world.reset(SPEC)
    world.close()
    return obs


def _chunks(policy, obs, n):
    policy.reset(SPEC)
    return [policy.infer(obs) for _ in range(n)]


def test_chunk_shape_mode_and_determinism(first_obs):
    a = _chunks(ScriptedPolicy(skill=2, horizon=15), first_obs, 3)
    b = _chunks(ScriptedPolicy(skill=2, horizon=15), first_obs, 3)
    assert all(c.values.shape == (15, 8) and c.mode is ActionMode.POSITION for c in a)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.values, y.values)
    # Re-using one policy object across episodes gives the same chunks (reset clears state).
    policy = ScriptedPolicy(skill=2, horizon=15)
    _chunks(policy, first_obs, 5)
    for x, y in zip(a, _chunks(policy, first_obs, 3)):
        np.testing.assert_array_equal(x.values, y.values)
    # The chunk is a trajectory, not one target repeated.
    assert np.linalg.norm(a[0].values[-1, :7] - a[0].values[0, :7]) > 0.01


def test_horizon_one_is_the_closed_loop_policy(first_obs):
    default = _chunks(ScriptedPolicy(skill=1), first_obs, 20)
    explicit = _chunks(ScriptedPolicy(skill=1, horizon=1, execute=3), first_obs, 20)
    for x, y in zip(default, explicit):
        assert x.values.shape == (1, 8)
        np.testing.assert_array_equal(x.values, y.values)
    assert ScriptedPolicy(skill=1).label == 'scripted-good'
    assert ScriptedPolicy(skill=1, horizon=15).label == 'scripted-good-h15'


def test_look_ahead_commits_after_execute_steps(first_obs):
    """Step k of a chunk equals step k of a longer chunk; the next query starts at `execute`."""
    short = _chunks(ScriptedPolicy(skill=0, horizon=10, execute=4), first_obs, 2)
    long = _chunks(ScriptedPolicy(skill=0, horizon=16, execute=4), first_obs, 2)
    np.testing.assert_array_equal(short[0].values, long[0].values[:10])
    # The second query continues from the fourth planned step (same measured joints).
    np.testing.assert_array_equal(short[1].values[:6], long[1].values[:6])


def test_gripper_is_scheduled_by_time_not_by_arrival(first_obs):
    """With the arm frozen, an open-loop chunk still closes the gripper at its planned step."""
    def first_close(policy, queries):
        rows = np.concatenate([c.values[:8] for c in _chunks(policy, first_obs, queries)])
        closed = np.flatnonzero(rows[:, 7] > 0.5)
        return int(closed[0]) if closed.size else None

    # H = 1 waits for the measured arm to arrive (or a 90-step timeout): no close in 60 steps.
    closed_loop = first_close(ScriptedPolicy(skill=0), 60)
    assert closed_loop is None or closed_loop > 60, closed_loop
    chunked = _chunks(ScriptedPolicy(skill=0, horizon=15), first_obs, 8)
    grip = np.concatenate([c.values[:8, 7] for c in chunked])
    step = int(np.flatnonzero(grip > 0.5)[0])
    assert 10 < step < 60, step
    # Within the chunk that closes it the gripper switches once, from open to closed.
    chunk = chunked[step // 8].values[:, 7]
    assert np.all(np.diff(chunk) >= 0) and chunk[0] == 0.0 and chunk[-1] == 1.0


def test_velocity_chunk_integrates_to_the_position_chunk(first_obs):
    """Velocities are the planned deltas over what the nominal controller covers per step."""
    assert 0.4 < NOMINAL_TRACKING < 0.6
    pos = _chunks(ScriptedPolicy(skill=0, horizon=15), first_obs, 1)[0]
    vel = _chunks(ScriptedPolicy(skill=0, horizon=15, action_space='joint_velocity'),
                  first_obs, 1)[0]
    assert vel.mode is ActionMode.VELOCITY
    delta = vel.values[:, :7] * robot.MAX_JOINT_DELTA
    assert np.all(np.abs(delta) <= MAX_VELOCITY_DELTA + 1e-12)
    q = np.asarray(first_obs.joints.position) + np.cumsum(delta * NOMINAL_TRACKING, axis=0)
    # Where no joint is at the cap, the internal model lands exactly on the position plan.
    uncapped = ~np.isclose(np.abs(delta), MAX_VELOCITY_DELTA).any(axis=1)
    uncapped &= np.cumsum(~uncapped) == np.sum(~uncapped)  # after the last capped step
    assert uncapped.sum() >= 5
    np.testing.assert_allclose(q[uncapped], pos.values[uncapped, :7], atol=1e-9)
    np.testing.assert_array_equal(vel.values[:, 7], pos.values[:, 7])


def test_bad_arguments_and_evaluator_entry():
    with pytest.raises(ConfigError, match='horizon'):
        ScriptedPolicy(horizon=0)
    with pytest.raises(ConfigError, match='execute'):
        ScriptedPolicy(horizon=15, execute=0)
    with pytest.raises(ConfigError, match='action_space'):
        ScriptedPolicy(action_space='torque')
    entry = PolicyEntry.parse('sloppy=scripted:skill=2,horizon=15')
    policy = make_policy(entry.policy, **dict(entry.args))
    assert (policy.level, policy.horizon, policy.execute) == (2, 15, 8)
