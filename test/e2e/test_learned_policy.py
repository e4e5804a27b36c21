"""The learned visuomotor policy end to end: twin demonstrations -> LeRobot dataset -> a few
training steps on CPU -> checkpoint -> served over openpi's websocket protocol -> realm_ros's
openpi client (real loopback), DROID keys in, DROID joint-velocity chunks out.
"""

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from realm_ros import cli
from realm_ros.core.errors import ConfigError
from realm_ros.core.policy import make_policy
from realm_ros.core.types import ActionMode, EpisodeSpec, JointState, Observation
from realm_ros.io.lerobot import check_dataset, iter_episodes, read_info, read_video
from realm_ros.policies.image_tools import resize_with_pad
from realm_ros.policies.learned import LearnedPolicy, load_checkpoint, tokenize
from realm_ros.policies.openpi import OpenPIPolicy
from realm_ros.policies.server import PolicyServer, convert_chunk

# Renders a twin episode and trains on CPU: 4 s on an idle machine, 1-2 min on a loaded one.
pytestmark = [pytest.mark.slow,
              pytest.mark.filterwarnings('ignore:connect\\(\\) must be used:DeprecationWarning')]
STEPS = 12


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
    """One short noisy expert episode in the twin with two cameras, then 3 CPU training steps."""
    root = tmp_path_factory.mktemp('learned')
    data = root / 'data'
    assert cli.main(['dataset', '--out', str(data), '--tasks', 'push_switch', '--episodes', '1',
                     '--max-steps', str(STEPS), '--image-size', '64x36', '--keep-failures',
                     '--quiet']) == 0
    out = root / 'ckpt'
    assert cli.main(['train', '--data', str(data), '--out', str(out), '--stages',
                     'early=1,final=3', '--batch', '4', '--image-size', '32', '--width', '8',
                     '--device', 'cpu', '--log-every', '1']) == 0
    return data, out


def test_dataset_has_lerobot_layout(trained):
    data, _ = trained
    info = read_info(data)
    assert info['codebase_version'] == 'v3.0' and info['fps'] == 15
    assert info['total_episodes'] == 1 and info['total_frames'] == STEPS
    features = info['features']
    for camera in ('exterior_1', 'wrist'):
        video = features[f'observation.images.{camera}']
        assert video['dtype'] == 'video' and video['shape'] == [36, 64, 3]
    assert features['observation.state']['shape'] == [8]
    table = pq.read_table(data / info['data_path'].format(chunk_index=0, file_index=0))
    assert set(table.column_names) >= {'observation.state', 'action', 'timestamp',
                                       'frame_index', 'episode_index', 'index', 'task_index'}
    assert table.num_rows == STEPS
    frames = read_video(data / info['video_path'].format(
        video_key='observation.images.wrist', chunk_index=0, file_index=0))
    assert frames.shape == (STEPS, 36, 64, 3) and frames.std() > 1.0  # a picture, not a blank
    tasks = pq.read_table(data / 'meta' / 'tasks.parquet').to_pylist()
    assert tasks == [{'task_index': 0, '__index_level_0__': 'push the light switch'}]
    (episode,) = list(iter_episodes(data))
    # The labels are the expert's targets: the arm moves toward them.
    assert np.abs(episode.actions[:, :7] - episode.states[:, :7]).max() > 1e-3
    stats = json.loads((data / 'meta' / 'stats.json').read_text())
    assert len(stats['action']['mean']) == 8 and len(stats['action']['q99']) == 8
    assert check_dataset(data) == []


def test_checkpoints_written_per_stage_and_small(trained):
    _, out = trained
    for stage in ('early', 'final'):
        path = out / f'{stage}.pt'
        assert path.stat().st_size < 5e6
        _, config, _, meta = load_checkpoint(str(path))
        assert meta['stage'] == stage and config['cameras'] == ['exterior_1', 'wrist']
    log = [json.loads(line) for line in (out / 'train_log.jsonl').read_text().split('\n') if line]
    assert [row['step'] for row in log if 'stage' in row] == [1, 3]
    early = load_checkpoint(str(out / 'early.pt'))[0].state_dict()
    final = load_checkpoint(str(out / 'final.pt'))[0].state_dict()
    assert any(not np.allclose(early[k].numpy(), final[k].numpy()) for k in early)


def _observation(seed=0):
    rng = np.random.default_rng(seed)
    q = np.array([0.0, -0.6, 0.0, -2.4, 0.0, 1.9, 0.8]) + rng.normal(0, 0.05, 7)
    images = {c: rng.integers(0, 255, (180, 320, 3), dtype=np.uint8)
              for c in ('exterior_1', 'wrist')}
    return Observation(joints=JointState(q, np.zeros(7), np.zeros(7), 0.0), images=images,
                       instruction='push the light switch')


def test_served_over_openpi_protocol_end_to_end(trained):
    _, out = trained
    path = str(out / 'final.pt')
    policy = make_policy('learned', path=path)
    assert isinstance(policy, LearnedPolicy)
    assert policy.needs.cameras == ('exterior_1', 'wrist')
    assert policy.needs.action_space == 'joint_position'
    obs = _observation()
    with PolicyServer(policy, host='127.0.0.1', port=0, action_space='joint_velocity') as server:
        client = OpenPIPolicy(host='127.0.0.1', port=server.port, timeout_s=30.0,
                              connect_timeout_s=10.0, retries=1)
        client.reset(EpisodeSpec(task='push_switch', instruction='push the light switch'))
        chunk = client.infer(obs)
        assert client.metadata['policy'] == 'learned:final'
        client.close()
    assert chunk.mode is ActionMode.VELOCITY and chunk.values.shape == (10, 8)
    assert np.all(np.isfinite(chunk.values))
    # The server saw openpi's 224x224 padded images; the same model run directly on them,
    # converted to DROID velocities from the measured joints, is what came over the wire.
    direct = LearnedPolicy(path=path)
    padded = Observation(joints=obs.joints, instruction=obs.instruction, images={
        c: resize_with_pad(im, 224, 224) for c, im in obs.images.items()})
    expected = convert_chunk(direct.infer(padded), obs.joints.position, ActionMode.VELOCITY)
    np.testing.assert_allclose(chunk.values, expected, atol=1e-5)


@pytest.mark.parametrize('stages', ['early', 'a=0', 'a=1,a=2'])
def test_bad_stages_named(stages):
    assert cli.main(['train', '--data', '.', '--out', '.', '--stages', stages]) == 2


def test_bad_inputs_named():
    with pytest.raises(ConfigError, match='path'):
        LearnedPolicy(path='')
    assert cli.main(['train', '--data', '.', '--out', '.', '--stages', 'early']) == 2
    assert tokenize('Push the light switch!') == tokenize('push the light switch')
    assert tokenize('push the switch') != tokenize('pick the spoon')
