"""One rule decides when an episode ends and how (core.episode.EpisodeReferee), one record
schema for every runner (EpisodeResult.to_record), and older records still read."""

import json

from realm_ros.core.episode import EpisodeReferee
from realm_ros.core.evaluation import EpisodeLog
from realm_ros.core.types import (
    REAL,
    SIM,
    STEPS_AFTER_SUCCESS,
    EpisodeOutcome,
    EpisodeResult,
    EpisodeSpec,
    record_role,
)


def test_ends_at_max_steps_without_success():
    referee = EpisodeReferee(max_steps=10)
    assert not any(referee.update(k, 0.5) for k in range(1, 10))
    assert referee.update(10, 0.5) and referee.over
    assert referee.outcome() is EpisodeOutcome.TIMEOUT


def test_ends_a_fixed_number_of_steps_after_success():
    referee = EpisodeReferee(max_steps=800)
    for k in range(1, 7):
        assert not referee.update(k, k / 6)
    assert referee.success_step == 6
    ends = [k for k in range(7, 40) if referee.update(k, 1.0)]
    assert ends[0] == 6 + STEPS_AFTER_SUCCESS
    assert referee.outcome() is EpisodeOutcome.SUCCESS


def test_an_infrastructure_error_is_never_a_success():
    referee = EpisodeReferee(max_steps=5)
    referee.update(3, 1.0)
    assert referee.outcome('server down') is EpisodeOutcome.INFRA_FAILURE
    assert referee.outcome() is EpisodeOutcome.SUCCESS
    assert EpisodeReferee(max_steps=0).over  # nothing to run


def test_record_schema_carries_role_and_backend_separately():
    spec = EpisodeSpec(task='pick_spoon', seed=3, policy='expert', pair_id='p/0')
    paired = EpisodeResult(spec=spec, outcome=EpisodeOutcome.SUCCESS, progression=1.0,
                           role=SIM, backend='mujoco', sim_time_s=None, scored_by='privileged')
    alone = EpisodeResult(spec=spec, outcome=EpisodeOutcome.TIMEOUT, progression=0.5,
                          backend='mujoco')
    for result in (paired, alone):
        assert set(result.to_record()) == set(paired.to_record())
    assert paired.to_record()['role'] == 'sim' and paired.to_record()['backend'] == 'mujoco'
    assert paired.to_record()['world'] == 'sim' and alone.to_record()['world'] == 'mujoco'
    failed = EpisodeResult(spec=spec, outcome=EpisodeOutcome.INFRA_FAILURE, progression=1.0)
    assert not failed.success and paired.success and not alone.success


def test_records_written_before_role_existed_still_read(tmp_path):
    old = {'pair_id': 'p/0', 'world': REAL, 'policy': 'expert', 'progression': 1.0}
    new = {'pair_id': 'p/0', 'role': SIM, 'backend': 'mujoco', 'world': SIM}
    path = tmp_path / 'episodes.jsonl'
    path.write_text(json.dumps(old) + '\n' + json.dumps(new) + '\n')
    log = EpisodeLog(path)
    assert log.done('p/0', REAL) and log.done('p/0', SIM)
    assert [record_role(r) for r in log.records] == [REAL, SIM]


# -- the one episode state (core.episode.EpisodeState) ---------------------------------------

def _obs(privileged=None):
    import numpy as np

    from realm_ros.core.types import JointState, Observation
    return Observation(joints=JointState(np.zeros(7), np.zeros(7), np.zeros(7), 0.0),
                       privileged=privileged or {})


def test_episode_state_counts_scores_and_ends_by_the_referee():
    from realm_ros.core.episode import EpisodeState
    spec = EpisodeSpec(task='empty', max_steps=3)
    state = EpisodeState(spec, wall_start=100.0)
    state.begin(_obs(), sim_time=2.0)
    assert state.tracker is None and state.steps == 0
    for _ in range(2):
        assert state.advance(_obs(), (2.0, 2.1)) == '' and not state.judge()
    assert state.advance(_obs(), (2.1, 2.2)) == '' and state.judge() and state.over
    result = state.result('mujoco', sim_now=2.2, now=101.5)
    assert (result.steps, result.outcome, result.wall_time_s) == (3, EpisodeOutcome.TIMEOUT, 1.5)
    assert abs(result.sim_time_s - 0.2) < 1e-12 and result.scored_by == ''


def test_episode_state_ends_on_a_clock_that_runs_backwards_or_any_failure():
    from realm_ros.core.episode import EpisodeState
    state = EpisodeState(EpisodeSpec(task='push_switch'))
    error = state.advance(_obs(), (1.0, 0.5))
    assert 'ran backwards at step 1' in error and state.error == error
    assert state.outcome() is EpisodeOutcome.INFRA_FAILURE
    other = EpisodeState(EpisodeSpec(task='push_switch'))
    other.fail('')  # an InfrastructureError without a message is still never scored
    assert other.outcome() is EpisodeOutcome.INFRA_FAILURE


def test_episode_state_follows_progress_scored_elsewhere():
    """The evaluator's use: no tracker, progress received from the world's messages, and a
    wall clock that starts only when the policy is activated."""
    from realm_ros.core.episode import EpisodeState
    from realm_ros.core.types import Progress
    state = EpisodeState(EpisodeSpec(task='push_switch', max_steps=800), tracked=False,
                         started=False)
    assert state.tracker is None and state.wall_start is None and state.wall_time() == 0.0
    state.start(now=10.0)
    done = Progress('push_switch', ('A', 'B'), (True, True), 1.0, 1.0, step=40)
    assert not state.receive(done) and state.steps == 40 and state.received
    later = Progress('push_switch', ('A', 'B'), (True, True), 1.0, 1.0,
                     step=40 + STEPS_AFTER_SUCCESS)
    assert state.receive(later) and state.outcome() is EpisodeOutcome.SUCCESS
