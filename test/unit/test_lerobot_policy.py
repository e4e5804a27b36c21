"""The ``lerobot`` policy's checks that need no lerobot: a checkpoint that cannot drive the
Franka here is refused with one line when the policy is built (the CLIs exit 2 on ConfigError),
and a missing lerobot venv is BackendUnavailable, before any server, world or arm is touched.
The served path itself (lerobot in its own venv) is test/e2e/test_lerobot_served.py."""

import json

import pytest

from realm_ros.core.errors import BackendUnavailable, ConfigError
from realm_ros.core.policy import make_policy
from realm_ros.policies.lerobot_policy import check_checkpoint, find_checkpoint, find_python

ACT = {'type': 'act', 'chunk_size': 10, 'n_action_steps': 8}
#: LeRobot 0.4.4's DiffusionConfig defaults (n_obs_steps 2, horizon 16, n_action_steps 8).
DIFFUSION = {'type': 'diffusion', 'n_obs_steps': 2, 'horizon': 16, 'n_action_steps': 8,
             'num_inference_steps': None}


def write_checkpoint(folder, state=8, action=8, cameras=('exterior_1', 'wrist'),
                     shape=(3, 90, 160), stats=True, fields=None):
    folder.mkdir(parents=True)
    inputs = {'observation.state': {'type': 'STATE', 'shape': [state]}}
    for camera in cameras:
        inputs[f'observation.images.{camera}'] = {'type': 'VISUAL', 'shape': list(shape)}
    config = {**(ACT if fields is None else fields), 'input_features': inputs,
              'output_features': {'action': {'type': 'ACTION', 'shape': [action]}}}
    (folder / 'config.json').write_text(json.dumps(config))
    if stats:
        (folder / 'policy_preprocessor.json').write_text('{}')
        (folder / 'policy_preprocessor_step_3_normalizer_processor.safetensors').write_bytes(b'')
    return folder


def test_a_good_checkpoint_gives_its_cameras_size_and_chunk(tmp_path):
    folder = write_checkpoint(tmp_path / 'out' / 'checkpoints' / 'last' / 'pretrained_model')
    assert find_checkpoint(str(tmp_path / 'out')) == folder  # lerobot-train's output folder
    info = check_checkpoint(folder)
    assert info == {'type': 'act', 'cameras': {'exterior_1': (90, 160), 'wrist': (90, 160)},
                    'chunk': 10, 'execute': 8, 'history': 1}


def test_a_diffusion_checkpoint_answers_n_action_steps_from_n_obs_steps(tmp_path):
    folder = write_checkpoint(tmp_path / 'ckpt', fields=DIFFUSION)
    info = check_checkpoint(folder)
    assert (info['type'], info['chunk'], info['execute'], info['history']) == \
        ('diffusion', 8, 8, 2)
    policy = make_policy('lerobot', path=str(folder), server='127.0.0.1:9')
    try:
        assert policy.needs.horizon == 8 and policy.label == 'lerobot:diffusion:ckpt'
    finally:
        policy.close()
    with pytest.raises(ConfigError, match=r"'horizon' must be 1\.\.8"):
        make_policy('lerobot', path=str(folder), server='127.0.0.1:9', horizon=9)


@pytest.mark.parametrize('kwargs, words', [
    ({'state': 14}, 'another robot'),
    ({'action': 7}, 'wrong action dimension'),
    ({'cameras': ('top',)}, 'not one of the DROID cameras'),
    ({'shape': (1, 90, 160)}, 'not [3, H, W]'),
    ({'cameras': ()}, 'takes no image'),
    ({'stats': False}, 'missing stats'),
    ({'action': 7, 'fields': DIFFUSION}, 'wrong action dimension'),
    ({'stats': False, 'fields': DIFFUSION}, 'missing stats'),
    ({'fields': {**DIFFUSION, 'n_action_steps': 16}},
     'n_action_steps (16) exceeds horizon - n_obs_steps + 1 (16 - 2 + 1)'),
    ({'fields': {**DIFFUSION, 'n_obs_steps': 0}}, "'n_obs_steps' must be an integer >= 1"),
    ({'fields': {**ACT, 'n_action_steps': 12}}, 'n_action_steps (12) exceeds chunk_size (10)'),
    ({'fields': {**ACT, 'chunk_size': 'ten'}}, "'chunk_size' must be an integer >= 1"),
])
def test_what_does_not_fit_is_one_line_naming_it(tmp_path, kwargs, words):
    folder = write_checkpoint(tmp_path / 'ckpt', **kwargs)
    with pytest.raises(ConfigError) as err:
        make_policy('lerobot', path=str(folder), python='/bin/true')
    assert words in str(err.value) and '\n' not in str(err.value)


def test_no_checkpoint_or_no_path(tmp_path):
    with pytest.raises(ConfigError, match='no LeRobot checkpoint'):
        find_checkpoint(str(tmp_path))
    with pytest.raises(ConfigError, match="needs 'path'"):
        make_policy('lerobot')


def test_a_missing_lerobot_venv_is_one_line(tmp_path, monkeypatch):
    folder = write_checkpoint(tmp_path / 'ckpt')
    with pytest.raises(BackendUnavailable, match='make lerobot-env') as err:
        make_policy('lerobot', path=str(folder), python=str(tmp_path / 'no' / 'python'))
    assert '\n' not in str(err.value)
    monkeypatch.delenv('REALM_LEROBOT_PYTHON', raising=False)
    monkeypatch.setattr('realm_ros.policies.lerobot_policy.PYTHON_CANDIDATES',
                        (tmp_path / 'none',))
    with pytest.raises(BackendUnavailable, match='lerobot is not installed here'):
        find_python('')


def test_needs_follow_the_checkpoint_and_a_given_server_needs_no_venv(tmp_path):
    folder = write_checkpoint(tmp_path / 'ckpt', cameras=('exterior_1',), shape=(3, 72, 128))
    policy = make_policy('lerobot', path=str(folder), server='127.0.0.1:9', horizon=5)
    try:
        needs = policy.needs
        assert needs.cameras == ('exterior_1',) and needs.image_size == (72, 128)
        assert needs.action_space == 'joint_position' and needs.horizon == 5
        assert policy.uri == 'ws://127.0.0.1:9' and policy.label == 'lerobot:act:ckpt'
    finally:
        policy.close()
    with pytest.raises(ConfigError, match='horizon'):
        make_policy('lerobot', path=str(folder), server='127.0.0.1:9', horizon=11)


def test_a_policy_with_history_keeps_the_last_steps_it_ran_open_loop(tmp_path):
    """n_obs_steps 3: of the steps the ActionChunker runs open loop, the last two go with the
    next query (the server's queues already hold the earlier ones); a step seen twice is kept
    once, a step count that goes back starts afresh; ACT keeps none."""
    import numpy as np

    from realm_ros.core.types import JointState, Observation

    def obs(step):
        images = {c: np.full((90, 160, 3), step, np.uint8) for c in ('exterior_1', 'wrist')}
        return Observation(joints=JointState(np.full(7, 0.1 * step), np.zeros(7), np.zeros(7),
                                             0.0), images=images, step=step)

    folder = write_checkpoint(tmp_path / 'd', fields={**DIFFUSION, 'n_obs_steps': 3})
    diffusion = make_policy('lerobot', path=str(folder), server='127.0.0.1:9')
    act = make_policy('lerobot', path=str(write_checkpoint(tmp_path / 'a')), server='127.0.0.1:9')
    try:
        for step in (1, 2, 3, 3):
            diffusion.observe(obs(step))
            act.observe(obs(step))
        assert [s for s, _ in diffusion._unsent] == [2, 3] and act._unsent == []
        assert diffusion._unsent[1][1]['observation/joint_position'][0] == pytest.approx(0.3)
        diffusion.observe(obs(1))
        assert [s for s, _ in diffusion._unsent] == [1]
    finally:
        diffusion.close()
        act.close()
