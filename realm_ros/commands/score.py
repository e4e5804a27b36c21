"""``realm-ros score``: progress of an episode from its video, by a VLM (docs/scoring.md).

``realm-ros score --video EPISODE.mp4 --instruction TEXT --endpoint URL --model NAME`` samples
the video at 1 frame per second, asks the model behind an OpenAI-compatible chat endpoint for the
progress at every sampled frame (RobotArena-infinity's protocol, three passes, per-frame median,
mean of the last 30 %) and prints one JSON object: the curve, the score and who scored it. The
score is a scorer's, reported beside the rubric's, never in place of it.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

from realm_ros.core.errors import ConfigError, DataError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the video, the instruction and the endpoint."""
    parser.add_argument('--video', required=True, type=pathlib.Path, help='episode video (mp4, '
                        'webm: anything imageio-ffmpeg reads)')
    parser.add_argument('--instruction', required=True, help="the episode's instruction")
    parser.add_argument('--task', default='', help='task name (for --task-range)')
    parser.add_argument('--endpoint', required=True,
                        help='OpenAI-compatible API base URL, e.g. http://gpu-box:8000/v1')
    parser.add_argument('--model', required=True, help='model name the endpoint serves')
    parser.add_argument('--runs', type=int, default=3, help='passes over the episode (median)')
    parser.add_argument('--fps', type=float, default=1.0, help='frames per second shown')
    parser.add_argument('--task-range', nargs=2, type=float, default=None,
                        metavar=('FLOOR', 'CEILING'),
                        help='rescale the raw score: clip((raw - floor) / (ceiling - floor))')
    parser.add_argument('--api-key-env', default='OPENAI_API_KEY',
                        help='environment variable with the API key (sent if set)')
    parser.add_argument('--timeout', type=float, default=120.0, help='seconds per request')


def read_video(path: pathlib.Path) -> tuple[list, list[float]]:
    """Return the frames of a video and their times in seconds.

    Raises:
        DataError: the file is missing or cannot be decoded.
    """
    if not path.is_file():
        raise DataError(f'--video: {path} does not exist')
    import imageio.v2 as imageio
    try:
        reader = imageio.get_reader(str(path))
        fps = float(reader.get_meta_data().get('fps') or 0.0)
        frames = [frame[..., :3] for frame in reader]
        reader.close()
    except (OSError, RuntimeError, ValueError) as err:
        raise DataError(f'--video: cannot decode {path}: {err}') from None
    if not frames or fps <= 0:
        raise DataError(f'--video: {path} has no frames or no frame rate')
    return frames, [k / fps for k in range(len(frames))]


def run(args: argparse.Namespace) -> int:
    """Score the video and print the JSON verdict."""
    from realm_ros.core import scoring
    from realm_ros.scorers.vlm import VlmScorer

    if args.fps <= 0:
        raise ConfigError(f'--fps must be > 0, got {args.fps}')
    ranges = {args.task: tuple(args.task_range)} if args.task_range else None
    scorer = VlmScorer(args.endpoint, args.model, runs=args.runs, fps=args.fps,
                       task_ranges=ranges, api_key_env=args.api_key_env,
                       timeout_s=args.timeout)
    frames, times = read_video(args.video)
    result = scorer.score(scoring.EpisodeFrames(frames=frames, times_s=times,
                                                instruction=args.instruction, task=args.task))
    out = result.as_record()
    out['dropped_runs'] = list(result.dropped_runs)
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write('\n')
    return 0
