"""A ResNet18 backbone for LeRobot's ACT, pretrained on the demonstrations themselves.

Why: LeRobot's ACT builds torchvision's ResNet18 with ``norm_layer=FrozenBatchNorm2d``
(``lerobot/policies/act/modeling_act.py``). Trained from scratch
(``--policy.pretrained_backbone_weights=null``, the only choice where no model hub can be
reached) every normalisation layer is then an identity frozen at mean 0 and variance 1, for the
whole run; torchvision's own detection models stopped freezing BatchNorm without pretrained
weights for that reason (pytorch/vision pull request 5443). The ACTs trained that way here at
320x180 and 64x36 never used their pictures; at 160x90 one did, and this backbone still
helped it on pick_spoon at equal steps (docs/learned-policy.md, "The ACT rung that looks").

A lab starts from ImageNet's weights; none can be fetched here. So this script pretrains a
ResNet18 of torchvision's layout (BatchNorm trained) on the demonstrations: from the cameras
alone, with no joint state, predict the next ``--chunk`` actions (normalised, L1), one backbone
shared by every camera as ACT shares it. Images are normalised with ImageNet's mean and
standard deviation, which is what ``lerobot-train`` feeds ACT by default
(``DatasetConfig.use_imagenet_stats``). The weights, BatchNorm statistics included, are written
where torchvision's weight cache looks for ``ResNet18_Weights.IMAGENET1K_V1``
(``OUT/hub/checkpoints/resnet18-f37072fd.pth``), the one way to give LeRobot's ACT a backbone
without changing LeRobot: ``lerobot-train --policy.pretrained_backbone_weights=
ResNet18_Weights.IMAGENET1K_V1`` with ``TORCH_HOME=OUT`` (``bench/lerobot_act.py --backbone
OUT``). **They are not ImageNet weights**: the file only carries that name; ``OUT/backbone.json``
says what they are.

Run (on the GPU machine, beside ``bench/device_act.sh``)::

    python bench/act_backbone.py --data ~/ladder_data/shard_* --out ~/backbone --steps 3000

It prints held-out episodes' L1 against two references that cannot look: the mean action
(what a network that ignores its pictures and has no state can do at best) and the same
network fed black images.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import pathlib
import sys
import time
from typing import Any

import numpy as np

#: ImageNet's per-channel mean and standard deviation (lerobot's IMAGENET_STATS).
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
#: torchvision's cache file name for ResNet18_Weights.IMAGENET1K_V1.
CACHE_NAME = 'resnet18-f37072fd.pth'
CAMERAS = ('exterior_1', 'wrist')


def resnet18() -> Any:
    """torchvision's ResNet18 layout (parameter names and shapes), BatchNorm, 1000-way fc."""
    from torch import nn

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                             nn.BatchNorm2d(cout))
                               if stride != 1 or cin != cout else None)

        def forward(self, x: Any) -> Any:
            y = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
            return self.relu(y + (self.downsample(x) if self.downsample is not None else x))

    class ResNet18(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            widths = (64, 128, 256, 512)
            for i, w in enumerate(widths):
                cin = widths[max(i - 1, 0)]
                setattr(self, f'layer{i + 1}', nn.Sequential(Block(cin, w, 1 if i == 0 else 2),
                                                             Block(w, w, 1)))
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(512, 1000)
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode='fan_out', nonlinearity='relu')

        def features(self, x: Any) -> Any:
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.avgpool(x).flatten(1)

    return ResNet18()


def load_shard(path: str, chunk: int) -> dict[str, np.ndarray]:
    """One LeRobot folder's frames (N, cameras, H, W, 3) uint8, action chunks and episode ids."""
    from realm_ros.io.lerobot import iter_episodes

    frames, targets, episode = [], [], []
    for i, ep in enumerate(iter_episodes(path, cameras=list(CAMERAS))):
        n = len(ep)
        idx = np.minimum(np.arange(n)[:, None] + np.arange(chunk)[None, :], n - 1)
        targets.append(ep.actions[idx].astype(np.float32))
        frames.append(np.stack([ep.images[c] for c in CAMERAS], axis=1))
        episode.append(np.full(n, i))
    return {'frames': np.concatenate(frames), 'targets': np.concatenate(targets),
            'episode': np.concatenate(episode)}


def load(paths: list[str], chunk: int, workers: int) -> dict[str, np.ndarray]:
    """Every shard, decoded side by side; episode ids made distinct across shards."""
    if workers <= 1:
        parts = [load_shard(p, chunk) for p in paths]
    else:
        with concurrent.futures.ProcessPoolExecutor(max_workers=workers) as pool:
            parts = list(pool.map(load_shard, paths, [chunk] * len(paths)))
    offset, episode = 0, []
    for p in parts:
        episode.append(p['episode'] + offset)
        offset += int(p['episode'].max()) + 1 if len(p['episode']) else 0
    return {'frames': np.concatenate([p['frames'] for p in parts]),
            'targets': np.concatenate([p['targets'] for p in parts]),
            'episode': np.concatenate(episode)}


class Model:
    """The backbone, shared by every camera, and a small head over the pooled features."""

    def __init__(self, cameras: int, out: int, device: str) -> None:
        import torch
        from torch import nn

        self.torch = torch
        self.backbone = resnet18().to(device)
        self.head = nn.Sequential(nn.Linear(512 * cameras, 512), nn.ReLU(),
                                  nn.Linear(512, out)).to(device)
        self.mean = torch.tensor(IMAGENET_MEAN, device=device).view(1, 3, 1, 1)
        self.std = torch.tensor(IMAGENET_STD, device=device).view(1, 3, 1, 1)

    def parameters(self) -> list[Any]:
        return [*self.backbone.parameters(), *self.head.parameters()]

    def __call__(self, frames: Any) -> Any:
        """frames: (B, cameras, H, W, 3) uint8 on the device."""
        b, c, h, w, _ = frames.shape
        x = frames.reshape(b * c, h, w, 3).permute(0, 3, 1, 2).float() / 255.0
        feats = self.backbone.features((x - self.mean) / self.std)
        return self.head(feats.reshape(b, c * 512))


def shift(frames: Any, pad: int, generator: Any) -> Any:
    """Random translation by up to ``pad`` px per image (replicate padding, then a crop)."""
    import torch
    import torch.nn.functional as F

    b, c, h, w, _ = frames.shape
    x = frames.reshape(b * c, h, w, 3).permute(0, 3, 1, 2).float()
    x = F.pad(x, (pad, pad, pad, pad), mode='replicate')
    dx = torch.randint(0, 2 * pad + 1, (b * c,), generator=generator, device='cpu')
    dy = torch.randint(0, 2 * pad + 1, (b * c,), generator=generator, device='cpu')
    out = torch.stack([x[i, :, dy[i]:dy[i] + h, dx[i]:dx[i] + w] for i in range(b * c)])
    return out.permute(0, 2, 3, 1).reshape(b, c, h, w, 3).round().clamp(0, 255).to(torch.uint8)


def train(data: dict[str, np.ndarray], steps: int, batch: int, lr: float, device: str,
          val_fraction: float = 0.05, seed: int = 0, pad: int = 6, every: int = 500,
          say: Any = print) -> dict[str, Any]:
    """Train on all but a held-out fraction of the episodes; return the model and figures."""
    import torch

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    episodes = np.unique(data['episode'])
    held = set(rng.choice(episodes, max(1, int(len(episodes) * val_fraction)),
                          replace=False).tolist())
    is_val = np.isin(data['episode'], list(held))
    tr, va = np.flatnonzero(~is_val), np.flatnonzero(is_val)
    flat = data['targets'].reshape(len(data['targets']), -1)
    mu = flat[tr].mean(0)
    sd = flat[tr].std(0) + 1e-6
    target = torch.from_numpy((flat - mu) / sd).float().to(device)
    frames = torch.from_numpy(data['frames']).to(device)
    model = Model(data['frames'].shape[1], flat.shape[1], device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps,
                                                pct_start=0.05)
    gen = torch.Generator().manual_seed(seed)
    amp = device.startswith('cuda')

    def evaluate(blind: bool) -> float:
        model.backbone.eval()
        model.head.eval()
        total, count = 0.0, 0
        with torch.no_grad(), torch.autocast('cuda', dtype=torch.bfloat16, enabled=amp):
            for i in range(0, len(va), 512):
                idx = torch.from_numpy(va[i:i + 512]).to(device)
                x = frames[idx]
                if blind:
                    x = torch.zeros_like(x)
                total += float((model(x).float() - target[idx]).abs().sum())
                count += idx.numel() * target.shape[1]
        model.backbone.train()
        model.head.train()
        return total / max(count, 1)

    mean_l1 = float(np.abs((flat[va] - mu) / sd).mean())
    log, start = [], time.monotonic()
    for step in range(1, steps + 1):
        pick = torch.from_numpy(rng.choice(tr, batch)).to(device)
        x = shift(frames[pick], pad, gen) if pad else frames[pick]
        with torch.autocast('cuda', dtype=torch.bfloat16, enabled=amp):
            loss = (model(x).float() - target[pick]).abs().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if step % every == 0 or step == steps:
            row = {'step': step, 'train_l1': round(float(loss.detach()), 4),
                   'val_l1': round(evaluate(False), 4), 'val_l1_blind': round(evaluate(True), 4),
                   'val_l1_mean_action': round(mean_l1, 4),
                   'wall_s': round(time.monotonic() - start, 1)}
            log.append(row)
            say(json.dumps(row))
    return {'model': model, 'log': log, 'train_frames': int(len(tr)), 'val_frames': int(len(va)),
            'val_episodes': len(held), 'episodes': int(len(episodes))}


def save(model: Model, out: pathlib.Path, meta: dict[str, Any]) -> pathlib.Path:
    """The backbone's state dict where torchvision's cache looks, and what it is beside it."""
    import torch

    path = out / 'hub' / 'checkpoints' / CACHE_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().float().cpu() if v.is_floating_point() else v.detach().cpu()
             for k, v in model.backbone.state_dict().items()}
    torch.save(state, path)
    (out / 'backbone.json').write_text(json.dumps({
        'what': 'ResNet18 (torchvision layout) pretrained by bench/act_backbone.py on the '
                'demonstrations (cameras only -> next actions); NOT ImageNet weights, though '
                f"the file is named {CACHE_NAME} for torchvision's cache", **meta}, indent=1))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--data', nargs='+', required=True,
                        help='LeRobot v3.0 folders (realm-ros dataset shards)')
    parser.add_argument('--out', type=pathlib.Path, required=True)
    parser.add_argument('--steps', type=int, default=3000)
    parser.add_argument('--batch', type=int, default=128)
    parser.add_argument('--lr', type=float, default=1e-3)
    parser.add_argument('--chunk', type=int, default=10, help='actions predicted per frame')
    parser.add_argument('--workers', type=int, default=16, help='decoding processes')
    parser.add_argument('--device', default='cuda')
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args(argv)
    start = time.monotonic()
    data = load([str(p) for p in args.data if not str(p).endswith('.log')], args.chunk,
                args.workers)
    decoded = time.monotonic() - start
    print(json.dumps({'frames': int(len(data['frames'])), 'shape': list(data['frames'].shape),
                      'decode_s': round(decoded, 1)}), flush=True)
    result = train(data, args.steps, args.batch, args.lr, args.device, seed=args.seed,
                   say=lambda line: print(line, flush=True))
    meta = {k: result[k] for k in ('log', 'train_frames', 'val_frames', 'val_episodes',
                                   'episodes')}
    meta.update({'data': [str(p) for p in args.data], 'steps': args.steps, 'batch': args.batch,
                 'lr': args.lr, 'chunk': args.chunk, 'cameras': list(CAMERAS),
                 'decode_s': round(decoded, 1),
                 'total_s': round(time.monotonic() - start, 1)})
    path = save(result['model'], args.out, meta)
    print(json.dumps({'saved': str(path), 'total_s': meta['total_s']}), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
