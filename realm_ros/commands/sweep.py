"""``realm-ros sweep``: a grid of tasks x perturbations (x intensities) x seeds x policies x
worlds, run in process, on local processes or on a Ray cluster, resumable, each cell once.

Flags mean what ``paired-eval``'s of the same name mean (``--out``, ``--tasks``,
``--policies``, ``--perturbations``, ``--intensity``, ``--episodes-per-cell``, ``--max-steps``,
``--seed``, ``--cameras``); the grid is :mod:`realm_ros.core.sweep`'s, the executors
:mod:`realm_ros.sweep`'s. ``OUT/episodes.jsonl`` is the same crash-safe episode log
``paired-eval`` writes (a re-run with the same ``--out`` runs only what is missing, from any
machine that sees the folder); ``OUT/summary.json`` and ``OUT/report.html`` hold per world the
per-policy, per-task and per-perturbation results with bootstrap CIs, the Bradley-Terry
ranking, and what was retried. ``--device gpu`` runs the scripted ladder's cells batched in
MJX (world ``mjx``; needs ``mujoco-mjx`` and ``jax``) and learned policies' cells batched on
MuJoCo Warp (world ``warp``: cameras ray traced and the policy run on the device; needs
``mujoco-warp``; ``--gpu-engine`` picks one for all), ``--compare-cpu N`` re-runs N of them on
the CPU twin and checks the records agree. docs/scaling.md: clusters; docs/performance.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import sys
from typing import Any, Sequence

from realm_ros import console
from realm_ros.commands import (
    add_list_argument,
    add_run_flags,
    decided_probability,
    non_negative_int,
    out_folder,
    path_arg,
    policy_specs,
    positive_int,
    sim_params_flag,
    stopping,
    task_names,
    unit_interval,
)
from realm_ros.core import backends, perturbations, provenance
from realm_ros.core.config import CAMERA_NAMES
from realm_ros.core.errors import ConfigError, InfrastructureError, RealmError
from realm_ros.core.evaluation import PolicyEntry, scored
from realm_ros.core.sweep import (
    FLAGS,
    LOOK_WORLDS,
    Cell,
    SweepConfig,
    plan_cells,
    skipped_cells,
)
from realm_ros.core.types import DEFAULT_MAX_STEPS, record_role
from realm_ros.sweep.mjx import refuse_on_gpu, solver_iterations

DEVICES = ('cpu', 'gpu')
#: What ``--device gpu`` runs the twin's cells on (``--gpu-engine``).
GPU_ENGINES = ('auto', 'mjx', 'warp')
#: GPU cells a GPU sweep re-runs on the CPU twin unless --compare-cpu says otherwise: the
#: agreement (with its intervals) is part of every GPU sweep's report (docs/scaling.md).
DEFAULT_COMPARE_CPU = 8


def compare_cells(compare: int | None, device: str) -> int:
    """How many GPU cells re-run on the CPU twin: ``--compare-cpu`` as given, else
    :data:`DEFAULT_COMPARE_CPU` on the GPU (every GPU sweep checks itself) and none on the CPU."""
    if compare and device != 'gpu':
        raise ConfigError('--compare-cpu checks a GPU run against the CPU twin: add --device gpu')
    if compare is None:
        return DEFAULT_COMPARE_CPU if device == 'gpu' else 0
    if compare < 0:
        raise ConfigError(f'--compare-cpu must be a positive cell count, got {compare}')
    return compare


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The grid (paired-eval's names), the worlds, the executor."""
    parser.add_argument('--out', required=True, type=path_arg,
                        help='output folder (episodes.jsonl, summary.json, report.html, '
                             'sweep_events.jsonl); an existing one is resumed')
    add_list_argument(parser, '--tasks', 'task names (default pick_spoon)', 'TASK')
    parser.add_argument('--policies', nargs='+', default=['scripted:0'],
                        help='policy[:skill] or label=policy[:key=value,...] (as paired-eval; '
                             'a skill is a rung number or name: good=scripted:good)')
    parser.add_argument('--perturbations', nargs='+', default=['Default'],
                        help='REALM perturbation codes (Default, V-LIGHT, ...) or "all"')
    parser.add_argument('--intensity', nargs='+', type=unit_interval, default=[1.0],
                        help='perturbation intensities in [0, 1] (several: a sweep over them)')
    parser.add_argument('--episodes-per-cell', type=positive_int, default=5,
                        help='episodes (seeds) per (task, perturbation, intensity, policy)')
    parser.add_argument('--max-steps', type=positive_int, default=DEFAULT_MAX_STEPS,
                        help='control steps per episode')
    parser.add_argument('--seed', type=non_negative_int, default=0,
                        help="seed of the sweep (paired-eval's: the same initial states)")
    parser.add_argument('--videos', nargs='?', const='exterior_1', default=None,
                        metavar='CAMERA[,CAMERA...]',
                        help="save each cell's CAMERA (exterior_1) as OUT/videos/<world>/"
                             '<episode id>.webm, named in its record, for the arena and '
                             '`realm-ros score OUT`; a comma list (exterior_1,wrist: what the '
                             'wrist scorer checkpoint reads) also saves each further camera as '
                             "OUT/videos/<world>/<camera>/<episode id>.webm (the record's "
                             'camera_videos)')
    parser.add_argument('--cameras', action='store_true',
                        help='render every camera (vision policies get theirs anyway)')
    parser.add_argument('--worlds', nargs='+', default=['mujoco'],
                        choices=(*backends.SWEEPABLE, *LOOK_WORLDS),
                        help='worlds: the MuJoCo twin, the twin on kit-less PhysX, the visually '
                             'matched twin (--visual-match), the twin over --twin-variants looks '
                             '(episode k on variant k mod N)')
    parser.add_argument('--visual-match', default='', metavar='DIR',
                        help='world matched: a `realm-ros cameras match` folder (adds the '
                             'matched world)')
    parser.add_argument('--twin-variants', type=positive_int, default=9, metavar='N',
                        help="world variants: SIMPLER's variant aggregation over N looks "
                             '(backgrounds, lighting, table textures, distractors; default 9)')
    parser.add_argument('--twin-only', nargs='+', default=[], metavar='LABEL',
                        help='policies run in the later worlds only, not in the first (the '
                             "reference): the first world's mean progression of each is "
                             'predicted from the others with a 90 %% prediction interval '
                             '(docs/evaluation.md)')
    parser.add_argument('--execute-horizon', type=non_negative_int, default=0,
                        help="actions executed open loop per chunk (0 = each policy's own)")
    parser.add_argument('--sim-params', default='', help='identified twin parameters YAML')
    parser.add_argument('--servers', nargs='+', default=[], metavar='LABEL=HOST:PORT,...',
                        help='policy servers a remote policy (openpi, gr00t) is spread over: '
                             'worker i uses address i mod n')
    parser.add_argument('--workers', type=positive_int, default=None,
                        help='worker processes (default 1: in process); with --ray, actors '
                             "(default: the cluster's CPUs)")
    parser.add_argument('--ray', nargs='?', const='', default=None, metavar='ADDRESS',
                        help='run on Ray: no address = a local Ray (or RAY_ADDRESS), auto = '
                             'the cluster of this machine, or HOST:PORT')
    parser.add_argument('--device', default='cpu', choices=DEVICES,
                        help='gpu: the scripted cells batched in MJX (world mjx), learned '
                             'policies batched on MuJoCo Warp (world warp)')
    parser.add_argument('--gpu-engine', default='auto', choices=GPU_ENGINES,
                        help='gpu: mjx or warp for every cell (auto: mjx when every policy '
                             'is scripted, else warp)')
    parser.add_argument('--compare-cpu', nargs='?', type=non_negative_int, const=8,
                        default=None, metavar='N',
                        help='gpu: re-run the first N GPU cells on the CPU twin and put the '
                             'agreement, with intervals, into the report (OUT/compare_cpu.json; '
                             f'default {DEFAULT_COMPARE_CPU} with --device gpu, 0: none)')
    parser.add_argument('--batch', type=positive_int, default=1024,
                        help='gpu: worlds per MJX or Warp batch')
    parser.add_argument('--cells-per-world', type=positive_int, default=1, metavar='K',
                        help='gpu (Warp): units of K x --batch cells, run in --batch worlds, a '
                             'world taking the next cell as soon as its episode ends (keeps the '
                             'GPU full when episodes end at different steps; cells are written '
                             'per unit, so an interrupted unit runs again whole)')
    parser.add_argument('--gpu-workers', type=positive_int, default=1,
                        help='gpu: batch worker processes sharing the GPU, one batch each '
                             '(the host side of a Warp batch, scoring and the policy chains, '
                             'is Python: more processes use more cores)')
    parser.add_argument('--solver-iterations', default='', type=_solver_iterations,
                        help='gpu: MJX solver iterations/line-search iterations, e.g. 4/8')
    parser.add_argument('--until-decided', type=decided_probability, default=None, metavar='P',
                        help="choose each next cell (policy, condition) where it most reduces "
                             "the uncertainty of the first world's ranking; stop when every "
                             'adjacent pair of policies is ordered with probability P or at '
                             '--budget (docs/deciding-rankings.md)')
    parser.add_argument('--budget', type=non_negative_int, default=None,
                        help='with --until-decided: at most this many episodes of the ranked '
                             'world (default: four times the grid)')
    parser.add_argument('--allocation', choices=('adaptive', 'uniform'), default='adaptive',
                        help='with --until-decided: adaptive, or uniform round-robin')
    add_run_flags(parser, 'cells')
    parser.add_argument('--verbose', action='store_true',
                        help="every worker's output on the console too (default: "
                             'OUT/logs/sweep-worker-N.log, Ray: its session logs)')


def _solver_iterations(text: str) -> str:
    """``--solver-iterations`` checked when the arguments are parsed, on any ``--device``
    (it is read on the GPU only): ``N/M`` of positive integers or ''."""
    try:
        solver_iterations(text)
    except ConfigError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix('--solver-iterations ')) from None
    return text


def parse_servers(items: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Parse ``LABEL=HOST:PORT[,HOST:PORT...]`` items into label -> addresses."""
    out: dict[str, tuple[str, ...]] = {}
    for item in items:
        label, sep, rest = item.partition('=')
        addresses = tuple(a.strip() for a in rest.split(',') if a.strip())
        if not sep or not label or not addresses:
            raise ConfigError(f'--servers: expected LABEL=HOST:PORT[,HOST:PORT...], got {item!r}')
        for address in addresses:
            host, colon, port = address.rpartition(':')
            if not colon or not host or not port.isdigit():
                raise ConfigError(f'--servers: {address!r} is not host:port')
        out[label] = addresses
    return out


def policy_cameras(entry: PolicyEntry, every: bool) -> tuple[str, ...]:
    """Return the cameras ``entry``'s policy declares (all of them with ``every``); building
    it checks its settings, so a bad policy stops the sweep before any cell runs."""
    from realm_ros.core.policy import policy_needs

    try:
        declared = policy_needs(entry.policy, **dict(entry.args)).cameras
    except OSError as err:
        raise ConfigError(f'--policies {entry.label}: {err}') from None
    except RealmError as err:
        raise ConfigError(f'--policies {entry.label}: {err}') from None
    return tuple(c for c in CAMERA_NAMES if every or c in declared)


def _engines(world: str) -> tuple[str, ...]:
    """The GPU engines of sweep world ``world`` (none for a looked world)."""
    backend = backends.BACKENDS.get(world)
    return backend.gpu_engines if backend else ()


def build_config(args: argparse.Namespace) -> SweepConfig:
    """Return the sweep's config from the flags."""
    codes = list(perturbations.PERTURBATIONS) if args.perturbations == ['all'] else \
        args.perturbations
    worlds = tuple(args.worlds)
    policies = policy_specs(args.policies)
    if args.device == 'gpu':
        engine = gpu_engine(getattr(args, 'gpu_engine', 'auto'), policies)
        worlds = tuple(dict.fromkeys(engine if engine in _engines(w) else w for w in worlds))
    match = getattr(args, 'visual_match', '')
    if match:
        match_dir = pathlib.Path(match).expanduser().resolve()
        if not (match_dir / 'match.yaml').is_file():
            raise ConfigError(f'--visual-match: {match} has no match.yaml (realm-ros cameras '
                              'match)')
        match = str(match_dir)
        worlds = tuple(dict.fromkeys((*worlds, 'matched')))
    sim_params = sim_params_flag(args.sim_params)
    return SweepConfig(tasks=tuple(task_names(args.tasks, ['pick_spoon'])),
                       policies=tuple(policies),
                       perturbations=tuple(codes), intensities=tuple(args.intensity),
                       episodes_per_cell=args.episodes_per_cell, max_steps=args.max_steps,
                       seed=args.seed, worlds=worlds, cameras=args.cameras,
                       execute_horizon=args.execute_horizon, sim_params_file=sim_params,
                       visual_match_dir=match,
                       twin_variants=getattr(args, 'twin_variants', 9),
                       twin_only=tuple(getattr(args, 'twin_only', None) or ()))


def gpu_engine(engine: str, policies: Sequence[str]) -> str:
    """Return the GPU world of ``--gpu-engine``: ``mjx`` or ``warp`` (auto: ``mjx`` when every
    policy is scripted, the batch MJX's agreement was measured on, else ``warp``)."""
    if engine not in GPU_ENGINES:
        raise ConfigError(f'--gpu-engine: choose one of {list(GPU_ENGINES)}, got {engine!r}')
    if engine != 'auto':
        return engine
    scripted = all(PolicyEntry.parse(p).policy == 'scripted' for p in policies)
    return 'mjx' if scripted else 'warp'


def make_executor(args: argparse.Namespace, options: dict[str, Any],
                  hook: Any = None) -> Any:
    """Return the executor the flags ask for: Ray, local processes or this process."""
    from realm_ros.sweep.executors import InProcessExecutor, ProcessExecutor

    verbose = getattr(args, 'verbose', False)
    if args.ray is not None:
        from realm_ros.sweep.ray_executor import RayExecutor
        return RayExecutor(args.ray or os.environ.get('RAY_ADDRESS') or None, args.workers,
                           hook=hook, options=options,
                           init_kwargs={'log_to_driver': True} if verbose else None)
    gpu_workers = getattr(args, 'gpu_workers', 1)
    if (args.workers and args.workers > 1) or gpu_workers > 1:
        # Workers' lines in OUT/logs/ (as paired-eval's node logs), unless --verbose.
        log_dir = None if verbose else _log_dir(args.out)
        return ProcessExecutor(args.workers or 1, gpu_workers, hook=hook, options=options,
                               log_dir=log_dir)
    return InProcessExecutor(hook=hook, options=options)


def report_meta(config: SweepConfig, cells: Sequence[Cell], run: Any) -> dict[str, str]:
    """report.html's title and its line on the grid and the executor."""
    return {'title': 'realm_ros sweep', 'description': (
        f'{len(config.tasks)} task(s) x {len(config.perturbations)} perturbation(s) '
        f'x {len(config.intensities)} intensit(ies) x {config.episodes_per_cell} '
        f'seeds x {len(config.policies)} policies x {len(config.worlds)} world(s) = '
        f'{len(cells)} cells; executor {run.executor}; max {config.max_steps} steps')}


def finish(out: pathlib.Path, config: SweepConfig, cells: Sequence[Cell], run: Any, log: Any,
           quiet: bool = False) -> dict[str, Any]:
    """Write summary.json and report.html for the grid's records; print the table (``quiet``:
    without the throughput line)."""
    from realm_ros.core.sweep import format_sweep_table, summarize_sweep
    from realm_ros.sweep.driver import EVENTS, EventLog
    from realm_ros.sweep.report import write_sweep_report

    # In the plan's order (not the order workers finished in): the same grid gives the same
    # summary on any executor.
    order = {c.key: i for i, c in enumerate(cells)}
    mine = sorted((r for r in log.records if (r['pair_id'], record_role(r)) in order),
                  key=lambda r: order[(r['pair_id'], record_role(r))])
    summary = summarize_sweep(mine, seed=config.seed, skipped=skipped_cells(config))
    summary['retries'] = {**EventLog(out / EVENTS).totals(), 'resumed': run.resumed}
    summary['run'] = run.as_dict()
    summary['config'] = dataclasses.asdict(config)
    # What the records were actually run with (each record carries its own made_by).
    summary['made_by'] = provenance.summarize(scored(mine))
    (out / 'summary.json').write_text(json.dumps(summary, indent=2))
    write_sweep_report(out, summary, report_meta(config, cells, run))
    console.result(format_sweep_table(summary))
    if run.ran and run.wall_s > 0 and not quiet:
        console.line(f'\nthis run: {run.ran} cells in {run.wall_s:.1f} s '
                     f'({run.ran / run.wall_s:.2f} cells/s, '
                     f'{run.steps / run.wall_s:.0f} world-steps/s) on {run.executor}')
    console.result(f'report: {out / "report.html"}')
    return summary


def run(args: argparse.Namespace) -> int:
    """Run the grid's missing cells, then write the summary and the report."""
    from realm_ros.sweep.driver import run_sweep

    os.environ.setdefault('MUJOCO_GL', 'egl')
    console.set_quiet(args.quiet)
    console.capture_warnings()
    config = build_config(args)
    servers = parse_servers(args.servers)
    videos = getattr(args, 'videos', None)
    video_cameras: tuple[str, ...] = ()
    if videos is not None:
        from realm_ros.core.config import parse_cameras
        video_cameras = parse_cameras(videos, '--videos')
        if not video_cameras:
            raise ConfigError('--videos: name a camera (exterior_1, or a comma list)')
        if 'mjx' in config.worlds or 'warp' in config.worlds:
            raise ConfigError('--videos: the GPU batch (--device gpu) keeps no videos')

    def cameras_for(entry: PolicyEntry) -> tuple[str, ...]:
        wanted = set(policy_cameras(entry, config.cameras)) | set(video_cameras)
        return tuple(c for c in CAMERA_NAMES if c in wanted)

    cells = plan_cells(config, cameras_for, servers)
    if args.perturbations and perturbations.DEFAULT not in args.perturbations \
            and perturbations.DEFAULT in config.perturbations:
        console.warn(f'--perturbations has no Default: {perturbations.BASELINE_REASON}')
    for cell in skipped_cells(config):
        console.warn(f'skipped {cell["task"]} / {cell["perturbation"]}: {cell["reason"]}')
    if config.twin_only and getattr(args, 'until_decided', None) is not None:
        raise ConfigError('--twin-only: --until-decided ranks the first world, which the '
                          'twin-only policies do not run in; use one or the other')
    args.compare_cpu = compare_cells(getattr(args, 'compare_cpu', None), args.device)
    options: dict[str, Any] = {}
    if 'mjx' in config.worlds:
        from realm_ros.sweep.mjx import require_mjx
        require_mjx()
        refuse_on_gpu([c.spec for c in cells if c.world == 'mjx'])
        iterations, ls_iterations = solver_iterations(args.solver_iterations)
        options['gpu'] = {'batch': args.batch, 'iterations': iterations,
                          'ls_iterations': ls_iterations}
    if 'warp' in config.worlds:
        from realm_ros.sweep.warp import refuse_on_warp, require_warp
        require_warp()
        refuse_on_warp([c for c in cells if c.world == 'warp'])
        options.setdefault('gpu', {'batch': args.batch})['warp'] = {}
    out = out_folder(args.out)
    rerun_changed = getattr(args, 'rerun_changed', False)
    if getattr(args, 'until_decided', None) is None:
        # Before any worker starts: records made with other settings are refused (or re-run).
        from realm_ros.sweep.driver import open_log
        changed = open_log(cells, out, rerun_changed)[1]
        if changed:
            console.warn(provenance.rerun_line(changed, FLAGS))
    hook = None
    if video_cameras:
        from realm_ros.sweep.videos import VideoHook
        hook = VideoHook(out, video_cameras)
    executor = make_executor(args, options, hook)
    bar = console.bar(len(cells), 'cells', unit='cell')  # after the last check of the flags
    decided = None
    try:
        console.line(f'sweep: {len(cells)} cells on {executor.name}; writing {out}')
        if getattr(executor, 'log_dir', None):
            console.line(f'worker logs: {executor.log_dir}')
        with executor:
            if getattr(args, 'until_decided', None) is not None:
                from realm_ros.sweep.decided import run_until_decided
                decided = run_until_decided(
                    config, executor, out, args.until_decided, args.budget, args.allocation,
                    cameras_for, servers, progress=bar.update, rerun_changed=rerun_changed)
                cells, run_info, log = decided.cells, decided.run, decided.log
            else:
                run_info, log = run_sweep(cells, executor, out,
                                          args.batch * args.cells_per_world,
                                          progress=bar.update, rerun_changed=rerun_changed)
    except InfrastructureError as err:
        print(f'realm-ros sweep: {err}\n(finished cells are kept in {out}; re-run the same '
              'command to resume)', file=sys.stderr)
        return 1
    finally:
        bar.close()
    summary = finish(out, config, cells, run_info, log, args.quiet)
    if decided is not None:
        from realm_ros.sweep.decided import describe
        summary['until_decided'] = decided.decision
        (out / 'summary.json').write_text(json.dumps(summary, indent=2))
        print(describe(decided.decision))
    compare_n = getattr(args, 'compare_cpu', 0)
    if compare_n:
        from realm_ros.sweep.compare_cpu import compare_with_cpu, summary_section
        from realm_ros.sweep.report import write_sweep_report
        # Part of the GPU sweep's report: summary.json's compare_cpu and report.html's section.
        summary['compare_cpu'] = summary_section(
            compare_with_cpu(out, cells, log.records, compare_n))
        (out / 'summary.json').write_text(json.dumps(summary, indent=2))
        write_sweep_report(out, summary, report_meta(config, cells, run_info))
    return 0


def interrupted(args: argparse.Namespace) -> str:
    """The line Ctrl-C ends the run with (:mod:`realm_ros.commands.stopping`), wherever it
    came: every finished cell is in the log already (written as each ends)."""
    return stopping.interrupted_line(args.out.expanduser().resolve(), 'cells')


def _log_dir(out: pathlib.Path) -> str:
    path = out.expanduser().resolve() / 'logs'
    path.mkdir(parents=True, exist_ok=True)
    return str(path)

