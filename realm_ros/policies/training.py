"""Training the learned visuomotor policy (``realm-ros train``'s loop), without ROS or MuJoCo.

:func:`episode_samples` turns decoded episodes (``io.lerobot.iter_episodes``'s, or any objects
with ``actions``, ``states``, ``images`` per camera and ``instruction``) into the training
arrays: each sample is a frame and the chunk of the next H expert actions (the episode's last
action repeated past its end), every camera image resized once with ``resize_with_pad`` as the
policy does at run time. :func:`train` holds out the last ``val_episodes`` episodes and trains
:class:`~realm_ros.policies.learned.VisuomotorPolicy`'s network with AdamW and a cosine
schedule, random-shift augmentation (+-6 px) and bf16 autocast on CUDA, writing a checkpoint
per stage and ``train_log.jsonl`` (losses, time) to ``out``.

Needs torch, numpy (and OpenCV for the images); a GPU machine with only those runs it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib
import time
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from realm_ros.core.config import field
from realm_ros.core.errors import ConfigError


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


#: ``--augment`` values.
AUGMENTATIONS = ('shift', 'appearance')


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """One training run (``realm-ros train``'s flags of the same names)."""

    stages: str = field('early=300,middle=1500,final=6000',
                        'checkpoint name=step pairs; the largest step ends training')
    batch: int = field(256, 'samples per step')
    lr: float = field(3e-4, 'peak learning rate')
    horizon: int = field(10, 'actions per predicted chunk')
    image_size: int = field(128, 'side of the square image each camera gives the network, px')
    cameras: tuple[str, ...] = field(('exterior_1', 'wrist'), 'cameras (video features) used')
    val_episodes: int = field(-1, 'episodes held out for validation (-1 = 10 percent, at '
                                  'least 1 when there are 2 or more)')
    device: str = field('auto', "'auto' (cuda if present), cpu, cuda")
    width: int = field(32, 'CNN base width')
    seed: int = field(0, 'torch and sampling seed')
    log_every: int = field(100, 'steps between log lines')
    augment: str = field('shift', "image augmentation: 'shift' (random shift +-6 px, brightness "
                                  "+-10 %) or 'appearance' (shift, then colour, light, noise "
                                  'and occluding boxes: other looks of the same scene)')

    def __post_init__(self) -> None:
        parse_stages(self.stages)
        if self.batch <= 0 or self.horizon <= 0 or self.image_size < 32:
            raise ConfigError('--batch and --horizon must be > 0 and --image-size >= 32')
        if self.augment not in AUGMENTATIONS:
            raise ConfigError(f'--augment: unknown {self.augment!r}; choose one of '
                              f'{list(AUGMENTATIONS)}')


def appearance_jitter(img: Any, generator: Any = None) -> Any:
    """Other looks of the same scene for a batch (B, C, 3, H, W) in [0, 1] (torch).

    Per image: a random colour-mixing matrix (identity +- 0.15: hue and white balance), gain
    0.6-1.4 (exposure, light), contrast and saturation 0.6-1.4 and 0.4-1.6 about the image's
    mean and grey, an offset +-0.08 per channel, sensor noise of std 0-0.03, and up to three
    boxes of a random colour (each with probability 0.3, 5-25 % of the side: objects the
    demonstrations never showed). What the variant looks change (walls, floor, table, light,
    distractors) are colour and clutter, not geometry; the cameras' small offsets are the
    shift's.
    """
    import torch

    b, c, ch, h, w = img.shape
    n = b * c
    dev = img.device

    def uniform(low: float, high: float, *shape: int) -> torch.Tensor:
        return low + (high - low) * torch.rand(*shape, device=dev, generator=generator)

    x = img.reshape(n, ch, h, w)
    mix = torch.eye(3, device=dev) + uniform(-0.15, 0.15, n, 3, 3)
    x = torch.einsum('nij,njhw->nihw', mix, x)
    x = x * uniform(0.6, 1.4, n, 1, 1, 1)
    mean = x.mean(dim=(1, 2, 3), keepdim=True)
    x = mean + (x - mean) * uniform(0.6, 1.4, n, 1, 1, 1)
    grey = x.mean(dim=1, keepdim=True)
    x = grey + (x - grey) * uniform(0.4, 1.6, n, 1, 1, 1)
    x = x + uniform(-0.08, 0.08, n, 3, 1, 1)
    x = x + torch.randn(x.shape, device=dev, generator=generator) * uniform(0, 0.03, n, 1, 1, 1)
    ys = torch.arange(h, device=dev).view(1, h, 1)
    xs = torch.arange(w, device=dev).view(1, 1, w)
    for _ in range(3):
        side = (uniform(0.05, 0.25, n, 2) * torch.tensor([h, w], device=dev)).long()
        y0 = (uniform(0, 1, n) * (h - side[:, 0])).long().view(n, 1, 1)
        x0 = (uniform(0, 1, n) * (w - side[:, 1])).long().view(n, 1, 1)
        inside = ((ys >= y0) & (ys < y0 + side[:, 0].view(n, 1, 1))
                  & (xs >= x0) & (xs < x0 + side[:, 1].view(n, 1, 1)))
        on = (uniform(0, 1, n) < 0.3).view(n, 1, 1) & inside
        x = torch.where(on[:, None], uniform(0, 1, n, 3, 1, 1), x)
    return x.clamp(0, 1).view(b, c, ch, h, w)


def episode_samples(episodes: Iterable[Any], cameras: Sequence[str], image_size: int,
                    horizon: int, source: str = '') -> dict[str, Any]:
    """Decode ``episodes`` into arrays: images, states, chunk targets, tokens, episode ids
    (``source`` names where they came from in the error for none)."""
    from realm_ros.policies.learned import prepare_image, tokenize

    images, states, targets, tokens, episode, names = [], [], [], [], [], []
    count = 0
    for ep in episodes:
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
        raise ConfigError(f'no episodes in {source}')
    return {'images': np.concatenate(images), 'states': np.concatenate(states),
            'targets': np.concatenate(targets).astype(np.float32),
            'tokens': np.concatenate(tokens), 'episode': np.concatenate(episode),
            'episodes': count, 'instructions': sorted(set(names))}


def train(load: Callable[[TrainConfig], dict[str, Any]], config: TrainConfig,
          out: pathlib.Path, datasets: Sequence[str] = (),
          say: Callable[[str], None] = lambda line: print(line, flush=True)) -> None:
    """Train on the samples ``load(config)`` returns (:func:`episode_samples`'s arrays; timed
    as the data's decoding) and write the stage checkpoints and ``train_log.jsonl`` to
    ``out``; ``say`` gets one line per log interval. ``datasets``: names recorded in each
    checkpoint's metadata."""
    import torch
    import torch.nn.functional as F

    from realm_ros.policies.learned import (
        build_model,
        decode,
        default_config,
        save_checkpoint,
    )

    stages = parse_stages(config.stages)
    total = stages[-1][1]
    cameras = list(config.cameras)
    device = torch.device('cuda' if config.device == 'auto' and torch.cuda.is_available()
                          else ('cpu' if config.device == 'auto' else config.device))
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    start = time.monotonic()
    data = load(config)
    load_s = time.monotonic() - start
    n_val = config.val_episodes if config.val_episodes >= 0 else \
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
    model_config = default_config(cameras, horizon=config.horizon, image_size=config.image_size,
                                  width=config.width)
    model = build_model(model_config).to(device)
    params = sum(p.numel() for p in model.parameters())
    gpu = torch.cuda.get_device_name(device) if device.type == 'cuda' else 'cpu'
    say(f'train: {data["episodes"]} episodes ({n_val} held out), {len(train_idx)} train / '
        f'{len(val_idx)} val frames, cameras {cameras} at {config.image_size} px, '
        f'{params / 1e6:.2f} M parameters, {gpu}; data decoded in {load_s:.1f} s')

    def tensor(x: np.ndarray, dtype=None) -> torch.Tensor:
        return torch.as_tensor(x, dtype=dtype).to(device)

    images = tensor(data['images'])            # uint8 (N, C, 3, S, S)
    st = tensor(states, torch.float32)
    tgt = tensor(data['targets'], torch.float32)
    tok = tensor(data['tokens'], torch.long)
    tstats = {k: tensor(v, torch.float32) for k, v in stats.items()}
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=1e-4)
    warmup = min(200, total // 10 + 1)

    def lr_at(step: int) -> float:
        if step < warmup:
            return config.lr * (step + 1) / warmup
        return config.lr * 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))

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
        out = (shifted * gain).clamp(0, 1).view(b, c, ch, h, w)
        return appearance_jitter(out) if config.augment == 'appearance' else out

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

    out.mkdir(parents=True, exist_ok=True)
    log = open(out / 'train_log.jsonl', 'w')
    train_start = time.monotonic()
    stage_iter = iter(stages)
    next_stage: tuple[str | None, int] = next(stage_iter)
    model.train()
    for step in range(1, total + 1):
        for group in opt.param_groups:
            group['lr'] = lr_at(step - 1)
        idx = tensor(rng.choice(train_idx, size=config.batch), torch.long)
        loss, bce, rad = loss_on(idx, train=True)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        row: dict[str, Any] = {}
        if step % config.log_every == 0 or step == 1:
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
                    'instructions': data['instructions'], 'augment': config.augment,
                    'datasets': list(datasets)}
            save_checkpoint(str(out / f'{name}.pt'), model, model_config, stats, meta)
            next_stage = next(stage_iter, (None, -1))
        if row:
            say(json.dumps(row))
            log.write(json.dumps(row) + '\n')
    log.close()
    say(f'train: {total} steps in {time.monotonic() - train_start:.1f} s on {gpu}; '
        f'checkpoints {[n for n, _ in stages]} in {out}')
