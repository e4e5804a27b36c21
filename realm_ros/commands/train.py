"""``realm-ros train``: train the learned visuomotor policy on LeRobot datasets, with checkpoints.

Reads one or more dataset folders written by ``realm-ros dataset`` (any LeRobot v3.0 or v2.x
dataset with the same state/action layout and cameras works), decodes every frame once into
memory at ``--image-size`` and trains with :mod:`realm_ros.policies.training` (the loop: AdamW,
cosine schedule, augmentation, validation on the last ``--val-episodes`` episodes); this module
only parses the flags and calls it. ``--stages early=300,middle=1500,final=6000`` writes
``OUT/early.pt`` etc. at those steps (the largest is the run's length) and
``OUT/train_log.jsonl`` (losses, time).

Runs without ROS or MuJoCo: ``python -m realm_ros.commands.train ...`` works on a GPU machine
that has only torch, numpy, pyarrow and OpenCV.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from typing import Any

from realm_ros.commands import non_negative_int, path_arg, positive_float, positive_int
from realm_ros.core.errors import ConfigError
from realm_ros.policies.training import (  # noqa: F401 - parse_stages: the old home's name
    AUGMENTATIONS,
    TrainConfig,
    episode_samples,
    parse_stages,
    train,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Datasets, output, stages, batch, device."""
    parser.add_argument('--data', required=True, nargs='+', type=path_arg,
                        help='LeRobot dataset folder(s) (realm-ros dataset)')
    parser.add_argument('--out', required=True, type=path_arg,
                        help='folder for the checkpoints and train_log.jsonl')
    parser.add_argument('--stages', default='early=300,middle=1500,final=6000',
                        help='checkpoint name=step pairs; the largest step ends training')
    parser.add_argument('--batch', type=positive_int, default=256, help='samples per step')
    parser.add_argument('--lr', type=positive_float, default=3e-4, help='peak learning rate')
    parser.add_argument('--horizon', type=positive_int, default=10,
                        help='actions per predicted chunk')
    parser.add_argument('--image-size', type=positive_int, default=128,
                        help='side of the square image each camera gives the network, px')
    parser.add_argument('--cameras', default='exterior_1,wrist',
                        help="comma-separated cameras to use (the dataset's video or image "
                             'features)')
    parser.add_argument('--val-episodes', type=int, default=-1,
                        help='episodes held out for validation (-1 = 10 percent, at least 1 '
                             'when there are 2 or more)')
    parser.add_argument('--device', default='auto', help="'auto' (cuda if present), cpu, cuda")
    parser.add_argument('--width', type=positive_int, default=32, help='CNN base width')
    parser.add_argument('--seed', type=non_negative_int, default=0, help='torch and sampling seed')
    parser.add_argument('--log-every', type=positive_int, default=100,
                        help='steps between log lines')
    parser.add_argument('--augment', default='shift', choices=AUGMENTATIONS,
                        help="image augmentation: 'shift' (+-6 px, brightness +-10 %%) or "
                             "'appearance' (also colour, light, noise, occluding boxes)")


def load_samples(folders: list[pathlib.Path], cameras: list[str], image_size: int,
                 horizon: int) -> dict[str, Any]:
    """Decode the dataset folders into the training arrays (``training.episode_samples``)."""
    from realm_ros.io.lerobot import iter_episodes

    episodes = (ep for folder in folders for ep in iter_episodes(folder, cameras))
    return episode_samples(episodes, cameras, image_size, horizon,
                           source=str([str(f) for f in folders]))


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """Return the run's :class:`TrainConfig` from the flags (ConfigError naming a bad one)."""
    return TrainConfig(stages=args.stages, batch=args.batch, lr=args.lr, horizon=args.horizon,
                       image_size=args.image_size,
                       cameras=tuple(c for c in args.cameras.split(',') if c),
                       val_episodes=args.val_episodes, device=args.device, width=args.width,
                       seed=args.seed, log_every=args.log_every, augment=args.augment)


def run(args: argparse.Namespace) -> int:
    """Train and write the stage checkpoints; print one line per log interval."""
    config = config_from_args(args)
    folders = list(args.data)
    train(lambda c: load_samples(folders, list(c.cameras), c.image_size, c.horizon), config,
          args.out, datasets=[f.name for f in folders])
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m realm_ros.commands.train`` (the GPU machine needs no ROS)."""
    parser = argparse.ArgumentParser(prog='realm-ros train')
    add_arguments(parser)
    try:
        return run(parser.parse_args(argv))
    except ConfigError as err:
        print(f'realm-ros train: error: {err}', file=sys.stderr)
        return 2


if __name__ == '__main__':
    sys.exit(main())
