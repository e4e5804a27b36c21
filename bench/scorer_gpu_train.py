"""Train learned-scorer variants on a GPU machine from the training plans' episodes, packed small.

    python bench/scorer_gpu_train.py pack OUT.npz [--quality 95] [--data-dir data/progress_scorer]
    python bench/scorer_gpu_train.py train PACKED.npz VARIANTS.json OUT_DIR [--device cuda]
        [--budget SECONDS]

``pack`` (here, where the episodes are cached): the ``train`` and ``train_looks`` plans'
labelled episodes, frames as JPEG (quality 95: 24 MB for the 504 episodes, 12,024 frames), so
they travel to a machine with no simulator. ``train`` (there; needs torch, numpy and OpenCV):
``learned.train`` with ``learned.SHIPPED`` and each variant's settings (a JSON object of
name -> TrainConfig fields, e.g. ``{"w16_e150": {"epochs": 150}}``), writing ``OUT_DIR/NAME.pt``;
a variant that would not finish within ``--budget`` seconds (judged by the last one's time per
epoch) is skipped. docs/scoring.md ("A base trained longer, on a GPU") ran ``w16_e150``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import time

import numpy as np


def pack(out: pathlib.Path, quality: int, data_dir: pathlib.Path) -> None:
    import cv2

    from realm_ros.scorers import learned
    files = sorted(f for plan in learned.TRAIN_PLANS for f in data_dir.glob(f'{plan}-*.npz'))
    if not files:
        raise SystemExit(f'no {learned.TRAIN_PLANS} episodes in {data_dir}: run score train once')
    episodes = [e for f in files for e in learned.load_episodes(f)]
    frames = np.concatenate([e.frames for e in episodes])
    chunks = [np.frombuffer(cv2.imencode('.jpg', f[..., ::-1],
                                         [cv2.IMWRITE_JPEG_QUALITY, quality])[1], np.uint8)
              for f in frames]
    np.savez(out, jpeg=np.concatenate(chunks),
             offsets=np.concatenate([[0], np.cumsum([len(c) for c in chunks])]),
             times_s=np.concatenate([e.times_s for e in episodes]),
             met=np.concatenate([e.met for e in episodes]),
             lengths=np.asarray([len(e.met) for e in episodes]),
             meta=np.asarray([[e.task, e.world, e.policy, str(e.seed), str(e.n_stages), e.look]
                              for e in episodes]))
    print(f'{len(episodes)} episodes, {len(frames)} frames from {[f.name for f in files]}: '
          f'{out} ({out.stat().st_size / 1e6:.1f} MB)')


def unpack(path: pathlib.Path) -> list:
    import cv2

    from realm_ros.scorers import learned
    data = np.load(path, allow_pickle=False)
    blob, offsets = data['jpeg'], data['offsets']
    frames = np.stack([cv2.imdecode(blob[a:b], cv2.IMREAD_COLOR)[..., ::-1]
                       for a, b in zip(offsets[:-1], offsets[1:])])
    episodes, start = [], 0
    for n, row in zip(data['lengths'], data['meta']):
        task, world, policy, seed, n_stages, look = row
        end = start + int(n)
        episodes.append(learned.LabelledEpisode(
            task=str(task), world=str(world), policy=str(policy), seed=int(seed),
            frames=frames[start:end], times_s=data['times_s'][start:end],
            met=data['met'][start:end], n_stages=int(n_stages), look=str(look)))
        start = end
    return episodes


def train(packed: pathlib.Path, variants: pathlib.Path, out: pathlib.Path, device: str,
          budget: float) -> None:
    from realm_ros.scorers import learned
    episodes = unpack(packed)
    out.mkdir(parents=True, exist_ok=True)
    begin, per_epoch = time.monotonic(), 0.0
    for name, settings in json.loads(variants.read_text()).items():
        config = dataclasses.replace(learned.SHIPPED, device=device, threads=8, **settings)
        need = per_epoch * config.epochs * (config.width / 16) ** 0.5
        if time.monotonic() - begin + need > budget:
            print(f'{name}: skipped, {need:.0f} s would pass the budget', flush=True)
            continue
        start = time.monotonic()
        checkpoint = learned.train(episodes, config, log=lambda s, n=name: print(n, s, flush=True))
        checkpoint['meta']['train_s'] = round(time.monotonic() - start, 1)
        per_epoch = max(per_epoch, checkpoint['meta']['train_s'] / config.epochs
                        / (config.width / 16) ** 0.5)
        learned.save_checkpoint(out / f'{name}.pt', checkpoint)
        print(f'{name}: {config} {checkpoint["meta"]["train_s"]} s', flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('mode', choices=('pack', 'train'))
    parser.add_argument('paths', nargs='+', type=pathlib.Path)
    parser.add_argument('--quality', type=int, default=95)
    parser.add_argument('--data-dir', type=pathlib.Path,
                        default=pathlib.Path('data/progress_scorer'))
    parser.add_argument('--device', default='cuda')
    parser.add_argument('--budget', type=float, default=float('inf'))
    args = parser.parse_args()
    if args.mode == 'pack':
        pack(args.paths[0], args.quality, args.data_dir)
    else:
        if len(args.paths) != 3:
            raise SystemExit('train needs PACKED.npz VARIANTS.json OUT_DIR')
        train(*args.paths, args.device, args.budget)


if __name__ == '__main__':
    main()
