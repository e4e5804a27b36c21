"""Where lerobot's data loader spends its time per item, by how the frames are stored (issue 40).

Run: ``.venv/bin/python bench/lerobot_loader.py --source DIR [--small DIR] [--venv .venv-lerobot]
[--repeats 5] [--batches 12] [--batch 8] [--backend pyav]``.

On the H200, ``lerobot-train`` (ACT, batch 64, 8 workers) ran at 6.8 steps/s with the GPU 10-18 %
busy: the loader, which decodes two AV1 frames per item, is the limit. This bench measures the
same loader on one core so the storages can be compared here:

1. From ``--source`` (a ``realm-ros dataset`` folder, AV1 at its size) it writes, with realm_ros's
   own writer, the same episodes as H.264 videos (``ffmpeg_video.H264``) and as PNG image
   features (``--frames png``), in ``--work``; ``--small`` is a second folder recorded at a
   smaller size (AV1), measured as it is.
2. For each folder, ``--repeats`` times, a fresh process in the lerobot venv
   (``--venv``; ``make lerobot-env``) with one torch thread builds lerobot's own
   ``LeRobotDataset`` with ACT's ``delta_timestamps`` (``--chunk`` future actions) and its
   ``torch.utils.data.DataLoader`` (``num_workers=0``, shuffled, ``--batch``), reads one batch to
   warm up, then times ``--batches`` batches: items/s, and per item the milliseconds inside
   ``_query_videos`` (video decoding) and ``_query_hf_dataset`` (the action window from the
   parquet); the rest is the item's own row (PNG decoding for image features), collation and
   the task string.
3. Prints, per storage, the mean items/s with a 95 % bootstrap interval over the repeats, the
   split, the folder's size on disk, and the machine's load; writes all of it to ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from benchlib import describe, machine  # noqa: E402

INNER = r"""
import json, sys, time
import torch
torch.set_num_threads(1)
from lerobot.datasets.lerobot_dataset import LeRobotDataset, LeRobotDatasetMetadata

root, repo_id, backend, batches, batch, seed, chunk = sys.argv[1:8]
batches, batch, seed, chunk = int(batches), int(batch), int(seed), int(chunk)
meta = LeRobotDatasetMetadata(repo_id, root=root)
delta = {'action': [i / meta.fps for i in range(chunk)]}  # ACT: chunk_size, n_obs_steps 1
ds = LeRobotDataset(repo_id, root=root, delta_timestamps=delta, video_backend=backend)
spent = {'video': 0.0, 'window': 0.0}

def timed(name, fn):
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - t0
    return wrapper

ds._query_videos = timed('video', ds._query_videos)
ds._query_hf_dataset = timed('window', ds._query_hf_dataset)
loader = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=True, num_workers=0,
                                     generator=torch.Generator().manual_seed(seed))
it = iter(loader)
first = next(it)  # warm-up: file handles, decoders, the HF dataset's cache
spent = {'video': 0.0, 'window': 0.0}
t0 = time.perf_counter()
n = 0
for _ in range(batches):
    try:
        b = next(it)
    except StopIteration:
        it = iter(loader)
        b = next(it)
    n += len(b['index'])
dt = time.perf_counter() - t0
shapes = {k: list(v.shape) for k, v in first.items() if k.startswith('observation.images.')}
dtypes = {k: str(v.dtype) for k, v in first.items() if k.startswith('observation.images.')}
ranges = {k: [float(v.min()), float(v.max())] for k, v in first.items()
          if k.startswith('observation.images.')}
print('RESULT ' + json.dumps({'items': n, 'seconds': dt, 'items_per_s': n / dt,
                              'video_ms': 1e3 * spent['video'] / n,
                              'window_ms': 1e3 * spent['window'] / n,
                              'total_ms': 1e3 * dt / n, 'image_shapes': shapes,
                              'image_dtypes': dtypes, 'image_ranges': ranges,
                              'action_shape': list(first['action'].shape),
                              'features': {k: v['dtype'] for k, v in meta.features.items()
                                           if k.startswith('observation.images.')}}))
"""


def size_mb(root: pathlib.Path) -> float:
    return sum(p.stat().st_size for p in root.rglob('*') if p.is_file()) / 2 ** 20


def rewrite(source: pathlib.Path, out: pathlib.Path, store: str) -> pathlib.Path:
    """``source``'s episodes written again as H.264 videos ('h264') or PNG images ('png')."""
    from realm_ros.io import ffmpeg_video as video
    from realm_ros.io.lerobot import iter_episodes, open_writer, read_info

    if (out / 'meta' / 'info.json').is_file():
        return out
    shutil.rmtree(out, ignore_errors=True)
    info = read_info(source)
    cameras = [k.split('.', 2)[2] for k, v in info['features'].items()
               if v['dtype'] in ('video', 'image')]
    writer = open_writer(out, 'v3.0', fps=info['fps'], cameras=cameras,
                         frames='png' if store == 'png' else 'video')
    if store == 'h264':
        writer.codec = video.H264
    for episode in iter_episodes(source):
        writer.add(episode)
    writer.close()  # meta/ (info.json's codec too) is rewritten after every add()
    return out


def bootstrap(values: list[float], rng: np.random.Generator, n: int = 10000
              ) -> tuple[float, float]:
    x = np.asarray(values, dtype=float)
    means = rng.choice(x, size=(n, len(x)), replace=True).mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--source', required=True, type=pathlib.Path,
                    help='a realm-ros dataset folder (AV1 videos)')
    ap.add_argument('--small', type=pathlib.Path, default=None,
                    help='the same recording at a smaller image size (AV1)')
    ap.add_argument('--work', type=pathlib.Path, default=pathlib.Path('/tmp/lerobot_loader'),
                    help='where the H.264 and PNG copies are written')
    ap.add_argument('--venv', type=pathlib.Path, default=pathlib.Path('.venv-lerobot'))
    ap.add_argument('--repeats', type=int, default=5)
    ap.add_argument('--batches', type=int, default=12)
    ap.add_argument('--batch', type=int, default=8)
    ap.add_argument('--backend', default='pyav', choices=('pyav', 'torchcodec'))
    ap.add_argument('--chunk', type=int, default=100,
                    help="actions per item (ACT's chunk_size: 100 by default, 10 in "
                         "bench/lerobot_act.py's slim ACT)")
    ap.add_argument('--stores', default='av1,av1_small,h264,png')
    ap.add_argument('--json', type=pathlib.Path, default=None)
    args = ap.parse_args()
    py = args.venv / 'bin' / 'python'
    if not py.exists():
        print(f'--venv: no {py}; make lerobot-env first', file=sys.stderr)
        return 2
    folders = {'av1': args.source}
    if args.small is not None:
        folders['av1_small'] = args.small
    args.work.mkdir(parents=True, exist_ok=True)
    for store in ('h264', 'png'):
        t0 = time.monotonic()
        folders[store] = rewrite(args.source, args.work / store, store)
        print(f'{store}: written in {time.monotonic() - t0:.0f} s', flush=True)
    wanted = [s for s in args.stores.split(',') if s in folders]
    env = dict(os.environ, HF_HUB_OFFLINE='1', HF_DATASETS_OFFLINE='1', OMP_NUM_THREADS='1',
               PYTHONPATH='')
    runs: dict[str, list[dict]] = {s: [] for s in wanted}
    loads = []
    for rep in range(args.repeats):
        for store in wanted:  # interleaved: a change in the machine's load hits every storage
            loads.append(os.getloadavg()[0])
            proc = subprocess.run(
                [str(py), '-c', INNER, str(folders[store]), f'local/{store}', args.backend,
                 str(args.batches), str(args.batch), str(rep), str(args.chunk)],
                capture_output=True, text=True, env=env, check=False)
            line = [x for x in proc.stdout.splitlines() if x.startswith('RESULT ')]
            if proc.returncode != 0 or not line:
                print(f'{store}: lerobot failed: {proc.stderr.strip().splitlines()[-3:]}')
                return 1
            runs[store].append(json.loads(line[0][7:]))
            print(f'{store} repeat {rep}: {runs[store][-1]["items_per_s"]:.1f} items/s',
                  flush=True)
    rng = np.random.default_rng(0)
    info = machine()
    summary = {'machine': describe(info), 'load_1min': [min(loads), max(loads)],
               'backend': args.backend, 'chunk': args.chunk, 'batch': args.batch,
               'batches': args.batches,
               'repeats': args.repeats, 'stores': {}}
    print(f'\nmachine: {describe(info)}; 1-min load during the runs {min(loads):.1f}-'
          f'{max(loads):.1f}; one torch thread, num_workers=0, batch {args.batch}, '
          f'{args.batches} batches x {args.repeats} fresh processes, backend {args.backend}, '
          f'{args.chunk} actions an item')
    base = np.mean([r['items_per_s'] for r in runs[wanted[0]]])
    for store in wanted:
        rate = [r['items_per_s'] for r in runs[store]]
        lo, hi = bootstrap(rate, rng)
        row = {'folder': str(folders[store]), 'size_mb': round(size_mb(folders[store]), 1),
               'items_per_s': float(np.mean(rate)), 'ci95': [lo, hi],
               'video_ms': float(np.mean([r['video_ms'] for r in runs[store]])),
               'window_ms': float(np.mean([r['window_ms'] for r in runs[store]])),
               'total_ms': float(np.mean([r['total_ms'] for r in runs[store]])),
               'image_shapes': runs[store][0]['image_shapes'],
               'features': runs[store][0]['features'], 'runs': runs[store]}
        summary['stores'][store] = row
        print(f'{store:10s} {row["items_per_s"]:6.1f} items/s [{lo:.1f}, {hi:.1f}] '
              f'(x{row["items_per_s"] / base:.1f} of {wanted[0]}); per item {row["total_ms"]:.1f} '
              f'ms: video {row["video_ms"]:.1f}, action window {row["window_ms"]:.1f}, rest '
              f'{row["total_ms"] - row["video_ms"] - row["window_ms"]:.1f}; '
              f'{row["size_mb"]} MB; {row["image_shapes"]}')
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(summary, indent=1) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
