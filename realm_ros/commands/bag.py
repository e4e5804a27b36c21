"""``realm-ros bag``: check and repair rosbag2/MCAP bags (a recorder killed mid-bag).

``realm-ros bag check DIR...`` lists the bags under each DIR (a bag, or any folder with bags
below it) that ``rosbags`` cannot open and exits 1 if there is one; a DIR with no bag is an
error (exit 2), never "every bag opens". ``realm-ros bag repair DIR...`` rewrites
each such bag from its complete records (see :mod:`realm_ros.io.repair`); bags that open are
left alone. Neither needs ROS.
"""

from __future__ import annotations

import argparse

from realm_ros.commands import path_arg
from realm_ros.core.errors import DataError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``check`` and ``repair``."""
    sub = parser.add_subparsers(dest='bag_command', required=True, metavar='ACTION')
    for name, text in (('check', 'list bags that rosbags cannot open (exit 1 if any)'),
                       ('repair', 'make bags cut short by a crash readable again')):
        child = sub.add_parser(name, help=text, description=text)
        child.add_argument('paths', nargs='+', type=path_arg,
                           help='bag directories, or directories of bags')


def run(args: argparse.Namespace) -> int:
    """Check or repair every bag under ``args.paths``."""
    from realm_ros.io.repair import bag_dirs, bag_opens, is_cut, repair_bag

    bags = []
    for root in args.paths:
        if not root.is_dir():
            raise DataError(f'{root} is not a directory (give a bag or a folder of bags)')
        found = bag_dirs(root, recursive=True)
        if not found:
            # Nothing to check is not "every bag opens": a wrong folder, or bags not recorded.
            raise DataError(f'{root}: no bags in it (no *.mcap file below it); give a bag or a '
                            'folder of bags (a run recorded with --record has bags_real/ and '
                            'bags_sim/)')
        bags += found
    cut = [path for path in bags if is_cut(path)]
    if args.bag_command == 'check':
        for path in cut:
            print(f'{path}: cannot be opened: {bag_opens(path)}')
        print(f'{len(cut)} of {len(bags)} bag(s) need repair' if cut
              else f'every bag opens ({len(bags)} checked)')
        return 1 if cut else 0
    for path in cut:
        print(repair_bag(path))
    print(f'repaired {len(cut)} of {len(bags)} bag(s)' if cut
          else f'every bag opens ({len(bags)} checked); nothing to repair')
    return 0
