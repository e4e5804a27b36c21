"""``realm-ros cameras record | calibrate | match`` (docs/visual-matching.md).

The subcommands of :mod:`realm_ros.commands.cameras` that need MuJoCo, a bag and the
calibration library (:mod:`realm_ros.backends.mujoco.calibration`,
:mod:`realm_ros.backends.mujoco.visual_match`); they parse nothing themselves.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from typing import Any, Callable

import numpy as np

from realm_ros.commands import appearance_flag, rig_flag
from realm_ros.core import backends
from realm_ros.core.config import CAMERA_NAMES
from realm_ros.core.errors import ConfigError
from realm_ros.io.recordings import load_recording

#: Seconds to move between two recording poses, and to hold still before the frame.
MOVE_S = 1.6
SETTLE_S = 0.5

CLEAR_TABLE = ('Recording for camera calibration: the arm will move through both exterior '
               "cameras' views, within 12 cm of the table top at the lowest. Clear the table "
               '(no objects, no people in reach) and keep the e-stop in hand.')


def record_world(world: Any, out: pathlib.Path, poses: np.ndarray,
                 gripper: Callable[[int], float], move_s: float = MOVE_S,
                 settle_s: float = SETTLE_S, namespace: str = '/real') -> int:
    """Drive ``world`` through ``poses`` and write joint states, commands and the settled frames.

    Every control step writes the measured joint state and the command; at the end of each
    pose's settle time every camera's frame is written with that step's stamp. Returns the
    number of frames per camera.
    """
    from realm_ros.core import topics
    from realm_ros.core.types import Action, ActionMode, EpisodeSpec
    from realm_ros.io.bags import BagWriter

    if out.exists():
        raise ConfigError(f'--out {out} exists already; choose a new bag folder')
    ns = namespace.rstrip('/')
    obs = world.reset(EpisodeSpec(task='empty', seed=0))
    dt = world.control_dt
    frames = 0
    with BagWriter(out) as bag:
        q = np.asarray(obs.joints.position, float)
        for k, pose in enumerate(poses):
            g = gripper(k)
            start = q.copy()
            n_move, n_hold = max(1, round(move_s / dt)), max(1, round(settle_s / dt))
            for step in range(n_move + n_hold):
                s = min(1.0, (step + 1) / n_move)
                blend = 0.5 - 0.5 * np.cos(np.pi * s)  # smooth start and stop
                target = start + blend * (pose - start)
                world.apply(Action(arm=target, gripper=g, mode=ActionMode.POSITION))
                obs = world.step()
                t = float(obs.joints.stamp)
                bag.write_command(f'{ns}/{topics.COMMAND}', t, target, g)
                bag.write_joint_state(f'{ns}/{topics.JOINT_STATES}', t, obs.joints.position,
                                      obs.joints.velocity, obs.joints.gripper)
            images = dict(world.render()) if hasattr(world, 'render') else dict(obs.images)
            for name in CAMERA_NAMES:
                if name in images:
                    bag.write_image(f'{ns}/{topics.camera_image(name)}', t, images[name])
            frames += 1
            q = np.asarray(obs.joints.position, float)
            print(f'  pose {k + 1}/{len(poses)}  t {t:6.2f} s', file=sys.stderr)
    return frames


def record(args: argparse.Namespace) -> int:
    """``cameras record``: the digital real in process, or a lab arm through the bridge."""
    from realm_ros.backends.mujoco import calibration
    from realm_ros.commands.episode import parse_image_size
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.world import make_world

    width, height = parse_image_size(args.image_size)
    if args.poses < 2:
        raise ConfigError(f'--poses must be at least 2, got {args.poses}')
    poses = calibration.record_waypoints(args.poses, args.seed)
    if not backends.get(args.backend).hidden:  # a lab arm, not the digital real
        if args.appearance:
            raise ConfigError("--appearance is the digital real's; a lab arm has its own")
        print(CLEAR_TABLE)
        if not args.yes and input('Is the table clear? [y/N] ').strip().lower() not in (
                'y', 'yes'):
            print('not recording: the table was not confirmed clear')
            return 1
        config = WorldConfig(backend=args.backend, cameras=CAMERA_NAMES, camera_width=width,
                             camera_height=height)
    else:
        config = WorldConfig(backend=args.backend, task='', cameras=CAMERA_NAMES,
                             camera_width=width, camera_height=height,
                             camera_rig_file=rig_flag(args.rig),
                             appearance_file=appearance_flag(args.appearance, args.backend))
    world = make_world(config)
    try:
        frames = record_world(world, args.out, poses, calibration.gripper_for,
                              namespace=args.namespace)
    finally:
        world.close()
    print(f'recorded {frames} frames x {len(CAMERA_NAMES)} cameras ({width}x{height}) and the '
          f'joint states to {args.out} ({config.backend})')
    return 0


def calibrate(args: argparse.Namespace) -> int:
    """``cameras calibrate BAG --out rig.yaml``: fit, write, print residuals, save overlays."""
    from realm_ros.backends.mujoco import calibration, camera_rig

    rig = camera_rig.load_rig(rig_flag(args.rig))  # the flags' files first, then the data
    recording = load_recording(args.bag)
    warning = small_recording(recording.size, len(recording.q))
    if warning:
        print(warning, file=sys.stderr)
    result = calibration.calibrate(recording, rig, seed=args.seed, wrist=not args.no_wrist)
    wrist = ('the wrist mount fitted' if result.wrist_kept else
             'the wrist as given' + (' (its fit was not kept)' if result.wrist else ''))
    calibration.write_rig(args.out, result.rig_yaml(rig), header=(
        f'Camera rig calibrated by `realm-ros cameras calibrate` from {args.bag}\n'
        f'(started from {rig.source}); exterior cameras fitted, {wrist}.'))
    print(f'{"camera":<11} {"residual px":>12} {"before px":>10} {"moved cm":>9} '
          f'{"turned deg":>10} {"fovy deg":>9}')
    fits = dict(result.fits)
    if result.wrist is not None:
        fits['wrist'] = result.wrist
    for name, fit in fits.items():
        dp, da, df = fit.start.error_to(fit.pose)
        print(f'{name:<11} {fit.loss:12.2f} {fit.loss_start:10.2f} {dp * 100:9.2f} {da:10.2f} '
              f'{fit.pose.fovy:9.2f}')
    if result.wrist is not None and not result.wrist_kept:
        print(f"wrist: not kept (its outline ends {result.wrist.loss:.2f} px from the hand's "
              f"persistent edges, against {result.wrist.loss_start:.2f} px at the rig's mount: "
              f'it is kept within {calibration.WRIST_ACCEPT_PX:.1f} px and '
              f'{calibration.WRIST_MIN_GAIN_PX:.1f} px better); the rig keeps its wrist entry')
    folder = args.out.parent / f'{args.out.stem}_check'
    paths = overlays(recording, rig_flag(args.rig), str(args.out.resolve()), folder)
    print(f'rig: {args.out}; overlays and before/after sheet: {", ".join(map(str, paths))}')
    return 0


#: The smallest recording that calibrated 80 of 80 hidden exterior cameras within 1 cm, 0.5 deg
#: and 1 deg of FOV (docs/visual-matching.md, "Results").
BOUNDS_SIZE = (640, 360)
BOUNDS_POSES = 36


def small_recording(size: tuple[int, int], poses: int) -> str:
    """Return a warning line when a recording is smaller than the calibration's bounds were
    shown for ('' otherwise)."""
    if size[0] >= BOUNDS_SIZE[0] and size[1] >= BOUNDS_SIZE[1] and poses >= BOUNDS_POSES:
        return ''
    return (f'warning: this recording is {size[0]}x{size[1]} with {poses} poses; calibrating '
            f'within 1 cm, 0.5 deg and 1 deg of FOV needs {BOUNDS_SIZE[0]}x{BOUNDS_SIZE[1]} and '
            f'{BOUNDS_POSES} poses (`cameras record --image-size {BOUNDS_SIZE[0]}x'
            f'{BOUNDS_SIZE[1]} --poses {BOUNDS_POSES}`: 80 of 80 hidden cameras; at 320x180 '
            'and 24 poses 18 of 40; at 160x90 and 16 poses a camera came out 2.9 cm off)')


def overlays(recording: Any, before_rig: str, after_rig: str,
             folder: pathlib.Path) -> list[pathlib.Path]:
    """Write a 50/50 overlay per camera (recording | twin at the calibrated rig) and a
    before/after sheet (overlay with the starting rig | with the calibrated rig), a row per
    camera: the exterior cameras and the wrist."""
    import imageio.v2 as imageio

    from realm_ros.backends.mujoco.matching import TwinFrames

    folder.mkdir(parents=True, exist_ok=True)
    cameras = [c for c in ('exterior_1', 'exterior_2', 'wrist') if c in recording.images]
    k = len(recording.q) // 2
    blends = {}
    for label, rig in (('before', before_rig), ('after', after_rig)):
        twin = TwinFrames(rig, recording.size, cameras)
        try:
            rgb, _ = twin.render(recording.q[k], float(recording.gripper[k]))
        finally:
            twin.close()
        blends[label] = {c: (0.5 * recording.images[c][k].astype(float) + 0.5 * rgb[c])
                         .astype(np.uint8) for c in cameras}
    paths = []
    for c in cameras:
        path = folder / f'{c}_overlay.png'
        imageio.imwrite(path, blends['after'][c])
        paths.append(path)
    sheet = np.concatenate([np.concatenate([label_image(blends[label][c], f'{c}  {label}')
                                            for label in ('before', 'after')], 1)
                            for c in cameras], 0)
    path = folder / 'before_after.png'
    imageio.imwrite(path, sheet)
    paths.append(path)
    return paths


def match(args: argparse.Namespace) -> int:
    """``cameras match BAG --out DIR``: clean plates and colour transforms."""
    from realm_ros.backends.mujoco import calibration, camera_rig, matching

    recording = load_recording(args.bag)
    rig_file = rig_flag(args.rig)
    if not rig_file:
        args.out.mkdir(parents=True, exist_ok=True)
        result = calibration.calibrate(recording, camera_rig.load_rig(''))
        rig_file = str((args.out / 'calibrated_rig.yaml').resolve())
        calibration.write_rig(rig_file, result.rig_yaml(camera_rig.load_rig('')))
    content = matching.build_match(recording, rig_file, args.out)
    for name, entry in content['cameras'].items():
        plate = (f'plate {entry["plate"]} ({entry["plate_unknown_fraction"] * 100:.2f} % never '
                 'seen free)' if 'plate' in entry else 'colour only')
        print(f'{name:<11} {plate}; colour fitted on {entry["robot_pixels"]} robot pixels')
    print(f'visual match: {args.out} (world visual_match_dir, --visual-match {args.out})')
    return 0


def rebuild(args: argparse.Namespace) -> int:
    """``cameras rebuild BAG --rig rig.yaml --out DIR``: the rebuilt look."""
    from realm_ros.backends.mujoco import rebuilding as rebuilt

    if not args.rig:
        raise ConfigError(f'cameras rebuild {args.bag}: no --rig; calibrate this bag first '
                          f'(`realm-ros cameras calibrate {args.bag} --out rig.yaml`) and '
                          'pass --rig rig.yaml')
    if not pathlib.Path(args.rig).expanduser().is_file():
        raise ConfigError(f'cameras rebuild: --rig {args.rig} is not a file')
    recording = load_recording(args.bag)
    content = rebuilt.build_rebuild(recording, rig_flag(args.rig), args.out,
                                    log=lambda line: print(line, file=sys.stderr))
    for name, entry in content['surfaces'].items():
        unseen = entry['unseen_fraction']
        print(f'{name:<11} {100 * (1 - unseen):6.1f} % seen'
              + (f"  (no camera saw it: the twin's own {name})" if 'texture' not in entry
                 else ''))
    for line in rebuilt.warnings(content):
        print(line, file=sys.stderr)
    light = content['light']
    print(f'key light: {"estimated" if light["estimated"] else "NOT estimated"} at '
          f'{light["position"]} m, {light["colour_temperature_k"]} K, intensity '
          f'{light["intensity"]}, ambient {light["ambient"]} (shadow overlap '
          f'{light["shadow_iou"]:.2f})')
    for name, entry in content['cameras'].items():
        if 'colour' in entry:
            print(f'{name:<11} robot colour transform on {entry["robot_pixels"]} pixels')
    print(f'rebuilt look: {args.out} in {content["seconds"]:.0f} s (world visual_match_dir, '
          f'--visual-match {args.out})')
    return 0


def label_image(image, text: str):
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
