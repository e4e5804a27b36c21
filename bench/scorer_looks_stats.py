"""Give a learned-scorer checkpoint the look statistics of the episodes it was trained on.

    python bench/scorer_looks_stats.py CKPT OUT [--plans train ...] [--data-dir DIR]

A checkpoint trained before the look check (docs/scoring.md, "Its look check") keeps no
``look_stats``, so it cannot say when an episode's look is outside its training looks. This
computes them (``learned.look_stats``) over the first frames of the plans' labelled episodes
(cached by ``realm-ros score train``; default: ``train``, the one plan the first checkpoints
were trained on) and writes the checkpoint with them to OUT; its weights are unchanged.
"""

from __future__ import annotations

import argparse
import os
import pathlib

os.environ.setdefault('MUJOCO_GL', 'egl')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('checkpoint', type=pathlib.Path)
    parser.add_argument('out', type=pathlib.Path)
    parser.add_argument('--plans', nargs='+', default=['train'])
    parser.add_argument('--data-dir', type=pathlib.Path,
                        default=pathlib.Path('data/progress_scorer'))
    args = parser.parse_args()
    from realm_ros.commands import score
    from realm_ros.scorers import learned
    appearance = score._appearance(argparse.Namespace(appearance=None))
    episodes = [e for name in args.plans
                for e in score.labelled(name, args.data_dir, appearance)]
    checkpoint = learned.load_checkpoint(args.checkpoint)
    checkpoint['look_stats'] = learned.look_stats(learned.LearnedScorer(checkpoint), episodes)
    learned.save_checkpoint(args.out, checkpoint)
    print(f'wrote {args.out}: look threshold {checkpoint["look_stats"]["threshold"]:.3f} over '
          f'{len(episodes)} episodes')


if __name__ == '__main__':
    main()
