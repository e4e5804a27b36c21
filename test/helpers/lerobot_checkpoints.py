"""Tiny LeRobot checkpoints made by lerobot itself, in its venv, for the ``lerobot`` policy's
end-to-end tests: the policy's config and weights and the saved pre- and postprocessors with
stats, as ``lerobot-train`` leaves them. One script per policy type; the lines every type
shares (the DROID features, the image stats, the saving) are written once."""

import pathlib
import subprocess

import pytest

from realm_ros.policies.lerobot_policy import find_python, lerobot_available

#: The marks of a test that runs lerobot (in its own venv, which ``make setup`` does not make).
MARKS = [pytest.mark.slow,
         pytest.mark.skipif(not lerobot_available(),
                            reason='no lerobot venv here (make lerobot-env; make setup does not '
                                   'make it)'),
         pytest.mark.filterwarnings('ignore:connect\\(\\) must be used:DeprecationWarning')]

_HEAD = r"""
import sys, torch
from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.policies.factory import make_pre_post_processors

out, h, w = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
inputs = {'observation.state': PolicyFeature(FeatureType.STATE, (8,))}
for cam in ('exterior_1', 'wrist'):
    inputs[f'observation.images.{cam}'] = PolicyFeature(FeatureType.VISUAL, (3, h, w))
outputs = {'action': PolicyFeature(FeatureType.ACTION, (8,))}
"""

_SAVE = r"""
for cam in ('exterior_1', 'wrist'):
    stats[f'observation.images.{cam}'] = {'mean': torch.full((3, 1, 1), 0.4),
                                          'std': torch.full((3, 1, 1), 0.2)}
pre, post = make_pre_post_processors(cfg, dataset_stats=stats)
policy.save_pretrained(out)
pre.save_pretrained(out)
post.save_pretrained(out)
print('made', out)
"""

#: A tiny ACT (ResNet18 backbone, from scratch), chunks of 10 with 8 executed.
ACT = _HEAD + r"""
from lerobot.policies.act.configuration_act import ACTConfig
from lerobot.policies.act.modeling_act import ACTPolicy
cfg = ACTConfig(input_features=inputs, output_features=outputs,
                chunk_size=10, n_action_steps=8, dim_model=32, n_heads=2, dim_feedforward=64,
                n_encoder_layers=1, n_vae_encoder_layers=1, use_vae=False,
                pretrained_backbone_weights=None, device='cpu', push_to_hub=False)
torch.manual_seed(0)
policy = ACTPolicy(cfg)
stats = {'observation.state': {'mean': torch.zeros(8), 'std': torch.full((8,), 0.5)},
         'action': {'mean': torch.full((8,), 0.1), 'std': torch.full((8,), 0.3)}}
""" + _SAVE

#: A tiny diffusion policy: DDPM with 10 steps, 2 observations in, 8 of 16 actions executed.
DIFFUSION = _HEAD + r"""
from lerobot.policies.diffusion.configuration_diffusion import DiffusionConfig
from lerobot.policies.diffusion.modeling_diffusion import DiffusionPolicy
cfg = DiffusionConfig(input_features=inputs, output_features=outputs,
                      n_obs_steps=2, horizon=16, n_action_steps=8, down_dims=(16, 32),
                      kernel_size=3, n_groups=4, diffusion_step_embed_dim=16,
                      spatial_softmax_num_keypoints=8, num_train_timesteps=10,
                      pretrained_backbone_weights=None, device='cpu', push_to_hub=False)
torch.manual_seed(0)
policy = DiffusionPolicy(cfg)
stats = {k: {'min': torch.full((8,), -3.0), 'max': torch.full((8,), 3.0),
             'mean': torch.zeros(8), 'std': torch.ones(8)}
         for k in ('observation.state', 'action')}
""" + _SAVE


def make_checkpoint(folder: pathlib.Path, script: str, height: int, width: int,
                    env: dict[str, str] | None = None) -> pathlib.Path:
    """Run ``script`` (``ACT`` or ``DIFFUSION``) in the lerobot venv; return the folder it
    wrote (``folder/pretrained_model``)."""
    out = folder / 'pretrained_model'
    proc = subprocess.run([find_python(''), '-c', script, str(out), str(height), str(width)],
                          capture_output=True, text=True,
                          env=env or {'HF_HUB_OFFLINE': '1', 'PATH': '/usr/bin:/bin'})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out
