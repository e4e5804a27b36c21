"""Write and read demonstrations in LeRobot's dataset layout (``codebase_version`` v2.1).

The layout, as LeRobot v2.x defines it (``lerobot/common/datasets``) and as the DROID and
GR00T ports on the Hugging Face hub use it::

    meta/info.json                    schema: fps, features, path templates, totals, splits
    meta/tasks.jsonl                  {"task_index": i, "task": instruction} per line
    meta/episodes.jsonl               {"episode_index": e, "tasks": [...], "length": n} per line
    meta/episodes_stats.jsonl         {"episode_index": e, "stats": {feature: min/max/mean/std/
                                      count}} per line (v2.1)
    data/chunk-000/episode_000000.parquet          one row per frame
    videos/chunk-000/observation.images.<camera>/episode_000000.mp4   h264, yuv420p, fps

Parquet columns (one row per control step, 15 Hz): ``observation.state`` (8 float32: the seven
joint positions in panda_joint1..7 order, rad, then the gripper in [0, 1], 1 = closed),
``action`` (8 float32: the expert's absolute joint-position targets, rad, then its gripper
command), ``timestamp`` (float32 s), ``frame_index``, ``episode_index``, ``index``,
``task_index`` (int64) and ``next.done`` (bool). Images are not in the parquet files: each camera
is one mp4 per episode whose frame k is row k. realm_ros's extras (``seed``, ``success``,
``progression``, ``noise``) ride along in ``episodes.jsonl``, which LeRobot reads as plain maps.

pyarrow writes and reads the parquet files; imageio-ffmpeg encodes the videos; OpenCV (or
imageio) decodes them. Nothing here imports MuJoCo, rclpy or torch.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
from typing import Any, Iterator, Sequence

import numpy as np

from realm_ros.core.errors import ConfigError

CODEBASE_VERSION = 'v2.1'
CHUNKS_SIZE = 1000
DATA_PATH = 'data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet'
VIDEO_PATH = 'videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4'
STATE_NAMES = [f'panda_joint{i}' for i in range(1, 8)] + ['gripper']
IMAGE_PREFIX = 'observation.images.'


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


def _stats(values: np.ndarray) -> dict[str, list]:
    """LeRobot's per-feature stats over axis 0 (images: per channel, shape (3, 1, 1))."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 4:  # (T, H, W, 3) -> per channel in [0, 1]
        flat = values.reshape(-1, 3) / 255.0
        out = {k: getattr(np, k)(flat, axis=0).reshape(3, 1, 1).tolist()
               for k in ('min', 'max', 'mean', 'std')}
    else:
        out = {k: getattr(np, k)(values, axis=0).tolist() for k in ('min', 'max', 'mean', 'std')}
    out['count'] = [int(len(values))]
    return out


class LeRobotWriter:
    """Append episodes to a new LeRobot v2.1 dataset folder; :meth:`close` writes meta/.

    Raises:
        ConfigError: ``root`` exists and is not empty (datasets are never overwritten).
    """

    def __init__(self, root: str | pathlib.Path, fps: int = 15, robot_type: str = 'panda',
                 cameras: Sequence[str] = ('exterior_1', 'wrist')) -> None:
        self.root = pathlib.Path(root)
        if self.root.exists() and any(self.root.iterdir()):
            raise ConfigError(f'dataset folder {self.root} exists and is not empty')
        (self.root / 'meta').mkdir(parents=True, exist_ok=True)
        self.fps = int(fps)
        self.robot_type = robot_type
        self.cameras = tuple(cameras)
        self.tasks: dict[str, int] = {}
        self.episodes: list[dict[str, Any]] = []
        self.frames = 0
        self.image_shapes: dict[str, tuple[int, int, int]] = {}

    def add(self, episode: Episode) -> int:
        """Write ``episode``'s parquet file and videos; return its episode index."""
        import imageio.v2 as imageio
        import pyarrow as pa
        import pyarrow.parquet as pq

        n = len(episode)
        if n == 0:
            raise ConfigError('cannot write an empty episode')
        for name, arr in (('states', episode.states), ('actions', episode.actions)):
            if np.shape(arr) != (n, 8):
                raise ConfigError(f'episode {name} must be ({n}, 8), got {np.shape(arr)}')
        missing = [c for c in self.cameras if c not in episode.images]
        if missing:
            raise ConfigError(f'episode lacks camera(s) {missing}; has {sorted(episode.images)}')
        index = len(self.episodes)
        task_index = self.tasks.setdefault(episode.instruction, len(self.tasks))
        chunk = index // CHUNKS_SIZE
        fixed = pa.list_(pa.float32(), 8)
        table = pa.table({
            'observation.state': pa.array(list(np.asarray(episode.states, np.float32)),
                                          type=fixed),
            'action': pa.array(list(np.asarray(episode.actions, np.float32)), type=fixed),
            'timestamp': pa.array(np.arange(n, dtype=np.float32) / self.fps),
            'frame_index': pa.array(np.arange(n, dtype=np.int64)),
            'episode_index': pa.array(np.full(n, index, dtype=np.int64)),
            'index': pa.array(self.frames + np.arange(n, dtype=np.int64)),
            'task_index': pa.array(np.full(n, task_index, dtype=np.int64)),
            'next.done': pa.array(np.arange(n) == n - 1),
        })
        path = self.root / DATA_PATH.format(episode_chunk=chunk, episode_index=index)
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)
        stats = {'observation.state': _stats(episode.states), 'action': _stats(episode.actions)}
        for camera in self.cameras:
            frames = np.asarray(episode.images[camera], dtype=np.uint8)
            if frames.ndim != 4 or len(frames) != n or frames.shape[3] != 3:
                raise ConfigError(f'camera {camera} frames must be ({n}, H, W, 3), got '
                                  f'{frames.shape}')
            self.image_shapes.setdefault(camera, frames.shape[1:])
            key = IMAGE_PREFIX + camera
            video = self.root / VIDEO_PATH.format(episode_chunk=chunk, video_key=key,
                                                  episode_index=index)
            video.parent.mkdir(parents=True, exist_ok=True)
            imageio.mimwrite(str(video), list(frames), fps=self.fps, codec='libx264',
                             pixelformat='yuv420p', macro_block_size=1, quality=6)
            stats[key] = _stats(frames[::5])
        self.episodes.append({'episode_index': index, 'tasks': [episode.instruction],
                              'length': n, **episode.extra, '_stats': stats})
        self.frames += n
        self.close()  # meta/ always describes every finished episode: a killed run loses none
        return index

    def close(self) -> pathlib.Path:
        """(Re)write meta/ (info, tasks, episodes, episodes_stats); return the dataset folder."""
        meta = self.root / 'meta'
        n_eps = len(self.episodes)
        features: dict[str, Any] = {}
        for camera in self.cameras:
            h, w, c = self.image_shapes.get(camera, (180, 320, 3))
            features[IMAGE_PREFIX + camera] = {
                'dtype': 'video', 'shape': [h, w, c], 'names': ['height', 'width', 'channels'],
                'info': {'video.fps': float(self.fps), 'video.height': h, 'video.width': w,
                         'video.channels': c, 'video.codec': 'h264', 'video.pix_fmt': 'yuv420p',
                         'video.is_depth_map': False, 'has_audio': False}}
        features['observation.state'] = {'dtype': 'float32', 'shape': [8], 'names': STATE_NAMES}
        features['action'] = {'dtype': 'float32', 'shape': [8], 'names': STATE_NAMES}
        for name, dtype in (('timestamp', 'float32'), ('frame_index', 'int64'),
                            ('episode_index', 'int64'), ('index', 'int64'),
                            ('task_index', 'int64'), ('next.done', 'bool')):
            features[name] = {'dtype': dtype, 'shape': [1], 'names': None}
        info = {
            'codebase_version': CODEBASE_VERSION, 'robot_type': self.robot_type,
            'total_episodes': n_eps, 'total_frames': self.frames, 'total_tasks': len(self.tasks),
            'total_videos': n_eps * len(self.cameras),
            'total_chunks': (n_eps - 1) // CHUNKS_SIZE + 1 if n_eps else 0,
            'chunks_size': CHUNKS_SIZE, 'fps': self.fps, 'splits': {'train': f'0:{n_eps}'},
            'data_path': DATA_PATH, 'video_path': VIDEO_PATH, 'features': features,
        }
        (meta / 'info.json').write_text(json.dumps(info, indent=4) + '\n')
        with open(meta / 'tasks.jsonl', 'w') as f:
            for task, i in sorted(self.tasks.items(), key=lambda kv: kv[1]):
                f.write(json.dumps({'task_index': i, 'task': task}) + '\n')
        with open(meta / 'episodes.jsonl', 'w') as f, \
                open(meta / 'episodes_stats.jsonl', 'w') as g:
            for ep in self.episodes:
                stats = ep['_stats']
                f.write(json.dumps({k: v for k, v in ep.items() if k != '_stats'}) + '\n')
                g.write(json.dumps({'episode_index': ep['episode_index'], 'stats': stats}) + '\n')
        return self.root


def read_video(path: str | pathlib.Path) -> np.ndarray:
    """Return every frame of an mp4 as (T, H, W, 3) uint8 RGB (OpenCV, else imageio)."""
    try:
        import cv2
    except ImportError:
        import imageio.v2 as imageio
        return np.stack(imageio.mimread(str(path), memtest=False))
    cap = cv2.VideoCapture(str(path))
    frames = []
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        frames.append(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))
    cap.release()
    if not frames:
        raise ConfigError(f'no frames could be decoded from {path}')
    return np.stack(frames)


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


def iter_episodes(root: str | pathlib.Path, cameras: Sequence[str] | None = None
                  ) -> Iterator[Episode]:
    """Yield every episode of a LeRobot v2.x dataset folder (images decoded)."""
    import pyarrow.parquet as pq

    root = pathlib.Path(root)
    info = read_info(root)
    tasks = {}
    with open(root / 'meta' / 'tasks.jsonl') as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                tasks[int(row['task_index'])] = row['task']
    video_keys = [k for k, v in info['features'].items() if v.get('dtype') == 'video']
    if cameras is not None:
        wanted = [IMAGE_PREFIX + c for c in cameras]
        missing = [k for k in wanted if k not in video_keys]
        if missing:
            raise ConfigError(f'dataset {root} has no video feature(s) {missing}; has '
                              f'{video_keys}')
        video_keys = wanted
    extras = {}
    with open(root / 'meta' / 'episodes.jsonl') as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                extras[int(row['episode_index'])] = row
    chunks_size = int(info.get('chunks_size', CHUNKS_SIZE))
    for index in range(int(info['total_episodes'])):
        chunk = index // chunks_size
        table = pq.read_table(root / info['data_path'].format(episode_chunk=chunk,
                                                              episode_index=index))
        states = np.asarray(table.column('observation.state').to_pylist(), dtype=np.float32)
        actions = np.asarray(table.column('action').to_pylist(), dtype=np.float32)
        task_index = int(table.column('task_index')[0].as_py())
        images = {}
        for key in video_keys:
            frames = read_video(root / info['video_path'].format(
                episode_chunk=chunk, video_key=key, episode_index=index))
            if len(frames) < len(states):
                raise ConfigError(f'episode {index} {key}: {len(frames)} frames for '
                                  f'{len(states)} rows')
            images[key[len(IMAGE_PREFIX):]] = frames[:len(states)]
        yield Episode(instruction=tasks[task_index], states=states, actions=actions,
                      images=images, extra=extras.get(index, {}))


__all__ = ['CODEBASE_VERSION', 'Episode', 'LeRobotWriter', 'iter_episodes', 'read_info',
           'read_video']
