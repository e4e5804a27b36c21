"""``realm-ros arena``: blind pairwise judging of episode videos, and the ranking of the answers.

``realm-ros arena serve RUN_DIR...`` serves the judges' page over the videos that
``realm-ros paired-eval --videos`` wrote; ``realm-ros arena rank RUN_DIR...`` fits Bradley-Terry
to the answers, prints it beside the rubric ranking with their agreement and puts it into the
first run folder's summary.json and report (docs/arena.md).
"""

from __future__ import annotations

import argparse
import json
import sys

from realm_ros.commands import non_negative_int, path_arg, port
from realm_ros.core.errors import ConfigError
from realm_ros.core.preferences import TIE_MODELS

WORLDS = {'all': None, 'real': ('real',), 'sim': ('sim',)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``serve`` and ``rank``."""
    sub = parser.add_subparsers(dest='arena_command', required=True, metavar='ACTION')
    serve = sub.add_parser('serve', help='serve the blind judging page',
                           description="Serve the blind A/B judging page over the run folders' "
                                       'episode videos (paired-eval --videos).')
    rank = sub.add_parser('rank', help='Bradley-Terry ranking of the judgments',
                          description='Fit Bradley-Terry to the judgments; print it beside the '
                                      'rubric ranking; write it into summary.json and the '
                                      'report.')
    for child in (serve, rank):
        child.add_argument('run_dirs', nargs='+', type=path_arg, metavar='RUN_DIR',
                           help='paired-eval output folders (episodes.jsonl, videos/)')
        child.add_argument('--db', type=path_arg, default=None,
                           help='SQLite file of the judgments (default RUN_DIR/arena.sqlite of '
                                'the first folder)')
        child.add_argument('--world', choices=tuple(WORLDS), default='all',
                           help='judge the videos of this world only')
    serve.add_argument('--host', default='127.0.0.1',
                       help='address to listen on (127.0.0.1: this machine only)')
    serve.add_argument('--port', type=port, default=8765, help='port (0 = any free port)')
    serve.add_argument('--seed', type=non_negative_int, default=None,
                       help='seed of the pair order and sides (default: random)')
    rank.add_argument('--ties', choices=TIE_MODELS, default='drop',
                      help='drop (RobotArena-infinity: MLE on non-ties), half (a tie is half a '
                           "win each) or davidson (Davidson's tie model)")
    rank.add_argument('--bootstrap', type=non_negative_int, default=1000,
                      help='bootstrap resamples of the judgments for the intervals')
    rank.add_argument('--seed', type=non_negative_int, default=0, help='bootstrap seed')
    rank.add_argument('--json', action='store_true', help='print the section as JSON')
    rank.add_argument('--no-write', action='store_true',
                      help='do not touch summary.json or the report')


def _open(args: argparse.Namespace):
    from realm_ros.arena.catalog import Catalog
    from realm_ros.arena.ranking import DB_NAME
    from realm_ros.arena.store import Store
    for run_dir in args.run_dirs:
        if not run_dir.expanduser().is_dir():
            raise ConfigError(f'RUN_DIR: {run_dir} is not a folder')
    db = args.db or args.run_dirs[0] / DB_NAME
    return Catalog(args.run_dirs, WORLDS[args.world]), Store(db)


def run(args: argparse.Namespace) -> int:
    """Serve the page, or rank the judgments."""
    if args.arena_command == 'serve':
        return _serve(args)
    return _rank(args)


def _serve(args: argparse.Namespace) -> int:
    from realm_ros.arena import server
    if not 0 <= args.port <= 65535:
        raise ConfigError(f'--port must be in 0..65535, got {args.port}')
    catalog, store = _open(args)
    app = server.create_app(catalog, store, seed=args.seed)
    sock = server.bind(args.host, args.port)
    host, port = sock.getsockname()[:2]
    shown = f'[{host}]' if ':' in host else host
    print(f'arena: http://{shown}:{port}/  ({len(catalog.slots)} pairs of videos, '
          f'{len(catalog.policies())} policies, {len(catalog.run_dirs)} run folder(s); '
          f'judgments in {store.path})', flush=True)
    print(f"organiser's ranking (do not give this to judges): "
          f'http://{shown}:{port}/ranking/{store.organiser_key}', flush=True)
    try:
        server.serve(app, sock)
    except KeyboardInterrupt:
        pass
    print('arena stopped; every answer is in the database', file=sys.stderr)
    return 0


def _rank(args: argparse.Namespace) -> int:
    from realm_ros.arena.ranking import format_section, preferences, write_summary
    if args.bootstrap < 0:
        raise ConfigError(f'--bootstrap must be >= 0, got {args.bootstrap}')
    catalog, store = _open(args)
    section = preferences(catalog, store, ties=args.ties, n_bootstrap=args.bootstrap,
                          seed=args.seed)
    if not section['worlds']:
        raise ConfigError(f'{store.path}: no judgments yet (realm-ros arena serve)')
    print(json.dumps(section, indent=2) if args.json else format_section(section))
    if not args.no_write:
        path = write_summary(args.run_dirs[0], section)
        if path is not None and not args.json:
            print(f'written: {path} (preferences) and {path.parent / "report.html"}')
    return 0
