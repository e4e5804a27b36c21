"""Write and read demonstrations as LeRobot datasets: ``v3.0`` (default) and ``v2.1``.

**v3.0** is the layout lerobot 0.4 and later load (``src/lerobot/datasets/utils.py`` and
``lerobot_dataset.py`` in huggingface/lerobot); episodes share chunked files::

    meta/info.json          schema: fps, features (with each video's codec), path templates,
                            totals, chunks_size, data/video file size limits (MB), splits
    meta/stats.json         every feature's min/max/mean/std/count and q01/q10/q50/q90/q99
    meta/tasks.parquet      task_index per task (the task string is the pandas index)
    meta/episodes/chunk-000/file-000.parquet   one row per episode: episode_index, tasks,
                            length, data/{chunk,file}_index, dataset_{from,to}_index,
                            videos/<key>/{chunk_index,file_index,from_timestamp,to_timestamp},
                            meta/episodes/{chunk,file}_index, stats/<feature>/<stat>
    data/chunk-000/file-000.parquet            rows of many episodes, one per frame
    videos/<key>/chunk-000/file-000.mp4        many episodes back to back, AV1

With ``frames='png'`` (``realm-ros dataset --frames png``, v3.0 only) there is no videos/
folder: each camera is an ``image`` feature, a column of the data parquet holding one PNG per
frame as the Hugging Face ``datasets.Image`` struct ``{bytes, path}`` (path null), which is how
lerobot 0.4.4 and 0.6 store image features in v3.0 (``embed_images`` before ``to_parquet``;
read back through ``datasets.Image()`` and ``ToTensor``). ``info.json``'s ``video_path`` is
null, as lerobot's own ``create(use_videos=False)`` writes it. Decoding a PNG costs less than
seeking an AV1 stream, so lerobot's data loader serves such a folder faster
(bench/lerobot_loader.py; docs/learned-policy.md), at several times the disk size.

A video file's episode e occupies ``[from_timestamp, to_timestamp)``; LeRobot decodes frame k
of e at ``from_timestamp + k / fps`` and refuses a frame more than ``tolerance_s`` (1e-4 s)
away. Here both bounds are whole frames over ``fps`` and every frame sits exactly on that grid
(:mod:`realm_ros.io.ffmpeg_video`), which :func:`check_dataset` verifies against the mp4 boxes.

**v2.1** (``--format v2.1``, for labs pinned to lerobot <= 0.3) keeps one parquet file and one
mp4 per episode and camera, ``meta/episodes.jsonl``, ``meta/episodes_stats.jsonl``,
``meta/tasks.jsonl``.

Parquet columns (one row per control step, 15 Hz): ``observation.state`` (8 float32: the seven
joint positions in panda_joint1..7 order, rad, then the gripper in [0, 1], 1 = closed),
``action`` (8 float32: the expert's absolute joint-position targets, rad, then its gripper
command), ``timestamp`` (float32 s), ``frame_index``, ``episode_index``, ``index``,
``task_index`` (int64) and ``next.done`` (bool). realm_ros's per-episode extras (``task``,
``seed``, ``success``, ``progression``, ``noise``) are in ``meta/realm_episodes.jsonl`` (v3.0;
LeRobot ignores the file) or ``meta/episodes.jsonl`` (v2.1).

Stats are computed as LeRobot computes them (``compute_stats.py``): numeric features over all
frames; images over an evenly spaced sample of frames (all of them below 100), downsampled by
an integer factor when larger than 300 px, per channel in [0, 1], shape (3, 1, 1), ``count`` the
number of sampled frames; quantiles from a 5000-bin histogram between min and max with linear
interpolation inside a bin; dataset stats are the count-weighted merge of episode stats.

Writers are resumable: every file is replaced atomically (written aside, then renamed), the
episodes table is written after the data and videos it points to, and reopening a folder
drops whatever a killed run wrote past the last finished episode. Nothing here imports
MuJoCo, rclpy, torch or pandas.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import shutil
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from realm_ros.core.errors import ConfigError

CODEBASE_VERSION = 'v3.0'
FORMATS = ('v3.0', 'v2.1')
CHUNKS_SIZE = 1000
DATA_FILE_SIZE_MB = 100
VIDEO_FILE_SIZE_MB = 200
FILE_PATTERN = 'chunk-{chunk_index:03d}/file-{file_index:03d}'
DATA_PATH = 'data/' + FILE_PATTERN + '.parquet'
VIDEO_PATH = 'videos/{video_key}/' + FILE_PATTERN + '.mp4'
EPISODES_PATH = 'meta/episodes/' + FILE_PATTERN + '.parquet'
V21_DATA_PATH = 'data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet'
V21_VIDEO_PATH = ('videos/chunk-{episode_chunk:03d}/{video_key}/'
                  'episode_{episode_index:06d}.mp4')
STATE_NAMES = [f'panda_joint{i}' for i in range(1, 8)] + ['gripper']
IMAGE_PREFIX = 'observation.images.'
QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)
QUANTILE_KEYS = tuple(f'q{int(q * 100):02d}' for q in QUANTILES)
SCALARS = (('timestamp', 'float32'), ('frame_index', 'int64'), ('episode_index', 'int64'),
           ('index', 'int64'), ('task_index', 'int64'))
TOLERANCE_S = 1e-4
#: How a v3.0 writer stores camera frames: 'video' (AV1 mp4s) or 'png' (image features).
FRAME_STORES = ('video', 'png')
PNG_LEVEL = 3  # zlib level: decoding cost hardly depends on it; 1 (lerobot's) is 1.5x larger
EXTRAS_FILE = 'meta/realm_episodes.jsonl'


@dataclasses.dataclass
class Episode:
    """One demonstration: T frames of every camera, T states and T actions, one instruction."""

    instruction: str
    states: np.ndarray            # (T, 8) float32
    actions: np.ndarray           # (T, 8) float32
    images: dict[str, np.ndarray]  # camera -> (T, H, W, 3) uint8
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.states)


# ---------------------------------------------------------------------------- stats


def _quantile(hist: np.ndarray, edges: np.ndarray, target: float) -> float:
    cumsum = np.cumsum(hist)
    idx = int(np.searchsorted(cumsum, target))
    if idx == 0:
        return float(edges[0])
    if idx >= len(cumsum):
        return float(edges[-1])
    before = cumsum[idx - 1]
    inside = cumsum[idx] - before
    if inside == 0:
        return float(edges[idx])
    return float(edges[idx] + (target - before) / inside * (edges[idx + 1] - edges[idx]))


def vector_stats(values: np.ndarray, count: int | None = None) -> dict[str, np.ndarray]:
    """min/max/mean/std/quantiles over axis 0 of (N, D) values; ``count`` defaults to N.

    std is sqrt(E[x^2] - E[x]^2) clipped at 0 (LeRobot's running form); with fewer than two
    rows every quantile is the mean, as LeRobot does.
    """
    x = np.asarray(values, dtype=np.float64)
    x = x.reshape(len(x), -1)
    n = len(x)
    out: dict[str, np.ndarray] = {'min': x.min(0), 'max': x.max(0), 'mean': x.mean(0)}
    if n < 2:
        out['std'] = x.std(0)
        for key in QUANTILE_KEYS:
            out[key] = out['mean'].copy()
    else:
        out['std'] = np.sqrt(np.maximum(0.0, (x ** 2).mean(0) - out['mean'] ** 2))
        qs = np.zeros((len(QUANTILES), x.shape[1]))
        for d in range(x.shape[1]):
            edges = np.linspace(out['min'][d] - 1e-10, out['max'][d] + 1e-10, 5001)
            hist, _ = np.histogram(x[:, d], bins=edges)
            for i, q in enumerate(QUANTILES):
                qs[i, d] = _quantile(hist, edges, q * n)
        for i, key in enumerate(QUANTILE_KEYS):
            out[key] = qs[i]
    out['count'] = np.array([n if count is None else count], dtype=np.int64)
    return out


def sample_indices(n: int) -> list[int]:
    """LeRobot's image sample: all frames below 100, else max(100, n**0.75) evenly spaced."""
    k = n if n < 100 else max(100, min(int(n ** 0.75), 10_000))
    return np.round(np.linspace(0, n - 1, k)).astype(int).tolist()


def image_stats(frames: np.ndarray) -> dict[str, np.ndarray]:
    """Per-channel stats in [0, 1], shape (3, 1, 1), of (T, H, W, 3) uint8 frames."""
    sample = np.asarray(frames)[sample_indices(len(frames))]
    h, w = sample.shape[1:3]
    if max(h, w) >= 300:  # LeRobot's auto_downsample_height_width: ~150 px on the long side
        step = int(w / 150) if w > h else int(h / 150)
        sample = sample[:, ::step, ::step]
    stats = vector_stats(sample.reshape(-1, 3), count=len(sample))
    return {k: v if k == 'count' else (v / 255.0).reshape(3, 1, 1) for k, v in stats.items()}


def merge_stats(parts: Sequence[dict[str, dict[str, np.ndarray]]]
                ) -> dict[str, dict[str, np.ndarray]]:
    """Count-weighted merge of per-episode stats (LeRobot's aggregate_stats)."""
    merged: dict[str, dict[str, np.ndarray]] = {}
    for key in {k for p in parts for k in p}:
        items = [p[key] for p in parts if key in p]
        counts = np.array([float(s['count'][0]) for s in items])
        total = counts.sum()
        shape = (-1,) + (1,) * (np.ndim(items[0]['mean']))
        w = counts.reshape(shape)
        means = np.stack([s['mean'] for s in items])
        mean = (means * w).sum(0) / total
        var = ((np.stack([s['std'] for s in items]) ** 2 + (means - mean) ** 2) * w).sum(0)
        out = {'min': np.min(np.stack([s['min'] for s in items]), 0),
               'max': np.max(np.stack([s['max'] for s in items]), 0),
               'mean': mean, 'std': np.sqrt(var / total),
               'count': np.array([int(total)], dtype=np.int64)}
        for q in QUANTILE_KEYS:
            if all(q in s for s in items):
                out[q] = (np.stack([s[q] for s in items]) * w).sum(0) / total
        merged[key] = out
    return merged


def _jsonable(stats: dict[str, dict[str, np.ndarray]]) -> dict[str, dict[str, list]]:
    return {k: {s: np.asarray(v).tolist() for s, v in d.items()} for k, d in stats.items()}


# ---------------------------------------------------------------------------- frames


def _frame_table(episode: Episode, index: int, first_frame: int, task_index: int, fps: int):
    import pyarrow as pa

    n = len(episode)
    fixed = pa.list_(pa.float32(), 8)
    return pa.table({
        'observation.state': pa.array(list(np.asarray(episode.states, np.float32)), type=fixed),
        'action': pa.array(list(np.asarray(episode.actions, np.float32)), type=fixed),
        'timestamp': pa.array(np.arange(n, dtype=np.float32) / np.float32(fps)),
        'frame_index': pa.array(np.arange(n, dtype=np.int64)),
        'episode_index': pa.array(np.full(n, index, dtype=np.int64)),
        'index': pa.array(first_frame + np.arange(n, dtype=np.int64)),
        'task_index': pa.array(np.full(n, task_index, dtype=np.int64)),
        'next.done': pa.array(np.arange(n) == n - 1),
    })


def episode_stats(episode: Episode, table, cameras: Sequence[str]
                  ) -> dict[str, dict[str, np.ndarray]]:
    """Stats of every feature of one episode (the frame table's columns and each camera)."""
    n = len(episode)
    stats = {'observation.state': vector_stats(episode.states),
             'action': vector_stats(episode.actions)}
    for name in ('timestamp', 'frame_index', 'episode_index', 'index', 'task_index',
                 'next.done'):
        stats[name] = vector_stats(np.asarray(table.column(name).to_numpy(
            zero_copy_only=False), dtype=np.float64).reshape(n, 1))
    for camera in cameras:
        stats[IMAGE_PREFIX + camera] = image_stats(episode.images[camera])
    return stats


def _shape3(shape: Sequence[int]) -> tuple[int, int, int]:
    """Return an image's (H, W, 3) shape as three ints."""
    height, width, channels = (int(v) for v in shape)
    return height, width, channels


def _check_episode(episode: Episode, cameras: Sequence[str],
                   shapes: Mapping[str, tuple[int, ...]]) -> None:
    n = len(episode)
    if n == 0:
        raise ConfigError('cannot write an empty episode')
    for name, arr in (('states', episode.states), ('actions', episode.actions)):
        if np.shape(arr) != (n, 8):
            raise ConfigError(f'episode {name} must be ({n}, 8), got {np.shape(arr)}')
    missing = [c for c in cameras if c not in episode.images]
    if missing:
        raise ConfigError(f'episode lacks camera(s) {missing}; has {sorted(episode.images)}')
    for camera in cameras:
        shape = np.shape(episode.images[camera])
        if len(shape) != 4 or shape[0] != n or shape[3] != 3:
            raise ConfigError(f'camera {camera} frames must be ({n}, H, W, 3), got {shape}')
        if camera in shapes and tuple(shape[1:]) != tuple(shapes[camera]):
            raise ConfigError(f'camera {camera} frames are {shape[1:]}, the dataset has '
                              f'{tuple(shapes[camera])}')


def _replace(path: pathlib.Path, write) -> None:
    """Write ``path`` through ``write(tmp_path)`` then rename: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + '.partial')
    write(tmp)
    os.replace(tmp, path)


def _write_json(path: pathlib.Path, data: Any) -> None:
    _replace(path, lambda p: p.write_text(json.dumps(data, indent=4) + '\n'))


def _write_lines(path: pathlib.Path, rows: Sequence[dict]) -> None:
    _replace(path, lambda p: p.write_text(''.join(json.dumps(r) + '\n' for r in rows)))


def _video_feature(shape: tuple[int, int, int], fps: int, codec: str) -> dict[str, Any]:
    h, w, c = shape
    return {'dtype': 'video', 'shape': [h, w, c], 'names': ['height', 'width', 'channels'],
            'info': {'video.height': h, 'video.width': w, 'video.codec': codec,
                     'video.pix_fmt': 'yuv420p', 'video.is_depth_map': False,
                     'video.fps': int(fps), 'video.channels': c, 'has_audio': False}}


def _image_feature(shape: tuple[int, int, int]) -> dict[str, Any]:
    h, w, c = shape
    return {'dtype': 'image', 'shape': [h, w, c], 'names': ['height', 'width', 'channels']}


def _features(cameras: Sequence[str], shapes: dict[str, tuple[int, int, int]], fps: int,
              codec: str, store: str = 'video') -> dict[str, Any]:
    features: dict[str, Any] = {}
    for camera in cameras:
        shape: tuple[int, int, int] = tuple(shapes.get(camera, (180, 320, 3)))  # type: ignore
        features[IMAGE_PREFIX + camera] = (_video_feature(shape, fps, codec) if store == 'video'
                                           else _image_feature(shape))
    features['observation.state'] = {'dtype': 'float32', 'shape': [8], 'names': STATE_NAMES}
    features['action'] = {'dtype': 'float32', 'shape': [8], 'names': STATE_NAMES}
    features['next.done'] = {'dtype': 'bool', 'shape': [1], 'names': None}
    for name, dtype in SCALARS:
        features[name] = {'dtype': dtype, 'shape': [1], 'names': None}
    return features


def png_column(frames: np.ndarray):
    """(T, H, W, 3) uint8 RGB frames as a ``datasets.Image`` column: struct{bytes, path}."""
    import cv2
    import pyarrow as pa

    blobs = []
    for frame in np.asarray(frames, dtype=np.uint8):
        ok, buf = cv2.imencode('.png', np.ascontiguousarray(frame[..., ::-1]),
                               [cv2.IMWRITE_PNG_COMPRESSION, PNG_LEVEL])
        if not ok:
            raise ConfigError(f'could not encode a {frame.shape} frame as PNG')
        blobs.append({'bytes': buf.tobytes(), 'path': None})
    return pa.array(blobs, type=pa.struct([('bytes', pa.binary()), ('path', pa.string())]))


def decode_png(blob: bytes) -> np.ndarray:
    """One PNG (as :func:`png_column` stores it) as (H, W, 3) uint8 RGB."""
    import cv2

    image = cv2.imdecode(np.frombuffer(blob, np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        raise ConfigError('a frame of an image feature is not a readable PNG')
    return image[..., ::-1]


# ---------------------------------------------------------------------------- v3.0


class LeRobotWriter:
    """Append episodes to a LeRobot v3.0 dataset folder, resuming one a killed run left.

    Args:
        root: the dataset folder. New, empty, or a v3.0 folder this class wrote (then it is
            reopened: episodes past the last finished one are dropped and writing goes on).
        fps: frames per second (the control rate).
        cameras: camera names; each is the feature ``observation.images.<camera>``.
        frames: 'video' (an AV1 ``video`` feature per camera) or 'png' (an ``image`` feature:
            PNG bytes in the data parquet; see the module doc).

    Raises:
        ConfigError: ``root`` holds something else, or a dataset of another fps, cameras,
            frame store or format.
    """

    format = 'v3.0'

    def __init__(self, root: str | pathlib.Path, fps: float = 15, robot_type: str = 'panda',
                 cameras: Sequence[str] = ('exterior_1', 'wrist'), frames: str = 'video'
                 ) -> None:
        from realm_ros.io import ffmpeg_video as video

        if frames not in FRAME_STORES:
            raise ConfigError(f'--frames must be one of {list(FRAME_STORES)}, got {frames!r}')
        self.store = frames
        self.root = pathlib.Path(root)
        self.fps = int(fps)
        self.robot_type = robot_type
        self.cameras = tuple(cameras)
        self.tasks: dict[str, int] = {}
        self.rows: list[dict[str, Any]] = []       # the episodes table
        self.extras: list[dict[str, Any]] = []
        self.ep_stats: list[dict[str, dict[str, np.ndarray]]] = []
        self.frames = 0
        self.image_shapes: dict[str, tuple[int, int, int]] = {}
        self.codec = video.default_codec()
        self.resumed = 0
        if (self.root / 'meta' / 'info.json').is_file():
            self._reopen()
        elif self.root.exists() and any(p.is_file() for p in self.root.rglob('*')):
            raise ConfigError(f'dataset folder {self.root} exists and is not a dataset '
                              '(no meta/info.json); choose a new --out')
        else:
            self._write_meta()

    @property
    def episodes(self) -> list[dict[str, Any]]:
        """One dict per finished episode: index, length and realm_ros's extras."""
        return [{'episode_index': r['episode_index'], 'length': r['length'], **x}
                for r, x in zip(self.rows, self.extras)]

    # -- files

    def _data_file(self, chunk: int, index: int) -> pathlib.Path:
        return self.root / DATA_PATH.format(chunk_index=chunk, file_index=index)

    def _video_file(self, key: str, chunk: int, index: int) -> pathlib.Path:
        return self.root / VIDEO_PATH.format(video_key=key, chunk_index=chunk, file_index=index)

    @staticmethod
    def _next(chunk: int, index: int) -> tuple[int, int]:
        return (chunk + 1, 0) if index == CHUNKS_SIZE - 1 else (chunk, index + 1)

    def _where(self, prefix: str, size_mb: float, limit_mb: int) -> tuple[int, int, bool]:
        """(chunk, file, append?) for the next episode's ``prefix`` (data or a video key)."""
        if not self.rows:
            return 0, 0, False
        last = self.rows[-1]
        chunk, index = last[f'{prefix}/chunk_index'], last[f'{prefix}/file_index']
        if size_mb >= limit_mb:
            return (*self._next(chunk, index), False)
        return chunk, index, True

    # -- writing

    def add(self, episode: Episode) -> int:
        """Write ``episode`` (its frames, videos, stats and metadata); return its index."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        from realm_ros.io import ffmpeg_video as video

        _check_episode(episode, self.cameras, self.image_shapes)
        n = len(episode)
        index = len(self.rows)
        task_index = self.tasks.get(episode.instruction, len(self.tasks))
        table = _frame_table(episode, index, self.frames, task_index, self.fps)
        stats = episode_stats(episode, table, self.cameras)
        row: dict[str, Any] = {'episode_index': index, 'tasks': [episode.instruction],
                               'length': n}
        tmp = self.root / '.partial'
        tmp.mkdir(exist_ok=True)
        # Videos first, then frames, then the episodes table that points at both: a run killed
        # in between leaves tails that reopening cuts off.
        for camera in self.cameras:
            key = IMAGE_PREFIX + camera
            frames = np.asarray(episode.images[camera], dtype=np.uint8)
            self.image_shapes.setdefault(camera, _shape3(frames.shape[1:]))
            if self.store == 'png':
                table = table.append_column(key, png_column(frames))
                continue
            part = tmp / f'{camera}.mp4'
            video.encode(frames, part, self.fps, self.codec)
            last = self._video_file(key, self.rows[-1][f'videos/{key}/chunk_index'],
                                    self.rows[-1][f'videos/{key}/file_index']) \
                if self.rows else None
            size = last.stat().st_size / 2 ** 20 if last is not None else 0.0
            chunk, file, append = self._where(f'videos/{key}', size + part.stat().st_size
                                              / 2 ** 20, VIDEO_FILE_SIZE_MB)
            path = self._video_file(key, chunk, file)
            start = self.rows[-1][f'videos/{key}/to_timestamp'] if append else 0.0
            if append:
                _replace(path, lambda p, a=path, b=part: video.concat([a, b], p, self.fps))
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                os.replace(part, path)
            # Whole frames over fps: exactly where the encoder put them (see module doc).
            first = round(start * self.fps)
            row.update({f'videos/{key}/chunk_index': chunk, f'videos/{key}/file_index': file,
                        f'videos/{key}/from_timestamp': first / self.fps,
                        f'videos/{key}/to_timestamp': (first + n) / self.fps})
        last_data = self._data_file(self.rows[-1]['data/chunk_index'],
                                    self.rows[-1]['data/file_index']) if self.rows else None
        size = last_data.stat().st_size / 2 ** 20 if last_data is not None else 0.0
        chunk, file, append = self._where('data', size, DATA_FILE_SIZE_MB)
        path = self._data_file(chunk, file)
        if append:
            table = pa.concat_tables([pq.read_table(path), table])
        _replace(path, lambda p, t=table: pq.write_table(t, p, compression='snappy'))
        row.update({'data/chunk_index': chunk, 'data/file_index': file,
                    'dataset_from_index': self.frames, 'dataset_to_index': self.frames + n,
                    'meta/episodes/chunk_index': 0, 'meta/episodes/file_index': 0})
        for feature, values in stats.items():
            for name, value in values.items():
                row[f'stats/{feature}/{name}'] = np.asarray(value).tolist()
        self.rows.append(row)
        self.extras.append(dict(episode.extra))
        self.ep_stats.append(stats)
        self.tasks.setdefault(episode.instruction, task_index)
        self.frames += n
        self._write_meta()
        shutil.rmtree(tmp, ignore_errors=True)
        return index

    def close(self) -> pathlib.Path:
        """Rewrite meta/ (it is already current after every :meth:`add`); return the folder."""
        self._write_meta()
        return self.root

    def _info(self) -> dict[str, Any]:
        n = len(self.rows)
        return {
            'codebase_version': CODEBASE_VERSION, 'robot_type': self.robot_type,
            'total_episodes': n, 'total_frames': self.frames, 'total_tasks': len(self.tasks),
            'chunks_size': CHUNKS_SIZE, 'data_files_size_in_mb': DATA_FILE_SIZE_MB,
            'video_files_size_in_mb': VIDEO_FILE_SIZE_MB, 'fps': self.fps,
            'splits': {'train': f'0:{n}'} if n else {}, 'data_path': DATA_PATH,
            'video_path': VIDEO_PATH if self.store == 'video' else None,
            'features': _features(self.cameras, self.image_shapes, self.fps, self.codec[1],
                                  self.store),
        }

    def _write_meta(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        meta = self.root / 'meta'
        if self.rows:
            table = pa.Table.from_pylist(self.rows)
            _replace(self.root / EPISODES_PATH.format(chunk_index=0, file_index=0),
                     lambda p: pq.write_table(table, p))
            _replace(meta / 'tasks.parquet', lambda p: pq.write_table(_tasks_table(self.tasks),
                                                                      p))
            _write_json(meta / 'stats.json', _jsonable(merge_stats(self.ep_stats)))
            _write_lines(self.root / EXTRAS_FILE, [
                {'episode_index': i, **x} for i, x in enumerate(self.extras)])
        _write_json(meta / 'info.json', self._info())  # last: totals match what is on disk

    # -- reopening

    def _reopen(self) -> None:
        import pyarrow.parquet as pq

        from realm_ros.io import ffmpeg_video as video
        from realm_ros.io.mp4 import read_video_track

        info = read_info(self.root)
        if info.get('codebase_version') != CODEBASE_VERSION:
            raise ConfigError(f'{self.root} is a LeRobot {info.get("codebase_version")} '
                              f'dataset; cannot add {CODEBASE_VERSION} episodes to it')
        if int(info['fps']) != self.fps:
            raise ConfigError(f'{self.root} has fps {info["fps"]}, not {self.fps}')
        keys = sorted(k for k, v in info['features'].items()
                      if v.get('dtype') in ('video', 'image'))
        if keys != sorted(IMAGE_PREFIX + c for c in self.cameras):
            raise ConfigError(f'{self.root} has cameras {keys}, not '
                              f'{[IMAGE_PREFIX + c for c in self.cameras]}')
        kind = 'video' if self.store == 'video' else 'image'
        for camera in self.cameras:
            feature = info['features'][IMAGE_PREFIX + camera]
            if feature['dtype'] != kind:
                raise ConfigError(f'{self.root} stores frames as {feature["dtype"]}s; '
                                  f'--frames {self.store} cannot add to it')
            self.image_shapes[camera] = _shape3(feature['shape'])
            codec = feature.get('info', {}).get('video.codec')
            if kind == 'video' and codec and codec != self.codec[1]:
                raise ConfigError(f'{self.root} videos are {codec}; this ffmpeg writes '
                                  f'{self.codec[1]}')
        files = sorted((self.root / 'meta' / 'episodes').glob('*/*.parquet'))
        rows = [r for f in files for r in pq.read_table(f).to_pylist()]
        rows.sort(key=lambda r: r['episode_index'])
        if [r['episode_index'] for r in rows] != list(range(len(rows))):
            raise ConfigError(f'{self.root}: episode indices are not 0..{len(rows) - 1}')
        self.rows = rows
        self.resumed = len(rows)
        self.frames = rows[-1]['dataset_to_index'] if rows else 0
        for r in rows:
            for task in r['tasks']:
                self.tasks.setdefault(task, len(self.tasks))
            self.ep_stats.append(_stats_from_row(r))
        extras = {}
        if (self.root / EXTRAS_FILE).is_file():
            for line in (self.root / EXTRAS_FILE).read_text().splitlines():
                if line.strip():
                    x = json.loads(line)
                    extras[int(x.pop('episode_index'))] = x
        self.extras = [extras.get(i, {}) for i in range(len(rows))]
        # Drop what a killed run wrote past the last finished episode.
        shutil.rmtree(self.root / '.partial', ignore_errors=True)
        for stray in self.root.rglob('*.partial'):
            stray.unlink()
        keep_data = {(r['data/chunk_index'], r['data/file_index']) for r in rows}
        for path in sorted((self.root / 'data').glob('*/*.parquet')):
            where = _where_of(path)
            if where not in keep_data:
                path.unlink()
                continue
            table = pq.read_table(path)
            col = table.column('episode_index').to_numpy()
            if (col >= len(rows)).any():
                import pyarrow.compute as pc

                kept = table.filter(pc.less(table.column('episode_index'), len(rows)))
                _replace(path, lambda p, t=kept: pq.write_table(t, p, compression='snappy'))
        for camera in self.cameras if self.store == 'video' else ():
            key = IMAGE_PREFIX + camera
            ends: dict[tuple[int, int], int] = {}
            for r in rows:
                where = (r[f'videos/{key}/chunk_index'], r[f'videos/{key}/file_index'])
                ends[where] = max(ends.get(where, 0),
                                  round(r[f'videos/{key}/to_timestamp'] * self.fps))
            for path in sorted((self.root / 'videos' / key).glob('*/*.mp4')):
                where = _where_of(path)
                if where not in ends:
                    path.unlink()
                    continue
                frames = read_video_track(path).frames
                if frames > ends[where]:
                    _replace(path, lambda p, a=path, k=ends[where]: video.truncate(
                        a, k, p, self.fps))
                elif frames < ends[where]:
                    raise ConfigError(f'{path} has {frames} frames; meta/episodes says '
                                      f'{ends[where]}: the dataset is damaged')
        self._write_meta()


def _where_of(path: pathlib.Path) -> tuple[int, int]:
    return int(path.parent.name.split('-')[1]), int(path.stem.split('-')[1])


def _stats_from_row(row: dict[str, Any]) -> dict[str, dict[str, np.ndarray]]:
    stats: dict[str, dict[str, np.ndarray]] = {}
    for key, value in row.items():
        if key.startswith('stats/'):
            feature, name = key[len('stats/'):].rsplit('/', 1)
            stats.setdefault(feature, {})[name] = np.asarray(value)
    return stats


def _tasks_table(tasks: dict[str, int]):
    """meta/tasks.parquet as pandas writes ``DataFrame({'task_index': ...}, index=tasks)``."""
    import pyarrow as pa

    ordered = sorted(tasks.items(), key=lambda kv: kv[1])
    pandas_meta = {
        'index_columns': ['__index_level_0__'],
        'column_indexes': [{'name': None, 'field_name': None, 'pandas_type': 'unicode',
                            'numpy_type': 'object', 'metadata': {'encoding': 'UTF-8'}}],
        'columns': [
            {'name': 'task_index', 'field_name': 'task_index', 'pandas_type': 'int64',
             'numpy_type': 'int64', 'metadata': None},
            {'name': None, 'field_name': '__index_level_0__', 'pandas_type': 'unicode',
             'numpy_type': 'object', 'metadata': None}],
        'creator': {'library': 'pyarrow', 'version': pa.__version__},
        'pandas_version': '2.2.3'}
    table = pa.table({'task_index': pa.array([i for _, i in ordered], pa.int64()),
                      '__index_level_0__': pa.array([t for t, _ in ordered], pa.string())})
    return table.replace_schema_metadata({b'pandas': json.dumps(pandas_meta).encode()})


# ---------------------------------------------------------------------------- v2.1


class LeRobotV21Writer:
    """Append episodes to a LeRobot v2.1 folder (lerobot <= 0.3), resuming a killed run's.

    One parquet file and one mp4 per episode and camera; meta/ as jsonl. Same arguments and
    errors as :class:`LeRobotWriter`.
    """

    format = 'v2.1'

    def __init__(self, root: str | pathlib.Path, fps: float = 15, robot_type: str = 'panda',
                 cameras: Sequence[str] = ('exterior_1', 'wrist')) -> None:
        from realm_ros.io import ffmpeg_video as video

        self.root = pathlib.Path(root)
        self.fps = int(fps)
        self.robot_type = robot_type
        self.cameras = tuple(cameras)
        self.tasks: dict[str, int] = {}
        self.episodes: list[dict[str, Any]] = []
        self.frames = 0
        self.image_shapes: dict[str, tuple[int, int, int]] = {}
        self.codec = video.default_codec()
        self.resumed = 0
        if (self.root / 'meta' / 'info.json').is_file():
            self._reopen()
        elif self.root.exists() and any(p.is_file() for p in self.root.rglob('*')):
            raise ConfigError(f'dataset folder {self.root} exists and is not a dataset '
                              '(no meta/info.json); choose a new --out')
        else:
            self.close()

    def add(self, episode: Episode) -> int:
        import pyarrow.parquet as pq

        from realm_ros.io import ffmpeg_video as video

        _check_episode(episode, self.cameras, self.image_shapes)
        index = len(self.episodes)
        task_index = self.tasks.get(episode.instruction, len(self.tasks))
        chunk = index // CHUNKS_SIZE
        table = _frame_table(episode, index, self.frames, task_index, self.fps)
        for camera in self.cameras:
            frames = np.asarray(episode.images[camera], dtype=np.uint8)
            self.image_shapes.setdefault(camera, _shape3(frames.shape[1:]))
            path = self.root / V21_VIDEO_PATH.format(
                episode_chunk=chunk, video_key=IMAGE_PREFIX + camera, episode_index=index)
            _replace(path, lambda p, f=frames: video.encode(f, p, self.fps, self.codec))
        _replace(self.root / V21_DATA_PATH.format(episode_chunk=chunk, episode_index=index),
                 lambda p: pq.write_table(table, p))
        stats = _jsonable(episode_stats(episode, table, self.cameras))
        self.episodes.append({'episode_index': index, 'tasks': [episode.instruction],
                              'length': len(episode), **episode.extra, '_stats': stats})
        self.tasks.setdefault(episode.instruction, task_index)
        self.frames += len(episode)
        self.close()  # meta/ always describes every finished episode
        return index

    def close(self) -> pathlib.Path:
        """(Re)write meta/ (info, tasks, episodes, episodes_stats); return the dataset folder."""
        meta = self.root / 'meta'
        n_eps = len(self.episodes)
        features = _features(self.cameras, self.image_shapes, self.fps, self.codec[1])
        info = {
            'codebase_version': 'v2.1', 'robot_type': self.robot_type,
            'total_episodes': n_eps, 'total_frames': self.frames, 'total_tasks': len(self.tasks),
            'total_videos': n_eps * len(self.cameras),
            'total_chunks': (n_eps - 1) // CHUNKS_SIZE + 1 if n_eps else 0,
            'chunks_size': CHUNKS_SIZE, 'fps': self.fps, 'splits': {'train': f'0:{n_eps}'},
            'data_path': V21_DATA_PATH, 'video_path': V21_VIDEO_PATH, 'features': features,
        }
        _write_lines(meta / 'tasks.jsonl', [
            {'task_index': i, 'task': t} for t, i in sorted(self.tasks.items(),
                                                             key=lambda kv: kv[1])])
        _write_lines(meta / 'episodes_stats.jsonl', [
            {'episode_index': e['episode_index'], 'stats': e['_stats']} for e in self.episodes])
        _write_lines(meta / 'episodes.jsonl', [
            {k: v for k, v in e.items() if k != '_stats'} for e in self.episodes])
        _write_json(meta / 'info.json', info)
        return self.root

    def _reopen(self) -> None:
        info = read_info(self.root)
        if info.get('codebase_version') != 'v2.1':
            raise ConfigError(f'{self.root} is a LeRobot {info.get("codebase_version")} '
                              'dataset; cannot add v2.1 episodes to it')
        if int(info['fps']) != self.fps:
            raise ConfigError(f'{self.root} has fps {info["fps"]}, not {self.fps}')
        keys = sorted(k for k, v in info['features'].items() if v.get('dtype') == 'video')
        if keys != sorted(IMAGE_PREFIX + c for c in self.cameras):
            raise ConfigError(f'{self.root} has cameras {keys}')
        for camera in self.cameras:
            self.image_shapes[camera] = _shape3(info['features'][IMAGE_PREFIX + camera]['shape'])
        meta = self.root / 'meta'
        rows = [json.loads(x) for x in (meta / 'episodes.jsonl').read_text().splitlines()
                if x.strip()]
        stats = {int(s['episode_index']): s['stats'] for s in (
            json.loads(x) for x in (meta / 'episodes_stats.jsonl').read_text().splitlines()
            if x.strip())}
        for row in rows:
            row['_stats'] = stats[int(row['episode_index'])]
            for task in row['tasks']:
                self.tasks.setdefault(task, len(self.tasks))
        self.episodes = rows
        self.resumed = len(rows)
        self.frames = sum(int(r['length']) for r in rows)
        for path in list(self.root.rglob('episode_*.*')) + list(self.root.rglob('*.partial')):
            if path.suffix == '.partial' or int(path.stem.split('_')[1]) >= len(rows):
                path.unlink()
        self.close()


WRITERS = {'v3.0': LeRobotWriter, 'v2.1': LeRobotV21Writer}


def open_writer(root: str | pathlib.Path, format: str = CODEBASE_VERSION, fps: float = 15,
                cameras: Sequence[str] = ('exterior_1', 'wrist'), robot_type: str = 'panda',
                frames: str = 'video'):
    """The writer for ``format`` ('v3.0' or 'v2.1'), new or reopened at ``root``.

    ``frames`` ('video' or 'png') is how v3.0 stores camera frames; v2.1 has videos only.
    """
    if format not in WRITERS:
        raise ConfigError(f'--format must be one of {list(WRITERS)}, got {format!r}')
    if frames != 'video':
        if format != CODEBASE_VERSION:
            raise ConfigError(f'--frames {frames}: only --format {CODEBASE_VERSION} stores '
                              'frames as images; v2.1 writes videos')
        return LeRobotWriter(root, fps=fps, robot_type=robot_type, cameras=cameras,
                             frames=frames)
    return WRITERS[format](root, fps=fps, robot_type=robot_type, cameras=cameras)


# ---------------------------------------------------------------------------- reading


def read_video(path: str | pathlib.Path) -> np.ndarray:
    """Return every frame of an mp4 as (T, H, W, 3) uint8 RGB."""
    from realm_ros.io import ffmpeg_video as video

    return video.decode(path)


def read_info(root: str | pathlib.Path) -> dict[str, Any]:
    """Return meta/info.json; ConfigError when the folder is not a LeRobot dataset."""
    path = pathlib.Path(root) / 'meta' / 'info.json'
    if not path.is_file():
        raise ConfigError(f'{root} is not a LeRobot dataset (no meta/info.json)')
    info = json.loads(path.read_text())
    for key in ('features', 'data_path', 'video_path', 'total_episodes', 'fps'):
        if key not in info:
            raise ConfigError(f'{path}: field {key!r} is missing')
    return info


def _camera_keys(root: pathlib.Path, info: dict[str, Any],
                 cameras: Sequence[str] | None) -> list[str]:
    """The camera features to read: video features, and v3.0 image features."""
    kinds = ('video', 'image') if str(info.get('codebase_version', '')).startswith('v3') \
        else ('video',)
    keys = [k for k, v in info['features'].items() if v.get('dtype') in kinds]
    if cameras is None:
        return keys
    wanted = [IMAGE_PREFIX + c for c in cameras]
    missing = [k for k in wanted if k not in keys]
    if missing:
        raise ConfigError(f'dataset {root} has no camera feature(s) {missing}; has {keys}')
    return wanted


def read_episode_rows(root: str | pathlib.Path) -> list[dict[str, Any]]:
    """The v3.0 episodes table, one dict per episode, without the stats columns."""
    import pyarrow.parquet as pq

    rows = []
    for path in sorted((pathlib.Path(root) / 'meta' / 'episodes').glob('*/*.parquet')):
        table = pq.read_table(path)
        keep = [c for c in table.column_names if not c.startswith('stats/')]
        rows += table.select(keep).to_pylist()
    return sorted(rows, key=lambda r: r['episode_index'])


def iter_episodes(root: str | pathlib.Path, cameras: Sequence[str] | None = None
                  ) -> Iterator[Episode]:
    """Yield every episode of a LeRobot v3.0 or v2.x dataset folder (images decoded).

    Works on any dataset with ``observation.state``, ``action`` and ``task_index`` columns and
    video features (v3.0: or PNG image features); each video file is decoded once.
    """
    root = pathlib.Path(root)
    info = read_info(root)
    keys = _camera_keys(root, info, cameras)
    if str(info.get('codebase_version', '')).startswith('v3'):
        yield from _iter_v3(root, info, keys)
    else:
        yield from _iter_v2(root, info, keys)


def _columns(table) -> tuple[np.ndarray, np.ndarray]:
    states = np.asarray(table.column('observation.state').to_pylist(), dtype=np.float32)
    actions = np.asarray(table.column('action').to_pylist(), dtype=np.float32)
    return states, actions


def _iter_v3(root: pathlib.Path, info: dict[str, Any], keys: list[str]) -> Iterator[Episode]:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    fps = int(info['fps'])
    tasks = {int(r['task_index']): r['__index_level_0__'] if '__index_level_0__' in r
             else r.get('task') for r in pq.read_table(root / 'meta' / 'tasks.parquet')
             .to_pylist()}
    extras = {}
    if (root / EXTRAS_FILE).is_file():
        for line in (root / EXTRAS_FILE).read_text().splitlines():
            if line.strip():
                x = json.loads(line)
                extras[int(x.pop('episode_index'))] = x
    tables: dict[str, Any] = {}
    videos: dict[str, dict[str, np.ndarray]] = {k: {} for k in keys}
    for row in read_episode_rows(root):
        e = int(row['episode_index'])
        path = root / info['data_path'].format(chunk_index=row['data/chunk_index'],
                                               file_index=row['data/file_index'])
        if str(path) not in tables:
            tables.clear()
            tables[str(path)] = pq.read_table(path)
        table = tables[str(path)]
        rows = table.filter(pc.equal(table.column('episode_index'), e))
        states, actions = _columns(rows)
        images = {}
        for key in keys:
            if info['features'][key]['dtype'] == 'image':
                images[key[len(IMAGE_PREFIX):]] = np.stack([
                    decode_png(x['bytes']) for x in rows.column(key).to_pylist()])
                continue
            vpath = root / info['video_path'].format(
                video_key=key, chunk_index=row[f'videos/{key}/chunk_index'],
                file_index=row[f'videos/{key}/file_index'])
            if str(vpath) not in videos[key]:
                videos[key] = {str(vpath): read_video(vpath)}
            frames = videos[key][str(vpath)]
            first = round(row[f'videos/{key}/from_timestamp'] * fps)
            clip = frames[first:first + len(states)]
            if len(clip) < len(states):
                raise ConfigError(f'episode {e} {key}: {len(clip)} frames for '
                                  f'{len(states)} rows')
            images[key[len(IMAGE_PREFIX):]] = clip
        yield Episode(instruction=tasks[int(rows.column('task_index')[0].as_py())],
                      states=states, actions=actions, images=images,
                      extra=extras.get(e, {}))


def _iter_v2(root: pathlib.Path, info: dict[str, Any], keys: list[str]) -> Iterator[Episode]:
    import pyarrow.parquet as pq

    tasks = {}
    for line in (root / 'meta' / 'tasks.jsonl').read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            tasks[int(row['task_index'])] = row['task']
    extras = {}
    for line in (root / 'meta' / 'episodes.jsonl').read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            extras[int(row['episode_index'])] = row
    chunks_size = int(info.get('chunks_size', CHUNKS_SIZE))
    for index in range(int(info['total_episodes'])):
        chunk = index // chunks_size
        table = pq.read_table(root / info['data_path'].format(episode_chunk=chunk,
                                                              episode_index=index))
        states, actions = _columns(table)
        images = {}
        for key in keys:
            frames = read_video(root / info['video_path'].format(
                episode_chunk=chunk, video_key=key, episode_index=index))
            if len(frames) < len(states):
                raise ConfigError(f'episode {index} {key}: {len(frames)} frames for '
                                  f'{len(states)} rows')
            images[key[len(IMAGE_PREFIX):]] = frames[:len(states)]
        yield Episode(instruction=tasks[int(table.column('task_index')[0].as_py())],
                      states=states, actions=actions, images=images,
                      extra=extras.get(index, {}))


# ---------------------------------------------------------------------------- checks


def check_dataset(root: str | pathlib.Path) -> list[str]:
    """Return every way a v3.0 folder breaks what LeRobot's loader enforces (empty: none).

    Checks the info.json schema against the files; each episode's rows (contiguous ``index``,
    ``frame_index`` 0..n-1, ``timestamp`` = frame_index / fps within 1e-4 s); each video file's
    mp4 boxes (no composition offsets, every frame's time k / fps within 1e-4 s, the track and
    edit-list lengths = frames / fps within 1e-4 s); and that each episode's
    ``[from_timestamp, to_timestamp)`` holds exactly its frames, within 1e-4 s.
    """
    import pyarrow.parquet as pq

    from realm_ros.io.mp4 import read_video_track

    root = pathlib.Path(root)
    problems: list[str] = []
    info = read_info(root)
    for key in ('codebase_version', 'robot_type', 'total_episodes', 'total_frames',
                'total_tasks', 'chunks_size', 'data_files_size_in_mb',
                'video_files_size_in_mb', 'fps', 'splits', 'data_path', 'video_path',
                'features'):
        if key not in info:
            problems.append(f'info.json: no {key!r}')
    if info.get('codebase_version') != CODEBASE_VERSION:
        return problems + [f'codebase_version is {info.get("codebase_version")}']
    fps = int(info['fps'])
    features = info['features']
    for name, dtype in SCALARS:
        if features.get(name, {}).get('dtype') != dtype:
            problems.append(f'feature {name!r} missing or not {dtype}')
    for path in ('meta/stats.json', 'meta/tasks.parquet'):
        if not (root / path).is_file():
            problems.append(f'no {path}')
    rows = read_episode_rows(root)
    if len(rows) != info['total_episodes']:
        problems.append(f'{len(rows)} episode rows, info says {info["total_episodes"]}')
    stats = json.loads((root / 'meta' / 'stats.json').read_text()) \
        if (root / 'meta' / 'stats.json').is_file() else {}
    for name, ft in features.items():
        if name not in stats:
            problems.append(f'stats.json has no {name!r}')
            continue
        missing = [k for k in ('min', 'max', 'mean', 'std', 'count', *QUANTILE_KEYS)
                   if k not in stats[name]]
        if missing:
            problems.append(f'stats.json {name!r} lacks {missing}')
        if ft['dtype'] in ('video', 'image') and \
                np.shape(stats[name].get('mean')) != (3, 1, 1):
            problems.append(f'stats.json {name!r} mean is not (3, 1, 1)')
    expected_index = 0
    tables: dict[str, Any] = {}
    video_keys = [k for k, v in features.items() if v.get('dtype') == 'video']
    image_keys = [k for k, v in features.items() if v.get('dtype') == 'image']
    if video_keys and not info.get('video_path'):
        problems.append('info.json: video features but no video_path')
    spans: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        e = row['episode_index']
        n = row['length']
        if row['dataset_from_index'] != expected_index or \
                row['dataset_to_index'] != expected_index + n:
            problems.append(f'episode {e}: dataset index range is not contiguous')
        dpath = root / info['data_path'].format(chunk_index=row['data/chunk_index'],
                                                file_index=row['data/file_index'])
        if str(dpath) not in tables:
            tables[str(dpath)] = pq.read_table(dpath).to_pydict()
        cols = tables[str(dpath)]
        sel = [i for i, x in enumerate(cols['episode_index']) if x == e]
        if len(sel) != n:
            problems.append(f'episode {e}: {len(sel)} rows in {dpath.name}, length {n}')
        else:
            if [cols['index'][i] for i in sel] != list(range(expected_index, expected_index + n)):
                problems.append(f'episode {e}: index column is not contiguous')
            if [cols['frame_index'][i] for i in sel] != list(range(n)):
                problems.append(f'episode {e}: frame_index is not 0..{n - 1}')
            ts = np.array([cols['timestamp'][i] for i in sel])
            if np.abs(ts - np.arange(n) / fps).max() >= TOLERANCE_S:
                problems.append(f'episode {e}: timestamps off the 1/{fps} s grid')
            for key in image_keys:
                problems += _image_problems(e, key, [cols[key][i] if key in cols else None
                                                     for i in sel], features[key]['shape'])
        expected_index += n
        for key in video_keys:
            vpath = root / info['video_path'].format(
                video_key=key, chunk_index=row[f'videos/{key}/chunk_index'],
                file_index=row[f'videos/{key}/file_index'])
            start, stop = row[f'videos/{key}/from_timestamp'], row[f'videos/{key}/to_timestamp']
            if abs((stop - start) - n / fps) >= TOLERANCE_S:
                problems.append(f'episode {e} {key}: video span {stop - start:.6f} s for '
                                f'{n} frames')
            spans.setdefault(str(vpath), []).append((start, stop))
    for vpath, ranges in spans.items():
        track = read_video_track(vpath)
        rel = pathlib.Path(vpath).relative_to(root)
        if track.has_ctts:
            problems.append(f'{rel}: frames are reordered (B-frames: ctts box)')
        grid = np.arange(track.frames) / fps
        pts = np.asarray(track.sample_pts)
        if len(pts) and np.abs(pts - grid).max() >= TOLERANCE_S:
            k = int(np.argmax(np.abs(pts - grid)))
            problems.append(f'{rel}: frame {k} at {pts[k]:.6f} s, not {grid[k]:.6f} s')
        length = track.frames / fps
        if abs(track.duration_s - length) >= TOLERANCE_S:
            problems.append(f'{rel}: stream length {track.duration_s:.6f} s for '
                            f'{track.frames} frames ({length:.6f} s)')
        for seg, _ in track.edits:
            if abs(seg - length) >= TOLERANCE_S:
                problems.append(f'{rel}: edit list length {seg:.6f} s, not {length:.6f} s')
        ranges.sort()
        if abs(ranges[0][0]) >= TOLERANCE_S or abs(ranges[-1][1] - length) >= TOLERANCE_S or \
                any(abs(a[1] - b[0]) >= TOLERANCE_S for a, b in zip(ranges, ranges[1:])):
            problems.append(f'{rel}: episode spans {ranges} do not tile its {length:.6f} s')
    return problems


def _image_problems(episode: int, key: str, cells: list, shape: Sequence[int]) -> list[str]:
    """An image column's cells: every one a ``{bytes, path}`` PNG; the first decodes to shape."""
    if any(not isinstance(c, dict) or not isinstance(c.get('bytes'), bytes) for c in cells):
        return [f'episode {episode} {key}: not a column of {{bytes, path}} images']
    if any(not c['bytes'].startswith(b'\x89PNG\r\n\x1a\n') for c in cells):
        return [f'episode {episode} {key}: a frame is not PNG']
    got = decode_png(cells[0]['bytes']).shape if cells else tuple(shape)
    if tuple(got) != tuple(shape):
        return [f'episode {episode} {key}: frames are {tuple(got)}, info.json says {shape}']
    return []


__all__ = ['CODEBASE_VERSION', 'Episode', 'FORMATS', 'FRAME_STORES', 'LeRobotV21Writer',
           'LeRobotWriter', 'WRITERS', 'check_dataset', 'decode_png', 'image_stats',
           'iter_episodes', 'merge_stats', 'open_writer', 'png_column', 'read_episode_rows',
           'read_info', 'read_video', 'sample_indices', 'vector_stats']
