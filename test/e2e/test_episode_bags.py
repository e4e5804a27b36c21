"""A paired run's recorded episodes: the bag map, one episode read back, LeRobot export.

Pure tests build run folders the way the evaluator and recorders leave them (bags written with
``BagWriter``, ``episodes.jsonl``, ``bags.jsonl``); the slow test runs a real
``realm-ros paired-eval --record --cameras`` on the digital real and exports it.
"""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from realm_ros.core import robot
from realm_ros.core.errors import ConfigError, DataError
from realm_ros.io import episode_bags as eb
from realm_ros.io.bags import TYPESTORE, BagWriter
from realm_ros.io.lerobot import check_dataset, iter_episodes, read_info

DT = 1.0 / robot.CONTROL_HZ
H, W = 24, 32


def _frame(k: int) -> np.ndarray:
    """A frame whose flat colour encodes its step (survives jpeg and AV1 within a few levels)."""
    return np.full((H, W, 3), 10 + 8 * k, np.uint8)


def _write_pair_bag(path: pathlib.Path, ns: str, steps: int, t0: float = 0.0,
                    fmt: str = 'raw', tail: bool = True,
                    velocity: bool = False) -> tuple[int, int]:
    """Write one pair's bag as a lockstep world and its recorder leave it; return its window.

    Step k: the world publishes the image and the joint state stamped t_k, the policy answers
    with a command stamped t_k. After the episode, the next pair's reset (stamp t0 again, a
    different pose) lands in the same bag when ``tail``: the window must exclude it.
    """
    with BagWriter(path) as bag:
        instr = TYPESTORE.types['std_msgs/msg/String'](data='push the light switch')
        bag.write(f'{ns}/instruction', instr, int(t0 * 1e9))
        for k in range(steps + 1):
            t = t0 + k * DT
            q = robot.RESET_Q + 0.01 * k
            if fmt == 'raw':
                bag.write_image(f'{ns}/cameras/wrist/image', t, _frame(k))
            else:
                bag.write_compressed_image(f'{ns}/cameras/wrist/image/compressed', t,
                                           _frame(k), fmt)
            bag.write_joint_state(f'{ns}/joint_states', t, q, gripper=0.1 * (k % 2))
            if k < steps:
                if velocity:
                    _write_velocity_command(bag, f'{ns}/command', t, k)
                else:
                    bag.write_command(f'{ns}/command', t, q + 0.05, gripper=float(k % 2))
        end = int(round((t0 + steps * DT) * 1e9))
        if tail:
            bag.write_joint_state(f'{ns}/joint_states', t0, robot.RESET_Q - 0.3)
    return int(t0 * 1e9), end


def _write_velocity_command(bag: BagWriter, topic: str, t: float, k: int) -> None:
    from realm_ros.io.bags import _T, TRAJECTORY, _Duration, _Header, _stamp
    point = _T['trajectory_msgs/msg/JointTrajectoryPoint'](
        positions=np.zeros(0), velocities=np.r_[np.full(7, 0.1 * k), 1.0],
        accelerations=np.zeros(0), effort=np.zeros(0),
        time_from_start=_Duration(sec=0, nanosec=0))
    bag.write(topic, _T[TRAJECTORY](header=_Header(stamp=_stamp(t), frame_id='base_link'),
                                    joint_names=list(robot.JOINT_NAMES) + ['gripper'],
                                    points=[point]))


def _record(pair: str, role: str, steps: int, success: bool = True,
            outcome: str = 'success') -> dict:
    return {'pair_id': pair, 'role': role, 'world': role, 'backend': 'digital_real',
            'task': 'push_switch', 'perturbation': 'Default', 'intensity': 1.0,
            'policy': 'scripted', 'seed': 3, 'stages': [], 'stages_reached': [],
            'progression': 1.0 if success else 0.5, 'success': success, 'outcome': outcome,
            'steps': steps, 'sim_time_s': None, 'wall_time_s': 1.0, 'scored_by': '',
            'error': ''}


def _status(run: pathlib.Path, bag: str, ns: str, window: tuple[int, int]) -> dict:
    return {'bag': str(run / bag), 'counts': {}, 'namespace': ns, 'first_ns': window[0],
            'last_ns': window[1]}


def _make_run(run: pathlib.Path, pairs: int = 2, steps: int = 6, fmt: str = 'raw') -> None:
    """A run folder with ``pairs`` real and sim episodes, each with its bag and map line."""
    run.mkdir(parents=True, exist_ok=True)
    with open(run / 'episodes.jsonl', 'a') as log:
        for i in range(pairs):
            pair = f'push_switch/Default/{i}/scripted'
            for role, ns, t0 in (('real', '/real', 5.0 * i + 0.4), ('sim', '/sim', 0.0)):
                made = len(list(run.glob(f'bags_{role}/pair_*')))
                bag = f'bags_{role}/pair_{made + 1:03d}'  # a new bag per pair, as the recorder
                window = _write_pair_bag(run / bag, ns, steps, t0, fmt)
                record = _record(pair, role, steps)
                assert eb.note_bag(run, record, ns, [_status(run, bag, ns, window)])
                log.write(json.dumps(record) + '\n')


def test_bag_line_is_relative_and_picks_the_worlds_recorder(tmp_path):
    record = _record('p/Default/0/x', 'real', 5)
    statuses = [_status(tmp_path, 'bags_sim/pair_001', '/sim', (0, 9)),
                _status(tmp_path, 'bags_real/pair_001', '/real', (3, 7))]
    line = eb.bag_line(record, '/real', statuses, tmp_path)
    assert line['bag'] == 'bags_real/pair_001' and (line['start_ns'], line['end_ns']) == (3, 7)
    assert eb.bag_line(record, '/other', statuses, tmp_path) is None
    # A recorder that had written nothing yet maps nothing.
    empty = dict(statuses[1], first_ns=None)
    assert eb.bag_line(record, '/real', [empty], tmp_path) is None


def test_read_episode_pairs_each_command_with_its_observation(tmp_path):
    start, end = _write_pair_bag(tmp_path / 'bag', '/real', steps=6, t0=2.0)
    ep = eb.read_episode(tmp_path / 'bag', '/real', start, end, ['wrist'])
    assert ep.states.shape == (6, 8) and ep.actions.shape == (6, 8)
    assert ep.action_mode == 'position' and ep.lag_s == 0.0
    assert ep.instruction == 'push the light switch'
    q = np.array([robot.RESET_Q + 0.01 * k for k in range(6)], np.float32)
    np.testing.assert_allclose(ep.states[:, :7], q, atol=1e-6)
    np.testing.assert_allclose(ep.actions[:, :7], q + 0.05, atol=1e-6)
    np.testing.assert_allclose(ep.states[:, 7], [0.1 * (k % 2) for k in range(6)], atol=1e-6)
    np.testing.assert_allclose(ep.actions[:, 7], [k % 2 for k in range(6)])
    assert [int(f[0, 0, 0]) for f in ep.images['wrist']] == [10 + 8 * k for k in range(6)]
    # The record's steps cap the frames (a command sent after the referee ended the episode).
    assert len(eb.read_episode(tmp_path / 'bag', '/real', start, end, max_frames=4).t) == 4


def test_read_episode_compressed_and_velocity_commands(tmp_path):
    start, end = _write_pair_bag(tmp_path / 'bag', '/sim', steps=4, fmt='jpeg', velocity=True)
    ep = eb.read_episode(tmp_path / 'bag', '/sim', start, end, ['wrist'])
    assert ep.action_mode == 'velocity'
    np.testing.assert_allclose(ep.actions[:, 0], [0.1 * k for k in range(4)], atol=1e-6)
    assert all(abs(int(f[0, 0, 0]) - (10 + 8 * k)) <= 2 for k, f in enumerate(ep.images['wrist']))


def test_read_episode_errors_name_the_bag_and_topic(tmp_path):
    start, end = _write_pair_bag(tmp_path / 'bag', '/real', steps=3)
    with pytest.raises(DataError, match='no images of camera .exterior_1'):
        eb.read_episode(tmp_path / 'bag', '/real', start, end, ['exterior_1'])
    with pytest.raises(DataError, match='no /sim/command topic'):
        eb.read_episode(tmp_path / 'bag', '/sim', start, end)
    with pytest.raises(DataError, match='the policy sent no command'):
        eb.read_episode(tmp_path / 'bag', '/real', end + 10**9, end + 2 * 10**9)
    with pytest.raises(DataError, match='cannot read bag'):
        eb.read_episode(tmp_path / 'missing', '/real', start, end)


def test_export_writes_a_dataset_lerobot_loads_and_resumes(tmp_path):
    run = tmp_path / 'run'
    _make_run(run, pairs=2, steps=6)
    out = tmp_path / 'ds'
    summary = eb.export_run(run, out, 'real')
    assert (summary.written, summary.frames, summary.cameras) == (2, 12, ('wrist',))
    assert check_dataset(out) == []
    info = read_info(out)
    assert info['total_episodes'] == 2 and info['total_frames'] == 12 and info['fps'] == 15
    episodes = list(iter_episodes(out))
    assert [e.extra['pair_id'] for e in episodes] == [
        'push_switch/Default/0/scripted', 'push_switch/Default/1/scripted']
    assert all(e.extra['success'] is True and e.extra['role'] == 'real' and
               e.extra['action_mode'] == 'position' for e in episodes)
    assert episodes[0].instruction == 'push the light switch'
    q = np.array([robot.RESET_Q + 0.01 * k for k in range(6)], np.float32)
    np.testing.assert_allclose(episodes[1].states[:, :7], q, atol=1e-6)
    # The next pair's reset (outside the window) never becomes a frame; frames are the bag's.
    levels = [int(np.median(f)) for f in episodes[0].images['wrist']]
    assert all(abs(a - (10 + 8 * k)) <= 3 for k, a in enumerate(levels)), levels
    # Re-running adds nothing; a new pair is appended.
    again = eb.export_run(run, out, 'real')
    assert (again.written, again.already) == (0, 2)
    _make_run(run, pairs=3, steps=6)  # appends pairs 0..2 again: 0 and 1 re-run, 2 is new
    more = eb.export_run(run, out, 'real')
    assert (more.written, more.already) == (1, 2) and check_dataset(out) == []
    with pytest.raises(ConfigError, match='exported with world'):
        eb.export_run(run, out, 'twin')
    twin = eb.export_run(run, tmp_path / 'twin', 'twin')
    assert twin.written == 3 and check_dataset(tmp_path / 'twin') == []


def test_export_skips_what_it_cannot_or_should_not_export(tmp_path):
    run = tmp_path / 'run'
    run.mkdir()
    records = [_record('a', 'real', 4), _record('b', 'real', 4, success=False, outcome='timeout'),
               _record('c', 'real', 4, success=False, outcome='infra_failure'),
               _record('d', 'real', 4), _record('e', 'real', 4)]
    for name, steps in (('a', 4), ('b', 4), ('e', 5)):  # e's line counts other steps
        window = _write_pair_bag(run / f'bags_real/{name}', '/real', 4)
        eb.note_bag(run, _record(name, 'real', steps), '/real',
                    [_status(run, f'bags_real/{name}', '/real', window)])
        if name == 'a':
            with open(run / eb.BAG_MAP_FILE, 'a') as f:
                f.write('{"pair_id": "d", "ro')  # a line a kill cut: ignored, b's stays whole
    (run / 'episodes.jsonl').write_text(''.join(json.dumps(r) + '\n' for r in records))
    summary = eb.export_run(run, tmp_path / 'ds', 'real')
    assert summary.written == 1
    assert summary.skipped == {'infrastructure failure': 1,
                               'not a success (--keep-failures keeps it)': 1,
                               'no bag (not recorded, or --reuse-real)': 2}
    kept = eb.export_run(run, tmp_path / 'all', 'real', keep_failures=True)
    assert kept.written == 2
    with pytest.raises(ConfigError, match='no episodes.jsonl'):
        eb.export_run(tmp_path, tmp_path / 'x', 'real')
    with pytest.raises(ConfigError, match='--run-world'):
        eb.export_run(run, tmp_path / 'x', 'left')


def test_dataset_command_exports_and_says_what_it_skipped(tmp_path):
    run = tmp_path / 'run'
    _make_run(run, pairs=1, steps=5, fmt='png')
    out = tmp_path / 'ds'
    env = {**os.environ, 'PYTHONPATH': str(pathlib.Path(__file__).resolve().parents[2])}
    proc = subprocess.run(
        [sys.executable, '-m', 'realm_ros.cli', 'dataset', '--from-run', str(run), '--out',
         str(out), '--run-world', 'twin'], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert '1 episodes exported' in proc.stdout and "cameras ['wrist']" in proc.stdout
    assert check_dataset(out) == []
    bad = subprocess.run(
        [sys.executable, '-m', 'realm_ros.cli', 'dataset', '--from-run', str(tmp_path),
         '--out', str(tmp_path / 'x')], capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and 'no episodes.jsonl' in bad.stderr
    assert 'Traceback' not in bad.stderr


@pytest.mark.slow
@pytest.mark.ros
def test_paired_eval_record_then_export_both_worlds(tmp_path):
    """A real paired run on the digital real with cameras, recorded, exported per world."""
    run = tmp_path / 'run'
    env = {**os.environ, 'MUJOCO_GL': os.environ.get('MUJOCO_GL', 'egl')}
    proc = subprocess.run(
        [sys.executable, '-m', 'realm_ros.cli', 'paired-eval', '--out', str(run), '--tasks',
         'push_switch', '--policies', 'scripted', '--episodes-per-cell', '1', '--max-steps',
         '8', '--cameras', '--record', '--quiet'], capture_output=True, text=True, env=env,
        timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = eb.read_bag_map(run)
    assert set(lines) == {('push_switch/Default/0/scripted', 'real'),
                          ('push_switch/Default/0/scripted', 'sim')}
    records = [json.loads(x) for x in (run / 'episodes.jsonl').read_text().splitlines()]
    for role in ('real', 'twin'):
        out = tmp_path / role
        summary = eb.export_run(run, out, role, keep_failures=True)
        steps = next(r['steps'] for r in records if r['role'] == eb.ROLES[role])
        assert summary.written == 1 and summary.frames == steps and summary.max_lag_s == 0.0
        assert summary.cameras == ('exterior_1', 'exterior_2', 'wrist')
        assert check_dataset(out) == []
        (episode,) = iter_episodes(out)
        assert episode.instruction and episode.images['wrist'].shape == (steps, 180, 320, 3)
        assert float(episode.images['exterior_1'].std()) > 5  # a rendered scene, not blank
