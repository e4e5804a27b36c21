"""``realm-ros perturbations --task T --out DIR``: one image per REALM perturbation, a sheet.

Resets the MuJoCo twin once per code (Default and REALM's fifteen) with the same seed, lets the
objects settle for ``--settle`` control steps holding the reset pose, and writes from the chosen
camera ``DIR/<id>_<code>.png`` (V-AUG's augmentation included), ``DIR/contact_sheet.png`` (a
4 x 4 grid, each tile titled with the code and the instruction; skipped codes show REALM's reason)
and ``DIR/perturbations.json`` (code -> parameters, instruction, scored stages, or the skip
reason). The digital real applies the very same parameters (same world class).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import textwrap
from typing import Any

from realm_ros.commands import non_negative_int, path_arg, unit_interval
from realm_ros.core import tasks
from realm_ros.core.config import CAMERA_NAMES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare task, output folder, seed, intensity, camera and image size."""
    parser.add_argument('--task', required=True, choices=sorted(tasks.TASKS),
                        help='REALM task name')
    parser.add_argument('--out', required=True, type=path_arg, help='output folder')
    parser.add_argument('--seed', type=non_negative_int, default=0,
                        help='episode seed (default 0)')
    parser.add_argument('--intensity', type=unit_interval, default=1.0,
                        help='perturbation intensity in [0, 1] (1 = REALM ranges)')
    parser.add_argument('--camera', default='exterior_1', choices=CAMERA_NAMES,
                        help='camera to render')
    parser.add_argument('--size', default='320x180', help='image size WxH (default 320x180)')
    parser.add_argument('--settle', type=non_negative_int, default=10,
                        help='control steps to let objects settle before the image')


def render_all(task: str, out: pathlib.Path, seed: int = 0, intensity: float = 1.0,
               camera: str = 'exterior_1', size: tuple[int, int] = (320, 180),
               settle: int = 10) -> dict[str, Any]:
    """Render every perturbation of ``task``; return the JSON written to perturbations.json."""
    import imageio.v3 as iio
    import numpy as np

    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.core import perturbations, tasks
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.types import Action, EpisodeSpec

    tasks.get_task(task)
    out.mkdir(parents=True, exist_ok=True)
    world = MujocoWorld(WorldConfig(task=task, cameras=(camera,), camera_width=size[0],
                                    camera_height=size[1]))
    result: dict[str, Any] = {}
    tiles: list[tuple[str, str, Any]] = []
    try:
        for code, pdef in sorted(perturbations.PERTURBATIONS.items(), key=lambda kv: kv[1].id):
            reason = perturbations.skip_reason(task, code)
            if reason:
                result[code] = {'skipped': reason}
                tiles.append((f'{pdef.id} {code}', 'skipped: ' + reason.split(': ', 1)[-1],
                              None))
                continue
            spec = EpisodeSpec(task=task, seed=seed, perturbation=code, intensity=intensity)
            obs = world.reset(spec)
            q, _ = world.target
            for _ in range(settle):
                world.apply(Action(arm=q, gripper=0.0))
                obs = world.step()
            image = obs.images[camera]
            path = out / f'{pdef.id:02d}_{code}.png'
            iio.imwrite(path, image)
            scored = perturbations.scored_task(task, code, intensity, seed)
            result[code] = {'image': path.name, 'instruction': obs.instruction,
                            'params': world.perturbation.get('params', {}),
                            'skill': scored.skill, 'object': scored.obj,
                            'stages': list(scored.stages)}
            tiles.append((f'{pdef.id} {code}', obs.instruction, np.asarray(image)))
    finally:
        world.close()
    _sheet(tiles, out / 'contact_sheet.png', size, task)
    (out / 'perturbations.json').write_text(json.dumps(result, indent=2))
    return result


def _sheet(tiles: list[tuple[str, str, Any]], path: pathlib.Path, size: tuple[int, int],
           task: str) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    cols = 4
    rows = (len(tiles) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(cols * 3.2, rows * 2.3), dpi=80)
    for ax, (title, text, image) in zip(axes.flat, tiles):
        ax.set_axis_off()
        ax.set_title(title, fontsize=9, fontweight='bold', pad=2)
        if image is None:
            ax.imshow([[0.85]], cmap='gray', vmin=0, vmax=1, aspect='auto',
                      extent=(0, size[0], size[1], 0))
        else:
            ax.imshow(image)
        ax.text(0.5, -0.02, textwrap.fill(text, 44), transform=ax.transAxes, ha='center',
                va='top', fontsize=6.5)
    for ax in list(axes.flat)[len(tiles):]:
        ax.set_axis_off()
    fig.suptitle(f'REALM perturbations in the twin: {task}', fontsize=11)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def run(args: argparse.Namespace) -> int:
    """Write the images, the contact sheet and perturbations.json; print a line per code."""
    from realm_ros.commands.episode import parse_image_size
    width, height = parse_image_size(args.size, '--size')
    result = render_all(args.task, args.out, args.seed, args.intensity, args.camera,
                        (width, height), args.settle)
    for code, entry in result.items():
        print(f'{code:<9} ' + (f'skipped: {entry["skipped"]}' if 'skipped' in entry else
                               f'{entry["image"]}  "{entry["instruction"]}"'))
    print(f'contact sheet: {args.out / "contact_sheet.png"}')
    return 0
