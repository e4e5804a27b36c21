"""``realm-ros urdf``: regenerate the robot description under ``urdf/`` from core and the twin."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Output folder and a check-only mode."""
    parser.add_argument('--out-dir', default='urdf',
                        help='folder for panda_droid.urdf and panda_droid.urdf.xacro '
                             '(default: urdf)')
    parser.add_argument('--check', action='store_true',
                        help='only compare with the files in --out-dir; exit 1 if they differ')


def run(args: argparse.Namespace) -> int:
    """Write the files, or with ``--check`` report whether the committed ones are current."""
    import pathlib

    from realm_ros.programs import description

    if args.check:
        out = pathlib.Path(args.out_dir)
        expected = {
            out / 'panda_droid.urdf': description.pretty(description.build_urdf(xacro=False)),
            out / 'panda_droid.urdf.xacro': description.pretty(
                description.build_urdf(xacro=True)),
        }
        stale = [str(p) for p, text in expected.items()
                 if not p.is_file() or p.read_text() != text]
        for path in stale:
            print(f'out of date: {path} (run: realm-ros urdf --out-dir {args.out_dir})')
        return 1 if stale else 0
    for written in description.write(args.out_dir):
        print(f'wrote {written}')
    return 0
