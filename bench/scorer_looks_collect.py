"""Collect one share of a learned-scorer plan's labelled episodes (several processes at once).

    python bench/scorer_looks_collect.py PLAN I N [--data-dir data/progress_scorer]

Runs the looks k of plan PLAN (``realm_ros.scorers.learned.PLANS``) with k % N == I into the
same per-look cache ``realm-ros score train/eval`` read (``commands.score.labelled``), so N
processes collect a plan of many looks in 1/N of the time; the last one to finish (or the next
``score train``/``eval``) joins the looks into the plan's cache file.
"""

from __future__ import annotations

import argparse
import os
import pathlib

os.environ.setdefault('MUJOCO_GL', 'egl')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('plan')
    parser.add_argument('index', type=int)
    parser.add_argument('count', type=int)
    parser.add_argument('--data-dir', type=pathlib.Path,
                        default=pathlib.Path('data/progress_scorer'))
    parser.add_argument('--appearance', default=None)
    args = parser.parse_args()
    from realm_ros.commands import score
    appearance = score._appearance(argparse.Namespace(appearance=args.appearance))
    episodes = score.labelled(args.plan, args.data_dir, appearance, (args.index, args.count))
    print(f'{args.plan} share {args.index}/{args.count}: {len(episodes)} episodes so far')


if __name__ == '__main__':
    main()
