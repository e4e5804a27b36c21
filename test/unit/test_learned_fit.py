"""A learned-policy checkpoint that does not fit the Franka is refused in one line, before any
world (or arm) is started; the blind baseline and the appearance augmentation do what they say."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip('torch')

from realm_ros import cli  # noqa: E402
from realm_ros.core.errors import ConfigError  # noqa: E402
from realm_ros.core.types import EpisodeSpec, JointState, Observation  # noqa: E402
from realm_ros.policies import learned  # noqa: E402
from realm_ros.policies.training import TrainConfig, appearance_jitter  # noqa: E402

CAMERAS = ['exterior_1', 'wrist']


def _blob() -> dict:
    config = learned.default_config(CAMERAS, horizon=4, image_size=32, width=8)
    torch.manual_seed(0)
    model = learned.build_model(config)
    stats = {'state_mean': np.zeros(8), 'state_std': np.ones(8), 'delta_mean': np.zeros(7),
             'delta_std': np.full(7, 0.05)}
    return {'config': config, 'model': model, 'stats': stats}


def _save(tmp_path, name: str, edit=None) -> str:
    parts = _blob()
    path = str(tmp_path / f'{name}.pt')
    learned.save_checkpoint(path, parts['model'], parts['config'], parts['stats'], {})
    if edit is not None:
        blob = torch.load(path, weights_only=True)
        edit(blob)
        torch.save(blob, path)
    return path


def _set(section: str, key: str, value):
    def edit(blob):
        blob[section][key] = value
    return edit


def _drop_stats(blob):
    del blob['stats']['delta_std']


def _seven_actions(blob):
    blob['state_dict']['head.5.weight'] = blob['state_dict']['head.5.weight'][:28]
    blob['state_dict']['head.5.bias'] = blob['state_dict']['head.5.bias'][:28]


BAD = {
    'robot': (_set('config', 'robot', 'ur5e'), "robot 'ur5e'"),
    'state_dim': (_set('config', 'state_dim', 7), 'state has 7 values'),
    'action_dim': (_set('config', 'action_dim', 7), 'action has 7 values'),
    'head': (_seven_actions, 'wrong action width'),
    'stats': (_drop_stats, "missing stats 'delta_std'"),
    'stats_shape': (_set('stats', 'state_mean', torch.zeros(7)), "stats 'state_mean' has shape"),
    'image_size': (_set('config', 'image_size', 8), 'image size 8'),
    'cameras': (_set('config', 'cameras', ['front']), "cameras ['front']"),
    'width': (_set('config', 'width', 16), 'do not fit its config'),
}


@pytest.mark.parametrize('case', sorted(BAD))
def test_misfit_checkpoint_is_one_line_and_no_world(case, tmp_path, monkeypatch, capsys):
    edit, words = BAD[case]
    path = _save(tmp_path, case, edit)
    with pytest.raises(ConfigError) as err:
        learned.load_checkpoint(path)
    assert words in str(err.value) and '\n' not in str(err.value)
    started = []
    monkeypatch.setattr('realm_ros.core.world.make_world',
                        lambda config: started.append(config))
    code = cli.main(['episode', '--backend', 'mujoco', '--task', 'push_switch',
                     '--policy', 'learned', '--policy-args', f'{{"path": "{path}"}}'])
    err_text = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err_text.splitlines()) == 1 and words in err_text
    assert started == []  # no world, hence nothing sent to an arm


def test_fitting_checkpoint_loads(tmp_path):
    model, config, stats, _ = learned.load_checkpoint(_save(tmp_path, 'good'))
    assert config['robot'] == 'franka' and stats['delta_std'].shape == (7,)
    assert isinstance(model, learned.VisuomotorPolicy)


def _obs(rng) -> Observation:
    images = {c: rng.integers(0, 255, (36, 64, 3), dtype=np.uint8) for c in CAMERAS}
    joints = JointState(position=np.zeros(7), velocity=np.zeros(7), effort=np.zeros(7),
                        gripper=0.0)
    return Observation(joints=joints, images=images)


def test_blind_policy_ignores_the_pictures(tmp_path):
    path = _save(tmp_path, 'good')
    rng = np.random.default_rng(0)
    first, second = _obs(rng), _obs(rng)
    blind = learned.LearnedPolicy(path=path, horizon=4, blind='true')
    seeing = learned.LearnedPolicy(path=path, horizon=4)
    spec = EpisodeSpec(task='push_switch', seed=0, policy='learned', max_steps=5)
    for policy in (blind, seeing):
        policy.reset(spec)
    assert blind.label.endswith(':blind')
    np.testing.assert_array_equal(blind.infer(first).values, blind.infer(second).values)
    assert not np.allclose(seeing.infer(first).values, seeing.infer(second).values)


def test_appearance_jitter_changes_colours_not_shape():
    gen = torch.Generator().manual_seed(0)
    img = torch.rand(4, 2, 3, 16, 16, generator=gen)
    out = appearance_jitter(img, torch.Generator().manual_seed(1))
    assert out.shape == img.shape and out.min() >= 0 and out.max() <= 1
    assert (out - img).abs().mean() > 0.02
    again = appearance_jitter(img, torch.Generator().manual_seed(1))
    assert torch.equal(out, again)


def test_unknown_augmentation_is_refused():
    with pytest.raises(ConfigError, match='--augment'):
        TrainConfig(augment='mixup')
