"""The shipped vision ladder (checkpoints/learned_vision/, docs/learned-policy.md section 5):
every checkpoint loads and fits the Franka, stays small, and, served the way ``realm-ros serve``
serves it (PolicyServer, DROID joint velocities, chunks of 10), answers openpi's own
``WebsocketClientPolicy`` fed as openpi's DROID example feeds it (``image_tools.resize_with_pad``
to 224x224): a (10, 8) chunk equal to the same weights' own answer on those images. A broken,
renamed or re-shaped checkpoint fails here."""

import pathlib

import numpy as np
from openpi_client import image_tools, websocket_client_policy
import pytest

from realm_ros.core.types import ActionMode, EpisodeSpec, JointState, Observation
from realm_ros.policies.learned import LearnedPolicy, load_checkpoint
from realm_ros.policies.server import PolicyServer, convert_chunk

ROOT = pathlib.Path(__file__).resolve().parents[2]
LADDER = ROOT / 'checkpoints' / 'learned_vision'
RUNGS = ('plain5k_s150', 'short1k_s800', 'plain5kb_s800', 'plain5k_s1200', 'plain5k_s2500',
         'plain12k_s12000', 'aug12k_s8000')

pytestmark = pytest.mark.filterwarnings('ignore:connect\\(\\) must be used:DeprecationWarning')


def droid_frames(seed):
    rng = np.random.default_rng(seed)
    q = np.array([0.0, -0.6, 0.0, -2.4, 0.0, 1.9, 0.8]) + rng.normal(0, 0.05, 7)
    frames = {c: rng.integers(0, 255, (180, 320, 3), dtype=np.uint8) for c in ('exterior_1',
                                                                              'wrist')}
    return q, frames


def test_the_ladder_is_all_there_and_small():
    assert sorted(p.stem for p in LADDER.glob('*.pt')) == sorted(RUNGS)
    assert all((LADDER / f'{r}.pt').stat().st_size < 10e6 for r in RUNGS)


@pytest.mark.parametrize('rung', RUNGS)
def test_served_rung_answers_openpis_own_client(rung):
    path = str(LADDER / f'{rung}.pt')
    _, config, _, _ = load_checkpoint(path)
    assert config['cameras'] == ['exterior_1', 'wrist'] and config['horizon'] == 10
    q, frames = droid_frames(RUNGS.index(rung))
    prompt = 'push the light switch'
    with PolicyServer(LearnedPolicy(path=path), host='127.0.0.1', port=0,
                      action_space='joint_velocity') as server:
        client = websocket_client_policy.WebsocketClientPolicy(host='127.0.0.1',
                                                               port=server.port)
        assert client.get_server_metadata()['server'] == 'realm_ros'
        request = {  # as openpi's examples/droid/main.py builds it
            'observation/exterior_image_1_left': image_tools.resize_with_pad(
                frames['exterior_1'], 224, 224),
            'observation/wrist_image_left': image_tools.resize_with_pad(frames['wrist'], 224,
                                                                        224),
            'observation/joint_position': q,
            'observation/gripper_position': np.array([0.0]),
            'prompt': prompt,
        }
        actions = client.infer(request)['actions']
    assert actions.shape == (10, 8) and np.all(np.isfinite(actions))
    direct = LearnedPolicy(path=path)
    direct.reset(EpisodeSpec(task='push_switch', instruction=prompt))
    obs = Observation(joints=JointState(q, np.zeros(7), np.zeros(7), 0.0), instruction=prompt,
                      images={'exterior_1': request['observation/exterior_image_1_left'],
                              'wrist': request['observation/wrist_image_left']})
    expected = convert_chunk(direct.infer(obs), q, ActionMode.VELOCITY)
    np.testing.assert_allclose(actions, expected, atol=1e-5)
