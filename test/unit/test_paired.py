"""The paired evaluation's ROS-free half (realm_ros.programs.paired): records, the stall rule, the
operator's text. The orchestration over ROS runs in test/test_evaluator.py."""

from realm_ros.core.episode import EpisodeState
from realm_ros.core.types import EpisodeSpec, Progress
from realm_ros.programs import paired


def _spec(**kw):
    return EpisodeSpec(task='push_switch', seed=3, max_steps=40, pair_id='p0', **kw)


def test_a_world_that_sent_no_progress_records_no_stages_and_no_scorer():
    episode = EpisodeState(_spec(), tracked=False, started=False)
    episode.fail('no progress from /sim for 61.0 s')
    record = paired.world_record(_spec(), 'sim', 'mujoco', episode)
    assert (record['stages'], record['scored_by'], record['steps']) == ([], '', 0)
    assert record['outcome'] == 'infra_failure' and record['wall_time_s'] == 0.0


def test_a_world_record_is_its_received_progress():
    episode = EpisodeState(_spec(), tracked=False, started=False)
    episode.start(now=0.0)
    episode.receive(Progress('push_switch', ('REACH', 'TOGGLED_ON'), (True, False), 0.5, 0.5,
                             step=40, source='operator'))
    record = paired.world_record(_spec(), 'real', 'franka', episode, {'confirmed': True})
    assert record['outcome'] == 'timeout' and record['progression'] == 0.5
    assert record['stages_reached'] == ['REACH'] and record['scored_by'] == 'operator'
    assert record['operator_setup'] == {'confirmed': True} and record['steps'] == 40


def test_overdue_names_the_deadline_or_the_silence():
    config = paired.EvaluatorConfig(episode_timeout_s=600.0, stall_timeout_s=60.0)
    episode = EpisodeState(_spec(), tracked=False)
    assert paired.overdue(episode, '/sim', 100.0, 700.0, 50.0, config) == ''
    assert 'no end after 600 s (last step None)' in paired.overdue(
        episode, '/sim', 700.0, 700.0, 650.0, config)
    assert 'no progress from /sim for 61.0 s' in paired.overdue(
        episode, '/sim', 111.0, 700.0, 50.0, config)


def test_operator_text_names_the_scene_the_changes_and_how_to_confirm():
    text, changes = paired.operator_setup_text(_spec(), '/real')
    assert text.startswith("[p0] set up the real scene: task 'push_switch', perturbation "
                           'Default') and changes == []
    assert text.endswith('/real/operator/confirm_reset std_srvs/srv/Trigger')
    text, changes = paired.operator_setup_text(_spec(perturbation='V-LIGHT'), '/real')
    assert 'instruction: "' in text and changes and all(c in text for c in changes)
