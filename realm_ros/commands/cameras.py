"""``realm-ros cameras``: look at the cameras, record, calibrate and visually match them.

Without a subcommand, a contact sheet of every camera of the twin, per task: one row per task
(all ten unless ``--task``), one column per camera (exterior_1, exterior_2, wrist), each frame
as the policy's world renders it at the episode's first observation, labelled. With
``--appearance FILE`` each camera shows the digital real (with that hidden appearance) and the
twin side by side, real | twin. Writes ``OUT/contact_sheet.png`` and one PNG per task and
camera (``OUT/<task>_<camera>.png``, ``..._real.png``); prints each image's mean brightness so
a black or blown-out camera shows without opening the files.

Subcommands (docs/visual-matching.md):

* ``record``: the arm through every exterior camera's view over a cleared table, joint states
  and images in one MCAP bag (the digital real, or a lab's arm through the franka bridge);
* ``calibrate BAG --out rig.yaml``: each exterior camera's pose and vertical FOV from the
  recording; per-camera residual, a 50/50 overlay per camera, a before/after sheet;
* ``match BAG --out DIR``: clean plates and colour transforms for the visually matched twin
  (world ``visual_match_dir``, ``episode`` / ``paired-eval --visual-match DIR``);
* ``rebuild BAG --rig rig.yaml --out DIR``: the lab's table, floor and walls textured onto the
  twin's geometry, its key light and robot paint: a look every camera renders, the wrist
  included (``--visual-match DIR`` takes it as it takes a match).
"""

from __future__ import annotations

import argparse
import os

from realm_ros.commands import (
    appearance_flag,
    non_negative_int,
    path_arg,
    positive_float,
    positive_int,
    rig_flag,
)
from realm_ros.core import backends, tasks
from realm_ros.core.config import CAMERA_NAMES
from realm_ros.core.errors import ConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Contact sheet arguments, and the record / calibrate / match subcommands."""
    _sheet_arguments(parser)
    sub = parser.add_subparsers(dest='cameras_command', metavar='SUBCOMMAND')
    record = sub.add_parser('record', help="record the arm through every exterior camera's "
                            'view (joint states + images, one MCAP bag)')
    record.add_argument('--backend', default='digital_real', choices=backends.RECORDABLE,
                        help='digital_real (in process) or franka (a lab arm through the '
                             'bridge: world_node backend:=franka must be running)')
    record.add_argument('--appearance', default='',
                        help='digital real: hidden appearance YAML (config/appearance/'
                             'lab_demo.yaml format; "" = the twin\'s look)')
    record.add_argument('--out', required=True, type=path_arg, help='bag folder to write')
    record.add_argument('--rig', default='', help='the nominal camera rig YAML ("" = DROID)')
    record.add_argument('--image-size', default='640x360',
                        help='image size WxH, px (640x360 and 36 poses: 80 of 80 cameras '
                             'within 1 cm, 0.5 deg, 1 deg of FOV over 40 hidden offsets; '
                             'docs/visual-matching.md)')
    record.add_argument('--poses', type=positive_int, default=36,
                        help='arm poses to visit (24: 39 of 40 cameras within the bounds)')
    record.add_argument('--seed', type=non_negative_int, default=0, help='seed of the poses')
    record.add_argument('--namespace', default='/real', help="franka: the world's namespace")
    record.add_argument('--yes', action='store_true',
                        help='franka: the table is cleared (skip the confirmation prompt)')
    calibrate = sub.add_parser('calibrate', help="fit each exterior camera's pose and "
                               'vertical FOV, and the wrist mount, to a recording')
    calibrate.add_argument('bag', type=path_arg, help='a `cameras record` bag')
    calibrate.add_argument('--out', required=True, type=path_arg, help='rig YAML to write')
    calibrate.add_argument('--rig', default='', help='the rig to start from ("" = DROID)')
    calibrate.add_argument('--seed', type=non_negative_int, default=0, help='CMA-ES seed')
    calibrate.add_argument('--no-wrist', action='store_true',
                           help="keep the rig's wrist mount (do not fit it)")
    match = sub.add_parser('match', help='clean plates and colour transforms for the '
                           'visually matched twin')
    match.add_argument('bag', type=path_arg, help='a `cameras record` bag')
    match.add_argument('--out', required=True, type=path_arg, help='folder to write')
    match.add_argument('--rig', default='',
                       help='the calibrated rig (`cameras calibrate`); "" = calibrate now')
    rebuild = sub.add_parser('rebuild', help="rebuild the lab's static scene on the twin's "
                             'geometry (textures, key light, robot paint): a look for every '
                             'camera, the wrist included')
    rebuild.add_argument('bag', type=path_arg, help='a `cameras record` bag')
    rebuild.add_argument('--rig', default='',
                         help='the rig `cameras calibrate` fitted to this bag (required)')
    rebuild.add_argument('--out', required=True, type=path_arg, help='folder to write')


def _sheet_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--task', default='', choices=['', *sorted(tasks.TASKS)],
                        help='one REALM task (default: all ten)')
    parser.add_argument('--out', type=path_arg, help='output folder (the contact sheet)')
    parser.add_argument('--rig', default='',
                        help='camera rig YAML (config/cameras/droid.yaml format; "" = DROID)')
    parser.add_argument('--appearance', default='',
                        help='show the digital real with this hidden appearance beside the '
                             'twin (real | twin per camera)')
    parser.add_argument('--image-size', default='320x180',
                        help='rendered image size WxH, px (DROID stores 320x180)')
    parser.add_argument('--seed', type=non_negative_int, default=0,
                        help='episode seed (object placement)')
    parser.add_argument('--scale', type=positive_float, default=1.0,
                        help='scale of the contact sheet (0.5 = half size; the per-camera PNGs '
                             'keep the rendered size)')


def run(args: argparse.Namespace) -> int:
    """Dispatch to the subcommand, or write the contact sheet."""
    os.environ.setdefault('MUJOCO_GL', 'egl')
    command = getattr(args, 'cameras_command', None)
    if command == 'record':
        from realm_ros.commands import cameras_calibration
        return cameras_calibration.record(args)
    if command == 'calibrate':
        from realm_ros.commands import cameras_calibration
        return cameras_calibration.calibrate(args)
    if command == 'match':
        from realm_ros.commands import cameras_calibration
        return cameras_calibration.match(args)
    if command == 'rebuild':
        from realm_ros.commands import cameras_calibration
        return cameras_calibration.rebuild(args)
    if args.out is None:
        raise ConfigError("--out is required (the contact sheet's folder)")
    return sheet(args)


def sheet(args: argparse.Namespace) -> int:
    """Render every camera of every chosen task and write the contact sheet."""
    import dataclasses

    import imageio.v2 as imageio
    import numpy as np

    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.commands.cameras_calibration import label_image
    from realm_ros.commands.episode import parse_image_size
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.types import EpisodeSpec

    if not 0.05 <= args.scale <= 4.0:
        raise ConfigError(f'--scale must be in [0.05, 4], got {args.scale}')
    width, height = parse_image_size(args.image_size)
    names = [args.task] if args.task else list(tasks.TASKS)
    appearance = appearance_flag(args.appearance, 'digital_real')  # read before any rendering
    rig = rig_flag(args.rig)
    args.out.mkdir(parents=True, exist_ok=True)
    config = WorldConfig(task=names[0], cameras=CAMERA_NAMES, camera_width=width,
                         camera_height=height, camera_rig_file=rig)
    worlds = [('', MujocoWorld(config))]
    if args.appearance:
        from realm_ros.backends.digital_real import DigitalRealWorld
        real = dataclasses.replace(config, backend='digital_real',
                                   appearance_file=appearance)
        worlds.insert(0, ('real', DigitalRealWorld(real)))
    rows = []
    try:
        for name in names:
            frames = [(label, world.reset(EpisodeSpec(task=name, seed=args.seed)).images)
                      for label, world in worlds]
            row = []
            for camera in CAMERA_NAMES:
                for label, images in frames:
                    image = images[camera]
                    suffix = f'_{label}' if label else ''
                    imageio.imwrite(args.out / f'{name}_{camera}{suffix}.png', image)
                    world = dict(worlds)[label]
                    print(f'{name:<26} {camera:<11} {label or "twin":<5} mean {image.mean():6.1f}'
                          f'  fovy {world.camera_fovy(camera):5.1f} deg')
                    tag = f'  {"real" if label else "twin"}' if args.appearance else ''
                    row.append(label_image(image, f'{name}  {camera}{tag}'))
            rows.append(np.concatenate(row, axis=1))
    finally:
        for _, world in worlds:
            world.close()
    picture = np.concatenate(rows, axis=0)
    if args.scale != 1.0:
        picture = resize(picture, args.scale)
    path = args.out / 'contact_sheet.png'
    imageio.imwrite(path, picture)
    print(f'contact sheet: {path} ({picture.shape[1]}x{picture.shape[0]} px, {len(names)} '
          f'task(s) x {len(CAMERA_NAMES)} cameras{" x real | twin" if args.appearance else ""})')
    return 0


def resize(image, scale: float):
    """Return ``image`` scaled by ``scale`` (Lanczos)."""
    import numpy as np
    from PIL import Image

    picture = Image.fromarray(image)
    size = (max(1, round(picture.width * scale)), max(1, round(picture.height * scale)))
    return np.asarray(picture.resize(size, Image.Resampling.LANCZOS))
