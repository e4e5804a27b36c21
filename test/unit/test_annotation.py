"""Operator annotation: REALM's in-order sticky stages, timestamps, records (pure core)."""

import json

import numpy as np
import pytest

from realm_ros.core import annotation
from realm_ros.core.errors import ConfigError, EpisodeError
from realm_ros.core.types import EpisodeSpec

SPEC = EpisodeSpec(task='put_green_block_in_bowl', seed=3, policy='pi0', pair_id='p1')


def test_stages_come_from_the_tasks_skill():
    assert annotation.stages_for_task('put_banana_into_box')[-1] == 'PLACE_INTO'
    assert annotation.stages_for_task('stack_cubes')[-1] == 'PLACE_ONTO'
    assert annotation.stages_for_task('open_drawer') == annotation.SKILL_STAGES['open_drawer']
    assert len(annotation.stages_for_task('pick_spoon')) == 3
    with pytest.raises(ConfigError, match='stages'):
        annotation.stages_for_task('juggle_balls')


def test_marks_are_in_order_and_progression_is_the_met_prefix():
    a = annotation.EpisodeAnnotator()
    with pytest.raises(EpisodeError, match='confirm the scene reset'):
        a.mark_stage(0.0)
    a.confirm_reset(10.0, SPEC)
    assert a.progress().met == (False,) * 5
    assert 'REACH' in a.mark_stage(11.0)
    assert 'GRASP' in a.mark_stage(12.5)
    p = a.progress(step=30)
    assert p.met == (True, True, False, False, False)
    assert p.progression == pytest.approx(0.4) and p.max_progression == pytest.approx(0.4)
    assert p.source == 'operator' and p.step == 30 and p.task == SPEC.task
    assert 'GRASP' in a.undo(13.0)
    assert a.progress().progression == pytest.approx(0.2)
    record = a.end(20.0, steps=150)
    assert record['outcome'] == 'timeout' and record['success'] is False
    assert record['stages_reached'] == ['REACH'] and record['progression'] == pytest.approx(0.2)
    assert [(e['event'], e['time'], e['stage']) for e in record['annotations']] == [
        ('reset_confirmed', 10.0, ''), ('stage', 11.0, 'REACH'), ('stage', 12.5, 'GRASP'),
        ('undo', 13.0, 'GRASP'), ('ended', 20.0, '')]
    assert record['wall_time_s'] == pytest.approx(10.0) and record['steps'] == 150
    assert record['source'] == 'operator' and record['world'] == 'real'
    assert record['pair_id'] == 'p1' and record['seed'] == 3


def test_cannot_mark_past_the_last_stage_or_start_twice():
    a = annotation.EpisodeAnnotator()
    a.confirm_reset(0.0, EpisodeSpec(task='pick_spoon'))
    with pytest.raises(EpisodeError, match='still running'):
        a.confirm_reset(1.0, SPEC)
    for t in (1.0, 2.0, 3.0):
        a.mark_stage(t)
    with pytest.raises(EpisodeError, match='already met'):
        a.mark_stage(4.0)
    with pytest.raises(EpisodeError, match='cannot be judged a failure'):
        a.end(5.0, success=False)
    record = a.end(5.0)
    assert record['outcome'] == 'success' and record['success'] is True
    with pytest.raises(EpisodeError, match='no episode is running'):
        a.undo(6.0)


def test_judged_success_marks_the_remaining_stages_and_abort_is_not_scored_as_success():
    a = annotation.EpisodeAnnotator()
    a.confirm_reset(0.0, SPEC)
    a.mark_stage(1.0)
    record = a.end(9.0, success=True)
    assert record['progression'] == 1.0 and record['outcome'] == 'success'
    assert [e['stage'] for e in record['annotations'] if e['event'] == 'stage'] == list(
        annotation.SKILL_STAGES['put'])
    a.confirm_reset(10.0, SPEC)
    a.mark_stage(11.0)
    record = a.end(12.0, abort=True)
    assert record['outcome'] == 'aborted' and record['episode_index'] == 2


def test_explicit_stages_and_records_append(tmp_path):
    a = annotation.EpisodeAnnotator(world='lab_arm')
    a.confirm_reset(0.0, SPEC, stages=('A', 'B'))
    a.mark_stage(0.5)
    path = tmp_path / 'sub' / 'ops.jsonl'
    annotation.append_record(path, a.end(1.0, success=False))
    a.confirm_reset(2.0, SPEC, stages=('A', 'B'))
    annotation.append_record(path, a.end(3.0))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r['progression'] for r in lines] == [0.5, 0.0]
    assert lines[0]['world'] == 'lab_arm' and lines[0]['stages'] == ['A', 'B']


def test_config_validation_names_the_field():
    with pytest.raises(ConfigError, match='stages'):
        annotation.OperatorConfig(stages=('A', 'A'))
    with pytest.raises(ConfigError, match='publish_hz'):
        annotation.OperatorConfig(publish_hz=-1.0)


def test_frames_due_keeps_a_constant_rate_whatever_the_camera_sends():
    """Frame k of the operator's episode video shows the scene at start + k / fps: a camera
    faster than the video drops frames, a gap is filled with copies of the next frame."""
    written = 0
    for now in np.arange(0.0, 2.0, 1 / 30):  # a 30 Hz camera into a 10 fps video
        written += annotation.frames_due(0.0, float(now), written, 10)
    assert written == 20
    assert annotation.frames_due(0.0, 2.55, written, 10) == 6  # 0.55 s without a frame
    assert annotation.frames_due(5.0, 4.9, 0, 10) == 0  # before the start
    with pytest.raises(ConfigError, match='frame rate'):
        annotation.frames_due(0.0, 1.0, 0, 0)


def test_video_relpath_names_the_world_episode_and_start():
    assert annotation.video_relpath('real', 3, 12.3456) == 'videos/real/episode_0003_12346.webm'
    with pytest.raises(ConfigError, match='world'):
        annotation.video_relpath('../x', 1, 0.0)
