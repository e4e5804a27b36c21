"""Policy wrappers: chunk broker, gripper binarisation, clipping, factory."""

import numpy as np
import pytest

from realm_ros.core import robot
from realm_ros.core.errors import ConfigError
from realm_ros.core.policy import (
    COMMON_SETTINGS,
    POLICIES,
    ActionChunker,
    ActionClipper,
    GripperBinarizer,
    HoldPolicy,
    Policy,
    make_policy,
    policy_class,
    policy_settings,
)
from realm_ros.core.types import ActionChunk, ActionMode, EpisodeSpec, JointState, Observation


class CountingPolicy(Policy):
    """Returns chunks whose rows are numbered, and counts calls."""

    name = 'counting'

    def __init__(self, horizon=10, mode=ActionMode.VELOCITY):
        self.calls = 0
        self.horizon = horizon
        self.mode = mode

    def infer(self, obs):
        self.calls += 1
        values = np.zeros((self.horizon, 8))
        values[:, 0] = np.arange(self.horizon) + 100 * self.calls
        values[:, 7] = np.linspace(0, 1, self.horizon)
        return ActionChunk(values, self.mode)


def _obs():
    state = JointState(robot.RESET_Q.copy(), np.zeros(7), np.zeros(7), 0.0)
    return Observation(joints=state)


def test_chunker_executes_k_of_h_then_requeries():
    inner = CountingPolicy(horizon=10)
    policy = ActionChunker(inner, execute=8)
    policy.reset(EpisodeSpec())
    firsts = [policy.infer(_obs()).values[0, 0] for _ in range(17)]
    assert firsts[:8] == [100 + i for i in range(8)]
    assert firsts[8:16] == [200 + i for i in range(8)]
    assert firsts[16] == 300
    assert inner.calls == 3


def test_chunker_with_short_chunk_requeries_at_chunk_end():
    inner = CountingPolicy(horizon=3)
    policy = ActionChunker(inner, execute=8)
    [policy.infer(_obs()) for _ in range(4)]
    assert inner.calls == 2


def test_chunker_reset_discards_the_pending_chunk():
    inner = CountingPolicy()
    policy = ActionChunker(inner, execute=8)
    policy.infer(_obs())
    policy.reset(EpisodeSpec())
    assert policy.infer(_obs()).values[0, 0] == 200


def test_binarizer_and_clipper():
    policy = ActionClipper(GripperBinarizer(CountingPolicy(horizon=5)))
    chunk = policy.infer(_obs())
    assert chunk.values[:, 7].tolist() == [0, 0, 0, 1, 1]
    assert np.all(np.abs(chunk.values[:, :7]) <= 1.0)
    position = ActionClipper(CountingPolicy(horizon=2, mode=ActionMode.POSITION))
    values = position.infer(_obs()).values
    assert np.all(values[:, :7] <= robot.JOINT_UPPER)


def test_hold_policy_and_factory():
    chunk = make_policy('hold').infer(_obs())
    np.testing.assert_allclose(chunk.values[0, :7], robot.RESET_Q)
    assert isinstance(make_policy('hold'), HoldPolicy)
    with pytest.raises(ConfigError, match='unknown policy'):
        make_policy('gpt')
    with pytest.raises(ConfigError):
        ActionChunker(HoldPolicy(), execute=0)


@pytest.mark.parametrize('name', sorted(POLICIES))
def test_every_policy_refuses_an_unknown_setting_naming_it(name):
    accepted = policy_settings(policy_class(name))
    with pytest.raises(ConfigError) as err:
        make_policy(name, horizonn=3)  # a typo in policy_args
    message = str(err.value)
    assert "'horizonn'" in message and repr(name) in message
    assert message.endswith('it accepts: ' + (', '.join(accepted) or 'none'))


def test_common_settings_reach_only_the_policies_that_declare_them():
    common = {'skill': 2, 'seed': 7, 'host': 'nowhere', 'port': 1, 'execute': 4}
    assert isinstance(make_policy('hold', common=common), HoldPolicy)
    scripted = make_policy('scripted', common=common)
    assert (scripted.level, scripted.seed) == (2, 7)
    openpi = make_policy('openpi', common=common, port=9)  # its own settings win
    assert openpi.uri.endswith('nowhere:9')
    assert policy_settings(policy_class('hold')) == ()
    assert set(COMMON_SETTINGS) >= {'skill', 'seed', 'host', 'port', 'execute'}


@pytest.mark.parametrize('command', [
    ['episode', '--policy', 'scripted', '--task', 'push_switch'],
    ['serve', '--policy', 'hold', '--port', '0', '--max-seconds', '0.1'],
])
def test_cli_policy_args_typo_exits_2_naming_the_key(command, capsys):
    from realm_ros import cli
    assert cli.main([*command, '--policy-args', '{"horizonn": 3}']) == 2
    err = capsys.readouterr().err
    assert "has no setting 'horizonn'; it accepts:" in err, err


def test_rate_limiter_bounds_each_step_and_the_distance_to_the_arm():
    from realm_ros.core.config import SafetyConfig
    from realm_ros.core.policy import JointRateLimiter
    from realm_ros.core.safety import SafetyMonitor

    class Jump(Policy):
        name = 'jump'

        def infer(self, obs):
            return ActionChunk(np.r_[robot.RESET_Q + 0.8, 1.0][None, :], ActionMode.POSITION)

    policy = JointRateLimiter(Jump())
    policy.reset(EpisodeSpec())
    # The joint-space rules only: with the arm stuck 0.25 rad behind, the workspace look-ahead
    # (the TCP lag extrapolated, test_safety.py) rightly predicts an overshoot and holds.
    safety = SafetyMonitor(SafetyConfig(workspace_lookahead=0.0), 1 / 15)
    previous = robot.RESET_Q.copy()
    for _ in range(3):  # the arm does not move at all: targets stop 0.25 rad ahead of it
        target = policy.infer(_obs()).values[0, :7]
        assert np.all(np.abs(target - previous) <= policy.max_step + 1e-12)
        assert np.all(np.abs(target - robot.RESET_Q) <= 0.25 + 1e-12)
        safety.check(target, previous, robot.RESET_Q, 0.0)  # the bridge accepts every step
        previous = target


def test_rate_limiter_scales_velocity_commands_uniformly():
    from realm_ros.core.policy import JointRateLimiter
    values = JointRateLimiter(CountingPolicy(horizon=1)).infer(_obs()).values
    arm = values[0, :7]
    assert np.all(np.abs(0.2 * arm) <= JointRateLimiter(HoldPolicy()).max_step + 1e-12)
    assert arm[0] != 0 and np.count_nonzero(arm) == 1  # direction kept
