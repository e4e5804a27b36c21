"""An untrained LeRobot diffusion policy of LeRobot's default size, for timing its chunks.

Run: ``.venv/bin/python bench/lerobot_diffusion.py --out DIR [--image-size 160x90]
[--scheduler DDPM] [--inference-steps 0] [--python PY]``, then time it through the ``lerobot``
policy's server with ``bench/device_ladder.py latency lerobot:DIR --calls 30``.

In the lerobot venv (``make lerobot-env``'s, or ``--python``), LeRobot itself builds
``DiffusionConfig`` with its defaults (ResNet18 image encoder, U-Net ``down_dims`` (512, 1024,
2048), ``horizon`` 16, ``n_obs_steps`` 2, ``n_action_steps`` 8, DDPM with 100 training steps)
for the Franka (state and action of 8) and both DROID cameras at ``--image-size``, and saves it
with its pre- and postprocessors. The weights are random (seed 0) and the normalisation stats
placeholders (mean 0, std 1, range -1..1): the policy's answers mean nothing, its time per chunk
is the trained policy's. ``--scheduler DDIM --inference-steps 10`` saves the same weights with
fewer denoising steps at inference (``num_inference_steps``; 0 = LeRobot's default, all
``num_train_timesteps``). Prints one JSON line: the folder, its parameters and size.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

MAKE = r"""
import json, sys, torch
from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.policies.diffusion.configuration_diffusion import DiffusionConfig
from lerobot.policies.diffusion.modeling_diffusion import DiffusionPolicy
from lerobot.policies.factory import make_pre_post_processors

out, h, w, scheduler, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], \
    int(sys.argv[5])
inputs = {'observation.state': PolicyFeature(FeatureType.STATE, (8,))}
for cam in ('exterior_1', 'wrist'):
    inputs[f'observation.images.{cam}'] = PolicyFeature(FeatureType.VISUAL, (3, h, w))
cfg = DiffusionConfig(input_features=inputs,
                      output_features={'action': PolicyFeature(FeatureType.ACTION, (8,))},
                      noise_scheduler_type=scheduler, num_inference_steps=steps or None,
                      pretrained_backbone_weights=None, device='cpu', push_to_hub=False)
torch.manual_seed(0)
policy = DiffusionPolicy(cfg)
stats = {k: {'min': -torch.ones(8), 'max': torch.ones(8), 'mean': torch.zeros(8),
             'std': torch.ones(8)} for k in ('observation.state', 'action')}
for cam in ('exterior_1', 'wrist'):
    stats[f'observation.images.{cam}'] = {'mean': torch.zeros(3, 1, 1),
                                          'std': torch.ones(3, 1, 1)}
pre, post = make_pre_post_processors(cfg, dataset_stats=stats)
policy.save_pretrained(out)
pre.save_pretrained(out)
post.save_pretrained(out)
print('PARAMS', sum(p.numel() for p in policy.parameters()))
"""


def main(argv: list[str] | None = None) -> int:
    from realm_ros.commands.episode import parse_image_size
    from realm_ros.core.errors import BackendUnavailable, ConfigError
    from realm_ros.policies.lerobot_policy import find_python

    parser = argparse.ArgumentParser(prog='bench/lerobot_diffusion.py',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('--out', type=pathlib.Path, required=True)
    parser.add_argument('--image-size', default='160x90', help='WxH of both cameras, px')
    parser.add_argument('--scheduler', default='DDPM', choices=('DDPM', 'DDIM'))
    parser.add_argument('--inference-steps', type=int, default=0,
                        help='denoising steps at inference (0 = all training steps)')
    parser.add_argument('--python', default='', help='the lerobot venv interpreter')
    args = parser.parse_args(argv)
    try:
        w, h = parse_image_size(args.image_size)
    except ConfigError as err:
        print(err, file=sys.stderr)
        return 2
    if args.inference_steps < 0:
        print(f'--inference-steps: must be >= 0, got {args.inference_steps}', file=sys.stderr)
        return 2
    try:
        python = find_python(args.python)
    except BackendUnavailable as err:
        print(err, file=sys.stderr)
        return 2
    proc = subprocess.run([python, '-c', MAKE, str(args.out), str(h), str(w), args.scheduler,
                           str(args.inference_steps)], capture_output=True, text=True,
                          env={'HF_HUB_OFFLINE': '1', 'PATH': '/usr/bin:/bin'})
    if proc.returncode != 0:
        print(proc.stderr[-3000:], file=sys.stderr)
        return 1
    params = int(proc.stdout.split('PARAMS', 1)[1].split()[0])
    size = sum(f.stat().st_size for f in args.out.iterdir() if f.is_file())
    print(json.dumps({'checkpoint': str(args.out), 'scheduler': args.scheduler,
                      'inference_steps': args.inference_steps, 'image_size': [h, w],
                      'params': params, 'mb': round(size / 1e6, 1)}))
    return 0


if __name__ == '__main__':
    sys.exit(main())
