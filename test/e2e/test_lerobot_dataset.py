"""The LeRobot dataset writer: v3.0 layout and the invariants lerobot's loader enforces.

lerobot itself is not in this venv (bench/lerobot_check.py loads these folders with it); here
the checks are the ones its loader applies: every decoded frame within 1e-4 s of
``from_timestamp + k / fps`` (read off the mp4 boxes), the episodes table, the info schema,
stats for every feature with quantiles, and resuming a folder a killed run left.
"""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from realm_ros.core.errors import ConfigError
from realm_ros.io import ffmpeg_video as video
from realm_ros.io.lerobot import (
    Episode,
    check_dataset,
    image_stats,
    iter_episodes,
    merge_stats,
    open_writer,
    read_episode_rows,
    read_info,
    sample_indices,
    vector_stats,
)
from realm_ros.io.mp4 import read_video_track

CAMERAS = ('exterior_1', 'wrist')


def make_episode(rng, n, instruction='push the light switch', size=(36, 64), seed=0):
    # Frame k of camera c is a flat grey of level 3k (+ c): decoding proves which frame it is.
    images = {}
    for j, camera in enumerate(CAMERAS):
        levels = (np.arange(n) * 3 + 40 * j) % 250
        images[camera] = np.broadcast_to(levels[:, None, None, None],
                                         (n, *size, 3)).astype(np.uint8)
    return Episode(instruction=instruction,
                   states=rng.normal(size=(n, 8)).astype(np.float32),
                   actions=rng.normal(size=(n, 8)).astype(np.float32),
                   images=images, extra={'seed': seed, 'task': 'push_switch'})


@pytest.fixture(scope='module')
def dataset(tmp_path_factory):
    """Four episodes (56, 45, 13, 20 frames; two tasks) in one v3.0 folder."""
    root = tmp_path_factory.mktemp('lerobot') / 'ds'
    rng = np.random.default_rng(0)
    episodes = [make_episode(rng, n, seed=i) for i, n in enumerate((56, 45, 13))]
    episodes.append(make_episode(rng, 20, 'open the drawer', seed=3))
    writer = open_writer(root, 'v3.0', fps=15, cameras=CAMERAS)
    for ep in episodes:
        writer.add(ep)
    return root, episodes


def test_v30_layout_and_schema(dataset):
    root, episodes = dataset
    info = read_info(root)
    assert info['codebase_version'] == 'v3.0' and info['fps'] == 15
    assert info['total_episodes'] == 4 and info['total_frames'] == 134
    assert info['total_tasks'] == 2 and info['splits'] == {'train': '0:4'}
    assert info['data_path'] == 'data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet'
    for camera in CAMERAS:
        ft = info['features'][f'observation.images.{camera}']
        assert ft['dtype'] == 'video' and ft['shape'] == [36, 64, 3]
        assert ft['info']['video.codec'] == video.default_codec()[1] == 'av1'
    # Episodes share chunked files: one data file, one video file per camera.
    assert [p.name for p in (root / 'data').rglob('*.parquet')] == ['file-000.parquet']
    assert sorted(p.parent.parent.name for p in (root / 'videos').rglob('*.mp4')) == \
        [f'observation.images.{c}' for c in CAMERAS]
    rows = read_episode_rows(root)
    assert [r['length'] for r in rows] == [len(e) for e in episodes]
    assert rows[1]['dataset_from_index'] == 56 and rows[1]['dataset_to_index'] == 101
    assert rows[1]['videos/observation.images.wrist/from_timestamp'] == pytest.approx(56 / 15)
    tasks = pq.read_table(root / 'meta' / 'tasks.parquet')
    # pandas reads this back as DataFrame({'task_index': [...]}, index=[task, ...]).
    assert tasks.schema.pandas_metadata['index_columns'] == ['__index_level_0__']
    assert tasks.column('__index_level_0__').to_pylist() == ['push the light switch',
                                                             'open the drawer']
    assert check_dataset(root) == []


def test_every_frame_on_the_grid_and_decodes_to_its_own_picture(dataset):
    root, episodes = dataset
    info = read_info(root)
    for camera_index, camera in enumerate(CAMERAS):
        key = f'observation.images.{camera}'
        path = root / info['video_path'].format(video_key=key, chunk_index=0, file_index=0)
        track = read_video_track(path)
        assert not track.has_ctts  # no B-frames
        assert track.frames == 134
        assert np.abs(np.asarray(track.sample_pts) - np.arange(134) / 15).max() < 1e-4
        assert abs(track.duration_s - 134 / 15) < 1e-4
        assert all(abs(seg - 134 / 15) < 1e-4 for seg, _ in track.edits)
        frames = video.decode(path)
        for row, ep in zip(read_episode_rows(root), episodes):
            first = round(row[f'videos/{key}/from_timestamp'] * 15)
            got = frames[first:first + len(ep), 10, 10, 0].astype(int)
            want = ep.images[camera][:, 10, 10, 0].astype(int)
            assert np.abs(got - want).max() <= 3, (camera_index, row['episode_index'])


def test_read_back_equals_what_was_written(dataset):
    root, episodes = dataset
    back = list(iter_episodes(root))
    assert [e.instruction for e in back] == [e.instruction for e in episodes]
    for got, want in zip(back, episodes):
        np.testing.assert_array_equal(got.states, want.states)
        np.testing.assert_array_equal(got.actions, want.actions)
        assert got.images['wrist'].shape == want.images['wrist'].shape
        assert got.extra == want.extra
    table = pq.read_table(root / 'data' / 'chunk-000' / 'file-000.parquet')
    assert table.column('index').to_pylist() == list(range(134))
    assert table.column('next.done').to_pylist().count(True) == 4


def test_stats_for_every_feature_with_quantiles(dataset):
    root, episodes = dataset
    info = read_info(root)
    stats = json.loads((root / 'meta' / 'stats.json').read_text())
    assert set(stats) == set(info['features'])
    for name, values in stats.items():
        assert {'min', 'max', 'mean', 'std', 'count', 'q01', 'q10', 'q50', 'q90',
                'q99'} <= set(values), name
    states = np.concatenate([e.states for e in episodes]).astype(np.float64)
    np.testing.assert_allclose(stats['observation.state']['mean'], states.mean(0), atol=1e-6)
    np.testing.assert_allclose(stats['observation.state']['std'], states.std(0), atol=1e-6)
    assert stats['observation.state']['count'] == [134]
    assert stats['index']['max'] == [133] and stats['frame_index']['max'] == [55]
    # Images: all frames sampled below 100 per episode, so count = frames; (3, 1, 1) in [0, 1].
    img = stats['observation.images.wrist']
    assert img['count'] == [134] and np.shape(img['mean']) == (3, 1, 1)
    assert 0.0 <= img['min'][0][0][0] <= img['max'][0][0][0] <= 1.0
    rows = pq.read_table(root / 'meta' / 'episodes' / 'chunk-000' / 'file-000.parquet')
    assert 'stats/action/q99' in rows.column_names


def test_quantiles_match_a_direct_computation():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4000, 3))
    stats = vector_stats(x)
    for key, q in (('q01', 0.01), ('q50', 0.5), ('q99', 0.99)):
        np.testing.assert_allclose(stats[key], np.quantile(x, q, axis=0), atol=0.01)
    merged = merge_stats([{'x': vector_stats(x[:1000])}, {'x': vector_stats(x[1000:])}])['x']
    np.testing.assert_allclose(merged['mean'], x.mean(0), atol=1e-12)
    np.testing.assert_allclose(merged['std'], x.std(0), atol=1e-9)
    assert merged['count'].tolist() == [4000]
    assert vector_stats(x[:1])['q50'].tolist() == x[0].tolist()  # one row: quantiles = mean
    assert len(sample_indices(50)) == 50 and len(sample_indices(1000)) == 177
    frames = rng.integers(0, 256, (120, 180, 320, 3), dtype=np.uint8)
    assert image_stats(frames)['count'].tolist() == [100]


def test_the_check_catches_an_mp4_cut_to_whole_milliseconds(tmp_path):
    """The issue-28 failure: B-frames, an edit list in ms, episodes off the 1/15 s grid."""
    root = tmp_path / 'ds'
    rng = np.random.default_rng(2)
    writer = open_writer(root, 'v3.0', fps=15, cameras=CAMERAS)
    for n in (56, 20):
        writer.add(make_episode(rng, n))
    assert check_dataset(root) == []
    key = 'observation.images.wrist'
    path = root / 'videos' / key / 'chunk-000' / 'file-000.mp4'
    frames = video.decode(path)
    subprocess.run([video.ffmpeg(), '-loglevel', 'error', '-y', '-f', 'rawvideo', '-pix_fmt',
                    'rgb24', '-s', '64x36', '-r', '15', '-i', '-', '-c:v', 'libx264',
                    '-bf', '3', '-pix_fmt', 'yuv420p', str(tmp_path / 'b.mp4')],
                   input=frames.tobytes(), check=True)
    os.replace(tmp_path / 'b.mp4', path)
    problems = check_dataset(root)
    assert any('B-frames' in p for p in problems), problems
    assert any('edit list length' in p for p in problems), problems


def test_a_killed_run_is_resumed_and_its_tail_dropped(tmp_path):
    root = tmp_path / 'ds'
    rng = np.random.default_rng(3)
    writer = open_writer(root, 'v3.0', fps=15, cameras=CAMERAS)
    writer.add(make_episode(rng, 30))
    writer.add(make_episode(rng, 25))
    # A kill after the third episode's video and frames were written, before its metadata:
    # put the stale files back as they were after episode 3's video/data write.
    saved = {p: p.read_bytes() for p in root.rglob('*') if p.is_file()}
    writer.add(make_episode(rng, 17))
    after = {p: p.read_bytes() for p in root.rglob('*') if p.is_file()}
    for p, data in saved.items():
        if 'meta' in p.parts:
            p.write_bytes(data)
    for p in after:
        if 'meta' in p.parts and p not in saved:
            p.unlink()
    (root / '.partial').mkdir()
    (root / '.partial' / 'wrist.mp4').write_bytes(b'half')
    assert read_video_track(root / 'videos/observation.images.wrist/chunk-000/file-000.mp4'
                            ).frames == 72
    reopened = open_writer(root, 'v3.0', fps=15, cameras=CAMERAS)
    assert reopened.resumed == 2 and reopened.frames == 55
    assert check_dataset(root) == []  # tails cut: 55 frames in data and in each video
    reopened.add(make_episode(rng, 10))
    assert check_dataset(root) == []
    assert [len(e) for e in iter_episodes(root)] == [30, 25, 10]
    assert not (root / '.partial').exists()


def test_reopening_refuses_another_dataset(tmp_path):
    rng = np.random.default_rng(4)
    root = tmp_path / 'ds'
    open_writer(root, 'v3.0', fps=15, cameras=CAMERAS).add(make_episode(rng, 5))
    with pytest.raises(ConfigError, match='cameras'):
        open_writer(root, 'v3.0', fps=15, cameras=('wrist',))
    with pytest.raises(ConfigError, match='fps 15, not 30'):
        open_writer(root, 'v3.0', fps=30, cameras=CAMERAS)
    with pytest.raises(ConfigError, match='v3.0 dataset; cannot add v2.1'):
        open_writer(root, 'v2.1', fps=15, cameras=CAMERAS)
    other = tmp_path / 'other'
    other.mkdir()
    (other / 'notes.txt').write_text('mine')
    with pytest.raises(ConfigError, match='is not a dataset'):
        open_writer(other, 'v3.0')
    with pytest.raises(ConfigError, match='--format must be one of'):
        open_writer(tmp_path / 'x', 'v4')
    empty_meta = tmp_path / 'crashed'
    (empty_meta / 'meta').mkdir(parents=True)  # what the issue-26 abort left: an empty meta/
    open_writer(empty_meta, 'v3.0', cameras=CAMERAS).add(make_episode(rng, 5))
    assert check_dataset(empty_meta) == []


def test_png_frames_are_lerobot_image_features(tmp_path):
    # lerobot 0.4.4 and 0.6 read an ``image`` feature through datasets.Image(): a parquet
    # column of struct{bytes: binary, path: string}, PNG bytes, path null; no videos/, and
    # info.json's video_path null (what lerobot's create(use_videos=False) writes).
    rng = np.random.default_rng(6)
    root = tmp_path / 'ds'
    episodes = [make_episode(rng, n, seed=i) for i, n in enumerate((11, 7))]
    for ep in episodes:  # texture, so that a lossy or channel-swapped store would show
        for camera in CAMERAS:
            ep.images[camera] = rng.integers(0, 256, ep.images[camera].shape, dtype=np.uint8)
    writer = open_writer(root, 'v3.0', fps=15, cameras=CAMERAS, frames='png')
    for ep in episodes:
        writer.add(ep)
    info = read_info(root)
    assert info['video_path'] is None and not (root / 'videos').exists()
    for camera in CAMERAS:
        assert info['features'][f'observation.images.{camera}'] == {
            'dtype': 'image', 'shape': [36, 64, 3], 'names': ['height', 'width', 'channels']}
    table = pq.read_table(root / 'data' / 'chunk-000' / 'file-000.parquet')
    column = table.column('observation.images.wrist')
    assert str(column.type) == 'struct<bytes: binary, path: string>'
    cells = column.to_pylist()
    assert len(cells) == 18 and all(c['path'] is None for c in cells)
    assert all(c['bytes'].startswith(bytes([0x89]) + b'PNG') for c in cells)
    assert check_dataset(root) == []
    stats = json.loads((root / 'meta' / 'stats.json').read_text())
    assert np.shape(stats['observation.images.wrist']['mean']) == (3, 1, 1)
    back = list(iter_episodes(root))  # what realm-ros train reads
    for got, want in zip(back, episodes):
        for camera in CAMERAS:  # PNG is lossless, RGB order kept
            np.testing.assert_array_equal(got.images[camera], want.images[camera])
    # A store is one per folder; v2.1 has videos only.
    with pytest.raises(ConfigError, match='stores frames as images; --frames video'):
        open_writer(root, 'v3.0', fps=15, cameras=CAMERAS)
    assert open_writer(root, 'v3.0', fps=15, cameras=CAMERAS, frames='png').resumed == 2
    with pytest.raises(ConfigError, match='--frames png: only --format v3.0'):
        open_writer(tmp_path / 'v2', 'v2.1', cameras=CAMERAS, frames='png')
    with pytest.raises(ConfigError, match='--frames must be one of'):
        open_writer(tmp_path / 'x', 'v3.0', cameras=CAMERAS, frames='jpeg')
    # A damaged cell is caught by the check.
    cells[3] = {'bytes': b'not a png', 'path': None}
    i = table.column_names.index('observation.images.wrist')
    pq.write_table(table.set_column(i, 'observation.images.wrist',
                                    pa.array(cells, type=column.type)),
                   root / 'data' / 'chunk-000' / 'file-000.parquet')
    assert check_dataset(root) == ['episode 0 observation.images.wrist: a frame is not PNG']


def test_v21_kept_for_lerobot_03(tmp_path):
    rng = np.random.default_rng(5)
    root = tmp_path / 'ds'
    writer = open_writer(root, 'v2.1', fps=15, cameras=CAMERAS)
    for n in (12, 9):
        writer.add(make_episode(rng, n))
    info = read_info(root)
    assert info['codebase_version'] == 'v2.1' and info['total_episodes'] == 2
    video_path = root / info['video_path'].format(
        episode_chunk=0, video_key='observation.images.wrist', episode_index=1)
    track = read_video_track(video_path)
    assert track.frames == 9 and not track.has_ctts
    stats = json.loads((root / 'meta' / 'episodes_stats.jsonl').read_text().splitlines()[1])
    assert {'timestamp', 'index', 'next.done', 'observation.images.wrist'} <= \
        set(stats['stats'])
    (root / info['data_path'].format(episode_chunk=0, episode_index=2)).parent.mkdir(
        parents=True, exist_ok=True)
    stale = root / info['data_path'].format(episode_chunk=0, episode_index=2)
    stale.write_bytes(b'killed mid-write')
    again = open_writer(root, 'v2.1', fps=15, cameras=CAMERAS)
    assert again.resumed == 2 and not stale.exists()
    again.add(make_episode(rng, 4))
    assert [len(e) for e in iter_episodes(root)] == [12, 9, 4]


@pytest.mark.slow
def test_dataset_command_killed_then_resumed(tmp_path):
    """SIGKILL a real ``realm-ros dataset`` after its first episode; the re-run finishes it."""
    out = tmp_path / 'ds'
    cmd = [sys.executable, '-m', 'realm_ros.cli', 'dataset', '--out', str(out),
           '--episodes', '3', '--max-steps', '10', '--image-size', '64x36',
           '--keep-failures', '--quiet']
    env = dict(os.environ, MUJOCO_GL=os.environ.get('MUJOCO_GL', 'egl'))
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    log = out / 'meta' / 'realm_attempts.jsonl'
    while time.monotonic() < deadline and proc.poll() is None:
        if log.is_file() and log.read_text().count('\n') >= 1:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, 'the run ended before it could be killed'
    assert read_info(out)['total_episodes'] >= 1
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert 'resuming with' in done.stdout
    assert check_dataset(out) == []
    seeds = [e.extra['seed'] for e in iter_episodes(out)]
    assert seeds == [1000, 1001, 1002]
    # A dataset is one recording setup: a resume with another setting is refused, naming it.
    other = subprocess.run([a if a != '10' else '20' for a in cmd], env=env,
                           capture_output=True, text=True, timeout=120)
    assert other.returncode == 2 and len(other.stderr.strip().splitlines()) == 1
    assert f'{out} was run with --max-steps 10, not 20' in other.stderr
