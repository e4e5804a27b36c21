"""``realm-ros episode``: run one episode in the MuJoCo twin (no ROS) and print its score."""

from __future__ import annotations

import argparse
import json
import os
import pathlib

from realm_ros.core import tasks
from realm_ros.core.config import PolicyNodeConfig, WorldConfig
from realm_ros.core.errors import ConfigError
from realm_ros.core.types import DEFAULT_MAX_STEPS, EpisodeSpec

VIDEO_CAMERA = 'exterior_1'


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Task, policy, skill, seed, steps, video and twin parameters."""
    parser.add_argument('--task', required=True, choices=sorted(tasks.TASKS), help='REALM task')
    parser.add_argument('--policy', default='scripted', help='registered policy name')
    parser.add_argument('--skill', default='0', help='scripted ladder rung: 0..3 or a name')
    parser.add_argument('--seed', type=int, default=0, help='episode seed (initial state)')
    parser.add_argument('--max-steps', type=int, default=DEFAULT_MAX_STEPS,
                        help='control steps at most (15 Hz)')
    parser.add_argument('--perturbation', default='Default', help='REALM perturbation code')
    parser.add_argument('--intensity', type=float, default=1.0, help='perturbation intensity')
    parser.add_argument('--drawer-rule', default='realm_code', choices=tasks.DRAWER_RULES,
                        help="open_drawer's TOUCH_AND_MOVE_JOINT: realm_code (touching, as "
                             "REALM's code scores it) or strict (also opened by 2.5 %%)")
    parser.add_argument('--video', default='', help='write the exterior_1 camera to this mp4')
    parser.add_argument('--sim-params', default='', help='YAML of identified friction/armature')
    parser.add_argument('--backend', default='mujoco',
                        choices=('mujoco', 'fake', 'physx', 'isaac'),
                        help='mujoco = the twin, fake = the digital real physics, physx = '
                             'the twin on kit-less PhysX, isaac = Isaac Sim (not run)')
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

    if args.max_steps <= 0:
        raise ConfigError(f'--max-steps must be > 0, got {args.max_steps}')
    video = pathlib.Path(args.video) if args.video else None
    config = WorldConfig(
        backend=args.backend, task=args.task, seed=args.seed,
        cameras=(VIDEO_CAMERA,) if video else (), camera_rate_hz=15.0 if video else 0.0,
        sim_params_file=args.sim_params)
    world = make_world(config)
    extra = PolicyNodeConfig(policy=args.policy, policy_args=args.policy_args).extra_kwargs()
    policy = standard_chain(make_policy(args.policy, **{'skill': args.skill, 'seed': 0, **extra}))
    spec = EpisodeSpec(task=args.task, seed=args.seed, policy=args.policy,
                       perturbation=args.perturbation, intensity=args.intensity,
                       max_steps=args.max_steps)
    frames = []
    executed = []

    def on_step(step, obs, action, progress) -> None:
        del step, progress
        executed.append(action.as_array())
        if video is not None and VIDEO_CAMERA in obs.images:
            frames.append(obs.images[VIDEO_CAMERA])

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
    if args.record_actions:
        import numpy as np
        np.save(args.record_actions, np.asarray(executed))
    if args.json:
        print(json.dumps(result.to_record()))
        return 0
    print(f'task {args.task}  policy {policy.label}  seed {args.seed}  world {result.world}')
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
    return 0
