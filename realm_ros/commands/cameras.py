"""``realm-ros cameras``: a contact sheet of every camera of the twin, per task.

The way a person checks a camera rig: one row per task (all ten unless ``--task``), one column
per camera (exterior_1, exterior_2, wrist), each frame as the policy's world renders it at the
episode's first observation, labelled. Writes ``OUT/contact_sheet.png`` and one PNG per task
and camera (``OUT/<task>_<camera>.png``); prints each image's mean brightness so a black or
blown-out camera shows without opening the files.
"""

from __future__ import annotations

import argparse
import os
import pathlib

from realm_ros.core import tasks
from realm_ros.core.config import CAMERA_NAMES
from realm_ros.core.errors import ConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Task, output folder, rig, image size, seed."""
    parser.add_argument('--task', default='', choices=['', *sorted(tasks.TASKS)],
                        help='one REALM task (default: all ten)')
    parser.add_argument('--out', required=True, type=pathlib.Path, help='output folder')
    parser.add_argument('--rig', default='',
                        help='camera rig YAML (config/cameras/droid.yaml format; "" = DROID)')
    parser.add_argument('--image-size', default='320x180',
                        help='rendered image size WxH, px (DROID stores 320x180)')
    parser.add_argument('--seed', type=int, default=0, help='episode seed (object placement)')
    parser.add_argument('--scale', type=float, default=1.0,
                        help='scale of the contact sheet (0.5 = half size; the per-camera PNGs '
                             'keep the rendered size)')


def run(args: argparse.Namespace) -> int:
    """Render every camera of every chosen task and write the contact sheet."""
    os.environ.setdefault('MUJOCO_GL', 'egl')
    import imageio.v2 as imageio
    import numpy as np

    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.commands.episode import parse_image_size
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.types import EpisodeSpec

    if not 0.05 <= args.scale <= 4.0:
        raise ConfigError(f'--scale must be in [0.05, 4], got {args.scale}')
    width, height = parse_image_size(args.image_size)
    names = [args.task] if args.task else list(tasks.TASKS)
    args.out.mkdir(parents=True, exist_ok=True)
    world = MujocoWorld(WorldConfig(task=names[0], cameras=CAMERA_NAMES, camera_width=width,
                                    camera_height=height, camera_rig_file=args.rig))
    rows = []
    try:
        for name in names:
            obs = world.reset(EpisodeSpec(task=name, seed=args.seed))
            row = []
            for camera in CAMERA_NAMES:
                image = obs.images[camera]
                imageio.imwrite(args.out / f'{name}_{camera}.png', image)
                print(f'{name:<26} {camera:<11} mean {image.mean():6.1f}  '
                      f'fovy {world.camera_fovy(camera):5.1f} deg')
                row.append(_label(image, f'{name}  {camera}'))
            rows.append(np.concatenate(row, axis=1))
    finally:
        world.close()
    sheet = np.concatenate(rows, axis=0)
    if args.scale != 1.0:
        sheet = _resize(sheet, args.scale)
    path = args.out / 'contact_sheet.png'
    imageio.imwrite(path, sheet)
    print(f'contact sheet: {path} ({sheet.shape[1]}x{sheet.shape[0]} px, {len(names)} task(s) '
          f'x {len(CAMERA_NAMES)} cameras)')
    return 0


def _label(image, text: str):
    """Return ``image`` with ``text`` on a dark band at its top and a 1 px border."""
    import numpy as np
    from PIL import Image, ImageDraw

    picture = Image.fromarray(image)
    draw = ImageDraw.Draw(picture)
    draw.rectangle((0, 0, picture.width, 13), fill=(20, 20, 20))
    draw.text((4, 1), text, fill=(240, 240, 240))
    out = np.asarray(picture).copy()
    out[[0, -1], :] = 255
    out[:, [0, -1]] = 255
    return out


def _resize(image, scale: float):
    import numpy as np
    from PIL import Image

    picture = Image.fromarray(image)
    size = (max(1, round(picture.width * scale)), max(1, round(picture.height * scale)))
    return np.asarray(picture.resize(size, Image.LANCZOS))
