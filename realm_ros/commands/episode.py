"""``realm-ros episode``: run one episode in the MuJoCo twin (no ROS) and print its score.

The world renders the cameras the policy declares (:attr:`Policy.needs`: openpi's DROID
checkpoints exterior_1 and wrist, GR00T N1.5 all three) plus the one ``--video`` records and
each ``--camera-video CAMERA=FILE`` (the same episode's other cameras, frame for frame: what
``realm-ros score --video --camera-video`` reads for a scorer of several cameras); the
chunk's open-loop length is ``--execute-horizon`` or the policy's own.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
from typing import Any

from realm_ros.commands import (
    appearance_flag,
    camera_files,
    non_negative_int,
    out_file,
    positive_int,
    rig_flag,
    sim_params_flag,
    unit_interval,
)
from realm_ros.core import backends, robot, tasks
from realm_ros.core.config import (
    CAMERA_NAMES,
    PolicyNodeConfig,
    WorldConfig,
    flags_named,
    given_path,
    renamed,
)
from realm_ros.core.errors import ConfigError
from realm_ros.core.policy import POLICIES
from realm_ros.core.types import DEFAULT_MAX_STEPS, EpisodeSpec

VIDEO_CAMERA = 'exterior_1'
#: WorldConfig fields this command's flags set -> the flag (a world's error names the flag).
FLAGS = {'camera_rig_file': '--camera-rig', 'sim_params_file': '--sim-params',
         'visual_match_dir': '--visual-match', 'appearance_file': '--appearance',
         'camera_width': '--image-size', 'camera_height': '--image-size',
         'backend': '--backend', 'task': '--task'}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Task, policy, skill, seed, steps, video and twin parameters."""
    parser.add_argument('--task', required=True, choices=sorted(tasks.TASKS), help='REALM task')
    parser.add_argument('--policy', default='scripted', choices=POLICIES.names(),
                        metavar='NAME',
                        help='registered policy name: ' + ', '.join(POLICIES.names()))
    parser.add_argument('--skill', default='0',
                        help='scripted ladder rung: 0..3 or a name (or near_miss, not a rung)')
    parser.add_argument('--seed', type=non_negative_int, default=0,
                        help='episode seed (initial state)')
    parser.add_argument('--max-steps', type=positive_int, default=DEFAULT_MAX_STEPS,
                        help='control steps at most (15 Hz)')
    parser.add_argument('--perturbation', default='Default', help='REALM perturbation code')
    parser.add_argument('--intensity', type=unit_interval, default=1.0,
                        help='perturbation intensity')
    parser.add_argument('--drawer-rule', default='realm_code', choices=tasks.DRAWER_RULES,
                        help="open_drawer's TOUCH_AND_MOVE_JOINT: realm_code (touching, as "
                             "REALM's code scores it) or strict (also opened by 2.5 %%)")
    parser.add_argument('--video', default='', help='write the exterior_1 camera to this mp4')
    parser.add_argument('--video-camera', default=VIDEO_CAMERA, choices=CAMERA_NAMES,
                        help='camera --video records')
    parser.add_argument('--camera-video', action='append', default=None,
                        metavar='CAMERA=FILE',
                        help="also write CAMERA's frames of the same steps to FILE (repeatable; "
                             'wrist=FILE beside --video: what the wrist scorer checkpoint '
                             'reads, scored with `realm-ros score --video V --camera-video '
                             'wrist=FILE`)')
    parser.add_argument('--execute-horizon', type=non_negative_int, default=0,
                        help="actions executed open loop per chunk (0 = the policy's own: "
                             'openpi DROID 8, GR00T N1.6/N1.7 15, scripted 8)')
    parser.add_argument('--camera-rig', default='',
                        help='camera rig YAML (config/cameras/droid.yaml format; "" = DROID)')
    parser.add_argument('--image-size', default='320x180',
                        help='rendered image size WxH, px (DROID stores 320x180)')
    parser.add_argument('--sim-params', default='', help='YAML of identified friction/armature')
    parser.add_argument('--backend', default='mujoco',
                        choices=backends.STANDALONE,
                        type=lambda name: renamed(name, '--backend'),
                        help='mujoco = the twin, digital_real = the digital real physics, physx = '
                             'the twin on kit-less PhysX, isaac = Isaac Sim (not run)')
    parser.add_argument('--visual-match', default='', metavar='DIR',
                        help='the twin: a `realm-ros cameras match` folder (exterior cameras '
                             'drawn over the clean plate, colour-matched; '
                             'docs/visual-matching.md)')
    parser.add_argument('--appearance', default='', metavar='FILE',
                        help='digital_real: its hidden appearance YAML (config/appearance/'
                             'lab_demo.yaml format; refused on a backend that never reads it)')
    parser.add_argument('--json', action='store_true', help='print the result record as JSON')
    parser.add_argument('--record-actions', default='',
                        help='write the executed actions (N, 8) to this .npy (replay policy)')
    parser.add_argument('--policy-args', default='',
                        help='JSON object of extra policy keyword arguments, e.g. {"path": F}')


def run(args: argparse.Namespace) -> int:
    """Run the episode; exit 0 whether or not it succeeded (the score is the output)."""
    os.environ.setdefault('MUJOCO_GL', 'egl')
    from realm_ros.core.episode import run_episode
    from realm_ros.core.policy import make_policy, standard_chain
    from realm_ros.core.world import make_world

    width, height = parse_image_size(args.image_size)
    video = out_file(args.video, '--video')
    others = camera_video_files(args.camera_video, args.video_camera if video else None)
    actions_file = out_file(args.record_actions, '--record-actions')
    files = {'camera_rig_file': rig_flag(args.camera_rig, '--camera-rig'),
             'sim_params_file': sim_params_flag(args.sim_params),
             'visual_match_dir': given_path(args.visual_match, '--visual-match', folder=True),
             'appearance_file': appearance_flag(args.appearance, args.backend)}
    if args.visual_match and not backends.get(args.backend).looks:
        raise ConfigError(f'--visual-match dresses the MuJoCo twin; --backend {args.backend} '
                          'never reads it: drop the flag')
    with flags_named(PolicyNodeConfig, {'policy_args': '--policy-args', 'policy': '--policy'}):
        extra = PolicyNodeConfig(policy=args.policy, policy_args=args.policy_args).extra_kwargs()
    common = {'skill': args.skill, 'seed': 0}
    if args.execute_horizon:
        common['execute'] = args.execute_horizon
    inner = make_policy(args.policy, common=common, **extra)
    needs = inner.needs
    cameras = tuple(dict.fromkeys(
        (*needs.cameras, *((args.video_camera,) if video else ()), *others)))
    config = WorldConfig(
        backend=args.backend, task=args.task, seed=args.seed,
        cameras=cameras, camera_rate_hz=robot.CONTROL_HZ if cameras else 0.0,
        camera_width=width, camera_height=height, **files)
    try:
        with flags_named(WorldConfig, FLAGS):  # the backend's errors name the flag given
            world = make_world(config)
    except BaseException:
        inner.close()
        raise
    policy = standard_chain(inner, execute=args.execute_horizon or needs.horizon)
    # The record names the policy as its label does: the scripted rung (scripted-good), not
    # just the registry name.
    spec = EpisodeSpec(task=args.task, seed=args.seed, policy=policy.label,
                       perturbation=args.perturbation, intensity=args.intensity,
                       max_steps=args.max_steps)
    frames = []
    other_frames: dict[str, list[Any]] = {camera: [] for camera in others}
    executed = []

    def on_step(step, obs, action, progress) -> None:
        del step, progress
        executed.append(action.as_array())
        if video is not None and args.video_camera in obs.images:
            frames.append(obs.images[args.video_camera])
        for camera, kept in other_frames.items():
            if camera in obs.images:
                kept.append(obs.images[camera])

    try:
        result = run_episode(world, policy, spec, on_step=on_step,
                             drawer_rule=args.drawer_rule)
    finally:
        policy.close()
        world.close()
    if video is not None:
        import imageio.v2 as imageio
        video.parent.mkdir(parents=True, exist_ok=True)
        imageio.mimwrite(str(video), frames, fps=15, macro_block_size=1)
    for camera, file in others.items():
        import imageio.v2 as imageio
        file.parent.mkdir(parents=True, exist_ok=True)
        imageio.mimwrite(str(file), other_frames[camera], fps=15, macro_block_size=1)
    if actions_file is not None:
        import numpy as np
        np.save(actions_file, np.asarray(executed))
    if args.json:
        print(json.dumps(result.to_record()))
        return 0
    print(f'task {args.task}  policy {policy.label}  seed {args.seed}  world {result.world}  '
          f'cameras {list(cameras) or "none"}')
    for stage in result.stages:
        mark = 'x' if stage in result.stages_reached else ' '
        print(f'  [{mark}] {stage}')
    print(f'progression {result.progression:.2f}  success {result.success}  '
          f'outcome {result.outcome.value}  steps {result.steps}  '
          f'sim {result.sim_time_s:.1f} s  wall {result.wall_time_s:.1f} s')
    if result.error:
        print(f'error: {result.error}')
    if video is not None:
        print(f'video: {video} ({len(frames)} frames)')
    for camera, file in others.items():
        print(f'video {camera}: {file} ({len(other_frames[camera])} frames)')
    return 0


def camera_video_files(texts: list[str] | None, video_camera: str | None
                       ) -> dict[str, pathlib.Path]:
    """Return ``--camera-video CAMERA=FILE``'s files by camera.

    Raises:
        ConfigError: one line naming ``--camera-video``: malformed, an unknown camera, one
            named twice or the one ``--video`` records, or a file that cannot be written.
    """
    files: dict[str, pathlib.Path] = {}
    for camera, file in camera_files(texts):
        if camera not in CAMERA_NAMES:
            raise ConfigError(f'--camera-video: unknown camera {camera!r}; choose from '
                              f'{", ".join(CAMERA_NAMES)}')
        if camera in files or camera == video_camera:
            raise ConfigError(f'--camera-video {camera}: that camera is recorded already')
        out_file(file, f'--camera-video {camera}')  # not a folder
        files[camera] = pathlib.Path(file).expanduser()
    return files


def parse_image_size(text: str, flag: str = '--image-size') -> tuple[int, int]:
    """Return (width, height) from ``WxH``, each in [16, 4096] px (as ``WorldConfig`` renders);
    ConfigError naming ``flag`` otherwise."""
    try:
        width, height = (int(v) for v in text.lower().split('x'))
    except ValueError:
        width = height = 0
    if width <= 0 or height <= 0:
        raise ConfigError(f'{flag} must be WxH in px (e.g. 320x180), got {text!r}')
    if not (16 <= width <= 4096 and 16 <= height <= 4096):
        raise ConfigError(f'{flag}: width and height must be in [16, 4096] px, got {text!r}')
    return width, height
