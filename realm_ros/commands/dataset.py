"""``realm-ros dataset``: demonstrations of the scripted expert in the twin, as a LeRobot dataset.

Each episode: a task, a seed (the task sampler draws the initial object poses and arm pose from
it; seeds start at ``--seed-offset`` so they never coincide with the evaluation's seeds 0..N),
the expert rung of the scripted ladder closed loop (one action per step), and the DROID cameras
rendered every step. For coverage of states the expert never visits on its own (DART-style
noise injection), the executed joint targets get temporally correlated Gaussian noise of
``--noise`` rad (a per-episode scale drawn uniformly in [0, noise]) while the dataset records
the expert's *clean* action at every step: the learner sees how the expert recovers. Failed
episodes are dropped unless ``--keep-failures``. The layout is LeRobot v3.0 (lerobot 0.4 and
later), or v2.1 with ``--format v2.1`` (lerobot <= 0.3) (:mod:`realm_ros.io.lerobot`).

Re-running with the same ``--out`` resumes: the run's settings are kept in
``meta/realm_run.json`` (a re-run must match them, except ``--episodes``, which may grow), every
attempted (task, seed) is logged in ``meta/realm_attempts.jsonl`` after its episode is written,
and the writer drops whatever a killed run wrote past its last finished episode.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import signal
import time

import numpy as np

from realm_ros.commands import (
    add_list_argument,
    add_quiet_flag,
    appearance_flag,
    dynamics_flag,
    non_negative_float,
    non_negative_int,
    out_folder,
    path_arg,
    positive_int,
    task_names,
)
from realm_ros.core import provenance, robot, tasks
from realm_ros.core.errors import ConfigError
from realm_ros.core.policy import PolicyWrapper
from realm_ros.core.types import ActionChunk, EpisodeSpec, Observation
from realm_ros.programs.demonstrations import WORLDS as DEMO_WORLDS

DEFAULT_CAMERAS = ('exterior_1', 'wrist')


class NoisyRecorder(PolicyWrapper):
    """Record (observation, clean expert action) each step; execute the action plus noise."""

    def __init__(self, inner, noise: float, rng: np.random.Generator,
                 cameras: tuple[str, ...]) -> None:
        super().__init__(inner)
        self.noise = float(noise)
        self.rng = rng
        self.cameras = cameras
        self.states: list[np.ndarray] = []
        self.actions: list[np.ndarray] = []
        self.images: dict[str, list[np.ndarray]] = {c: [] for c in cameras}
        self._offset = np.zeros(7)

    def reset(self, spec: EpisodeSpec) -> None:
        super().reset(spec)
        self.states, self.actions = [], []
        self.images = {c: [] for c in self.cameras}
        self._offset = np.zeros(7)

    def infer(self, obs: Observation) -> ActionChunk:
        chunk = self.inner.infer(obs)
        values = np.array(chunk.values, dtype=float, copy=True)
        for camera in self.cameras:
            if camera not in obs.images:
                raise ConfigError(f'the world rendered {sorted(obs.images)}, not {camera!r}')
            self.images[camera].append(np.asarray(obs.images[camera], dtype=np.uint8))
        self.states.append(np.r_[obs.joints.position, obs.joints.gripper].astype(np.float32))
        self.actions.append(values[0].astype(np.float32))
        if self.noise > 0:
            # Ornstein-Uhlenbeck-like offset: smooth excursions rather than per-step jitter.
            self._offset = 0.85 * self._offset + self.rng.normal(0.0, self.noise * 0.5, 7)
            values[:, :7] += self._offset
        return ActionChunk(values, chunk.mode)


def _interrupt(signum: int, frame: object) -> None:
    del signum, frame
    raise KeyboardInterrupt


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Output folder, tasks, episodes, noise, cameras, image size."""
    parser.add_argument('--out', required=True, type=path_arg,
                        help='dataset folder; an existing one is resumed')
    parser.add_argument('--format', default='v3.0', choices=('v3.0', 'v2.1'),
                        help='LeRobot layout: v3.0 (lerobot >= 0.4) or v2.1 (lerobot <= 0.3)')
    add_list_argument(parser, '--tasks', 'REALM tasks (default push_switch)', 'TASK')
    parser.add_argument('--episodes', type=positive_int, default=40,
                        help='episodes attempted per task')
    parser.add_argument('--seed-offset', type=non_negative_int, default=1000,
                        help='first seed (evaluation seeds are 0..N; keep these apart)')
    parser.add_argument('--noise', type=non_negative_float, default=0.03,
                        help='largest std of the noise on executed joint targets, rad')
    parser.add_argument('--max-steps', type=positive_int, default=200,
                        help='control steps per episode')
    parser.add_argument('--cameras', default=','.join(DEFAULT_CAMERAS),
                        help='comma-separated cameras to record')
    parser.add_argument('--image-size', default='320x180',
                        help='rendered image size WxH, px (DROID stores 320x180)')
    parser.add_argument('--keep-failures', action='store_true',
                        help='also keep episodes the expert failed (noise can make it fail)')
    parser.add_argument('--from-run', type=path_arg, default=None, metavar='RUN_DIR',
                        help='export the recorded episodes of a `paired-eval --record` run '
                             'instead (bags and cameras; io/episode_bags.py)')
    parser.add_argument('--run-world', default='real', choices=('real', 'twin'),
                        help='with --from-run: the side of the run to export')
    parser.add_argument('--world', default='twin', choices=tuple(DEMO_WORLDS),
                        help='where the demonstrations are recorded: the twin, the digital real '
                             '(hidden dynamics and appearance, as a lab records) or a lab arm '
                             '(realm_ros/programs/demonstrations.py)')
    parser.add_argument('--appearance', default='', metavar='FILE',
                        help='--world digital_real: its hidden appearance YAML (default '
                             "config/appearance/lab_demo.yaml; none = the twin's look)")
    parser.add_argument('--dynamics', default='', metavar='FILE',
                        help='--world digital_real: its hidden dynamics YAML (default '
                             'realm_ros/data/digital_real_dynamics.yaml)')
    parser.add_argument('--demonstrator', default='scripted',
                        help='registered policy that demonstrates (default: the scripted expert; '
                             '--world franka needs another, e.g. a teleoperation server)')
    parser.add_argument('--demonstrator-args', default='',
                        help="JSON object of the demonstrator's settings")
    parser.add_argument('--yes', action='store_true',
                        help='--world franka: do not ask the operator to confirm each scene')
    add_quiet_flag(parser)


def run(args: argparse.Namespace) -> int:
    """Roll out the expert and write the dataset; print a one-line summary."""
    if getattr(args, 'from_run', None) is not None:
        return export(args)
    os.environ.setdefault('MUJOCO_GL', 'egl')
    from realm_ros import console
    from realm_ros.commands.episode import parse_image_size
    from realm_ros.core.config import CAMERA_NAMES
    from realm_ros.core.episode import run_episode
    from realm_ros.core.policy import standard_chain
    from realm_ros.core.world import make_world
    from realm_ros.io.lerobot import Episode, open_writer
    from realm_ros.programs.demonstrations import (
        DemoSite,
        confirm_scene,
        demo_world,
        demonstrator_factory,
        resolve_hidden,
    )

    args.out = out_folder(args.out)
    names = task_names(args.tasks, ['push_switch'])
    cameras = tuple(c for c in args.cameras.split(',') if c)
    unknown = [c for c in cameras if c not in CAMERA_NAMES]
    if unknown or not cameras:
        raise ConfigError(f'--cameras: unknown or none {unknown}; choose from {CAMERA_NAMES}')
    width, height = parse_image_size(args.image_size)
    place = demo_world(args.world)
    place.check(args.demonstrator, args.noise, args.appearance, args.dynamics)
    appearance, dynamics = resolve_hidden(place, args.appearance, args.dynamics)
    appearance = appearance_flag(appearance, place.backend, '--world')  # read before any episode
    dynamics = dynamics_flag(dynamics)
    site = DemoSite(cameras, width, height, appearance, dynamics)
    try:
        demonstrator_args = json.loads(args.demonstrator_args or '{}')
    except json.JSONDecodeError as err:
        raise ConfigError(f'--demonstrator-args is not JSON: {err}') from None
    if not isinstance(demonstrator_args, dict):
        raise ConfigError('--demonstrator-args must be a JSON object')
    make_demonstrator = demonstrator_factory(args.demonstrator, demonstrator_args)
    # SIGTERM (and SIGINT, which a background job ignores) ends the run like Ctrl-C: the
    # finished episodes stay in the dataset (its meta/ is rewritten after every episode).
    signal.signal(signal.SIGTERM, _interrupt)
    settings = {'format': args.format, 'tasks': names, 'seed_offset': args.seed_offset,
                'noise': args.noise, 'max_steps': args.max_steps, 'cameras': list(cameras),
                'image_size': [width, height], 'keep_failures': bool(args.keep_failures),
                'world': place.name, 'appearance': provenance.file_setting(appearance),
                'dynamics': provenance.file_setting(dynamics),
                'demonstrator': args.demonstrator, 'demonstrator_args': demonstrator_args,
                'code': provenance.code_version()}
    # A dataset is one recording setup: a resume must match it (files by content).
    provenance.check_run_file(args.out / RUN_FILE, settings, str(args.out),
                              defaults={'world': 'twin'})  # before --world: the twin's
    writer = open_writer(args.out, args.format, fps=round(robot.CONTROL_HZ), cameras=cameras)
    (args.out / 'meta').mkdir(parents=True, exist_ok=True)
    (args.out / RUN_FILE).write_text(json.dumps(settings, indent=2) + '\n')
    done = _attempted(args.out, writer)
    kept = len(writer.episodes)
    attempted = 0
    start = time.monotonic()
    todo = [(name, args.seed_offset + i) for name in names for i in range(args.episodes)
            if (name, args.seed_offset + i) not in done]
    if writer.resumed:  # before the bar, and shown under --quiet too
        print(f'dataset {args.out}: resuming with {writer.resumed} episodes written, '
              f'{len(todo)} of {args.episodes * len(names)} attempts to go', flush=True)
    console.set_quiet(args.quiet)
    bar = console.bar(len(todo), 'dataset', unit='ep')
    try:
        for name in names:
            seeds = [seed for task, seed in todo if task == name]
            if not seeds:
                continue
            task = tasks.get_task(name)
            world = make_world(place.world_config(name, site))
            try:
                for seed in seeds:
                    if place.lab and not args.yes and not confirm_scene(
                            name, seed, task.instruction, input):
                        return 130
                    rng = np.random.default_rng([seed, 7])
                    noise = float(rng.uniform(0.0, args.noise))
                    recorder = NoisyRecorder(make_demonstrator(), noise, rng, cameras)
                    policy = standard_chain(recorder, execute=1)
                    label = ('scripted:expert+noise' if args.demonstrator == 'scripted'
                             else args.demonstrator)
                    spec = EpisodeSpec(task=name, seed=seed, policy=label,
                                       max_steps=args.max_steps, instruction=task.instruction)
                    result = run_episode(world, policy, spec)
                    attempted += 1
                    keep = bool((result.success or args.keep_failures) and recorder.states)
                    if keep:
                        writer.add(Episode(
                            instruction=task.instruction, states=np.stack(recorder.states),
                            actions=np.stack(recorder.actions),
                            images={c: np.stack(v) for c, v in recorder.images.items()},
                            extra={'task': name, 'seed': seed, 'noise': round(noise, 4),
                                   'success': bool(result.success),
                                   'progression': float(result.progression)}))
                        kept += 1
                    with open(args.out / ATTEMPTS_FILE, 'a') as log:
                        log.write(json.dumps({'task': name, 'seed': seed, 'kept': keep,
                                              'success': bool(result.success)}) + '\n')
                    bar.update(1)
                    bar.set_postfix(kept=kept, task=name)
            finally:
                world.close()
    finally:
        bar.close()
    print(f'dataset {args.out}: {kept} episodes ({attempted} attempted this run), '
          f'{writer.frames} frames, LeRobot {args.format}, cameras {list(cameras)} at '
          f'{width}x{height}, recorded in {place.describe}, {time.monotonic() - start:.0f} s')
    return 0


def export(args: argparse.Namespace) -> int:
    """``--from-run``: write a paired run's recorded episodes of one world as a dataset."""
    from realm_ros import console
    from realm_ros.io.episode_bags import export_run

    console.set_quiet(args.quiet)
    with console.phase('export', total=0, unit='ep') as bar:
        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)
        summary = export_run(args.from_run, args.out, args.run_world, args.format,
                             args.keep_failures, progress)
    for why, n in summary.skipped.items():
        console.warn(f'skipped {n} episode(s): {why}')
    console.result(f'dataset {args.out}: {summary.written} episodes exported from '
                 f'{args.from_run} ({args.run_world}), {summary.already} already there, '
                 f'{summary.frames} frames, LeRobot {args.format}, cameras '
                 f'{list(summary.cameras)}')
    return 0


RUN_FILE = 'meta/realm_run.json'
ATTEMPTS_FILE = 'meta/realm_attempts.jsonl'


def _attempted(out: pathlib.Path, writer) -> set[tuple[str, int]]:
    """(task, seed) pairs already attempted: the attempt log plus every written episode."""
    done = {(e['task'], int(e['seed'])) for e in writer.episodes if 'task' in e}
    path = out / ATTEMPTS_FILE
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by a kill: that attempt is simply run again
            if not row.get('kept'):  # kept ones are in the dataset, hence in ``done``
                done.add((row['task'], int(row['seed'])))
    return done
