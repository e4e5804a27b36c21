"""What the learned scorer reads (``learned.InputSpec``): per-image normalisation of a frame pair
and several cameras, each through its own convolutions (issue 42's input variants,
bench/scorer_cameras.py); a one-camera checkpoint reads exactly what it did before."""

from __future__ import annotations

import dataclasses
import pathlib

import numpy as np
import pytest

torch = pytest.importorskip('torch')

from scorer_bars import TASK, bar_episode, bar_frame  # noqa: E402

from realm_ros.core.errors import DataError  # noqa: E402
from realm_ros.scorers import learned  # noqa: E402


def _relit(frames: np.ndarray, gain: tuple[float, float, float], offset: float) -> np.ndarray:
    """The same frames under another camera's white balance and exposure (per channel)."""
    return np.clip(frames * np.asarray(gain) + offset, 0, 255).round().astype(np.uint8)


def test_normalising_by_the_first_frame_cancels_a_cameras_white_balance_and_exposure():
    rng = np.random.default_rng(0)
    first = rng.integers(40, 180, (2, 36, 64, 3), dtype=np.uint8)
    current = first.copy()
    current[:, 10:20, 20:30] = 200  # something moved
    gain, offset = (1.15, 0.9, 0.8), 12.0
    normalised = learned.InputSpec(diff=True, normalise=True)
    plain = learned.InputSpec(diff=True)
    a = learned._inputs(torch, current, first, normalised)
    b = learned._inputs(torch, _relit(current, gain, offset), _relit(first, gain, offset),
                        normalised)
    assert a.shape == (2, 9, 36, 64)
    # Equal up to the uint8 rounding of the relit frames (and clipping of the moved patch).
    assert float((a - b).abs().median()) < 0.02
    raw_a = learned._inputs(torch, current, first, plain)
    raw_b = learned._inputs(torch, _relit(current, gain, offset), _relit(first, gain, offset),
                            plain)
    # Without it the look changes the frames (a still scene's difference image is 0 either way).
    assert float((raw_a - raw_b)[:, :6].abs().median()) > 0.05
    # A uniform first frame (no spread) is divided by the floor, not by zero.
    flat = np.full((1, 36, 64, 3), 90, np.uint8)
    assert torch.isfinite(learned._inputs(torch, flat, flat, normalised)).all()


def test_a_one_camera_input_is_what_it_was():
    rng = np.random.default_rng(1)
    current, first = (rng.integers(0, 255, (3, 36, 64, 3), dtype=np.uint8) for _ in range(2))
    x = learned._inputs(torch, current, first, learned.InputSpec(diff=True))
    expected = np.concatenate([current, first], axis=-1).astype(np.float32) / 127.5 - 1.0
    expected = torch.from_numpy(expected.transpose(0, 3, 1, 2))
    assert torch.equal(x[:, :6], expected)
    assert torch.equal(x[:, 6:], expected[:, :3] - expected[:, 3:])
    assert learned.InputSpec.of({'diff': True}) == learned.InputSpec(diff=True)  # old configs


def _two_camera(episode: learned.LabelledEpisode, seed: int) -> learned.LabelledEpisode:
    """``episode`` seen by a first camera that shows nothing of the stages (noise) and a second
    that shows them (the bar)."""
    rng = np.random.default_rng(seed)
    blind = np.stack([bar_frame(0, rng) for _ in episode.met])
    return dataclasses.replace(episode, frames=np.concatenate([blind, episode.frames], axis=-1))


def test_a_two_camera_scorer_reads_its_second_camera(tmp_path):
    episodes = [_two_camera(bar_episode(final, seed), seed)
                for final in range(4) for seed in range(6)]
    config = learned.TrainConfig(epochs=10, batch=32, width=8, lr=5e-3, threads=1, diff=True,
                                 pool='flat', cameras=('exterior_1', 'wrist'), normalise=True)
    learned.save_checkpoint(tmp_path / 'two.pt', learned.train(episodes, config))
    scorer = learned.LearnedScorer(tmp_path / 'two.pt')
    assert scorer.cameras == ['exterior_1', 'wrist']
    assert scorer.spec == learned.InputSpec(diff=True, normalise=True, cameras=2)
    held_out = [_two_camera(bar_episode(final, 100 + final), 200 + final) for final in range(4)]
    assert learned.evaluate(scorer, held_out)['stage_accuracy'] > 0.8
    # The first camera alone does not see the stages: a one-camera scorer of it reads chance.
    blind = [dataclasses.replace(e, frames=e.frames[..., :3]) for e in episodes]
    one = learned.LearnedScorer(learned.train(blind, dataclasses.replace(
        config, cameras=('exterior_1',))))
    held_blind = [dataclasses.replace(e, frames=e.frames[..., :3]) for e in held_out]
    assert learned.evaluate(one, held_blind)['stage_accuracy'] < 0.6
    # Frames of one camera given to a two-camera scorer: refused, naming its cameras.
    with pytest.raises(DataError, match='reads 2: exterior_1, wrist'):
        scorer.probabilities(list(held_blind[0].frames), TASK)
    # Full-size frames of both cameras, stacked, are resized camera by camera.
    big = np.concatenate([np.repeat(np.repeat(held_out[3].frames[..., k:k + 3], 5, 1), 5, 2)
                          for k in (0, 3)], axis=-1)
    assert big.shape[1:] == (180, 320, 6)
    assert np.array_equal(np.stack([learned.small_frame(f) for f in big]), held_out[3].frames)
    # A calibration keeps the cameras (the calibrated checkpoint reads the same two).
    calibrated = learned.calibrate(learned.load_checkpoint(tmp_path / 'two.pt'), held_out[:2],
                                   learned.CalibrateConfig(steps=5))
    assert learned.LearnedScorer(calibrated).cameras == ['exterior_1', 'wrist']


def _videos(folder, frames: int = 12, size=(36, 64), wrist_frames: int | None = None):
    """An episode's two camera videos: exterior_1 blind (stage 0 always), the wrist the bar."""
    import imageio.v2 as imageio
    rng = np.random.default_rng(0)
    ext = folder / f'ext-{frames}.mp4'
    wrist = folder / f'wrist-{wrist_frames or frames}-{size[0]}.mp4'
    imageio.mimwrite(str(ext), [bar_frame(0, rng) for _ in range(frames)], fps=15,
                     codec='libx264', macro_block_size=1)
    imageio.mimwrite(str(wrist), [bar_frame(min(3, k // 3), rng, size)
                                  for k in range(wrist_frames or frames)],
                     fps=15, codec='libx264', macro_block_size=1)
    return str(ext), str(wrist)


@pytest.fixture(scope='module')
def two_camera(tmp_path_factory):
    folder = tmp_path_factory.mktemp('two')
    episodes = [_two_camera(bar_episode(final, seed), seed)
                for final in range(4) for seed in range(6)]
    config = learned.TrainConfig(epochs=10, batch=32, width=8, lr=5e-3, threads=1, diff=True,
                                 pool='flat', cameras=('exterior_1', 'wrist'), normalise=True)
    learned.save_checkpoint(folder / 'two.pt', learned.train(episodes, config))
    return folder / 'two.pt'


def test_score_video_takes_a_two_camera_checkpoints_wrist_video(two_camera, tmp_path, capsys):
    import json

    from realm_ros.cli import main

    ext, wrist = _videos(tmp_path)
    common = ['score', '--checkpoint', str(two_camera), '--video', ext, '--task', TASK]
    assert main([*common, '--camera-video', f'wrist={wrist}']) == 0
    out = json.loads(capsys.readouterr().out)
    assert out['scorer'].startswith('learned:two@')
    # The wrist's bar reaches stage 3; exterior_1 shows stage 0 throughout.
    assert out['scorer_progression'] == 1.0
    stages = list(learned.LearnedScorer(two_camera).stage_names[TASK])
    assert [p['stage'] for p in out['stage_proposals']] == stages
    _, short = _videos(tmp_path, wrist_frames=9)
    _, square = _videos(tmp_path, size=(48, 64))
    for argv, message in [
            ([], '--camera-video wrist=FILE is needed: the learned:two@'),
            (['--camera-video', 'wrist'], "--camera-video: expected CAMERA=FILE, got 'wrist'"),
            (['--camera-video', f'wrist={wrist}', '--camera-video', f'exterior_2={wrist}'],
             '--camera-video exterior_2: the learned:two@'),
            (['--camera-video', f'wrist={tmp_path / "none.mp4"}'],
             f'--camera-video wrist: {tmp_path / "none.mp4"} does not exist'),
            (['--camera-video', f'wrist={short}'],
             f'--video {ext}: camera videos of [12, 9] frames'),
            (['--camera-video', f'wrist={square}'], f'--video {ext}: wrist: 64x48 frames')]:
        assert main([*common, *argv]) == 2, argv
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and message in err, err
    # A one-camera checkpoint is given no other camera's video.
    assert main(['score', '--checkpoint', str(learned.DEFAULT_CHECKPOINT), '--video', ext,
                 '--task', TASK, '--camera-video', f'wrist={wrist}']) == 2
    assert '--camera-video wrist: the learned:progress_scorer@' in capsys.readouterr().err


def test_a_run_folder_recorded_with_both_cameras_is_scored_by_a_two_camera_checkpoint(
        two_camera, tmp_path, capsys):
    """``score RUN_DIR`` finds each episode's wrist video by name (the record's camera_videos,
    as ``paired-eval --videos exterior_1,wrist`` writes it); a run that lacks it is refused in
    one line naming the flag that records it."""
    import json

    from realm_ros.cli import main

    ext, wrist = _videos(tmp_path)
    base = {'pair_id': 'p0', 'role': 'real', 'task': TASK, 'video': pathlib.Path(ext).name,
            'progression': 1.0, 'scored': True}
    run = tmp_path / 'both'
    run.mkdir()
    for name in (ext, wrist):
        (run / pathlib.Path(name).name).write_bytes(pathlib.Path(name).read_bytes())
    both = {'exterior_1': pathlib.Path(ext).name, 'wrist': pathlib.Path(wrist).name}
    (run / 'episodes.jsonl').write_text(json.dumps({**base, 'camera_videos': both}) + '\n')
    assert main(['score', str(run), '--checkpoint', str(two_camera)]) == 0
    (line,) = [json.loads(t) for t in (run / 'scores.jsonl').read_text().splitlines()]
    # exterior_1 shows stage 0 throughout; only the wrist's bar reaches stage 3.
    assert line['scorer_progression'] == 1.0 and line['video'] == both['exterior_1']
    capsys.readouterr()
    for name, record, message in [
            ('one', base, "has one camera's video: record the run with --videos "
                          'exterior_1,wrist (paired-eval or sweep)'),
            ('nowrist', {**base, 'camera_videos': {'exterior_1': both['exterior_1'],
                                                   'exterior_2': both['wrist']}},
             'has no wrist video: record the run with --videos exterior_1,wrist')]:
        folder = tmp_path / name
        folder.mkdir()
        for file in (ext, wrist):
            (folder / pathlib.Path(file).name).write_bytes(pathlib.Path(file).read_bytes())
        (folder / 'episodes.jsonl').write_text(json.dumps(record) + '\n')
        assert main(['score', str(folder), '--checkpoint', str(two_camera)]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and message in err, err
        assert 'the learned:two@' in err and 'reads exterior_1, wrist' in err
        assert not (folder / 'scores.jsonl').exists()


@pytest.mark.parametrize('checkpoint,networks', [
    (learned.WRIST_CHECKPOINT, 1), (learned.WRIST80_CHECKPOINT, 1),
    (learned.FAMILIES_CHECKPOINT, 1), (learned.FAMILIES3_CHECKPOINT, 3),
    (learned.FAMILIES_DEMO3_CHECKPOINT, 3), (learned.FAMILIES_HJK_CHECKPOINT, 9),
    (learned.FAMILIES_NOW3_CHECKPOINT, 3), (learned.FAMILIES_DIST3_CHECKPOINT, 3)],
    ids=['wrist', 'wrist80', 'families', 'families3', 'families_demo3', 'families_hjk',
         'families_now3', 'families_dist3'])
def test_the_shipped_wrist_checkpoint_loads_and_says_what_it_reads(checkpoint, networks):
    scorer = learned.LearnedScorer(checkpoint)
    assert len(scorer.nets) == networks
    assert checkpoint.stat().st_size < 1_000_000 * networks
    assert scorer.cameras == ['exterior_1', 'wrist']
    assert scorer.spec == learned.InputSpec(diff=True, normalise=True, cameras=2)
    assert sorted(scorer.tasks) == sorted(learned.TASKS) and scorer.look_stats is not None
    rng = np.random.default_rng(0)
    ext = [rng.integers(0, 255, (180, 320, 3), dtype=np.uint8) for _ in range(4)]
    probs = scorer.probabilities(scorer.stack([ext, ext[::-1]]), 'pick_spoon')
    assert probs.shape == (4, 4) and np.allclose(probs.sum(axis=1), 1.0)


@pytest.mark.parametrize('path, stem', [
    (learned.FAMILIES_NOW3_CHECKPOINT, 'progress_scorer_families_now3'),
    (learned.FAMILIES_DIST3_CHECKPOINT, 'progress_scorer_families_dist3')],
    ids=['families_now3', 'families_dist3'])
def test_the_shipped_now_head_checkpoint_scores_a_video_with_the_decoder_it_carries(
        path, stem, tmp_path, capsys):
    """Round 14's families_now3 and round 16's families_dist3 (docs/scoring.md, "Round 14",
    "Round 16"): three now-head networks read by ``decode_now`` with a median of 3, as
    measured; ``score --video`` with its wrist video runs end to end and names the shipped
    file."""
    import hashlib
    import json

    from realm_ros.cli import main

    scorer = learned.LearnedScorer(path)
    assert scorer.head == 'now' and len(scorer.nets) == 3
    assert scorer.decoder == learned.Decoder(median_frames=3)
    ext, wrist = _videos(tmp_path)
    assert main(['score', '--checkpoint', str(path), '--video', ext, '--task', TASK,
                 '--camera-video', f'wrist={wrist}']) == 0
    out = json.loads(capsys.readouterr().out)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:8]
    assert out['scorer'] == f'learned:{stem}@{digest}'
    assert 0.0 <= out['scorer_progression'] <= 1.0
    # It proposes the stages it reads met, in the rubric's order (a prefix of the task's).
    proposed = [p['stage'] for p in out['stage_proposals']]
    assert proposed == list(scorer.stage_names[TASK])[:len(proposed)]


def test_train_and_eval_refuse_a_two_camera_checkpoint_before_any_episode(
        two_camera, tmp_path, capsys):
    """Their episodes hold exterior_1's frames only: refused in one line, before any episode
    runs (a data dir that does not exist stays so). ``score calibrate`` reads every camera
    (test_scorer_calibration.py)."""
    from realm_ros.cli import main

    data = tmp_path / 'never'
    for argv, message in [
            (['train', '--init', str(two_camera), '--out', str(tmp_path / 'x.pt')],
             f'--init {two_camera}: it reads exterior_1, wrist; score train trains'),
            (['eval', '--against', str(two_camera)],
             'learned:two@')]:
        assert main(['score', *argv, '--data-dir', str(data)]) == 2, argv
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and message in err, err
        assert 'it reads exterior_1, wrist' in err
    assert not data.exists()
