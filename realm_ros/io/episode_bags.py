"""Paired-evaluation episodes in their bags: the run's bag map, one episode read back, export.

``realm-ros paired-eval --record`` runs one ``recorder_node`` per world; the evaluator splits
each recorder's bag at the start of every pair (before the worlds reset), so a bag holds one
pair's reset and episode. When a world's episode ends, the evaluator asks each recorder what its
open bag holds and appends one line per (pair, world) to ``RUN/bags.jsonl`` *before* the
episode's record goes to ``episodes.jsonl`` (a record is never without its line)::

    {"pair_id": "...", "role": "real", "bag": "bags_real/pair_003", "namespace": "/real",
     "start_ns": 0, "end_ns": 2000000000, "steps": 30, "counts": {"/real/command": 30, ...}}

``bag`` is relative to the run folder; ``start_ns``/``end_ns`` bound the episode in the bag's
log times (the messages' header stamps: sim time in lockstep, wall time on a real arm).

An episode read back (:func:`read_episode`) has one frame per command the policy sent inside
that window (a policy answers one observation with one command, stamped with the observation's
time in lockstep): the frame's state is the latest joint state at or before the command's stamp,
its images the latest image of each camera at or before it, its action the command's first
point. :func:`export_run` writes the episodes of one world as a LeRobot dataset
(:mod:`realm_ros.io.lerobot`), resumably.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from realm_ros.core import robot
from realm_ros.core import topics as names
from realm_ros.core.config import CAMERA_NAMES
from realm_ros.core.errors import ConfigError, DataError

BAG_MAP_FILE = 'bags.jsonl'
#: Sides of a paired run a dataset can be exported from (``twin`` is the ``sim`` role).
ROLES = {'real': 'real', 'twin': 'sim', 'sim': 'sim'}
RUN_FILE = 'meta/realm_run.json'


# ---------------------------------------------------------------------------- the bag map


def bag_line(record: Mapping[str, Any], namespace: str, statuses: Iterable[Mapping[str, Any]],
             run_dir: str | pathlib.Path) -> dict[str, Any] | None:
    """Return the bag-map line of ``record`` from the recorders' status answers (None: no bag).

    Args:
        record: the episode record (``pair_id``, ``role``, ``steps``).
        namespace: the world's namespace (``/real``); the recorder of that namespace holds it.
        statuses: each recorder's ``~/status`` answer (JSON-decoded: bag, counts, namespace,
            first_ns, last_ns).
        run_dir: the run folder; the bag path is stored relative to it when inside it.
    """
    ns = namespace.rstrip('/')
    status = next((s for s in statuses if str(s.get('namespace', '')).rstrip('/') == ns), None)
    if status is None or not status.get('bag') or status.get('first_ns') is None:
        return None
    bag = pathlib.Path(status['bag'])
    try:
        bag = bag.resolve().relative_to(pathlib.Path(run_dir).resolve())
    except ValueError:
        pass  # a recorder writing outside the run folder: keep its absolute path
    return {'pair_id': record['pair_id'], 'role': record.get('role', ''), 'bag': str(bag),
            'namespace': namespace, 'start_ns': int(status['first_ns']),
            'end_ns': int(status['last_ns']), 'steps': int(record.get('steps', 0)),
            'counts': dict(status.get('counts', {}))}


def note_bag(run_dir: str | pathlib.Path, record: Mapping[str, Any], namespace: str,
             statuses: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Append ``record``'s line to ``run_dir/bags.jsonl`` (flushed); return it (None: no bag)."""
    line = bag_line(record, namespace, statuses, run_dir)
    if line is not None:
        path = pathlib.Path(run_dir) / BAG_MAP_FILE
        # A line a kill cut has no newline: start on a fresh line so this one stays whole.
        cut = path.is_file() and path.stat().st_size > 0 and not _ends_with_newline(path)
        with open(path, 'a') as out:
            out.write(('\n' if cut else '') + json.dumps(line) + '\n')
            out.flush()
            os.fsync(out.fileno())
    return line


def _ends_with_newline(path: pathlib.Path) -> bool:
    with open(path, 'rb') as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b'\n'


def read_bag_map(run_dir: str | pathlib.Path) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Return the bag-map lines of a run per (pair_id, role), oldest first.

    A line a killed evaluator cut short is skipped (its episode then has no bag).
    """
    path = pathlib.Path(run_dir) / BAG_MAP_FILE
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    if not path.is_file():
        return out
    for text in path.read_text().splitlines():
        try:
            line = json.loads(text)
            key = (str(line['pair_id']), str(line['role']))
        except (json.JSONDecodeError, KeyError, TypeError):
            continue
        out.setdefault(key, []).append(line)
    return out


@dataclasses.dataclass(frozen=True)
class Mapped:
    """One episode record of a run with its bag-map line (``line`` None: no bag for it)."""

    record: dict[str, Any]
    line: dict[str, Any] | None

    @property
    def bag(self) -> str:
        return self.line['bag'] if self.line else ''


def episodes_with_bags(run_dir: str | pathlib.Path, role: str) -> list[Mapped]:
    """Return the final record of each pair run in ``role`` (real/sim) with its bag-map line.

    The final record of a (pair, role) is the last one in ``episodes.jsonl`` (a pair re-run
    after an infrastructure failure appends another); its line is the last one of the map for
    that (pair, role) if it counts the same steps (otherwise the record has no line: the
    evaluator stopped between the two writes, or the record was copied by ``--reuse-real``).
    """
    from realm_ros.core.evaluation import EpisodeLog
    from realm_ros.core.types import record_role

    run = pathlib.Path(run_dir)
    if not (run / 'episodes.jsonl').is_file():
        raise ConfigError(f'--from-run: {run} has no episodes.jsonl (a realm-ros paired-eval '
                          'output folder)')
    final: dict[str, dict[str, Any]] = {}
    for record in EpisodeLog(run / 'episodes.jsonl').records:
        if record_role(record) == role:
            final[record['pair_id']] = record
    lines = read_bag_map(run)
    mapped = []
    for pair_id, record in final.items():
        candidates = lines.get((pair_id, role), [])
        line = candidates[-1] if candidates else None
        if line is not None and int(line.get('steps', -1)) != int(record.get('steps', 0)):
            line = None
        mapped.append(Mapped(record, line))
    return mapped


# ---------------------------------------------------------------------------- one episode


@dataclasses.dataclass
class RecordedEpisode:
    """One world's episode read from its bag: T frames (see the module docstring).

    ``states`` (T, 8): seven joint positions (rad, core order) and the gripper g; ``actions``
    (T, 8): the commanded values in the same order (absolute targets, rad, for ``position``;
    DROID joint velocities for ``velocity``) and the gripper command; ``images``: camera ->
    (T, H, W, 3) uint8; ``lag_s``: the largest time between a command and the state (or image)
    it was paired with (0 in lockstep).
    """

    t: np.ndarray
    states: np.ndarray
    actions: np.ndarray
    action_mode: str
    images: dict[str, np.ndarray]
    instruction: str
    lag_s: float


def bag_cameras(path: str | pathlib.Path, namespace: str) -> list[str]:
    """Return the cameras whose images (raw or compressed) a bag holds for ``namespace``."""
    from rosbags.rosbag2 import Reader

    ns = namespace.rstrip('/')
    reader = _open(path, Reader)
    try:
        topics = {c.topic for c in reader.connections}
    finally:
        reader.close()
    from realm_ros.io.bags import COMPRESSED_SUFFIX

    return [c for c in CAMERA_NAMES if f'{ns}/{names.camera_image(c)}' in topics
            or f'{ns}/{names.camera_image(c)}{COMPRESSED_SUFFIX}' in topics]


def _open(path: str | pathlib.Path, reader_cls: Any) -> Any:
    from rosbags.rosbag2 import ReaderError

    try:
        reader = reader_cls(pathlib.Path(path))
        reader.open()
    except (ReaderError, FileNotFoundError, OSError) as err:
        raise DataError(f'cannot read bag {path}: {err} (realm-ros bag repair mends a bag '
                        'cut short)') from None
    return reader


def read_episode(path: str | pathlib.Path, namespace: str, start_ns: int, end_ns: int,
                 cameras: Sequence[str] = (), prefix: str = 'panda_',
                 max_frames: int = 0) -> RecordedEpisode:
    """Read the episode recorded in bag ``path`` between ``start_ns`` and ``end_ns``.

    Args:
        path: the bag directory.
        namespace: the world's namespace (``/real``, ``/sim``).
        start_ns, end_ns: the episode's window in the bag's log times (its bag-map line).
        cameras: cameras whose frames to pair with each command (each must be in the bag).
        prefix: joint-name prefix in the bag.
        max_frames: keep at most this many frames (the record's steps); 0 = all.

    Raises:
        DataError: an unreadable bag, no command in the window, a missing camera, a command
            with neither positions nor velocities, or a frame with no state before it.
    """
    from rosbags.rosbag2 import Reader

    from realm_ros.io import bags

    ns = namespace.rstrip('/')
    cmd_topic, js_topic = f'{ns}/{names.COMMAND}', f'{ns}/{names.JOINT_STATES}'
    instr_topic = f'{ns}/{names.INSTRUCTION}'
    reader = _open(path, Reader)
    try:
        by_topic = {c.topic: c for c in reader.connections}
        image_topics: dict[str, str] = {}
        for camera in cameras:
            raw = f'{ns}/{names.camera_image(camera)}'
            topic = raw if raw in by_topic else raw + bags.COMPRESSED_SUFFIX
            if topic not in by_topic:
                raise DataError(f'bag {path}: no images of camera {camera!r} ({raw})')
            image_topics[topic] = camera
        for topic in (cmd_topic, js_topic):
            if topic not in by_topic:
                raise DataError(f'bag {path}: no {topic} topic')
        wanted = [by_topic[t] for t in (cmd_topic, js_topic, instr_topic, *image_topics)
                  if t in by_topic]
        commands: list[tuple[float, np.ndarray, str]] = []
        states: list[tuple[float, np.ndarray]] = []
        frames: dict[str, list[tuple[float, np.ndarray]]] = {c: [] for c in cameras}
        instruction = ''
        for conn, _, raw_msg in reader.messages(connections=wanted, start=start_ns,
                                                stop=end_ns + 1):
            msg: Any = bags.TYPESTORE.deserialize_cdr(raw_msg, conn.msgtype)
            if conn.topic == instr_topic:
                instruction = str(msg.data)
                continue
            stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
            where = f'bag {path}, {conn.topic} at {stamp:.3f} s'
            if conn.topic in image_topics:
                frames[image_topics[conn.topic]].append((stamp, bags.decode_image(msg)))
            elif conn.topic == cmd_topic:
                commands.append((stamp, *_command_values(msg, prefix, where)))
            else:
                arm, grip = bags._arm_index(msg.name, prefix, where)
                pos = np.asarray(msg.position, dtype=float)
                states.append((stamp, np.r_[pos[arm], pos[grip] if grip is not None else 0.0]))
    finally:
        reader.close()
    if not commands:
        raise DataError(f'bag {path}: no {cmd_topic} message between {start_ns * 1e-9:.3f} s '
                        f'and {end_ns * 1e-9:.3f} s (the policy sent no command)')
    commands.sort(key=lambda c: c[0])
    if max_frames > 0:
        commands = commands[:max_frames]
    modes = {mode for _, _, mode in commands}
    if len(modes) > 1:
        raise DataError(f'bag {path}: the episode mixes position and velocity commands')
    t = np.array([c[0] for c in commands])
    state_rows, lag = _latest_before(t, states, f'bag {path}: joint state')
    images = {}
    for camera in cameras:
        rows, cam_lag = _latest_before(t, frames[camera], f'bag {path}: {camera} image')
        images[camera] = np.stack(rows).astype(np.uint8)
        lag = max(lag, cam_lag)
    return RecordedEpisode(
        t=t, states=np.stack(state_rows).astype(np.float32),
        actions=np.stack([c[1] for c in commands]).astype(np.float32),
        action_mode=modes.pop(), images=images, instruction=instruction, lag_s=lag)


def _command_values(msg: Any, prefix: str, where: str) -> tuple[np.ndarray, str]:
    """Return a command's first point as 8 values (arm in core order, gripper) and its mode."""
    from realm_ros.io import bags

    if not len(msg.points):
        raise DataError(f'{where}: command has no points')
    arm, grip = bags._arm_index(msg.joint_names, prefix, where)
    point = msg.points[0]
    n = len(msg.joint_names)
    if len(point.positions) == n:
        values, mode = np.asarray(point.positions, dtype=float), 'position'
    elif len(point.velocities) == n:
        values, mode = np.asarray(point.velocities, dtype=float), 'velocity'
    else:
        raise DataError(f'{where}: the first point has neither {n} positions nor {n} '
                        'velocities')
    return np.r_[values[arm], values[grip] if grip is not None else 0.0], mode


def _latest_before(t: np.ndarray, samples: list[tuple[float, np.ndarray]],
                   what: str) -> tuple[list[np.ndarray], float]:
    """For each time in ``t``, the latest sample at or before it; and the largest lag, s."""
    if not samples:
        raise DataError(f'{what}: none in the episode window')
    # Stable: of samples with one stamp, the first recorded stays first, and only it is kept
    # (a world that resets to t = 0 republishes stamps its episode used; the bag's first one
    # is the episode's).
    samples = sorted(samples, key=lambda s: s[0])
    samples = [s for i, s in enumerate(samples) if i == 0 or s[0] != samples[i - 1][0]]
    stamps = np.array([s[0] for s in samples])
    index = np.searchsorted(stamps, t + 1e-9, side='right') - 1
    if index[0] < 0:
        raise DataError(f'{what}: none at or before the first command ({t[0]:.3f} s)')
    lag = float(np.max(t - stamps[index]))
    return [samples[i][1] for i in index], lag


# ---------------------------------------------------------------------------- export


@dataclasses.dataclass
class ExportSummary:
    """What :func:`export_run` did: episodes written, already there, and skipped (why)."""

    out: pathlib.Path
    written: int = 0
    already: int = 0
    frames: int = 0
    cameras: tuple[str, ...] = ()
    skipped: dict[str, int] = dataclasses.field(default_factory=dict)
    max_lag_s: float = 0.0

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1


def export_run(run_dir: str | pathlib.Path, out: str | pathlib.Path, role: str = 'real',
               format: str = 'v3.0', keep_failures: bool = False,
               progress: Callable[[int, int], None] | None = None) -> ExportSummary:
    """Write one world's recorded episodes of a paired run as a LeRobot dataset at ``out``.

    Args:
        run_dir: a ``realm-ros paired-eval --record`` output folder.
        out: the dataset folder (new, or one this function wrote for the same run and role:
            then it resumes, skipping the episodes already in it).
        role: ``real`` or ``twin`` (``sim``).
        format: ``v3.0`` or ``v2.1``.
        keep_failures: also export the episodes that did not succeed (infrastructure failures
            never are: nothing was scored).
        progress: called with (done, total) after each episode.

    Every episode's extras (``meta/realm_episodes.jsonl``) carry its pair id, task, seed,
    policy, perturbation, world, success, progression, outcome, bag and action mode. The
    dataset's cameras are those recorded in every exported episode's bag.

    Raises:
        ConfigError: an unknown role, a folder that is no paired run, or ``out`` written from
            another run, role or format.
    """
    from realm_ros.core import tasks
    from realm_ros.io.lerobot import Episode, open_writer

    if role not in ROLES:
        raise ConfigError(f'--run-world must be one of {sorted(ROLES)}, got {role!r}')
    side = ROLES[role]
    run = pathlib.Path(run_dir).expanduser().resolve()
    out = pathlib.Path(out)
    summary = ExportSummary(out=out)
    todo: list[Mapped] = []
    for item in episodes_with_bags(run, side):
        if item.record.get('outcome') == 'infra_failure':
            summary.skip('infrastructure failure')
        elif not (keep_failures or item.record.get('success')):
            summary.skip('not a success (--keep-failures keeps it)')
        elif item.line is None:
            summary.skip('no bag (not recorded, or --reuse-real)')
        else:
            todo.append(item)
    cams: set[str] | None = None
    for item in todo:
        found = set(bag_cameras(run / item.bag, item.line['namespace'] if item.line else ''))
        cams = found if cams is None else cams & found
    cameras = tuple(c for c in CAMERA_NAMES if c in (cams or set()))
    settings = {'from_run': str(run), 'world': side, 'format': format,
                'cameras': list(cameras), 'keep_failures': bool(keep_failures)}
    _check_settings(out, settings)
    writer = open_writer(out, format, fps=robot.CONTROL_HZ, cameras=cameras)
    (out / RUN_FILE).parent.mkdir(parents=True, exist_ok=True)
    (out / RUN_FILE).write_text(json.dumps(settings, indent=2) + '\n')
    summary.cameras = cameras
    done = {e.get('pair_id') for e in writer.episodes}
    for k, item in enumerate(todo):
        record, line = item.record, item.line
        if line is None:
            continue
        if record['pair_id'] in done:
            summary.already += 1
        else:
            try:
                episode = read_episode(run / line['bag'], line['namespace'], line['start_ns'],
                                       line['end_ns'], cameras,
                                       max_frames=int(record.get('steps') or 0))
            except DataError as err:
                summary.skip(f'unreadable: {err}')
                episode = None
            if episode is not None:
                instruction = episode.instruction or tasks.get_task(record['task']).instruction
                writer.add(Episode(
                    instruction=instruction, states=episode.states, actions=episode.actions,
                    images=episode.images,
                    extra={key: record.get(key) for key in (
                        'pair_id', 'task', 'seed', 'policy', 'perturbation', 'intensity',
                        'role', 'backend', 'success', 'progression', 'outcome')}
                    | {'bag': line['bag'], 'action_mode': episode.action_mode}))
                summary.written += 1
                summary.frames += len(episode.states)
                summary.max_lag_s = max(summary.max_lag_s, episode.lag_s)
        if progress is not None:
            progress(k + 1, len(todo))
    writer.close()
    return summary


def _check_settings(out: pathlib.Path, settings: Mapping[str, Any]) -> None:
    """Refuse to resume a dataset exported with other settings (one line naming the field)."""
    path = out / RUN_FILE
    if not path.is_file():
        return
    before = json.loads(path.read_text())
    for key, value in settings.items():
        if key in before and before[key] != value:
            raise ConfigError(f'{out} was exported with {key} {before[key]!r}, not {value!r}; '
                              'choose a new --out')


__all__ = ['BAG_MAP_FILE', 'ExportSummary', 'Mapped', 'RecordedEpisode', 'bag_cameras',
           'bag_line', 'episodes_with_bags', 'export_run', 'note_bag', 'read_bag_map',
           'read_episode']
