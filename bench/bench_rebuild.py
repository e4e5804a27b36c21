"""Calibration + rebuild on hidden lab looks nobody tuned on: image distance per camera.

Run: ``.venv/bin/python bench/bench_rebuild.py --looks 5 --first 5000 --out DIR
[--size 640x360] [--poses 36] [--starts 3] [--task put_green_block_in_bowl]``.

Per look (``core.appearance.lab_look(seed)``: cameras, materials, textures, light, clutter and
sensor all drawn from the seed), with the commands a lab runs:

1. ``realm-ros cameras record --appearance LOOK`` (the digital real with that look);
2. ``realm-ros cameras calibrate BAG --out rig.yaml`` (from DROID's rig);
3. ``realm-ros cameras match BAG --rig rig.yaml`` (clean plates, SIMPLER) and
   ``realm-ros cameras rebuild BAG --rig rig.yaml`` (timed);
4. the real, the plain twin, the matched and the rebuilt twin put in the same state at
   ``--starts`` starts of the task (one frame per start, distinct seeds), every camera rendered:
   mean absolute pixel error (0-255) per camera and region (image, robot, objects,
   background), ``bench_visual_match.image_distances``.

Prints, over all looks' frames, each twin's mean with a 95 % t-interval over the frames and
the ratio to the raw twin's with a 95 % bootstrap interval (frames resampled, paired); writes
``DIR/results.json`` and per look ``DIR/look_SEED/sheet.png`` (its first start: real | raw |
matched | rebuilt, a row per camera).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

os.environ.setdefault('MUJOCO_GL', 'egl')

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _cli(*args: str) -> float:
    start = time.monotonic()
    subprocess.run([sys.executable, '-m', 'realm_ros.cli', *args], check=True,
                   stdout=subprocess.DEVNULL)
    return time.monotonic() - start


def run_look(seed: int, folder: pathlib.Path, size: str, poses: int, starts: int,
             task: str) -> dict:
    """Record, calibrate, match, rebuild and measure one look; return its figures."""
    from bench_visual_match import image_distances

    from realm_ros.core.appearance import write_lab_look

    folder.mkdir(parents=True, exist_ok=True)
    look = write_lab_look(seed, folder / 'look.yaml')
    bag, rig_file = folder / 'bag', folder / 'rig.yaml'
    times = {}
    if not bag.exists():
        times['record'] = _cli('cameras', 'record', '--appearance', str(look), '--out', str(bag),
                               '--image-size', size, '--poses', str(poses))
    if not rig_file.exists():
        times['calibrate'] = _cli('cameras', 'calibrate', str(bag), '--out', str(rig_file))
    times['match'] = _cli('cameras', 'match', str(bag), '--rig', str(rig_file), '--out',
                          str(folder / 'match'))
    times['rebuild'] = _cli('cameras', 'rebuild', str(bag), '--rig', str(rig_file), '--out',
                            str(folder / 'rebuild'))
    w, h = (int(v) for v in size.split('x'))
    frames, sheet = image_distances(str(look), {'matched': str(folder / 'match'),
                                                'rebuilt': str(folder / 'rebuild')},
                                    task, range(starts), (w, h))
    rows = [np.concatenate(row, 1) for row in sheet]
    import imageio.v2 as imageio

    imageio.imwrite(folder / 'sheet.png', np.concatenate(rows, 0))
    return {'seed': seed, 'times': times,
            'frames': {'|'.join(k): v for k, v in frames.items()}}


def _interval(values: np.ndarray) -> tuple[float, float, float]:
    from scipy import stats

    m = float(values.mean())
    if len(values) < 2:
        return m, m, m
    half = float(stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values)))
    return m, m - half, m + half


def _ratio(a: np.ndarray, b: np.ndarray, seed: int = 0) -> tuple[float, float, float]:
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(a), (2000, len(a)))
    boots = a[picks].mean(1) / b[picks].mean(1)
    return float(a.mean() / b.mean()), float(np.quantile(boots, 0.025)), \
        float(np.quantile(boots, 0.975))


def main() -> None:
    """Run every look and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--looks', type=int, default=5)
    parser.add_argument('--first', type=int, default=5000, help='seed of the first look')
    parser.add_argument('--size', default='640x360')
    parser.add_argument('--poses', type=int, default=36)
    parser.add_argument('--starts', type=int, default=3, help='task starts (frames) per look')
    parser.add_argument('--task', default='put_green_block_in_bowl')
    parser.add_argument('--out', required=True, type=pathlib.Path)
    args = parser.parse_args()
    results = []
    for k in range(args.looks):
        seed = args.first + k
        cache = args.out / f'look_{seed}' / 'result.json'
        if cache.is_file():
            results.append(json.loads(cache.read_text()))
            continue
        result = run_look(seed, args.out / f'look_{seed}', args.size, args.poses, args.starts,
                          args.task)
        cache.write_text(json.dumps(result))
        results.append(result)
        print(f'look {seed}: {result["times"]}', flush=True)
    pooled: dict[str, list[float]] = {}
    for r in results:
        for key, values in r['frames'].items():
            pooled.setdefault(key, []).extend(values)
    table = {}
    print(f'{len(results)} looks x {args.starts} starts; mean |real - twin| (0-255), 95 % '
          'interval over frames; ratio to the raw twin, 95 % bootstrap interval')
    print(f'{"camera":<11} {"region":<11} {"raw":>20} {"matched":>20} {"rebuilt":>20} '
          f'{"matched/raw":>20} {"rebuilt/raw":>20}')
    for cam in ('exterior_1', 'exterior_2', 'wrist'):
        for region in ('image', 'robot', 'objects', 'background'):
            raw = np.asarray(pooled.get(f'{cam}|twin|{region}', []))
            if not len(raw):
                continue
            row = {'raw': _interval(raw)}
            cells = [f'{row["raw"][0]:5.1f} [{row["raw"][1]:5.1f}, {row["raw"][2]:5.1f}]']
            for name in ('matched', 'rebuilt'):
                v = np.asarray(pooled[f'{cam}|{name}|{region}'])
                row[name] = _interval(v)
                cells.append(f'{row[name][0]:5.1f} [{row[name][1]:5.1f}, {row[name][2]:5.1f}]')
            for name in ('matched', 'rebuilt'):
                v = np.asarray(pooled[f'{cam}|{name}|{region}'])
                row[f'{name}/raw'] = _ratio(v, raw)
                q = row[f'{name}/raw']
                cells.append(f'{q[0]:5.3f} [{q[1]:5.3f}, {q[2]:5.3f}]')
            table[f'{cam}|{region}'] = row
            print(f'{cam:<11} {region:<11} ' + ' '.join(f'{c:>20}' for c in cells))
    rebuild_s = [r['times']['rebuild'] for r in results if 'rebuild' in r['times']]
    print(f'rebuild: {np.mean(rebuild_s):.0f} s mean, {np.max(rebuild_s):.0f} s max per look')
    (args.out / 'results.json').write_text(json.dumps({'table': table, 'looks': [
        {'seed': r['seed'], 'times': r['times']} for r in results]}, indent=1))


if __name__ == '__main__':
    main()
