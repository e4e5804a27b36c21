"""``realm-ros score``: episodes' progress from their videos, beside the rubric (docs/scoring.md).

Four forms:

* ``realm-ros score --video EPISODE.webm --instruction TEXT [--task T] [--scorer vlm|learned]``
  scores one video and prints one JSON object (curve, score, who scored it, proposed stages);
  a learned checkpoint that reads several cameras takes each other camera's video of the
  episode as ``--camera-video CAMERA=FILE`` (the wrist checkpoint: ``wrist=FILE``);
* ``realm-ros score RUN_DIR [--scorer ...]`` scores every episode video of a run folder
  (``paired-eval --videos``, ``sweep --videos``; for a checkpoint of several cameras, a run
  recorded with all of them: ``--videos exterior_1,wrist``) into ``RUN_DIR/scores.jsonl``, beside
  ``episodes.jsonl`` and never in it; ``summary.json`` gains a ``scorers`` section and the
  report a scorer column. Episodes already scored by the same scorer are skipped (resumable);
* ``realm-ros score train --out CKPT [--validate]`` runs the labelled episodes of the twin
  and the digital real (cached under ``--data-dir``) and trains the learned progress-and-stage
  scorer on CPU (``--validate``: on all but seeds 6-7, and prints its agreement on those);
* ``realm-ros score eval [--checkpoint CKPT]`` measures a learned scorer against the rubric on
  held-out digital-real episodes and on a policy it never saw;
* ``realm-ros score calibrate --labels FILE --out CKPT [--checkpoint BASE]`` adapts a learned
  checkpoint to one lab's look from a few of its labelled episodes (seconds on a CPU); a
  checkpoint of several cameras reads each label's ``camera_videos``.

A scorer's score is a scorer's: reported beside the rubric's, never in place of it.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
from typing import Any

import numpy as np

from realm_ros.commands import camera_files, non_negative_int, positive_float, positive_int
from realm_ros.core import backends, provenance
from realm_ros.core.errors import ConfigError, DataError

MODES = ('train', 'eval', 'calibrate')
DEFAULT_DATA_DIR = pathlib.Path('data/progress_scorer')
SCORES_FILE = 'scores.jsonl'


def _shipped_epochs() -> int:
    """The epochs ``score train`` trains with by default (``learned.SHIPPED``)."""
    from realm_ros.scorers.learned import SHIPPED
    return SHIPPED.epochs


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the forms' arguments (see the module docstring)."""
    parser.add_argument('target', nargs='?', default=None, metavar='RUN_DIR|train|eval|calibrate',
                        help='a run folder to score, or train / eval / calibrate the learned '
                             'scorer '
                             '(omit with --video)')
    parser.add_argument('--video', type=pathlib.Path, default=None,
                        help='one episode video (mp4, webm: anything imageio-ffmpeg reads; '
                             "a learned checkpoint of several cameras: its first camera's)")
    parser.add_argument('--camera-video', action='append', default=None,
                        metavar='CAMERA=FILE',
                        help="a learned checkpoint that reads several cameras: another "
                             "camera's video of the same episode (repeatable; --video is its "
                             "first camera's, exterior_1)")
    parser.add_argument('--instruction', default='',
                        help="the episode's instruction (default: the task's)")
    parser.add_argument('--task', default='', help='task name (the learned scorer needs it)')
    parser.add_argument('--scorer', default=None,
                        help='scorer name: vlm or learned (default: vlm with --endpoint, else '
                             'learned)')
    parser.add_argument('--checkpoint', type=pathlib.Path, default=None,
                        help='learned scorer checkpoint (default: the shipped '
                             'realm_ros/data/progress_scorer.pt)')
    parser.add_argument('--endpoint', default='',
                        help='vlm: OpenAI-compatible API base URL, e.g. http://gpu-box:8000/v1')
    parser.add_argument('--model', default='', help='vlm: model name the endpoint serves')
    parser.add_argument('--runs', type=positive_int, default=3,
                        help='vlm: passes over the episode')
    parser.add_argument('--fps', type=positive_float, default=None,
                        help='frames per second scored (vlm 1, learned 3)')
    parser.add_argument('--task-range', nargs=2, type=float, default=None,
                        metavar=('FLOOR', 'CEILING'),
                        help='vlm: rescale the raw score: clip((raw - floor) / (ceiling - floor))')
    parser.add_argument('--api-key-env', default='OPENAI_API_KEY',
                        help='vlm: environment variable with the API key (sent if set)')
    parser.add_argument('--timeout', type=positive_float, default=120.0,
                        help='vlm: seconds per request')
    parser.add_argument('--out', type=pathlib.Path, default=None,
                        help='train, calibrate: checkpoint to write (required: the shipped '
                             'one is never overwritten by default)')
    parser.add_argument('--data-dir', type=pathlib.Path, default=DEFAULT_DATA_DIR,
                        help='train/eval: labelled episodes are cached here, one '
                             'PLAN-DIGEST.npz per plan and settings (look by content, rig, '
                             'dynamics, image size, max steps, policies, version)')
    parser.add_argument('--epochs', type=positive_int, default=None,
                        help="train: epochs (default: the shipped settings' "
                             f'{_shipped_epochs()})')
    parser.add_argument('--validate', action='store_true',
                        help="train: hold the training plan's seeds 6-7 back, train on the "
                             "rest and print the scorer's agreement on them (writes no "
                             'checkpoint unless --out is given)')
    parser.add_argument('--seed', type=non_negative_int, default=0, help='train: seed')
    parser.add_argument('--init', type=pathlib.Path, default=None, metavar='CKPT',
                        help="train: start from this checkpoint's weights (fine-tune; same "
                             'network and tasks) instead of random ones')
    parser.add_argument('--lr', type=positive_float, default=None,
                        help="train: peak learning rate (default: the shipped settings')")
    parser.add_argument('--device', default='cpu', help='train: torch device (cpu, cuda)')
    parser.add_argument('--threads', type=positive_int, default=1,
                        help='train: CPU threads (the result is deterministic for a seed and '
                             'thread count)')
    parser.add_argument('--appearance', default=None, metavar='FILE',
                        help="train/eval: the digital real's hidden appearance YAML (default "
                             'config/appearance/lab_demo.yaml)')
    parser.add_argument('--rerun-changed', action='store_true',
                        help='RUN_DIR: score again the episodes whose scores were made with '
                             'other scorer settings or before their episode ran again; '
                             'without it such a run is refused, naming the setting')
    parser.add_argument('--labels', type=pathlib.Path, action='append', default=None,
                        metavar='FILE',
                        help="calibrate: a lab's labelled episodes (repeatable): a .jsonl of "
                             'lines {video, task, stage_times_s} or operator_node records '
                             "with a video (a checkpoint of several cameras: each camera's in "
                             'camera_videos), or a .npz of labelled episodes')
    parser.add_argument('--layers', default=None,
                        help='calibrate: what it trains: head, norm (head and GroupNorm) or '
                             'all (default: all)')
    parser.add_argument('--steps', type=positive_int, default=None,
                        help='calibrate: optimiser steps (default 150)')
    parser.add_argument('--json', type=pathlib.Path, default=None,
                        help='eval: also write the figures here')
    parser.add_argument('--against', type=pathlib.Path, action='append', default=None,
                        metavar='CKPT',
                        help='eval: another learned checkpoint measured on the same episodes, '
                             'in the same table (repeatable)')


def read_video(path: pathlib.Path, flag: str = '--video') -> tuple[list, list[float]]:
    """Return the frames of a video and their times in seconds.

    Raises:
        DataError: the file is missing or cannot be decoded (one line naming ``flag``).
    """
    if not path.is_file():
        raise DataError(f'{flag}: {path} does not exist')
    import imageio.v2 as imageio
    try:
        reader: Any = imageio.get_reader(str(path))  # iterates frames (its stub: Array)
        fps = float(reader.get_meta_data().get('fps') or 0.0)
        frames = [frame[..., :3] for frame in reader]
        reader.close()
    except (OSError, RuntimeError, ValueError) as err:
        raise DataError(f'{flag}: cannot decode {path}: {err}') from None
    if not frames or fps <= 0:
        raise DataError(f'{flag}: {path} has no frames or no frame rate')
    return frames, [k / fps for k in range(len(frames))]


def build_scorer(args: argparse.Namespace) -> Any:
    """Return the scorer the arguments name (through the scorer registry)."""
    from realm_ros.core import scoring

    name = args.scorer or ('vlm' if args.endpoint else 'learned')
    kwargs: dict[str, Any] = {}
    if name == 'vlm' or args.endpoint:
        kwargs = {'endpoint': args.endpoint, 'model': args.model, 'runs': args.runs,
                  'api_key_env': args.api_key_env, 'timeout_s': args.timeout,
                  'task_ranges': {args.task: tuple(args.task_range)} if args.task_range
                  else None}
        if not args.endpoint:
            raise ConfigError('--scorer vlm needs --endpoint URL and --model NAME')
    elif args.checkpoint is not None:
        kwargs['checkpoint'] = args.checkpoint
    if args.fps is not None:
        kwargs['fps'] = args.fps
    return scoring.make_scorer(name, **kwargs)


def episode_frames(frames: list, times: list[float], task: str, instruction: str) -> Any:
    """Return the :class:`EpisodeFrames` of a decoded video (instruction: the task's if empty)."""
    from realm_ros.core import scoring, tasks
    if not instruction and task in tasks.TASKS:
        instruction = tasks.TASKS[task].instruction
    return scoring.EpisodeFrames(frames=frames, times_s=times, instruction=instruction,
                                 task=task)


def check_task(scorer: Any, task: str) -> None:
    """Refuse, naming ``--task``, a task a scorer that scores by task (the learned one: its
    ``tasks``) is not given or does not know; a VLM reads the instruction instead.

    Raises:
        ConfigError: one line naming ``--task`` (and ``--endpoint``, the scorer that needs none).
    """
    known = getattr(scorer, 'tasks', None)
    if known is None or task in known:
        return
    if not task:
        raise ConfigError(f'--task NAME is needed by the {scorer.name} scorer (one of '
                          f'{", ".join(known)}), or --endpoint URL --model NAME to ask a VLM '
                          'with --instruction')
    raise ConfigError(f'--task {task}: the {scorer.name} scorer was trained on '
                      f'{", ".join(known)} only')


def camera_videos(scorer: Any, args: argparse.Namespace) -> dict[str, pathlib.Path]:
    """Return ``--camera-video CAMERA=FILE``'s videos by camera: one for each camera the scorer
    reads after its first (whose video is ``--video``), and no other.

    Raises:
        ConfigError: one line naming ``--camera-video``: a malformed one, a camera the scorer
            does not read, or one it reads and is not given.
    """
    videos = {camera: pathlib.Path(file) for camera, file in camera_files(args.camera_video)}
    cameras = list(getattr(scorer, 'cameras', None) or [])
    for camera in videos:
        if camera not in cameras[1:]:
            reads = (f'reads {", ".join(cameras)} (--video: {cameras[0]})' if cameras
                     else 'reads --video only')
            raise ConfigError(f'--camera-video {camera}: the {scorer.name} scorer {reads}')
    for camera in cameras[1:]:
        if camera not in videos:
            raise ConfigError(f'--camera-video {camera}=FILE is needed: the {scorer.name} '
                              f'scorer reads {", ".join(cameras)} (--video: {cameras[0]})')
    return videos


def score_video(scorer: Any, path: pathlib.Path, task: str, instruction: str,
                where: str = '--video', others: dict[str, pathlib.Path] | None = None
                ) -> dict[str, Any]:
    """Return one video's score record: the scorer's fields and its proposed stages.
    ``others``: the videos of the scorer's other cameras (:func:`camera_videos`).

    Raises:
        DataError: a video cannot be read, or the scorer refuses it (its size or length, the
            cameras' lengths); one line starting with ``where`` and the path.
    """
    from realm_ros.core import annotation, scoring

    frames, times = read_video(path)
    if others:
        videos = [frames] + [read_video(file, f'--camera-video {camera}')[0]
                             for camera, file in others.items()]
        try:
            frames = scorer.stack(videos)
        except DataError as err:
            raise DataError(f'{where} {path}: {err}') from None
    episode = episode_frames(frames, times, task, instruction)
    try:
        result = scorer.score(episode)
        out = result.as_record()
        out['dropped_runs'] = list(result.dropped_runs)
        if task:
            stages = annotation.stages_for_task(task)
            out['stage_proposals'] = [
                {'stage': p.stage, 'time_s': p.time_s, 'confidence': p.confidence}
                for p in scoring.propose_stages(scorer, episode, stages)]
    except DataError as err:
        raise DataError(f'{where} {path}: {err}') from None
    look = look_warning(scorer, frames[0], f'{where} {path}')
    if look is not None:
        out['scorer_look'] = look
    return out


def look_warning(scorer: Any, first: Any, where: str) -> dict[str, Any] | None:
    """Return how far an episode's look is from the scorer's training looks (a learned scorer
    whose checkpoint keeps them; else None), warning on stderr, in one line, when it is
    outside them: its scores there may be no better than a constant."""
    check = getattr(scorer, 'look_check', None)
    look = check(first) if check is not None else None
    if look is not None and look['outside_training_looks']:
        print(f'warning: {where}: its look is outside the looks {scorer.name} was trained on '
              f'(distance {look["look_distance"]:.2f} > {look["look_threshold"]:.2f}); its '
              'scores there may be no better than a constant (docs/scoring.md)',
              file=sys.stderr)
    return look


def run(args: argparse.Namespace) -> int:
    """Dispatch on the form."""
    if args.target == 'train':
        return run_train(args)
    if args.target == 'eval':
        return run_eval(args)
    if args.target == 'calibrate':
        return run_calibrate(args)
    if args.target is not None:
        if args.video is not None or args.camera_video:
            raise ConfigError('give either RUN_DIR or --video (and --camera-video), not both')
        return run_dir(args, pathlib.Path(args.target))
    if args.video is None:
        raise ConfigError('nothing to score: give RUN_DIR, --video FILE, train or eval')
    if not args.instruction and not args.task:
        raise ConfigError('--video needs --instruction TEXT or --task NAME')
    scorer = build_scorer(args)
    check_task(scorer, args.task)
    others = camera_videos(scorer, args)
    out = score_video(scorer, args.video, args.task, args.instruction, others=others)
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write('\n')
    return 0


# -- a run folder -------------------------------------------------------------------------------

def _jsonl(path: pathlib.Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line torn by a kill mid-write; that episode is scored again
    return out


def run_dir(args: argparse.Namespace, folder: pathlib.Path) -> int:
    """Score every episode video of ``folder`` into ``scores.jsonl`` and the summary."""
    from realm_ros.core import scoring
    from realm_ros.core.evaluation import EpisodeLog, scored
    from realm_ros.core.types import json_default, record_role

    folder = folder.expanduser().resolve()
    path = folder / 'episodes.jsonl'
    if not path.is_file():
        raise ConfigError(f'{folder}: no episodes.jsonl (not a run folder)')
    # One record per episode, the latest (an episode run again by --rerun-changed).
    records = list({EpisodeLog.key(r): dict(r, role=record_role(r))
                    for r in scored(EpisodeLog(path).records)}.values())
    with_video = [r for r in records if r.get('video') and (folder / r['video']).is_file()]
    if not with_video:
        raise ConfigError(f'{folder}: no episode videos (run paired-eval or sweep with --videos)')
    scorer = build_scorer(args)
    cameras = list(getattr(scorer, 'cameras', None) or [])
    videos_of = {(r['pair_id'], r['role']): run_videos(scorer, folder, r, cameras)
                 for r in with_video}
    scores_path = folder / SCORES_FILE
    made_by = score_settings(args, scorer.name, records)
    # A score names what made it: the scorer's settings and its episode's (a digest of the
    # record's made_by); a score of another scorer setup or of an episode since re-run is
    # changed: refused, or scored again with --rerun-changed.
    mine = [s for s in _jsonl(scores_path) if s.get('scorer') == scorer.name]
    changed, stale = provenance.sort_out(mine, lambda s: (s['pair_id'], s['role']), made_by)
    if changed and not args.rerun_changed:
        provenance.refuse(changed, str(folder), SCORE_FLAGS, unit='score')
    if changed:
        print(f'{provenance.RERUN_FLAG}: scoring {len(changed)} episode(s) again (their '
              'scores were made with other settings)', file=sys.stderr)
    done = {(s['pair_id'], s['role']) for s in mine if id(s) not in stale}
    todo = [r for r in with_video if (r['pair_id'], r['role']) not in done]
    start = time.monotonic()
    with scores_path.open('a') as handle:
        for k, record in enumerate(todo, start=1):
            first, *others = videos_of[(record['pair_id'], record['role'])]
            out = score_video(scorer, first, str(record['task']),
                              str(record.get('instruction') or ''), where='episode video',
                              others=dict(zip(cameras[1:], others)) or None)
            line = {'pair_id': record['pair_id'], 'role': record['role'],
                    'task': record['task'], 'policy': record.get('policy', ''),
                    'video': record['video'], **out, provenance.MADE_BY: made_by(record)}
            handle.write(json.dumps(line, default=json_default) + '\n')
            handle.flush()
            print(f'[{k}/{len(todo)}] {record["role"]} {record["pair_id"]}: '
                  f'{scorer.name} {out["scorer_progression"]:.2f} (rubric '
                  f'{float(record["progression"]):.2f})', file=sys.stderr)
    section = scoring.run_dir_section(records, current_scores(_jsonl(scores_path), records))
    print(f'{len(todo)} episode(s) scored by {scorer.name} in {time.monotonic() - start:.1f} s '
          f'({len(done)} already); scores in {scores_path}')
    for name, part in section.items():
        agreement = part.get('agreement')
        if agreement:
            print(f'{name}: {part["episodes"]} episodes, Pearson r vs the rubric '
                  f'{agreement["pearson_r"]:.3f}, success accuracy '
                  f'{agreement["success_accuracy"]:.3f}')
    _write_summary(folder, section)
    return 0


def run_videos(scorer: Any, folder: pathlib.Path, record: dict[str, Any],
               cameras: list[str]) -> list[pathlib.Path]:
    """Return the videos of a run folder's episode that ``scorer`` reads, one per camera in its
    order (``record_videos``: a record of one camera gives its ``video`` to a scorer of one).

    Raises:
        ConfigError: one line: the scorer reads a camera the run did not record (naming
            ``--videos``, the flag that records it).
    """
    from realm_ros.io.video import record_videos
    named = record_videos(record)
    if '' in named and len(cameras) <= 1:
        return [folder / named['']]
    if '' in named:
        has = "one camera's video"
    else:
        missing = [c for c in cameras if c not in named or not (folder / named[c]).is_file()]
        if not missing:
            return [folder / named[c] for c in (cameras or list(named)[:1])]
        has = f'no {", ".join(missing)} video'
    raise ConfigError(f'--checkpoint: the {scorer.name} scorer reads {", ".join(cameras)}; '
                      f'episode {record["role"]} {record["pair_id"]} has {has}: record the run '
                      f'with --videos {",".join(cameras)} (paired-eval or sweep)')


#: Score settings set by a flag other than ``--<setting>``.
SCORE_FLAGS = {'episode': 'the episode (run again since it was scored)'}


def score_settings(args: argparse.Namespace, name: str, records: list[dict[str, Any]]
                   ) -> Any:
    """Return ``score line or record -> made_by`` of a score by this scorer: its settings
    (a checkpoint by content) and the digest of its episode's ``made_by``; None for an
    episode no longer in the folder."""
    checkpoint = args.checkpoint or ''
    if name == 'learned' and not checkpoint:
        from realm_ros.scorers.learned import DEFAULT_CHECKPOINT
        checkpoint = DEFAULT_CHECKPOINT
    settings = {'scorer': name, 'checkpoint': provenance.file_setting(checkpoint),
                'endpoint': args.endpoint, 'model': args.model, 'runs': args.runs,
                'fps': args.fps, 'task_range': args.task_range,
                'code': provenance.code_version()}
    episodes = {(r['pair_id'], r['role']): provenance.digest(r.get(provenance.MADE_BY))
                for r in records}

    def made_by(line: dict[str, Any]) -> dict[str, Any] | None:
        episode = episodes.get((line['pair_id'], line['role']))
        return None if episode is None else {**settings, 'episode': episode}
    return made_by


def current_scores(scores: list[dict[str, Any]], records: list[dict[str, Any]]
                   ) -> list[dict[str, Any]]:
    """The scores of the episodes as they are now: a score of an episode since run again
    (its record's settings changed) is left out, as is an older score of the same scorer."""
    episodes = {(r['pair_id'], r['role']): provenance.digest(r.get(provenance.MADE_BY))
                for r in records}
    latest: dict[tuple[str, str, str], dict[str, Any]] = {}
    for line in scores:
        key = (line['pair_id'], line['role'])
        made = line.get(provenance.MADE_BY)
        if made is not None and made.get('episode') != episodes.get(key):
            continue
        latest[(str(line.get('scorer')), key[0], key[1])] = line
    return list(latest.values())


def _write_summary(folder: pathlib.Path, section: dict[str, Any]) -> None:
    """Put the ``scorers`` section into summary.json and re-write the report, if there is one."""
    path = folder / 'summary.json'
    if not path.is_file():
        return
    summary = json.loads(path.read_text())
    summary['scorers'] = section
    path.write_text(json.dumps(summary, indent=2))
    if 'per_policy' not in summary or 'pairs' not in summary:
        return  # a sweep's summary: the sweep report is its own
    from realm_ros.programs.report import write_report
    config = summary.get('config') or {}
    write_report(folder, summary, {
        'real': config.get('real', ''),
        'sim': f'{config.get("sim", "")} twin, '
               + (f'identified parameters {config["sim_params_file"]}'
                  if config.get('sim_params_file') else 'default parameters')})


# -- the learned scorer: train and measure ------------------------------------------------------

def labelled(name: str, data_dir: pathlib.Path, appearance: str,
             share: tuple[int, int] = (0, 1)) -> list[Any]:
    """Return the labelled episodes of plan ``name`` (run now, or read from the cache).

    The cache is keyed by everything that changes the episodes (``learned.plan_settings``:
    the look by content, rig, dynamics, image size, max steps, policies, the realm_ros
    version): ``DATA_DIR/<plan>-<digest>.npz``, its settings beside it as ``.json``, so another
    look runs its own episodes instead of reusing the last look's. A plan of lab looks caches
    each look apart first (``DATA_DIR/<plan>-<digest>/lab-SEED.npz``), so an interrupted run
    resumes by look; ``share`` (i, n) runs only the looks k with k % n == i (several processes
    collecting one plan) and returns the episodes of the looks done so far."""
    from realm_ros.core.types import json_default
    from realm_ros.scorers import learned

    plan = learned.PLANS[name]
    settings = learned.plan_settings(plan, appearance)
    stem = f'{name}-{provenance.digest(settings)[:12]}'
    cache = data_dir / f'{stem}.npz'
    if cache.is_file():
        cached = learned.load_episodes(cache)
        print(f'{name}: {len(cached)} labelled episodes from {cache}', file=sys.stderr)
        return cached
    start = time.monotonic()
    count = [0]
    looks = plan.looks or (None,)
    per_look = len(plan.worlds) * len(plan.tasks) * len(plan.policies) * (len(plan.seeds) or 1)
    total = per_look * len(looks)

    def progress(episode: Any) -> None:
        count[0] += 1
        print(f'[{count[0]}/{total}] {name}: {episode.world} {episode.look or "default look"} '
              f'{episode.task} {episode.policy} seed {episode.seed}: {len(episode.met)} '
              f'frames, rubric {episode.progression:.2f} ({time.monotonic() - start:.0f} s)',
              file=sys.stderr)

    episodes: list[Any] = []
    complete = True
    for k, look in enumerate(looks):
        if look is None:
            episodes += learned.collect(plan.worlds, plan.tasks, plan.policies, plan.seeds,
                                        plan.max_steps, appearance_file=appearance,
                                        on_episode=progress)
            continue
        part = data_dir / stem / f'lab-{look}.npz'
        if part.is_file():
            episodes += learned.load_episodes(part)
            count[0] += per_look
            continue
        if k % share[1] != share[0]:
            complete = False
            continue
        path = learned.write_look(look, data_dir / 'looks')
        mine = learned.collect(plan.worlds, plan.tasks, plan.policies, plan.seeds or (look,),
                               plan.max_steps, appearance_file=str(path), on_episode=progress,
                               look=f'lab:{look}')
        learned.save_episodes(part, mine)
        episodes += mine
    if complete:
        learned.save_episodes(cache, episodes)
        cache.with_suffix('.json').write_text(json.dumps(settings, indent=2,
                                                         default=json_default))
    return episodes


def _appearance(args: argparse.Namespace) -> str:
    from realm_ros.graph import share_path
    from realm_ros.scorers import learned
    path = pathlib.Path(args.appearance) if args.appearance else share_path(learned.APPEARANCE)
    if not path.is_file():
        raise ConfigError(f'--appearance: {path} does not exist')
    return str(path)


def one_camera(checkpoint: Any, flag: str, why: str) -> None:
    """Refuse, in one line naming ``flag``, a learned checkpoint that reads several cameras
    where only one camera's frames are there (``why``).

    Raises:
        ConfigError: the checkpoint's ``config`` names more than one camera.
    """
    cameras = list(checkpoint['config'].get('cameras', ('exterior_1',)))
    if len(cameras) > 1:
        raise ConfigError(f'{flag}: it reads {", ".join(cameras)}; {why}')


def run_train(args: argparse.Namespace) -> int:
    """Run (or read) the training episodes, train the scorer, write the checkpoint.

    The episodes are those of ``learned.TRAIN_PLANS``: the default look in both worlds and the
    digital real dressed in each of the training lab looks. With ``--validate``, train on the
    plans' episodes but the default look's of the validation seeds and print the scorer's
    agreement on those (how the network was chosen, blind to the held-out sets)."""
    import dataclasses

    from realm_ros.scorers import learned

    if args.threads < 1:
        raise ConfigError(f'--threads must be >= 1, got {args.threads}')
    if args.out is None and not args.validate:
        # Never the shipped checkpoint by default: a user's training run would replace the
        # weights every other command scores with (and dirty the installed package).
        raise ConfigError('score train: give --out CKPT, the checkpoint to write (the shipped '
                          f'{learned.DEFAULT_CHECKPOINT.name} is never overwritten by default)')
    config = dataclasses.replace(learned.SHIPPED, seed=args.seed, device=args.device,
                                 threads=args.threads, **(
        {'epochs': args.epochs} if args.epochs is not None else {}), **(
        {'lr': args.lr} if args.lr is not None else {}))
    if config.epochs < 1:
        raise ConfigError(f'--epochs must be >= 1, got {config.epochs}')
    init = learned.load_checkpoint(args.init) if args.init is not None else None
    if init is not None:
        learned.one_network(init, f'--init {args.init}')
        one_camera(init, f'--init {args.init}', "score train trains exterior_1's network "
                   '(the wrist checkpoint is trained by bench/scorer_cameras.py)')
    appearance = _appearance(args)
    episodes = [e for name in learned.TRAIN_PLANS
                for e in labelled(name, args.data_dir, appearance)]
    validation: list[Any] = []
    if args.validate:
        episodes, validation = learned.split(episodes)
        if not episodes or len(validation) < 2:
            raise DataError(f'--validate: the training set has no episodes of seeds '
                            f'{learned.VALIDATION_SEEDS} to hold back')
    start = time.monotonic()
    checkpoint = learned.train(episodes, config,
                               log=lambda line: print(line, file=sys.stderr), init=init)
    checkpoint['meta']['train_s'] = round(time.monotonic() - start, 1)
    if args.init is not None:
        checkpoint['meta']['init'] = learned.LearnedScorer(args.init).name
    meta = checkpoint['meta']
    print(f'trained on {meta["episodes"]} episodes ({meta["frames"]} frames; worlds '
          f'{", ".join(meta["worlds"])}; {meta["looks"]} looks; policies '
          f'{", ".join(meta["policies"])}) in {meta["train_s"]} s')
    if args.validate:
        scorer = learned.LearnedScorer(checkpoint)
        digital = [e for e in validation if backends.get(e.world).hidden]
        _print_table(f'validation (training plan, seeds {learned.VALIDATION_SEEDS})', [
            ('validation', scorer.name, learned.evaluate(scorer, validation),
             learned.baselines(validation, episodes)),
            ('validation digital_real', scorer.name, learned.evaluate(scorer, digital),
             learned.baselines(digital, episodes))])
        if args.out is None:
            return 0
    out = args.out
    learned.save_checkpoint(out, checkpoint)
    print(f'wrote {out} ({pathlib.Path(out).stat().st_size / 1e3:.0f} kB)')
    return 0


def stage_times(record: dict[str, Any], where: str) -> list[float]:
    """Return the seconds from an episode video's first frame at which each stage was met, from
    a label line (``stage_times_s``) or an ``operator_node`` record (its ``annotations``: stage
    marks less undos, timed from ``start_time``, the reset the video starts at; a stage the
    operator accepted from a scorer's proposal takes the proposal's time, ``stage_proposal``).

    Raises:
        DataError: neither is there (one line naming ``where``).
    """
    if 'stage_times_s' in record:
        times = record['stage_times_s']
        if not isinstance(times, list):
            raise DataError(f'{where}: stage_times_s must be a list of seconds')
        return [float(t) for t in times]
    if 'annotations' not in record or 'start_time' not in record:
        raise DataError(f'{where}: no stage_times_s and no operator annotations with '
                        'start_time')
    start = float(record['start_time'])
    marks: list[float] = []
    for event in record['annotations']:
        if event.get('event') == 'stage':
            marks.append(float(event['time']) - start)
        elif event.get('event') == 'undo' and marks:
            marks.pop()
    decided = list(record.get('stages_decided_by') or [])
    proposed = (record.get('stage_proposal') or {}).get('stages') or []
    for k, by in enumerate(decided[:len(marks)]):
        if by != 'operator' and k < len(proposed):
            marks[k] = float(proposed[k]['time_s'])
    return marks


def label_frames(record: dict[str, Any], folder: pathlib.Path, scorer: Any, where: str
                 ) -> tuple[list, list[float]]:
    """Return a label line's frames as ``scorer`` reads them and their times: its ``video``,
    and for a checkpoint of several cameras each camera's video named in ``camera_videos``
    (camera -> path, as ``operator_node`` and ``paired-eval --videos`` record them; ``video`` is
    the first camera's) stacked frame by frame (``LearnedScorer.stack``). Paths are relative to
    ``folder``. Each camera's video starts at the episode's reset at the same rate, so their
    lengths may differ by one frame at the end (``operator_node``): the longer are cut to the
    shortest; by more, the videos are not one episode's and are refused.

    Raises:
        DataError: a camera's video is not named, cannot be read, or its length or size does
            not fit (one line starting with ``where``).
    """
    cameras = list(getattr(scorer, 'cameras', None) or ['exterior_1'])

    def resolve(name: str) -> pathlib.Path:
        path = pathlib.Path(name)
        return path if path.is_absolute() else folder / path

    if len(cameras) <= 1:
        return read_video(resolve(str(record['video'])))
    named = record.get('camera_videos') or {}
    if not isinstance(named, dict):
        raise DataError(f'{where}: camera_videos must map each camera to its video')
    files = {cameras[0]: str(named.get(cameras[0], record['video'])),
             **{c: str(named[c]) for c in cameras[1:] if c in named}}
    missing = [c for c in cameras if c not in files]
    if missing:
        raise DataError(f'{where}: no {", ".join(missing)} video in camera_videos: '
                        f'{scorer.name} reads {", ".join(cameras)} (record them with '
                        f'--videos / video_camera {",".join(cameras)})')
    videos = [read_video(resolve(files[c]), f'{where} ({c})') for c in cameras]
    lengths = [len(frames) for frames, _ in videos]
    if max(lengths) - min(lengths) > 1:
        raise DataError(f'{where}: camera videos of {lengths} frames ({", ".join(cameras)}) '
                        "differ by more than one frame: not one episode's")
    n = min(lengths)
    try:
        stacked = scorer.stack([frames[:n] for frames, _ in videos])
    except DataError as err:
        raise DataError(f'{where}: {err}') from None
    return stacked, videos[0][1][:n]


def calibration_episodes(paths: list[pathlib.Path], scorer: Any = None) -> list[Any]:
    """Return the labelled episodes of ``--labels`` files (see :func:`stage_times`), each
    episode's frames of every camera ``scorer`` reads (see :func:`label_frames`; None: one
    camera, ``exterior_1``)."""
    from realm_ros.scorers import learned
    cameras = list(getattr(scorer, 'cameras', None) or ['exterior_1'])
    out: list[Any] = []
    for path in paths:
        if not path.is_file():
            raise ConfigError(f'--labels: {path} does not exist')
        if path.suffix == '.npz':
            loaded = learned.load_episodes(path)
            channels = {int(e.frames.shape[-1]) for e in loaded}
            if channels != {3 * len(cameras)}:
                raise DataError(f'--labels {path}: frames of {sorted(c // 3 for c in channels)} '
                                f'camera(s); the checkpoint reads {", ".join(cameras)}')
            out += loaded
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if not line.strip():
                continue
            where = f'--labels {path} line {number}'
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f'{where}: not JSON ({err.msg})') from None
            if not isinstance(record, dict) or not record.get('video') or not record.get('task'):
                raise DataError(f'{where}: needs video and task')
            frames, times = label_frames(record, path.parent, scorer, where)
            try:
                out.append(learned.labelled_from_video(
                    frames, times, str(record['task']), stage_times(record, where),
                    look=str(path)))
            except (DataError, ConfigError) as err:
                raise DataError(f'{where}: {err}') from None
    return out


def run_calibrate(args: argparse.Namespace) -> int:
    """Adapt a learned checkpoint to one lab's look from a few of its labelled episodes
    (``learned.calibrate``) and write it to ``--out``."""
    import dataclasses

    from realm_ros.scorers import learned

    if args.out is None:
        raise ConfigError('score calibrate: give --out CKPT, the calibrated checkpoint to write')
    if not args.labels:
        raise ConfigError('score calibrate: give --labels FILE (.jsonl of video, task, '
                          'stage_times_s, or a .npz of labelled episodes)')
    if args.threads < 1:
        raise ConfigError(f'--threads must be >= 1, got {args.threads}')
    config = dataclasses.replace(learned.CalibrateConfig(), seed=args.seed, threads=args.threads,
                                 **({'layers': args.layers} if args.layers else {}),
                                 **({'steps': args.steps} if args.steps is not None else {}),
                                 **({'lr': args.lr} if args.lr is not None else {}))
    if config.layers not in learned.CALIBRATE_LAYERS:
        raise ConfigError(f'--layers must be one of {", ".join(learned.CALIBRATE_LAYERS)}, '
                          f'got {config.layers!r}')
    if config.steps < 1:
        raise ConfigError(f'--steps must be >= 1, got {config.steps}')
    base_path = args.checkpoint or learned.DEFAULT_CHECKPOINT
    base = learned.load_checkpoint(base_path)
    learned.calibratable(base, f'--checkpoint {base_path}')
    episodes = calibration_episodes(args.labels, learned.LearnedScorer(base))
    if not episodes:
        raise DataError('--labels: no labelled episodes in ' + ', '.join(map(str, args.labels)))
    unknown = sorted({e.task for e in episodes} - set(base['tasks']))
    if unknown:
        raise ConfigError(f'--labels: task(s) {", ".join(unknown)}: {base_path} was trained on '
                          f'{", ".join(base["tasks"])} only')
    start = time.monotonic()
    checkpoint = learned.calibrate(base, episodes, config,
                                   base_name=learned.LearnedScorer(base_path).name)
    learned.save_checkpoint(args.out, checkpoint)
    info = checkpoint['meta']['calibration']
    print(f'calibrated {learned.LearnedScorer(args.out).name} from {info["base"]} on '
          f'{info["episodes"]} episode(s) ({info["frames"]} frames; tasks '
          f'{", ".join(info["tasks"])}) in {time.monotonic() - start:.1f} s: wrote {args.out}')
    return 0


def _interval(values: Any) -> str:
    return f'[{values[0]:.2f}, {values[1]:.2f}]' if values else '[undefined]'


def _print_table(title: str, rows: list[tuple[str, str, dict[str, Any], dict[str, Any]]]
                 ) -> None:
    """Print agreement figures with the constant baselines beside them (a Markdown table)."""
    print(f'{title}:')
    print('| set | scorer | episodes | Pearson r [95 % CI] | spread of its progressions | '
          'mean abs error (mean-progression baseline) | stage accuracy (majority-count '
          'baseline) | final stage accuracy | success accuracy [95 % CI] (always-success '
          '[95 % CI]) | looks flagged outside training |')
    print('|---|---|---|---|---|---|---|---|---|---|')
    for name, scorer, r, b in rows:
        flagged = r.get('outside_training_looks')
        print(f'| {name} | {scorer} | {r["episodes"]} | {r["pearson_r"]:.3f} '
              f'{_interval(r["pearson_r_ci"])} | {r["progression_spread"]:.3f} | '
              f'{r["mean_abs_error"]:.3f} ({b["mean_progression_abs_error"]:.3f}) | '
              f'{r["stage_accuracy"]:.3f} ({b["majority_stage_accuracy"]:.3f}) | '
              f'{r["final_stage_accuracy"]:.3f} | {r["success_accuracy"]:.3f} '
              f'{_interval(r["success_accuracy_ci"])} ({b["always_success_accuracy"]:.3f} '
              f'{_interval(b["always_success_accuracy_ci"])}) | '
              f'{"n/a" if flagged is None else f"{flagged:.2f}"} |')


def eval_sets(data_dir: pathlib.Path, appearance: str) -> list[tuple[str, list[Any]]]:
    """Return the named sets ``score eval`` measures: the default look's held-out seeds and
    unseen policy, then each held-out lab look (every rung, the unseen one included) and all
    of them together."""
    from realm_ros.scorers import learned
    sets = [(name, labelled(name, data_dir, appearance)) for name in ('heldout', 'unseen')]
    looks = labelled('looks', data_dir, appearance)
    for look in learned.PLANS['looks'].looks:
        sets.append((f'look lab:{look}', [e for e in looks if e.look == f'lab:{look}']))
    sets.append(('held-out looks, all', looks))
    sets.append(('held-out looks, unseen policy',
                 [e for e in looks if e.policy == 'scripted-2']))
    return sets


def measure(scorer: Any, episodes: list[Any], reference: list[Any]) -> dict[str, Any]:
    """Return a scorer's figures on ``episodes`` with the constant baselines (constants from
    ``reference``) and the fraction of episodes it flags outside its training looks."""
    from realm_ros.scorers import learned
    result = learned.evaluate(scorer, episodes)
    result['baselines'] = learned.baselines(episodes, reference)
    checks = [scorer.look_check(e.frames[0]) for e in episodes]
    result['outside_training_looks'] = (
        None if any(c is None for c in checks)
        else float(np.mean([c['outside_training_looks'] for c in checks])))
    result['look_distance'] = (None if result['outside_training_looks'] is None else
                               float(np.median([c['look_distance'] for c in checks])))
    return result


def run_eval(args: argparse.Namespace) -> int:
    """Measure the learned scorer (and each ``--against`` checkpoint, on the same episodes)
    against the rubric on the default look's held-out seeds and unseen policy and on the
    held-out lab looks, with the constant baselines (constants from the training set) beside
    it."""
    from realm_ros.scorers import learned

    scorers = [learned.LearnedScorer(path) for path in
               [args.checkpoint or learned.DEFAULT_CHECKPOINT, *(args.against or [])]]
    for scorer in scorers:
        one_camera({'config': {'cameras': scorer.cameras}}, scorer.name,
                   "score eval's plans record exterior_1 only (bench/scorer_cameras.py "
                   'measure measures it)')
    appearance = _appearance(args)
    reference = labelled('train', args.data_dir, appearance)
    figures: dict[str, Any] = {'scorers': [s.name for s in scorers], 'sets': {}}
    rows = []
    for name, episodes in eval_sets(args.data_dir, appearance):
        figures['sets'][name] = {}
        for scorer in scorers:
            result = measure(scorer, episodes, reference)
            figures['sets'][name][scorer.name] = result
            rows.append((name, scorer.name, result, result['baselines']))
    _print_table('learned scorers against the rubric (digital real; the default look '
                 f'{pathlib.Path(appearance).name} and the held-out lab looks)', rows)
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2, default=float))
    return 0


__all__ = ['add_arguments', 'build_scorer', 'check_task', 'read_video', 'run',
           'score_video']
