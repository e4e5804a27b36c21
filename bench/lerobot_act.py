"""The LeRobot ACT rung: ``lerobot-train`` (LeRobot's own trainer, in its own venv) on a
``realm-ros dataset`` folder, a slim ACT from scratch (no pretrained backbone, no hub, no wandb),
on a CPU or a GPU (``--device cuda --workers 8``).

Run: ``.venv/bin/python bench/lerobot_act.py --data DIR --out DIR [--steps 3000] [--batch 8]
[--device cpu] [--workers 0] [--video-backend pyav] [--shards SHARD ...]
[--python /work/venvs/lerobot/bin/python] [--resume] [-- extra lerobot-train flags]``.
``--shards`` first joins several dataset folders (``bench/device_ladder.py gen``'s) into
``--data`` with LeRobot's own ``aggregate_datasets``. ``--backbone DIR`` starts ACT's ResNet18
from the weights ``bench/act_backbone.py`` pretrained on the demonstrations (ACT's frozen
BatchNorm makes a from-scratch backbone train without normalisation).

The venv is ``make lerobot-env``'s (lerobot 0.4.4, Python 3.11, torch 2.9.1) or the one
``--python`` names (lerobot 0.6.1 on Python 3.12 ran on the H200 machine). Prints the command,
LeRobot's loss lines as they come, then one JSON line:
steps, wall seconds, the checkpoint folder and its size. Evaluate the checkpoint with
``bench/device_ladder.py eval --checkpoints act=lerobot:OUT`` (the ``lerobot`` policy serves it
from the same venv) or any runner's ``--policy lerobot``.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

#: A slim ACT: 256-wide transformer, 2 encoder layers, no VAE (the demonstrations are one
#: scripted expert's), chunks of 10 with 8 executed (openpi's DROID client), from scratch.
SLIM = ['--policy.type=act', '--policy.dim_model=256', '--policy.n_heads=4',
        '--policy.dim_feedforward=1024', '--policy.n_encoder_layers=2',
        '--policy.n_decoder_layers=1', '--policy.use_vae=false', '--policy.chunk_size=10',
        '--policy.n_action_steps=8', '--policy.optimizer_lr=2e-4',
        '--policy.optimizer_lr_backbone=2e-4', '--policy.pretrained_backbone_weights=null',
        '--policy.push_to_hub=false']


def eval_off(python: str) -> str:
    """lerobot-train's flag that turns simulator evaluation off: ``--eval_freq`` in 0.4,
    ``--env_eval_freq`` in 0.6 (0.6.1 refuses the old name; a newer release is taken as 0.6)."""
    version = subprocess.run([python, '-c', 'import importlib.metadata as m; '
                              'print(m.version("lerobot"))'], capture_output=True, text=True,
                             env=dict(os.environ, PYTHONPATH='')).stdout.strip()
    major_minor = tuple(int(p) for p in version.split('.')[:2] if p.isdigit())
    return '--eval_freq=0' if major_minor and major_minor < (0, 5) else '--env_eval_freq=0'


#: Run in the lerobot venv: join shards (each a LeRobot v3.0 folder) with LeRobot's own
#: ``aggregate_datasets``; 0.6 can keep one video file per shard (no re-muxing).
MERGE = """
import inspect, pathlib, sys
from lerobot.datasets.aggregate import aggregate_datasets
out, shards = pathlib.Path(sys.argv[1]), [pathlib.Path(p) for p in sys.argv[2:]]
kw = {}
if 'concatenate_videos' in inspect.signature(aggregate_datasets).parameters:
    kw['concatenate_videos'] = False
aggregate_datasets([f'local/{p.name}' for p in shards], f'local/{out.name}', roots=shards,
                   aggr_root=out, **kw)
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog='bench/lerobot_act.py')
    parser.add_argument('--data', type=pathlib.Path, required=True,
                        help='realm-ros dataset folder (LeRobot v3.0)')
    parser.add_argument('--out', type=pathlib.Path, required=True,
                        help="lerobot-train's --output_dir (must not exist)")
    parser.add_argument('--steps', type=int, default=3000)
    parser.add_argument('--batch', type=int, default=8)
    parser.add_argument('--save-freq', type=int, default=0, help='0 = only at the end')
    parser.add_argument('--threads', type=int, default=1,
                        help='torch threads (1: two OpenMP threads on a loaded 2-core machine '
                             'ran ten times slower than one)')
    parser.add_argument('--device', default='cpu', help="lerobot-train's --policy.device")
    parser.add_argument('--workers', type=int, default=0,
                        help="data-loader processes (lerobot-train's --num_workers)")
    parser.add_argument('--video-backend', default='pyav', choices=('pyav', 'torchcodec'),
                        help="lerobot's video decoder (torchcodec needs the system's FFmpeg "
                             'libraries; on one core it served items 1.5-2.5x faster: '
                             'bench/lerobot_loader.py)')
    parser.add_argument('--python', default='', help="the lerobot venv's interpreter")
    parser.add_argument('--resume', action='store_true',
                        help="continue --out's last checkpoint up to --steps (lerobot-train "
                             '--resume with its saved train_config.json, optimizer and step)')
    parser.add_argument('--shards', type=pathlib.Path, nargs='*', default=[],
                        help="realm-ros dataset folders to join first into --data (LeRobot's "
                             'own aggregate_datasets, in its venv; --data must not exist)')
    parser.add_argument('--backbone', type=pathlib.Path, default=None,
                        help="a folder bench/act_backbone.py wrote: ACT's ResNet18 starts from "
                             "its weights (through torchvision's cache: TORCH_HOME=FOLDER) "
                             'instead of from scratch')
    parser.add_argument('extra', nargs='*', help='more lerobot-train flags (after --)')
    args = parser.parse_args(argv)
    backbone = []
    if args.backbone is not None:
        cached = args.backbone / 'hub' / 'checkpoints' / 'resnet18-f37072fd.pth'
        if not cached.is_file():
            print(f'lerobot_act: --backbone {args.backbone}: no hub/checkpoints/{cached.name} '
                  'there; write it with bench/act_backbone.py', file=sys.stderr)
            return 2
        # ACT's own recipe for a pretrained backbone: it learns at 1e-5 (LeRobot's default)
        backbone = ['--policy.pretrained_backbone_weights=ResNet18_Weights.IMAGENET1K_V1',
                    '--policy.optimizer_lr_backbone=1e-5']
    from realm_ros.policies.lerobot_policy import find_python

    python = pathlib.Path(find_python(args.python))
    script = python.parent / 'lerobot-train'
    train = [str(script)] if script.exists() else [str(python), '-m',
                                                   'lerobot.scripts.lerobot_train']
    cmd = [*train, f'--dataset.repo_id=local/{args.data.name}',
           f'--dataset.root={args.data.resolve()}',
           f'--dataset.video_backend={args.video_backend}',
           *(f for f in SLIM if not (backbone and ('backbone' in f))),
           f'--policy.device={args.device}', f'--steps={args.steps}',
           f'--batch_size={args.batch}', f'--num_workers={args.workers}',
           f'--save_freq={args.save_freq or args.steps}', '--log_freq=50',
           f'--output_dir={args.out.resolve()}', '--wandb.enable=false', eval_off(str(python)),
           '--seed=1000', *backbone, *args.extra]
    env = dict(os.environ, HF_HUB_OFFLINE='1', HF_DATASETS_OFFLINE='1', WANDB_MODE='disabled',
               OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads),
               PYTHONPATH='')
    if args.backbone is not None:
        env['TORCH_HOME'] = str(args.backbone.resolve())
    if args.resume:
        saved = args.out.resolve() / 'checkpoints' / 'last' / 'pretrained_model'
        cmd = [*train, f'--config_path={saved / "train_config.json"}', '--resume=true',
               f'--steps={args.steps}', f'--save_freq={args.save_freq or args.steps}',
               *args.extra]
    if args.shards:
        start = time.monotonic()
        merged = subprocess.run([str(python), '-c', MERGE, str(args.data.resolve()),
                                 *(str(d.resolve()) for d in args.shards)], env=env)
        print(json.dumps({'merge_exit': merged.returncode, 'shards': len(args.shards),
                          'merge_s': round(time.monotonic() - start, 1)}), flush=True)
        if merged.returncode:
            return merged.returncode
    print('+ ' + ' '.join(cmd), flush=True)
    start = time.monotonic()
    proc = subprocess.run(cmd, env=env)
    wall = time.monotonic() - start
    model = args.out / 'checkpoints' / 'last' / 'pretrained_model'
    size = sum(p.stat().st_size for p in model.glob('*')) if model.is_dir() else 0
    print(json.dumps({'exit': proc.returncode, 'steps': args.steps, 'batch': args.batch,
                      'wall_s': round(wall, 1), 'checkpoint': str(model),
                      'checkpoint_mb': round(size / 2**20, 1)}), flush=True)
    return proc.returncode


if __name__ == '__main__':
    sys.exit(main())
