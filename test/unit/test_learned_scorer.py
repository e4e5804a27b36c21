"""The learned progress-and-stage scorer: trained here (tiny, on drawn frames whose bar grows
with the stage), its checkpoint, its scores and stage proposals, and ``realm-ros score RUN_DIR``
writing scores beside the rubric into a run folder and its report.

The shipped checkpoint is checked too: it loads, knows its tasks and scores an episode."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

pytest.importorskip('torch')

from scorer_bars import TASK, bar_episode, bar_frame, train_tiny  # noqa: E402

from realm_ros.core import appearance, metrics, scoring  # noqa: E402
from realm_ros.core.errors import DataError  # noqa: E402
from realm_ros.scorers import learned  # noqa: E402


@pytest.fixture(scope='module')
def tiny(tmp_path_factory):
    """A tiny scorer trained on drawn episodes (a few seconds on CPU), saved to a file."""
    return train_tiny(tmp_path_factory.mktemp('scorer') / 'tiny.pt')


def test_a_tiny_scorer_learns_the_stages_of_held_out_episodes(tiny):
    scorer = learned.LearnedScorer(tiny)
    assert scorer.name.startswith('learned:tiny@') and len(scorer.version) == 8
    held_out = [bar_episode(final, 100 + final) for final in range(4)] * 2
    figures = learned.evaluate(scorer, held_out)
    assert figures['episodes'] == 8 and figures['frames'] == 8 * 12
    assert figures['stage_accuracy'] > 0.8
    assert figures['pearson_r'] > 0.9
    assert figures['success_accuracy'] == 1.0


def test_scores_and_proposals_are_monotone_and_in_order(tiny):
    scorer = learned.LearnedScorer(tiny)
    episode = bar_episode(2, 7)
    frames = scoring.EpisodeFrames(frames=list(episode.frames), times_s=episode.times_s,
                                   instruction='pick up the spoon', task=TASK)
    result = scorer.score(frames)
    assert result.scorer == scorer.name
    assert all(b >= a for a, b in zip(result.curve, result.curve[1:]))
    assert result.score == pytest.approx(result.curve[-1])
    assert result.score == pytest.approx(2 / 3, abs=0.2)
    proposals = scoring.propose_stages(scorer, frames, ('REACH', 'GRASP', 'LIFT_LARGE'))
    assert [p.stage for p in proposals] == ['REACH', 'GRASP']
    assert proposals[0].time_s < proposals[1].time_s
    assert 0.0 <= proposals[0].confidence <= 1.0


def test_a_learned_score_record_holds_what_docs_scoring_md_says(tiny):
    scorer = learned.LearnedScorer(tiny)
    episode = bar_episode(2, 7)
    result = scorer.score(scoring.EpisodeFrames(frames=list(episode.frames),
                                                times_s=episode.times_s, instruction='x',
                                                task=TASK))
    record = result.as_record()
    assert set(record) == {'scorer', 'scorer_progression', 'scorer_raw', 'scorer_curve',
                           'scorer_times_s'}
    # No rescaling: scorer_raw is the progression; the expected-count curve is in no record.
    assert record['scorer_raw'] == record['scorer_progression'] == record['scorer_curve'][-1]
    expected, _ = scorer.curves(list(episode.frames), TASK)
    assert list(result.runs[0]) == pytest.approx(list(expected))
    assert not any(value == pytest.approx(list(expected)) for value in record.values()
                   if isinstance(value, list))


def test_unknown_task_and_bad_files_are_one_line_errors(tiny, tmp_path):
    scorer = learned.LearnedScorer(tiny)
    frames = scoring.EpisodeFrames(frames=[np.zeros((36, 64, 3), np.uint8)], times_s=[0.0],
                                   instruction='x', task='stack_cubes')
    with pytest.raises(DataError, match="trained on tasks \\['pick_spoon'\\]"):
        scorer.score(frames)
    bad = tmp_path / 'bad.pt'
    bad.write_bytes(b'not a checkpoint')
    with pytest.raises(DataError, match='not a scorer checkpoint'):
        learned.LearnedScorer(bad)


def _video(path, size, frames):
    import imageio.v2 as imageio
    rng = np.random.default_rng(0)
    imageio.mimwrite(str(path), [bar_frame(min(3, k // 3), rng, size) for k in range(frames)],
                     fps=15, codec='libx264', macro_block_size=1)
    return str(path)


def test_score_video_refuses_bad_input_in_one_line_naming_the_flag(tiny, tmp_path, capsys):
    from realm_ros.cli import main

    good = _video(tmp_path / 'good.mp4', (36, 64), 12)
    square = _video(tmp_path / 'square.mp4', (48, 64), 12)
    short = _video(tmp_path / 'short.mp4', (36, 64), 2)
    common = ['score', '--checkpoint', str(tiny), '--video']
    assert main([*common, good, '--task', TASK]) == 0
    assert json.loads(capsys.readouterr().out)['scorer'].startswith('learned:tiny@')
    for argv, message in [
            ([good, '--instruction', 'pick up the spoon'], '--task NAME is needed by the '),
            ([good, '--task', 'stack_cubes'], '--task stack_cubes: the learned:tiny@'),
            ([square, '--task', TASK], f'--video {square}: 64x48 frames; the learned scorer'),
            ([short, '--task', TASK], f'--video {short}: 0.07 s of video; the learned scorer '
                                      'needs at least 0.33 s')]:
        assert main([*common, *argv]) == 2, argv
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and message in err, err
        assert "cannot score ''" not in err


def test_labelled_episodes_round_trip(tmp_path):
    episodes = [bar_episode(1, 0), bar_episode(3, 1, frames=10)]
    learned.save_episodes(tmp_path / 'set.npz', episodes)
    back = learned.load_episodes(tmp_path / 'set.npz')
    assert [len(e.met) for e in back] == [12, 10]
    assert back[1].progression == 1.0 and back[1].success and not back[0].success
    assert np.array_equal(back[0].frames, episodes[0].frames)


def test_score_evals_cache_is_keyed_by_the_look_not_the_plan(tmp_path, monkeypatch):
    from realm_ros.commands import score

    runs = []

    def collect(worlds, task_names, policies, seeds, max_steps, appearance_file, on_episode):
        runs.append(appearance_file)
        return [bar_episode(len(runs) % 4, 0)]
    monkeypatch.setattr(learned, 'collect', collect)
    look, other, moved = (tmp_path / name for name in ('look.yaml', 'other.yaml', 'moved.yaml'))
    look.write_text('brightness: 1.0\n')
    other.write_text('brightness: 0.7\n')
    moved.write_text(look.read_text())
    first = score.labelled('heldout', tmp_path / 'data', str(look))
    assert len(runs) == 1
    again = score.labelled('heldout', tmp_path / 'data', str(moved))  # same look, by content
    assert len(runs) == 1 and again[0].progression == first[0].progression
    another = score.labelled('heldout', tmp_path / 'data', str(other))  # another look: run
    assert runs == [str(look), str(other)]
    assert another[0].progression != first[0].progression
    assert len(list((tmp_path / 'data').glob('heldout-*.npz'))) == 2
    base = learned.plan_settings(learned.PLANS['heldout'], str(look))
    assert base['max_steps'] == 200 and base['image'] == [64, 36]
    assert base['digital_real.appearance_file']['sha256'] != learned.plan_settings(
        learned.PLANS['heldout'], str(other))['digital_real.appearance_file']['sha256']
    # A plan of a policy that looks names the rule its frames were kept by (round 8's fix), so
    # a cache made before it is not reused; a blind plan's episodes did not change.
    assert 'kept_frames' not in base
    assert 'kept_frames' in learned.plan_settings(learned.PLANS['learned_ladder'])


def test_the_validation_split_holds_whole_episodes_back_by_seed():
    episodes = [bar_episode(final, seed) for final in range(2) for seed in range(8)]
    fit, validation = learned.split(episodes)
    assert {e.seed for e in validation} == set(learned.VALIDATION_SEEDS) == {6, 7}
    assert len(fit) + len(validation) == len(episodes)
    assert not {e.seed for e in fit} & {e.seed for e in validation}


def test_baselines_are_constants_of_the_reference_set():
    reference = [bar_episode(3, 0), bar_episode(3, 1), bar_episode(1, 2)]  # mean 7/9
    measured = [bar_episode(3, 5), bar_episode(0, 6)]
    b = learned.baselines(measured, reference)
    assert b['always_success_accuracy'] == 0.5
    assert b['mean_progression'] == pytest.approx(7 / 9)
    assert b['mean_progression_abs_error'] == pytest.approx(((1 - 7 / 9) + 7 / 9) / 2)
    # The reference's frames: count 0 x9, 1 x15, 2 x6, 3 x6, so the majority answer is 1,
    # right on 3 of the measured 24 frames (frames 3-5 of the first; the second stays at 0).
    assert b['majority_stage_accuracy'] == pytest.approx(3 / 24)


def test_an_old_six_channel_mean_pooled_checkpoint_still_loads():
    episodes = [bar_episode(final, seed) for final in range(4) for seed in range(2)]
    checkpoint = learned.train(episodes, learned.TrainConfig(epochs=1, batch=32, width=8))
    for key in ('diff', 'pool', 'class_weight_power'):  # what the first checkpoints lack
        del checkpoint['config'][key]
    scorer = learned.LearnedScorer(checkpoint)
    assert scorer.spec == learned.InputSpec() and scorer.cameras == ['exterior_1']
    assert scorer.probabilities(list(episodes[0].frames), TASK).shape == (12, 4)


def test_the_shipped_checkpoint_loads_and_scores():
    if not learned.DEFAULT_CHECKPOINT.is_file():
        pytest.fail(f'{learned.DEFAULT_CHECKPOINT} is missing: realm-ros score train')
    scorer = scoring.make_scorer('learned')
    assert set(learned.TASKS) <= set(scorer.tasks)
    assert learned.DEFAULT_CHECKPOINT.stat().st_size < 1_000_000
    assert learned.LOOKS_CHECKPOINT.stat().st_size < 1_000_000
    assert scorer.look_check(np.zeros((180, 320, 3), np.uint8)) is not None
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 255, (180, 320, 3), dtype=np.uint8) for _ in range(10)]
    result = scorer.score(scoring.EpisodeFrames(frames=frames, times_s=np.arange(10) / 3.0,
                                                instruction='push the switch',
                                                task='push_switch'))
    assert len(result.curve) == 10 and 0.0 <= result.score <= 1.0


def test_score_a_run_folder_beside_the_rubric(tiny, tmp_path):
    from arena_rundir import make_run_dir
    from rostest import BIN

    from realm_ros.core.evaluation import summarize

    run = make_run_dir(tmp_path / 'run', seeds=2, roles=('real', 'sim'), frames=15)
    records = [json.loads(line) for line in (run / 'episodes.jsonl').read_text().splitlines()]
    summary = summarize(records)
    summary['config'] = {'real': 'digital_real', 'sim': 'mujoco', 'sim_params_file': ''}
    (run / 'summary.json').write_text(json.dumps(summary))
    before = (run / 'episodes.jsonl').read_text()
    command = [str(BIN / 'realm-ros'), 'score', str(run), '--scorer', 'learned',
               '--checkpoint', str(tiny)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    assert (run / 'episodes.jsonl').read_text() == before  # the rubric's records untouched
    scores = [json.loads(line) for line in (run / 'scores.jsonl').read_text().splitlines()]
    assert len(scores) == len(records) == 16
    name = scores[0]['scorer']
    assert name.startswith('learned:tiny@')
    assert all('progression' not in s and 0.0 <= s['scorer_progression'] <= 1.0 for s in scores)
    section = json.loads((run / 'summary.json').read_text())['scorers'][name]
    assert section['episodes'] == 16
    assert set(section['per_policy']['qxalpha']) == {'real', 'sim'}
    assert section['per_policy']['qxalpha']['real']['rubric'] == pytest.approx(1.0)
    html = (run / 'report.html').read_text()
    assert 'Progress scorers (beside the rubric, never mixed)' in html
    assert f'scorer {name}' in html
    again = subprocess.run(command, capture_output=True, text=True, timeout=120,
                           env=dict(os.environ))
    assert again.returncode == 0 and '0 episode(s) scored' in again.stdout
    assert len((run / 'scores.jsonl').read_text().splitlines()) == 16  # resumed, not redone
    # An episode run again with other settings (as --rerun-changed appends it): its score is
    # stale; the run is refused in one line, or scores it again with --rerun-changed.
    rerun = dict(records[0], made_by={'max_steps': 7})
    with open(run / 'episodes.jsonl', 'a') as handle:
        handle.write(json.dumps(rerun) + '\n')
    refused = subprocess.run(command, capture_output=True, text=True, timeout=120,
                             env=dict(os.environ))
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert 'was run with the episode (run again since it was scored)' in refused.stderr
    again = subprocess.run([*command, '--rerun-changed'], capture_output=True, text=True,
                           timeout=120, env=dict(os.environ))
    assert again.returncode == 0 and '1 episode(s) scored' in again.stdout, again.stderr
    section = json.loads((run / 'summary.json').read_text())['scorers'][name]
    assert section['episodes'] == 16  # the new score replaces the stale one
    missing = subprocess.run([str(BIN / 'realm-ros'), 'score', str(tmp_path / 'nothing')],
                             capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert missing.returncode == 2 and 'no episodes.jsonl' in missing.stderr
    assert 'Traceback' not in missing.stderr


def test_colour_jitter_is_one_transform_for_both_frames_of_a_pair():
    import torch

    rng = np.random.default_rng(0)
    frame = rng.integers(0, 255, (4, 36, 64, 3), dtype=np.uint8)
    pairs = learned._inputs(torch, frame, frame)  # current == first
    padded = torch.nn.functional.pad(pairs, (2, 2, 2, 2), mode='replicate')
    out = learned._augment(torch, padded, rng, jitter=0.3)
    assert out.shape == (4, 6, 36, 64) and float(out.min()) >= -1 and float(out.max()) <= 1
    assert torch.equal(out[:, :3], out[:, 3:])  # nothing moved, so no difference
    plain = learned._augment(torch, padded, np.random.default_rng(1))
    assert not torch.allclose(out, plain)


def test_the_scorer_says_when_a_look_is_outside_its_training_looks(tiny, tmp_path, capsys):
    from realm_ros.cli import main

    scorer = learned.LearnedScorer(tiny)
    stats = scorer.look_stats
    assert stats is not None and stats['episodes'] == 24 and stats['threshold'] > 0
    familiar = scorer.look_check(bar_episode(2, 99).frames[0])
    assert familiar is not None and not familiar['outside_training_looks']
    bright = np.full((36, 64, 3), 200, np.uint8)  # a lit room the drawn episodes never show
    strange = scorer.look_check(bright)
    assert strange is not None and strange['outside_training_looks']
    assert strange['look_distance'] > strange['look_threshold'] > familiar['look_distance']
    # A checkpoint without look_stats (the first ones) cannot say: no check, no warning.
    plain = dict(learned.load_checkpoint(tiny))
    del plain['look_stats']
    assert learned.LearnedScorer(plain).look_check(bright) is None
    # `score --video`: the record keeps the check; one warning line when outside.
    import imageio.v2 as imageio
    video = tmp_path / 'bright.mp4'
    imageio.mimwrite(str(video), [bright] * 12, fps=15, codec='libx264', macro_block_size=1)
    assert main(['score', '--checkpoint', str(tiny), '--video', str(video),
                 '--task', TASK]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)['scorer_look']['outside_training_looks'] is True
    warning = captured.err.strip().splitlines()
    assert len(warning) == 1 and 'outside the looks learned:tiny@' in warning[0]


def test_intervals_of_r_and_of_success_accuracy():
    assert metrics.wilson_interval(10, 10)[1] == pytest.approx(1.0)
    low, high = metrics.wilson_interval(27, 45)
    assert low < 27 / 45 < high and high - low == pytest.approx(0.28, abs=0.01)
    truth = np.arange(20) / 19.0
    low, high = learned.pearson_interval(truth + 0.05 * np.sin(np.arange(20)), truth)
    assert 0.95 < low <= high <= 1.0
    assert learned.pearson_interval(np.full(20, 0.33), truth) is None  # a constant: undefined
    figures = learned.evaluate(learned.LearnedScorer(learned.train(
        [bar_episode(f, s) for f in range(4) for s in range(2)],
        learned.TrainConfig(epochs=1, batch=32, width=8))),
        [bar_episode(f, 50 + f) for f in range(4)])
    assert {'pearson_r_ci', 'success_accuracy_ci', 'progression_spread'} <= set(figures)


def test_a_plan_of_looks_is_cached_by_look_and_can_be_shared(tmp_path, monkeypatch):
    from realm_ros.commands import score

    runs = []

    def collect(worlds, task_names, policies, seeds, max_steps, appearance_file, on_episode,
                look):
        runs.append((look, tuple(seeds), pathlib.Path(appearance_file).name))
        episode = bar_episode(len(runs) % 4, seeds[0])
        episode.look = look
        return [episode]
    monkeypatch.setattr(learned, 'collect', collect)
    plan = learned.Plan(('digital_real',), (TASK,), ('scripted:0',), (), looks=(5, 6, 7))
    monkeypatch.setitem(learned.PLANS, 'few_looks', plan)
    data = tmp_path / 'data'
    # Share 1 of 2 runs look 6 only (each look's episodes use its own seed) and joins nothing.
    part = score.labelled('few_looks', data, 'unused.yaml', (1, 2))
    assert runs == [('lab:6', (6,), 'lab-6.yaml')] and len(part) == 1
    assert not list(data.glob('few_looks-*.npz'))
    whole = score.labelled('few_looks', data, 'unused.yaml')  # the rest, then joined
    assert [r[0] for r in runs] == ['lab:6', 'lab:5', 'lab:7']
    assert sorted(e.seed for e in whole) == [5, 6, 7]
    assert [e.look for e in learned.load_episodes(next(data.glob('few_looks-*.npz')))] == [
        'lab:5', 'lab:6', 'lab:7']
    assert len(score.labelled('few_looks', data, 'unused.yaml')) == 3 and len(runs) == 3
    settings = learned.plan_settings(plan)
    assert set(settings['looks']) == {'5', '6', '7'}
    assert appearance.droid_lab_look(5)['seed'] == 5


#: A lab look drawn by seed that neither training nor ``score eval`` uses.
UNSEEN_LOOK = 7010


@pytest.fixture(scope='module')
def unseen_look_episodes(tmp_path_factory):
    """Four push_switch episodes on UNSEEN_LOOK, two successes and two failures (about 7 s of
    rendering on an idle core)."""
    assert UNSEEN_LOOK not in learned.TRAIN_LOOKS + learned.EVAL_LOOKS
    os.environ.setdefault('MUJOCO_GL', 'egl')
    look = learned.write_look(UNSEEN_LOOK, tmp_path_factory.mktemp('look'))
    return learned.collect(['digital_real'], ['push_switch'], ['scripted:0', 'scripted:3'],
                           [101, 102], max_steps=90, appearance_file=str(look))


@pytest.mark.parametrize('checkpoint', [learned.DEFAULT_CHECKPOINT, learned.LOOKS_CHECKPOINT],
                         ids=['default', 'looks'])
def test_a_shipped_scorer_is_never_silently_constant_on_a_look_it_never_saw(
        unseen_look_episodes, checkpoint):
    """On a lab look it was never trained on, each shipped scorer either tells the episodes
    apart (its progressions vary with the rubric's) or says the look is outside its training
    looks; the first checkpoint did neither (a near-constant, unflagged: issue 42). The one
    fine-tuned across looks must tell them apart."""
    episodes = unseen_look_episodes
    truth = [e.progression for e in episodes]
    assert len(set(truth)) > 1, truth  # successes and failures to tell apart
    scorer = learned.LearnedScorer(checkpoint)
    predicted = [learned.stage_counts(scorer, e)[-1] / e.n_stages for e in episodes]
    checks = [scorer.look_check(e.frames[0]) for e in episodes]
    assert all(c is not None for c in checks), f'{checkpoint} keeps no look_stats'
    separates = bool(np.std(predicted) > 0.1 and np.corrcoef(predicted, truth)[0, 1] > 0.5)
    flagged = all(c['outside_training_looks'] for c in checks)
    assert separates or flagged, (predicted, truth, checks)
    if checkpoint == learned.LOOKS_CHECKPOINT:
        assert separates and not flagged, (predicted, truth, checks)


def test_a_policy_that_looks_gets_its_cameras_every_step_and_the_scorer_every_fifth():
    """The learned ladder (plan ``learned_ladder``) sees exterior_1 and wrist at every control
    step; the scripted ladder's worlds render the scorer's camera only every fifth step."""
    from realm_ros.core import robot
    looking = learned.policy_cameras(learned.PLANS['learned_ladder'].policies)
    assert set(looking) == {'exterior_1', 'wrist'}
    assert learned.policy_cameras(learned.TRAIN_POLICIES) == ()
    seeing = learned.world_config(learned.DIGITAL_REAL, policy_cameras=looking)
    assert seeing.cameras[0] == 'exterior_1' and set(seeing.cameras) == set(looking)
    assert seeing.camera_rate_hz == robot.CONTROL_HZ
    blind = learned.world_config(learned.DIGITAL_REAL)
    assert blind.cameras == ('exterior_1',) and blind.camera_rate_hz == robot.CONTROL_HZ / 5
    settings = learned.plan_settings(learned.PLANS['learned_ladder'])
    assert settings['max_steps'] == 160 and len(settings['policies']) == 3


def test_a_looking_policys_episode_keeps_the_frames_a_blind_ones_does():
    """labelled_run keeps steps 1, 6, 11, ... of a world rendering every step (``every`` 5),
    the steps a world rendering every 5th step renders for a blind policy: the scorer's first
    frame is the episode's first, not 4 steps late (issue 42, round 8)."""
    from realm_ros.core import robot
    from realm_ros.core.policy import make_policy, standard_chain
    from realm_ros.core.types import EpisodeSpec
    from realm_ros.core.world import make_world

    spec = EpisodeSpec(task='push_switch', seed=0, policy='scripted:0', max_steps=12)
    kept = {}
    for name, config, every in (
            ('looking', learned.world_config('mujoco', policy_cameras=('exterior_1',)), 5),
            ('blind', learned.world_config('mujoco'), 0)):
        world = make_world(config)
        inner = make_policy('scripted', common={'seed': 0}, skill=0)
        policy = standard_chain(inner, execute=inner.needs.horizon)
        try:
            run = learned.labelled_run(world, policy, spec, ('exterior_1',), every)
            frames, times = run.frames, run.times
        finally:
            policy.close()
            world.close()
        steps = np.round(np.asarray(times) * robot.CONTROL_HZ).astype(int).tolist()
        kept[name] = (steps, frames['exterior_1'])
    assert kept['looking'][0] == kept['blind'][0] == [1, 6, 11]
    for a, b in zip(kept['looking'][1], kept['blind'][1]):
        assert np.array_equal(a, b)


def test_decoding_filters_flickers_over_its_median_then_keeps_the_maximum():
    def onehot(counts):
        return np.eye(4)[np.asarray(counts)]

    # One frame's flicker to 2 and one to 3: a median of 3 removes both, the maximum keeps 1.
    counts = [0, 2, 0, 0, 1, 1, 3, 1, 1]
    assert learned.decode(onehot(counts)).tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 1]
    assert learned.MEDIAN_FRAMES == 3
    # Without a median the flicker locks in; two frames of 3 pass a median of 3, not of 5.
    assert learned.decode(onehot(counts), 1)[1] == 2
    twice = [0, 0, 0, 3, 3, 0, 0, 0, 0]
    assert learned.decode(onehot(twice), 3)[-1] == 3
    assert learned.decode(onehot(twice), 5)[-1] == 0
    # The ends are repeated: a count held to the last frame is kept.
    assert learned.decode(onehot([0, 0, 0, 0, 2, 2, 2]), 5)[-1] == 2
    for bad in (0, 2, -3):
        with pytest.raises(DataError, match='median_frames'):
            learned.decode(onehot(counts), bad)
    # evaluate() is agreement() over the scorer's own decoded counts.
    episodes = [bar_episode(3, 0), bar_episode(1, 1)]
    right = [e.met.copy() for e in episodes]
    figures = learned.agreement(episodes, right)
    assert figures['stage_accuracy'] == 1.0 and figures['success_accuracy'] == 1.0
    wrong = [np.zeros_like(e.met) for e in episodes]
    assert learned.agreement(episodes, wrong)['stage_accuracy'] < 0.5
    with pytest.raises(DataError, match='stage counts'):
        learned.agreement(episodes, [right[0][:-1], right[1]])
