"""A LeRobot checkpoint trained from a pretrained backbone is served offline, unchanged.

A checkpoint that ``lerobot-train`` wrote after starting ACT's ResNet18 from pretrained weights
(ImageNet's at a lab; ``bench/act_backbone.py``'s here) keeps
``pretrained_backbone_weights: "ResNet18_Weights.IMAGENET1K_V1"`` in its config.json, so
LeRobot's own ``from_pretrained`` first builds that backbone from torchvision's weight cache, or
downloads it, before the checkpoint's own weights replace every one of its parameters and
frozen statistics. On a machine without that cache and without a network LeRobot's own loader
fails; the ``lerobot`` policy's server builds the ResNet without it and must answer the very
chunk LeRobot's own loader answers where the cache exists.

Real lerobot in its venv (``make lerobot-env``), skipped where it is absent, as
test_lerobot_served.py.
"""

import json
import os
import subprocess

import lerobot_checkpoints
import numpy as np
import pytest

from realm_ros.core.policy import make_policy
from realm_ros.core.types import EpisodeSpec, JointState, Observation
from realm_ros.policies.lerobot_policy import find_python

pytestmark = lerobot_checkpoints.MARKS

H, W = 36, 64
FLAG = 'ResNet18_Weights.IMAGENET1K_V1'

# What a checkpoint trained from a pretrained backbone has beyond lerobot_checkpoints.ACT's:
# frozen BatchNorm statistics unlike a fresh FrozenBatchNorm2d's; and, for LeRobot's own loader,
# torchvision's cache file for the flag, filled with another random ResNet18.
TRAINED = r"""
import pathlib, sys, torch, torchvision
from safetensors.torch import load_file, save_file
out, cache = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
weights = load_file(out / 'model.safetensors')
g = torch.Generator().manual_seed(0)
for name, t in weights.items():
    if name.endswith('running_var'):
        weights[name] = 0.5 + 1.5 * torch.rand(t.shape, generator=g)
    elif name.endswith('running_mean'):
        weights[name] = -0.2 + 0.4 * torch.rand(t.shape, generator=g)
save_file(weights, out / 'model.safetensors')
torch.manual_seed(1)
(cache / 'hub' / 'checkpoints').mkdir(parents=True)
torch.save(torchvision.models.resnet18().state_dict(),
           cache / 'hub' / 'checkpoints' / 'resnet18-f37072fd.pth')
print('trained', out)
"""

# LeRobot's own loader and inference, the config as saved (the flag on): from_pretrained, the
# saved processors, predict_action_chunk.
OWN = r"""
import json, sys, numpy as np, torch
from lerobot.configs.policies import PreTrainedConfig
from lerobot.policies.factory import get_policy_class, make_pre_post_processors
path, obs_file, task = sys.argv[1], sys.argv[2], sys.argv[3]
cfg = PreTrainedConfig.from_pretrained(path)
assert cfg.pretrained_backbone_weights, cfg.pretrained_backbone_weights
policy = get_policy_class(cfg.type).from_pretrained(path, config=cfg).eval()
pre, post = make_pre_post_processors(cfg, pretrained_path=path)
data = np.load(obs_file)
batch = {k: torch.from_numpy(data[k]) for k in data.files}
for k in list(batch):
    if 'images' in k:
        batch[k] = batch[k].permute(2, 0, 1).float().div(255.0)
    batch[k] = batch[k].unsqueeze(0)
batch['task'] = [task]
with torch.inference_mode():
    actions = post(policy.predict_action_chunk(pre(batch)))
print('OWN ' + json.dumps(actions[0].double().tolist()))
"""


def lerobot_env(torch_home):
    return {'HF_HUB_OFFLINE': '1', 'PATH': '/usr/bin:/bin', 'TORCH_HOME': str(torch_home)}


@pytest.fixture(scope='module')
def checkpoint(tmp_path_factory):
    root = tmp_path_factory.mktemp('lerobot_backbone')
    out = lerobot_checkpoints.make_checkpoint(root, lerobot_checkpoints.ACT, H, W)
    cache = root / 'cache'
    proc = subprocess.run([find_python(''), '-c', TRAINED, str(out), str(cache)],
                          capture_output=True, text=True, env=lerobot_env(cache))
    assert proc.returncode == 0, proc.stderr[-3000:]
    config = json.loads((out / 'config.json').read_text())
    config['pretrained_backbone_weights'] = FLAG
    (out / 'config.json').write_text(json.dumps(config))
    assert json.loads((out / 'config.json').read_text())['pretrained_backbone_weights'] == FLAG
    return out, cache


def test_served_without_the_cache_equals_lerobots_own_with_it(checkpoint, tmp_path,
                                                              monkeypatch):
    path, cache = checkpoint
    rng = np.random.default_rng(3)
    q = np.array([0.0, -0.6, 0.0, -2.2, 0.0, 1.6, 0.8]) + rng.normal(0, 0.05, 7)
    images = {c: rng.integers(0, 255, (H, W, 3), dtype=np.uint8) for c in ('exterior_1', 'wrist')}
    obs = Observation(joints=JointState(q, np.zeros(7), np.zeros(7), 0.3), images=images,
                      instruction='push the light switch')
    # the server's machine: an empty torch cache, no model hub
    empty = tmp_path / 'empty_torch_home'
    empty.mkdir()
    monkeypatch.setitem(os.environ, 'TORCH_HOME', str(empty))
    policy = make_policy('lerobot', path=str(path))
    try:
        policy.reset(EpisodeSpec(task='push_switch', instruction=obs.instruction))
        chunk = policy.infer(obs)
    finally:
        policy.close()
    assert not any(empty.rglob('*.pth')), 'the server fetched backbone weights'
    arrays = {'observation.state': np.r_[q, 0.3].astype(np.float32)}
    arrays.update({f'observation.images.{c}': img for c, img in images.items()})
    np.savez(tmp_path / 'obs.npz', **arrays)
    own = subprocess.run([find_python(''), '-c', OWN, str(path), str(tmp_path / 'obs.npz'),
                          obs.instruction], capture_output=True, text=True,
                         env=lerobot_env(cache))
    assert own.returncode == 0, own.stderr[-3000:]
    expected = np.array(json.loads(own.stdout.split('OWN ', 1)[1]))
    assert expected.shape == (10, 8)
    np.testing.assert_allclose(chunk.values, expected, atol=1e-5)
    # and LeRobot's own loader does need the cache: without it, it cannot build the model
    bare = subprocess.run([find_python(''), '-c', OWN, str(path), str(tmp_path / 'obs.npz'),
                           obs.instruction], capture_output=True, text=True,
                          env=lerobot_env(empty), timeout=300)
    assert bare.returncode != 0 and 'resnet18' in bare.stderr.lower()
