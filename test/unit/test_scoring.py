"""Progress from video: the aggregation (pure) and the VLM scorer against a scripted chat server
on loopback (the OpenAI chat wire protocol)."""

from __future__ import annotations

import base64

from chat_script_server import ScriptedChatServer, images_in, text_of
import cv2
import numpy as np
import pytest

from realm_ros.core import scoring
from realm_ros.core.errors import ConfigError, DataError, InfrastructureError
from realm_ros.scorers.vlm import VlmScorer


def test_sample_indices_one_per_second_from_15_hz():
    times = np.arange(0, 76) / 15.0  # 5 s at 15 Hz
    idx = scoring.sample_indices(times)
    assert idx == [0, 15, 30, 45, 60, 75]
    assert scoring.sample_indices(times, fps=3.0)[:3] == [0, 5, 10]
    assert scoring.sample_indices([0.0, 0.4]) == [0]


@pytest.mark.parametrize('text, value', [
    ('## Reflection\nmoved\n## Progress Score\n73', 0.73),
    ('## Reflection\nx\n## Progress Score: 40%', 0.40),
    ('### progress score\n**12.5**', 0.125),
    ('## Progress Score\n130', 1.0),
])
def test_parse_progress(text, value):
    assert scoring.parse_progress(text) == pytest.approx(value)


def test_parse_progress_without_a_score_is_refused():
    with pytest.raises(DataError, match='Progress Score'):
        scoring.parse_progress('## Reflection\nI think about 50')


def test_median_drops_runs_of_another_length_and_last_30_percent():
    runs = [[0, 0.2, 0.4, 0.9, 1.0], [0, 0.1, 0.5, 0.7, 0.8], [0, 0.3]]
    curve, dropped = scoring.median_curve(runs)
    assert dropped == [2]
    np.testing.assert_allclose(curve, [0, 0.15, 0.45, 0.8, 0.9])
    # 30 % of 5 frames -> the last 2 (ceil 1.5).
    assert scoring.last_fraction_mean(curve) == pytest.approx(0.85)
    result = scoring.aggregate('x', [0, 1, 2, 3, 4], runs, task_range=(0.1, 0.9))
    assert result.raw_score == pytest.approx(0.85)
    assert result.score == pytest.approx((0.85 - 0.1) / 0.8)
    assert result.dropped_runs == (2,)


def test_success_is_the_last_stage_reached_for_scorer_and_rubric_alike():
    # The rubric's (and the learned scorer's) k / N: success exactly when k == N.
    assert list(scoring.calls_success([0, 1 / 3, 2 / 3, 1.0], 3)) == [False] * 3 + [True]
    assert list(scoring.calls_success([0.74, 0.75], 2)) == [False, True]
    with pytest.raises(DataError, match='at least one stage'):
        scoring.calls_success([1.0], 0)


def test_rescale_clips_and_checks_the_range():
    assert scoring.rescale(0.9, 0.2, 0.8) == 1.0
    assert scoring.rescale(0.1, 0.2, 0.8) == 0.0
    with pytest.raises(DataError, match='ceiling > floor'):
        scoring.rescale(0.5, 0.8, 0.8)


def test_agreement_with_rubric():
    out = scoring.agreement_with_rubric([0.9, 0.2, 0.6, 0.1], [1.0, 1 / 3, 2 / 3, 0.0], 3)
    assert out['pearson_r'] > 0.95 and out['episodes'] == 4
    # One success rule for both sides: the last of 3 stages reached, >= 2.5 / 3. The scorer's
    # 0.9 and the rubric's 1.0 are successes; 0.6 (which a 0.5 threshold would call one) is not.
    assert out['success_accuracy'] == 1.0
    # Per episode, its own task's stage count: 0.8 reaches the last of 2 stages, not of 3.
    per_task = scoring.agreement_with_rubric([0.8, 0.8], [1.0, 1.0], [2, 3])
    assert per_task['success_accuracy'] == 0.5
    assert out['mean_abs_error'] == pytest.approx((0.1 + 0.2 / 1.5 + 0.2 / 3 + 0.1) / 4)


def _episode(seconds=4, privileged=True):
    times = np.arange(0, seconds * 15 + 1) / 15.0
    frames = [np.full((36, 64, 3), int(255 * t / seconds), np.uint8) for t in times]
    priv = [{'ee_pos': [0.1 * t, 0.0, 0.3], 'gripper': 0.5} for t in times] if privileged \
        else None
    return scoring.EpisodeFrames(frames=frames, times_s=list(times),
                                 instruction='pick up the spoon', task='pick_spoon',
                                 privileged=priv)


def _answer(value):
    return f'## Reflection\nThe arm moves.\n## Progress Score\n{value}'


def test_vlm_protocol_frames_prompt_median_and_last_30_percent():
    # Per run r and frame t (1..4), the scripted answer is 20 t + 5 r: the median over
    # three runs is run 1's, 20 t + 5.
    def script(request, index):
        t = images_in(request) - 1  # initial + (t - 1) so far + current
        run = index // 4
        return _answer(20 * t + 5 * run)

    episode = _episode()
    with ScriptedChatServer(script) as server:
        scorer = VlmScorer(server.endpoint, 'qwen2.5-vl-7b', api_key_env='REALM_TEST_KEY')
        result = scorer.score(episode)
    assert len(server.requests) == 3 * 4  # 3 runs x frames at 1, 2, 3, 4 s
    assert [images_in(r) for r in server.requests[:4]] == [2, 3, 4, 5]
    first = server.requests[0]
    assert first['model'] == 'qwen2.5-vl-7b'
    text = text_of(first)
    assert 'pick up the spoon' in text and '## Reflection' in text
    assert '## Progress Score' in text and 'initial frame' in text
    assert '- ee_pos: [0.100, 0.000, 0.300]' in text  # the privileged state at t = 1 s
    # The images are JPEGs of the sampled frames: the current frame of request 0 is t = 1 s.
    user = next(m for m in first['messages'] if m['role'] == 'user')
    url = [p for p in user['content'] if p['type'] == 'image_url'][-1]['image_url']['url']
    assert url.startswith('data:image/jpeg;base64,')
    image = cv2.imdecode(np.frombuffer(base64.b64decode(url.split(',', 1)[1]), np.uint8),
                         cv2.IMREAD_COLOR)
    assert image.shape == (36, 64, 3) and abs(int(image.mean()) - 255 // 4) <= 2
    assert result.curve == pytest.approx((0.0, 0.25, 0.45, 0.65, 0.85))
    # Last 30 % of 5 frames = the last 2: (0.65 + 0.85) / 2.
    assert result.score == pytest.approx(0.75)
    assert result.scorer == 'vlm:qwen2.5-vl-7b'
    assert result.as_record()['scorer_progression'] == pytest.approx(0.75)


def test_vlm_without_privileged_state_and_with_a_key(monkeypatch):
    monkeypatch.setenv('REALM_TEST_KEY', 'sk-local')
    with ScriptedChatServer(lambda req, i: _answer(50)) as server:
        scorer = VlmScorer(server.endpoint, 'm', runs=1, privileged=False,
                           api_key_env='REALM_TEST_KEY')
        scorer.score(_episode(seconds=2))
    assert 'Privileged' not in text_of(server.requests[0])
    assert server.headers[0]['Authorization'] == 'Bearer sk-local'


def test_a_failed_request_ends_its_run_which_the_median_drops():
    def script(request, index):
        if index == 5:  # run 2's second request fails, also on its retry
            return 500
        if index == 6:
            return 'I cannot tell.'  # no score: the retry of request 5 fails too
        return _answer(10 * images_in(request))

    with ScriptedChatServer(script) as server:
        result = VlmScorer(server.endpoint, 'm', retries=1).score(_episode())
    assert result.dropped_runs == (1,)
    assert len(result.runs[1]) == 2  # 0 and the first answer, then the pass ended
    assert result.curve == pytest.approx((0.0, 0.2, 0.3, 0.4, 0.5))


def test_a_server_that_never_answers_is_an_infrastructure_error():
    with ScriptedChatServer(lambda req, i: 503) as server:
        with pytest.raises(InfrastructureError, match='no pass'):
            VlmScorer(server.endpoint, 'm', runs=2, retries=0).score(_episode(seconds=2))


@pytest.mark.parametrize('kwargs, message', [
    ({'endpoint': 'gpu-box:8000'}, 'http'),
    ({'model': ''}, 'model'),
    ({'runs': 0}, 'runs'),
])
def test_vlm_bad_options(kwargs, message):
    options = {'endpoint': 'http://127.0.0.1:9/v1', 'model': 'm', **kwargs}
    with pytest.raises(ConfigError, match=message):
        VlmScorer(**options)


def test_episode_frames_are_checked():
    with pytest.raises(DataError, match='frames but'):
        scoring.EpisodeFrames(frames=[np.zeros((2, 2, 3))], times_s=[0, 1], instruction='x')
    with pytest.raises(DataError, match='decrease'):
        scoring.EpisodeFrames(frames=[np.zeros((2, 2, 3))] * 2, times_s=[1, 0],
                              instruction='x')


def test_score_command_on_a_video(tmp_path):
    import json
    import os
    import subprocess

    import imageio.v2 as imageio
    from rostest import BIN

    video = tmp_path / 'episode.mp4'
    frames = [np.full((48, 64, 3), 10 * k, np.uint8) for k in range(46)]  # 3 s at 15 fps
    imageio.mimwrite(str(video), frames, fps=15, codec='libx264', macro_block_size=16)
    with ScriptedChatServer(lambda req, i: _answer(30 * (images_in(req) - 1))) as server:
        proc = subprocess.run(
            [str(BIN / 'realm-ros'), 'score', '--video', str(video), '--instruction',
             'flip the switch', '--endpoint', server.endpoint, '--model', 'm', '--runs', '2'],
            capture_output=True, text=True, timeout=120, env=dict(os.environ))
        assert proc.returncode == 0, proc.stderr
        assert len(server.requests) == 2 * 3
    out = json.loads(proc.stdout)
    assert out['scorer_curve'] == pytest.approx([0.0, 0.3, 0.6, 0.9])
    assert out['scorer_progression'] == pytest.approx(0.75)  # last 2 of 4 frames
    bad = subprocess.run([str(BIN / 'realm-ros'), 'score', '--video', str(tmp_path / 'no.mp4'),
                          '--instruction', 'x', '--endpoint', server.endpoint, '--model', 'm'],
                         capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert bad.returncode == 2 and 'does not exist' in bad.stderr
    assert 'Traceback' not in bad.stderr


def test_the_scorer_registry_builds_by_name_and_refuses_unknown_names():
    assert {'learned', 'vlm'} <= set(scoring.SCORERS)
    scorer = scoring.make_scorer('vlm', endpoint='http://127.0.0.1:9/v1', model='m')
    assert isinstance(scorer, VlmScorer) and scorer.name == 'vlm:m'
    with pytest.raises(ConfigError, match='unknown scorer'):
        scoring.make_scorer('oracle')
    with pytest.raises(ConfigError, match='module:Class'):
        scoring.register('x', 'no_colon')


def test_proposals_from_a_progress_curve():
    result = scoring.aggregate('vlm:m', [0, 1, 2, 3, 4], [[0.0, 0.2, 0.5, 0.4, 0.7]])
    proposals = scoring.proposals_from_curve(result, ('REACH', 'GRASP', 'LIFT_LARGE'))
    # thresholds 1/6, 1/2, 5/6 of the running maximum: REACH at 1 s, GRASP at 2 s, no lift
    assert [(p.stage, p.time_s) for p in proposals] == [('REACH', 1.0), ('GRASP', 2.0)]


def test_stage_review_keeps_who_decided():
    proposals = [scoring.StageProposal('REACH', 1.0, 0.9), scoring.StageProposal('GRASP', 2.0)]
    review = scoring.StageReview()
    assert review.record_fields() == {'stages_decided_by': [], 'decided_by': 'operator'}
    with pytest.raises(ConfigError, match='no stage proposal'):
        review.to_accept(0)
    assert 'proposes 2 stage(s): REACH at 1.0 s' in review.propose('learned:x@1', proposals)
    for _ in review.to_accept(0):
        review.marked('learned:x@1')
    fields = review.record_fields()
    assert fields['decided_by'] == 'learned:x@1'
    assert fields['stages_decided_by'] == ['learned:x@1'] * 2
    assert fields['stage_proposal']['accepted'] and not fields['stage_proposal']['corrected']
    assert fields['stage_proposal']['stages'][0] == {'stage': 'REACH', 'time_s': 1.0,
                                                     'confidence': 0.9}
    review.undone()  # the operator corrects: GRASP was not met
    fields = review.record_fields()
    assert fields['decided_by'] == 'operator'
    assert fields['stages_decided_by'] == ['learned:x@1']
    assert fields['stage_proposal']['corrected']
    # Accepting after the operator marked the first stage marks only the rest.
    review.reset()
    review.propose('learned:x@1', proposals)
    review.marked('operator')
    assert [p.stage for p in review.to_accept(1)] == ['GRASP']


def test_run_dir_section_keeps_scores_beside_the_rubric():
    records = [{'pair_id': f'p{k}', 'role': role, 'policy': 'a' if k < 2 else 'b',
                'task': 'pick_spoon', 'progression': [1.0, 0.5, 0.0][min(k, 2)]}
               for k in range(3) for role in ('real', 'sim')]
    scores = [{'pair_id': f'p{k}', 'role': 'real', 'scorer': 's', 'scorer_progression': v}
              for k, v in enumerate([0.9, 0.6, 0.1])]
    scores.append({'pair_id': 'gone', 'role': 'real', 'scorer': 's', 'scorer_progression': 1.0})
    section = scoring.run_dir_section(records, scores)['s']
    assert section['episodes'] == 3
    assert section['per_policy']['a']['real'] == {'episodes': 2, 'scorer': pytest.approx(0.75),
                                                  'rubric': pytest.approx(0.75)}
    assert 'sim' not in section['per_policy']['a']
    assert section['agreement']['pearson_r'] > 0.95
    # pick_spoon's 3 stages: 0.9 reaches the last (as the rubric's 1.0), 0.6 does not.
    assert section['agreement']['success_accuracy'] == 1.0
