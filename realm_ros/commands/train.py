"""``realm-ros train``: train the learned visuomotor policy on LeRobot datasets, with checkpoints.

Reads one or more dataset folders written by ``realm-ros dataset`` (any LeRobot v3.0 or v2.x
dataset with the same state/action layout and cameras works), decodes every frame once into
memory at ``--image-size`` (``resize_with_pad``, as the policy does at run time), holds out
the last ``--val-episodes`` episodes, and trains
:class:`~realm_ros.policies.learned.VisuomotorPolicy` with AdamW and a cosine schedule,
random-shift augmentation (+-6 px) and bf16 autocast on CUDA.
Each sample is a frame and the chunk of the next H expert actions (the episode's last action
repeated past its end). ``--stages early=300,middle=1500,final=6000`` writes ``OUT/early.pt``
etc. at those steps (the largest is the run's length) and ``OUT/train_log.jsonl`` (losses, time).

Runs without ROS or MuJoCo: ``python -m realm_ros.commands.train ...`` works on a GPU machine
that has only torch, numpy, pyarrow and OpenCV.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import sys
import time
from typing import Any

import numpy as np

from realm_ros.core.errors import ConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Datasets, output, stages, batch, device."""
    parser.add_argument('--data', required=True, nargs='+', type=pathlib.Path,
                        help='LeRobot dataset folder(s) (realm-ros dataset)')
    parser.add_argument('--out', required=True, type=pathlib.Path,
                        help='folder for the checkpoints and train_log.jsonl')
    parser.add_argument('--stages', default='early=300,middle=1500,final=6000',
                        help='checkpoint name=step pairs; the largest step ends training')
    parser.add_argument('--batch', type=int, default=256, help='samples per step')
    parser.add_argument('--lr', type=float, default=3e-4, help='peak learning rate')
    parser.add_argument('--horizon', type=int, default=10, help='actions per predicted chunk')
    parser.add_argument('--image-size', type=int, default=128,
                        help='side of the square image each camera gives the network, px')
    parser.add_argument('--cameras', default='exterior_1,wrist',
                        help='comma-separated cameras (video features) to use')
    parser.add_argument('--val-episodes', type=int, default=-1,
                        help='episodes held out for validation (-1 = 10 percent, at least 1 '
                             'when there are 2 or more)')
    parser.add_argument('--device', default='auto', help="'auto' (cuda if present), cpu, cuda")
    parser.add_argument('--width', type=int, default=32, help='CNN base width')
    parser.add_argument('--seed', type=int, default=0, help='torch and sampling seed')
    parser.add_argument('--log-every', type=int, default=100, help='steps between log lines')


def parse_stages(text: str) -> list[tuple[str, int]]:
    """``'early=300,final=6000'`` -> [('early', 300), ('final', 6000)], sorted by step."""
    stages = []
    for item in text.split(','):
        name, sep, step = item.partition('=')
        if not sep or not name.strip() or not step.strip().isdigit() or int(step) <= 0:
            raise ConfigError(f'--stages: expected name=step with step > 0, got {item!r}')
        stages.append((name.strip(), int(step)))
    if len({n for n, _ in stages}) != len(stages):
        raise ConfigError(f'--stages: names must be unique, got {text!r}')
    return sorted(stages, key=lambda s: s[1])


def load_samples(folders: list[pathlib.Path], cameras: list[str], image_size: int,
                 horizon: int) -> dict[str, Any]:
    """Decode the datasets into arrays: images, states, chunk targets, tokens, episode ids."""
    from realm_ros.io.lerobot import iter_episodes
    from realm_ros.policies.learned import prepare_image, tokenize

    images, states, targets, tokens, episode, names = [], [], [], [], [], []
    count = 0
    for folder in folders:
        for ep in iter_episodes(folder, cameras):
            n = len(ep)
            idx = np.minimum(np.arange(n)[:, None] + np.arange(horizon)[None, :], n - 1)
            targets.append(ep.actions[idx])
            states.append(ep.states)
            frames = np.stack([np.stack([prepare_image(f, image_size) for f in ep.images[c]])
                               for c in cameras], axis=1)
            images.append(frames)
            tokens.append(np.tile(np.asarray(tokenize(ep.instruction))[None], (n, 1)))
            episode.append(np.full(n, count))
            names.append(ep.instruction)
            count += 1
    if not count:
        raise ConfigError(f'no episodes in {[str(f) for f in folders]}')
    return {'images': np.concatenate(images), 'states': np.concatenate(states),
            'targets': np.concatenate(targets).astype(np.float32),
            'tokens': np.concatenate(tokens), 'episode': np.concatenate(episode),
            'episodes': count, 'instructions': sorted(set(names))}


def run(args: argparse.Namespace) -> int:
    """Train and write the stage checkpoints; print one line per log interval."""
    import torch
    import torch.nn.functional as F

    from realm_ros.policies.learned import (
        build_model,
        decode,
        default_config,
        save_checkpoint,
    )

    stages = parse_stages(args.stages)
    total = stages[-1][1]
    if args.batch <= 0 or args.horizon <= 0 or args.image_size < 32:
        raise ConfigError('--batch and --horizon must be > 0 and --image-size >= 32')
    cameras = [c for c in args.cameras.split(',') if c]
    device = torch.device('cuda' if args.device == 'auto' and torch.cuda.is_available()
                          else ('cpu' if args.device == 'auto' else args.device))
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    start = time.monotonic()
    data = load_samples(list(args.data), cameras, args.image_size, args.horizon)
    load_s = time.monotonic() - start
    n_val = args.val_episodes if args.val_episodes >= 0 else \
        (max(1, data['episodes'] // 10) if data['episodes'] >= 2 else 0)
    is_val = data['episode'] >= data['episodes'] - n_val
    train_idx = np.flatnonzero(~is_val)
    val_idx = np.flatnonzero(is_val)
    states = data['states']
    deltas = data['targets'][:, :, :7] - states[:, None, :7]
    stats = {'state_mean': states[train_idx].mean(0),
             'state_std': np.maximum(states[train_idx].std(0), 1e-2),
             'delta_mean': deltas[train_idx].reshape(-1, 7).mean(0),
             'delta_std': np.maximum(deltas[train_idx].reshape(-1, 7).std(0), 1e-3)}
    config = default_config(cameras, horizon=args.horizon, image_size=args.image_size,
                            width=args.width)
    model = build_model(config).to(device)
    params = sum(p.numel() for p in model.parameters())
    gpu = torch.cuda.get_device_name(device) if device.type == 'cuda' else 'cpu'
    print(f'train: {data["episodes"]} episodes ({n_val} held out), {len(train_idx)} train / '
          f'{len(val_idx)} val frames, cameras {cameras} at {args.image_size} px, '
          f'{params / 1e6:.2f} M parameters, {gpu}; data decoded in {load_s:.1f} s', flush=True)

    def tensor(x: np.ndarray, dtype=None) -> torch.Tensor:
        return torch.as_tensor(x, dtype=dtype).to(device)

    images = tensor(data['images'])            # uint8 (N, C, 3, S, S)
    st = tensor(states, torch.float32)
    tgt = tensor(data['targets'], torch.float32)
    tok = tensor(data['tokens'], torch.long)
    tstats = {k: tensor(v, torch.float32) for k, v in stats.items()}
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    warmup = min(200, total // 10 + 1)

    def lr_at(step: int) -> float:
        if step < warmup:
            return args.lr * (step + 1) / warmup
        return args.lr * 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))

    def augment(img: torch.Tensor) -> torch.Tensor:
        """Random shift of +-6 px per sample and camera (edge padding), brightness +-10 %."""
        b, c, ch, h, w = img.shape
        flat = img.reshape(b * c, ch, h, w)
        pad = 6
        padded = F.pad(flat, (pad, pad, pad, pad), mode='replicate')
        ox = torch.randint(0, 2 * pad + 1, (b * c,), device=img.device)
        oy = torch.randint(0, 2 * pad + 1, (b * c,), device=img.device)
        ar = torch.arange(h, device=img.device)
        rows = (oy[:, None] + ar[None]).view(b * c, 1, h, 1).expand(b * c, ch, h, w)
        cols = (ox[:, None] + ar[None]).view(b * c, 1, 1, w).expand(b * c, ch, h, w)
        shifted = padded[torch.arange(b * c, device=img.device)[:, None, None, None],
                         torch.arange(ch, device=img.device)[None, :, None, None], rows, cols]
        gain = 1.0 + 0.1 * (2 * torch.rand(b * c, 1, 1, 1, device=img.device) - 1)
        return (shifted * gain).clamp(0, 1).view(b, c, ch, h, w)

    def loss_on(idx: torch.Tensor, train: bool) -> tuple[torch.Tensor, float, float]:
        img = images[idx].float() / 255.0
        if train:
            img = augment(img)
        s = st[idx]
        norm = (s - tstats['state_mean']) / tstats['state_std']
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == 'cuda'):
            raw = model(img, norm, tok[idx]).float()
        target = tgt[idx]
        delta = (target[..., :7] - s[:, None, :7] - tstats['delta_mean']) / tstats['delta_std']
        l1 = (raw[..., :7] - delta).abs().mean()
        bce = F.binary_cross_entropy_with_logits(raw[..., 7], (target[..., 7] > 0.5).float())
        with torch.no_grad():
            rad = (decode(raw, s, tstats)[..., :7] - target[..., :7]).abs().mean().item()
        return l1 + bce, float(bce.item()), rad

    def validate() -> dict[str, float]:
        if not len(val_idx):
            return {}
        model.eval()
        with torch.no_grad():
            total_loss, rad, n = 0.0, 0.0, 0
            for chunk in np.array_split(val_idx, max(1, len(val_idx) // 512)):
                loss, _, r = loss_on(tensor(chunk, torch.long), train=False)
                total_loss += loss.item() * len(chunk)
                rad += r * len(chunk)
                n += len(chunk)
        model.train()
        return {'val_loss': total_loss / n, 'val_joint_err_rad': rad / n}

    args.out.mkdir(parents=True, exist_ok=True)
    log = open(args.out / 'train_log.jsonl', 'w')
    train_start = time.monotonic()
    stage_iter = iter(stages)
    next_stage = next(stage_iter)
    model.train()
    for step in range(1, total + 1):
        for group in opt.param_groups:
            group['lr'] = lr_at(step - 1)
        idx = tensor(rng.choice(train_idx, size=args.batch), torch.long)
        loss, bce, rad = loss_on(idx, train=True)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        row: dict[str, Any] = {}
        if step % args.log_every == 0 or step == 1:
            row = {'step': step, 'loss': round(loss.item(), 5), 'gripper_bce': round(bce, 5),
                   'joint_err_rad': round(rad, 5),
                   'time_s': round(time.monotonic() - train_start, 2)}
        if step == next_stage[1]:
            name = next_stage[0]
            if device.type == 'cuda':
                torch.cuda.synchronize()
            row = {'step': step, 'loss': round(loss.item(), 5), 'stage': name,
                   'time_s': round(time.monotonic() - train_start, 2), **validate()}
            meta = {'stage': name, 'step': step, 'train_time_s': row['time_s'], 'device': gpu,
                    'episodes': int(data['episodes']), 'frames': int(len(states)),
                    'instructions': data['instructions'],
                    'datasets': [f.name for f in args.data]}
            save_checkpoint(str(args.out / f'{name}.pt'), model, config, stats, meta)
            next_stage = next(stage_iter, (None, -1))
        if row:
            print(json.dumps(row), flush=True)
            log.write(json.dumps(row) + '\n')
    log.close()
    print(f'train: {total} steps in {time.monotonic() - train_start:.1f} s on {gpu}; '
          f'checkpoints {[n for n, _ in stages]} in {args.out}', flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m realm_ros.commands.train`` (the GPU machine needs no ROS)."""
    parser = argparse.ArgumentParser(prog='realm-ros train')
    add_arguments(parser)
    try:
        return run(parser.parse_args(argv))
    except ConfigError as err:
        print(f'realm-ros train: error: {err}', file=sys.stderr)
        return 2


if __name__ == '__main__':
    sys.exit(main())
