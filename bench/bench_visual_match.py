"""How far is the twin's picture from the digital real's, before and after visual matching?

Run: ``.venv/bin/python bench/bench_visual_match.py --match DIR [--task put_green_block_in_bowl]
[--seeds 3] [--size 160x90] [--out sheet.png]``, with ``DIR`` from ``realm-ros cameras match``
(on a recording of the same digital real: ``--appearance``, default lab_demo).

For each seed the digital real (hidden appearance) resets the task; the plain twin and the
visually matched twin are put in the very same physical state (every qpos copied), and each
renders every camera. Prints the mean absolute pixel error (0-255, over RGB) between the
digital real and each twin per camera, over the whole image, the robot's pixels, the task
objects' pixels and the background's (regions from the digital real's own segmentation
render). ``DIR`` may also be a ``cameras rebuild`` folder (``bench_rebuild.py`` compares both
on hidden looks). ``--out`` writes a
sheet: real | twin | matched twin per camera, the first seed.

``--variants N --out sheet.png`` (no ``--match``) instead draws the twin's N looks of
SIMPLER's variant aggregation (``core.appearance.VariantSet``; ``paired-eval
--variant-aggregation N``, the sweep's ``variants`` world): one row per variant, the exterior
cameras side by side, the task reset at ``--seeds``' first seed.
"""

from __future__ import annotations

import argparse
import os
from typing import Iterable

os.environ.setdefault('MUJOCO_GL', 'egl')

import numpy as np  # noqa: E402


def variants_sheet(count: int, task: str, size: tuple[int, int], out: str) -> None:
    """Write the twin's ``count`` variants as one sheet (rows: variants)."""
    import imageio.v2 as imageio

    from realm_ros.core.appearance import VariantSet
    from realm_ros.core.evaluation import PolicyEntry
    from realm_ros.core.sweep import Cell
    from realm_ros.core.types import EpisodeSpec
    from realm_ros.sweep.runner import make_looked_world

    variants = VariantSet(count)
    spec = EpisodeSpec(task=task, seed=0, max_steps=1)
    rows = []
    for k in range(count):
        cell = Cell(world=variants.name(k), entry=PolicyEntry.parse('scripted:0'), spec=spec,
                    cameras=('exterior_1', 'exterior_2'), variant=(k, count, variants.seed))
        world = make_looked_world(cell, camera_width=size[0], camera_height=size[1])
        try:
            world.reset(spec)
            images = world.render()
            rows.append(np.concatenate([images['exterior_1'], images['exterior_2']], 1))
            print(f'{variants.name(k)}: {variants.mapping(k)}')
        finally:
            world.close()
    imageio.imwrite(out, np.concatenate(rows, 0))
    print(f'sheet: {out}')


#: Where the error is: the whole image, the robot's, the objects' (task objects and
#: articulated fixtures) and the background's pixels (the rest), by the real's segmentation.
from realm_ros.backends.mujoco.image_regions import REGIONS  # noqa: E402


def image_distances(appearance: str, folders: dict[str, str], task: str, seeds: Iterable[int],
                    size: tuple[int, int]) -> tuple[dict[tuple[str, str, str], list[float]],
                                                    list[list[np.ndarray]]]:
    """Return the mean absolute pixel error (0-255, over RGB) of the plain twin and of a twin
    per look folder (name -> ``visual_match_dir``) against the digital real with
    ``appearance``, one value per start (seed) for each (camera, twin, region), and the first
    seed's pictures per camera (real, twin, then each folder's twin).

    Each seed's start is one frame: the real resets the task, every twin is put in its very
    state (every qpos copied) and renders every camera; regions come from the real's own
    segmentation render.
    """
    import dataclasses

    import mujoco

    from realm_ros.backends.digital_real import DigitalRealWorld
    from realm_ros.backends.mujoco.image_regions import region_distances, region_labels
    from realm_ros.backends.mujoco.render import FrameRenderer
    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.core.config import CAMERA_NAMES, WorldConfig
    from realm_ros.core.types import EpisodeSpec

    w, h = size
    config = WorldConfig(task=task, camera_width=w, camera_height=h)
    real = DigitalRealWorld(dataclasses.replace(config, backend='digital_real',
                                                appearance_file=appearance))
    twins = {'twin': MujocoWorld(config)}
    twins.update({name: MujocoWorld(config, visual_match_dir=folder)
                  for name, folder in folders.items()})
    seg = FrameRenderer(real.model, w, h, shadows=False)
    out: dict[tuple[str, str, str], list[float]] = {}
    sheet = []
    try:
        for k, seed in enumerate(seeds):
            spec = EpisodeSpec(task=task, seed=seed)
            seen = dict(real.reset(spec).images)
            regions = seg.render(real.data, CAMERA_NAMES, segmentation=True)
            pictures = {}
            for name, twin in twins.items():
                twin.reset(spec)
                twin.data.qpos[:] = real.data.qpos
                mujoco.mj_forward(twin.model, twin.data)
                pictures[name] = dict(twin.observe().images)
            for cam in CAMERA_NAMES:
                labels = region_labels(real.model, regions[cam])
                for name, images in pictures.items():
                    for region, value in region_distances(seen[cam], images[cam],
                                                          labels).items():
                        out.setdefault((cam, name, region), []).append(value)
                if k == 0:
                    sheet.append([seen[cam]] + [pictures[name][cam] for name in twins])
    finally:
        seg.close()
        real.close()
        for twin in twins.values():
            twin.close()
    return out, sheet


def main() -> None:
    """Run the comparison."""
    from realm_ros.core.config import CAMERA_NAMES

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--match', default='')
    parser.add_argument('--variants', type=int, default=0,
                        help="draw the twin's N variant looks to --out instead")
    parser.add_argument('--task', default='put_green_block_in_bowl')
    parser.add_argument('--seeds', type=int, default=3)
    parser.add_argument('--size', default='160x90')
    parser.add_argument('--appearance', default=f'{root}/config/appearance/lab_demo.yaml')
    parser.add_argument('--out', default='')
    args = parser.parse_args()
    w, h = (int(v) for v in args.size.split('x'))
    if args.variants:
        variants_sheet(args.variants, args.task, (w, h), args.out or 'variants.png')
        return
    if not args.match:
        parser.error('--match DIR is needed (or --variants N)')
    folders = {'matched': args.match}
    frames, sheet = image_distances(args.appearance, folders, args.task, range(args.seeds),
                                    (w, h))
    print(f'{"camera":<11} {"region":<11} {"twin":>7} {"matched":>8}   (mean |real - twin|, '
          '0-255)')
    for cam in CAMERA_NAMES:
        for region in REGIONS:
            a, b = frames.get((cam, 'twin', region)), frames.get((cam, 'matched', region))
            if a and b:
                print(f'{cam:<11} {region:<11} {np.mean(a):7.1f} {np.mean(b):8.1f}')
    if args.out:
        import imageio.v2 as imageio

        imageio.imwrite(args.out, np.concatenate([np.concatenate(row, 1) for row in sheet], 0))
        print(f'sheet (real | twin | matched twin per camera): {args.out}')


if __name__ == '__main__':
    main()
