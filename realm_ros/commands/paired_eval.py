"""``realm-ros paired-eval``: bring up the paired-evaluation graph in one process and run it.

The nodes and their parameters come from :func:`realm_ros.graph.paired_eval_graph`, the same
definition ``launch/paired_eval.launch.py`` uses, so a laptop run and a lab launch are the same
graph. Re-running with the same ``--out`` resumes: finished episodes are not run again.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import threading
from typing import TYPE_CHECKING, Any

from realm_ros.commands import (
    add_list_argument,
    add_run_flags,
    appearance_flag,
    decided_probability_or_off,
    dynamics_flag,
    non_negative_int,
    out_folder,
    path_arg,
    policy_specs,
    positive_int,
    sim_params_flag,
    stopping,
    unit_interval,
)
from realm_ros.core import backends, perturbations, provenance
from realm_ros.core.config import flags_named, given_path, renamed
from realm_ros.core.errors import ConfigError, InfrastructureError
from realm_ros.core.evaluation import EvalConfig

if TYPE_CHECKING:
    from realm_ros.ros.runner import NodeRunner


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the CLI; every flag overrides the config file's field of the same name."""
    parser.add_argument('--out', required=True, type=path_arg,
                        help='output folder (episodes.jsonl, summary.json, report.html); '
                             'an existing one is resumed')
    parser.add_argument('--config', type=path_arg, default=None,
                        help='evaluation YAML (default: config/paired_eval.yaml)')
    parser.add_argument('--real', choices=backends.REAL, default=None,
                        type=lambda name: renamed(name, '--real'),
                        help='real world: the digital real or the arm via franka_ros2')
    parser.add_argument('--sim', choices=backends.SIM, default=None,
                        help='simulated twin')
    add_list_argument(parser, '--tasks', 'task names', 'TASK')
    parser.add_argument('--policies', nargs='+', default=None,
                        help='policy[:skill] or label=policy[:key=value,...]; a skill is a '
                             'rung number or name (scripted:good)')
    parser.add_argument('--twin-only', nargs='+', default=None, metavar='LABEL',
                        help='policies (by label) run in the twin only: their real mean '
                             'progression is predicted from the policies run in both worlds, '
                             'with a 90 %% prediction interval (docs/evaluation.md)')
    parser.add_argument('--perturbations', nargs='+', default=None,
                        help='REALM perturbation codes (Default, V-LIGHT, ...)')
    parser.add_argument('--intensity', type=unit_interval, default=None,
                        help='perturbation intensity in [0, 1] (1 = REALM ranges); run several '
                             'for a sweep')
    parser.add_argument('--episodes-per-cell', type=positive_int, default=None,
                        help='episodes per (task, perturbation, policy)')
    parser.add_argument('--max-steps', type=positive_int, default=None,
                        help='control steps per episode')
    parser.add_argument('--sim-params', default=None,
                        help='identified twin parameters YAML (realm-ros sysid fit)')
    parser.add_argument('--real-dynamics', default=None,
                        help='digital real hidden dynamics YAML')
    parser.add_argument('--appearance', default=None, metavar='FILE',
                        help='digital real: hidden appearance YAML (config/appearance/'
                             'lab_demo.yaml format; the twin never reads it)')
    parser.add_argument('--visual-match', default=None, metavar='DIR',
                        help='the twin: a `realm-ros cameras match` folder (visual matching)')
    parser.add_argument('--variant-aggregation', type=non_negative_int, default=0, metavar='N',
                        help="SIMPLER's variant aggregation: after the pairs, the sim side of "
                             'the same plan on N looks of the twin (its own, backgrounds, '
                             'lighting, table textures, distractors; SIMPLER uses 9), averaged, '
                             'in summary.json and the report beside the twin')
    parser.add_argument('--seed', type=non_negative_int, default=None,
                        help='seed of the evaluation')
    parser.add_argument('--cameras', action='store_true', default=None,
                        help='render and publish camera images (vision policies)')
    parser.add_argument('--execute-horizon', type=non_negative_int, default=None,
                        help="actions executed open loop per chunk (policy_node "
                             "execute_horizon; 0 = each policy's own)")
    parser.add_argument('--until-decided', type=decided_probability_or_off, default=None,
                        metavar='P',
                        help='choose each next pair (policy, task) where it most reduces the '
                             'uncertainty of the real ranking; stop when every adjacent pair '
                             'of policies is ordered with probability P (e.g. 0.95) or at '
                             '--budget')
    parser.add_argument('--budget', type=non_negative_int, default=None,
                        help='with --until-decided: at most this many pairs (default: four '
                             'times the fixed plan)')
    parser.add_argument('--allocation', choices=('adaptive', 'uniform'), default=None,
                        help='with --until-decided: adaptive (default), or uniform round-robin')
    parser.add_argument('--reuse-real', type=path_arg, default=None, metavar='DIR',
                        help='take the real episodes of the same specs from an earlier run '
                             '(re-evaluating a re-identified twin re-runs only the sim side)')
    parser.add_argument('--monitor', action='store_true', help='also run monitor_node')
    parser.add_argument('--record', action='store_true',
                        help='record both worlds (commands, joint states) to one rosbag2/MCAP '
                             'bag per pair under OUT/bags_real and OUT/bags_sim')
    parser.add_argument('--videos', nargs='?', const='exterior_1', default='',
                        metavar='CAMERA[,CAMERA...]',
                        help="save each episode's video of CAMERA (default exterior_1) as "
                             'OUT/videos/<role>/<episode id>.webm, named in its record, for '
                             '`realm-ros arena serve` and `realm-ros score OUT` (the worlds '
                             'render that camera); a comma list (exterior_1,wrist: what the '
                             'wrist scorer checkpoint reads) also saves each further camera as '
                             'OUT/videos/<role>/<camera>/<episode id>.webm, all named in the '
                             "record's camera_videos")
    add_run_flags(parser, 'episodes')
    parser.add_argument('--verbose', action='store_true',
                        help="every node's log lines on the console too (default: in "
                             'OUT/logs/, with warnings and errors shown above the bar)')


def load_config(args: argparse.Namespace) -> EvalConfig:
    """Return the evaluation config: the YAML file with the CLI's overrides applied."""
    from realm_ros.graph import share_path
    path = args.config or share_path('config/paired_eval.yaml')
    overrides = {
        'real': args.real, 'sim': args.sim,
        'tasks': tuple(args.tasks) if args.tasks else None,
        'policies': tuple(policy_specs(args.policies)) if args.policies else None,
        'perturbations': tuple(args.perturbations) if args.perturbations else None,
        'episodes_per_cell': args.episodes_per_cell, 'max_steps': args.max_steps,
        'intensity': args.intensity,
        'sim_params_file': None if args.sim_params is None else sim_params_flag(args.sim_params),
        'real_dynamics_file': None if args.real_dynamics is None else dynamics_flag(
            args.real_dynamics, '--real-dynamics'),
        'real_appearance_file': given_path(args.appearance, '--appearance'),
        'visual_match_dir': _absdir(args.visual_match),
        'seed': args.seed, 'cameras': args.cameras,
        'until_decided': args.until_decided, 'budget': args.budget,
        'allocation': args.allocation,
        'twin_only': tuple(args.twin_only) if getattr(args, 'twin_only', None) else None,
    }
    given = {name: FLAGS.get(name, '--' + name.replace('_', '-'))
             for name, value in overrides.items() if value is not None}
    with flags_named(EvalConfig, given):  # a mistyped flag is the flag's fault, not the file's
        config = EvalConfig.from_yaml(path, **overrides)
    # --appearance read now, not when the digital real starts; refused where the real world is
    # a lab arm (it would have no effect), as episode and dataset refuse it.
    appearance_flag(args.appearance or '', config.real, '--real' if args.real else f'{path}: real')
    return config


#: Fields whose flag is not ``--`` + the field name with dashes.
FLAGS = {'sim_params_file': '--sim-params', 'real_dynamics_file': '--real-dynamics',
         'real_appearance_file': '--appearance', 'visual_match_dir': '--visual-match'}


def _absdir(path: str | None) -> str | None:
    if path is None or path == '':
        return path
    resolved = pathlib.Path(path).expanduser().resolve()
    if not (resolved / 'match.yaml').is_file():
        raise ConfigError(f'--visual-match: {path} has no match.yaml (realm-ros cameras match)')
    return str(resolved)


def reuse_real(config: EvalConfig, out: pathlib.Path, source: pathlib.Path) -> int:
    """Copy the real episodes of this plan's pairs from ``source``/episodes.jsonl into ``out``."""
    from realm_ros.core.evaluation import REAL, EpisodeLog, plan_pairs
    path = source.expanduser() / 'episodes.jsonl'
    if not path.is_file():
        raise ConfigError(f'--reuse-real: {path} does not exist')
    log = EpisodeLog(out / 'episodes.jsonl')
    return log.import_world(path, REAL, [s.pair_id for s in plan_pairs(config)])


def check_records(config: EvalConfig, out: pathlib.Path, execute_horizon: int,
                  rerun_changed: bool) -> list[provenance.Changed]:
    """Reconcile ``out``'s records with this run's settings (:func:`provenance.reconcile`):
    refuse a changed episode naming the setting, or, with ``rerun_changed``, return them."""
    path = out / 'episodes.jsonl'
    if not path.is_file():
        return []
    from realm_ros.core.evaluation import EpisodeLog
    from realm_ros.programs.paired import FLAGS, settings_of
    return provenance.reconcile(EpisodeLog(path), settings_of(config, execute_horizon),
                                rerun_changed, str(out), FLAGS)


def build_nodes(config: EvalConfig, out_dir: pathlib.Path, runner: NodeRunner,
                monitor: bool = False, quiet: bool = False, record: bool = False,
                policy: dict[str, Any] | None = None, videos: str = '',
                rerun_changed: bool = False) -> list[Any]:
    """Start every node of the graph in this process on ``runner`` (rclpy initialised).

    Each node spins as soon as it exists (a later node may wait for an earlier one).
    """
    from realm_ros.graph import evaluator_parameters, paired_eval_graph

    nodes = []
    for spec in paired_eval_graph(config, str(out_dir), monitor=monitor, record=record,
                                  policy=policy, videos=videos):
        params = evaluator_parameters(spec, config)
        if spec.executable == 'evaluator_node':
            # In one process the CLI drives the evaluation loop itself (progress bar, Ctrl-C).
            params.update(autostart=False, quiet=quiet, rerun_changed=rerun_changed)
        nodes.append(runner.start(spec.node_class(), spec.name, spec.namespace, params,
                                  spec.remappings))
    return nodes


def variant_aggregation(config: EvalConfig, variants: Any, out: pathlib.Path,
                        summary: dict[str, Any] | None, quiet: bool = False,
                        rerun_changed: bool = False) -> dict[str, Any]:
    """Run the sim side of the plan on every variant (``realm_ros.sweep.variants``), add the
    aggregate to ``summary.json`` beside the twin's, and write the report again."""
    import json

    from realm_ros.commands.sweep import policy_cameras
    from realm_ros.programs.report import add_variant_aggregation
    from realm_ros.sweep.variants import format_table, run_variant_aggregation

    path = out / 'summary.json'
    if summary is None and path.is_file():
        summary = json.loads(path.read_text())
    summary = dict(summary or {})
    real = {e['policy']: e['real_progress'] for e in summary.get('per_policy', [])}
    section = run_variant_aggregation(
        config, variants, out, real,
        cameras_for=lambda entry: policy_cameras(entry, bool(config.cameras)),
        rerun_changed=rerun_changed)
    section['visual_match_dir'] = config.visual_match_dir or ''
    summary['variant_aggregation'] = section
    path.write_text(json.dumps(summary, indent=2))
    add_variant_aggregation(out, summary)
    if not quiet:
        print(format_table(section), flush=True)
    return section


def run(args: argparse.Namespace) -> int:
    """Run the evaluation; Ctrl-C stops it and keeps every finished episode."""
    import rclpy

    from realm_ros import console
    from realm_ros.ros import logs

    console.set_quiet(args.quiet)
    console.capture_warnings()
    config = load_config(args)
    if args.perturbations and perturbations.DEFAULT not in args.perturbations \
            and perturbations.DEFAULT in config.perturbations:
        console.warn(f'--perturbations has no Default: {perturbations.BASELINE_REASON}')
    out = out_folder(args.out)
    if args.execute_horizon is not None and args.execute_horizon < 0:
        raise ConfigError(f'--execute-horizon must be >= 0, got {args.execute_horizon}')
    # Before any node starts: records made with other settings are refused (or re-run).
    changed = check_records(config, out, args.execute_horizon or 0, args.rerun_changed)
    if changed:
        from realm_ros.programs.paired import FLAGS
        console.warn(provenance.rerun_line(changed, FLAGS))
    variants = None
    if getattr(args, 'variant_aggregation', 0):
        from realm_ros.core.appearance import VariantSet
        variants = VariantSet(args.variant_aggregation, config.seed)
        if not backends.get(config.sim).looks:
            raise ConfigError(f'--variant-aggregation dresses the MuJoCo twin; --sim is '
                              f'{config.sim!r}')
    if args.reuse_real is not None:
        reused = reuse_real(config, out, args.reuse_real)
        console.line(f'reusing {reused} real episode(s) from {args.reuse_real}')
    console.line(f'paired evaluation: {len(config.tasks)} task(s) x {len(config.perturbations)} '
                 f'perturbation(s) x {len(config.policies)} policies x '
                 f'{config.episodes_per_cell} episodes; real = {config.real}, sim = {config.sim}'
                 f'{" with " + config.sim_params_file if config.sim_params_file else ""}; '
                 f'ROS_DOMAIN_ID={os.environ.get("ROS_DOMAIN_ID", "0")}')
    # Node lines go to OUT/logs/ (ROS's log files); warnings and errors come back above the bar.
    # No rclpy signal handlers: Ctrl-C is a KeyboardInterrupt here alone, and the context
    # stays valid while the graph is stopped in order (rclpy's handler shut it down under
    # running callbacks: "publisher's context is invalid" tracebacks, a 5 s stall).
    from realm_ros.ros.runner import NodeRunner, init
    init(logs.init_args(out, args.verbose))
    if not args.verbose:
        console.line(f'node logs: {logs.log_dir()}')

    runner = NodeRunner()
    interrupted = False
    try:
        if not args.verbose:
            runner.add(logs.ConsoleEcho())
        policy = None
        if args.execute_horizon is not None:
            policy = {'execute_horizon': args.execute_horizon}
        # --quiet keeps the evaluator's bar, final table and report path (console.set_quiet
        # above drops the other lines).
        nodes = build_nodes(config, out, runner, args.monitor, False, args.record, policy,
                            videos=getattr(args, 'videos', ''),
                            rerun_changed=args.rerun_changed)
        operator = next((n for n in nodes if n.get_name() == 'operator'), None)
        if operator is not None and sys.stdin is not None and sys.stdin.isatty():
            # The operator types in this terminal (one key or command per line, h for help).
            from realm_ros.nodes.operator_node import read_terminal
            threading.Thread(target=read_terminal, args=(operator, sys.stdin),
                             daemon=True).start()
        evaluator = next(n for n in nodes if n.get_name() == 'evaluator')
        summary = evaluator.run_all()
        if variants is not None:
            variant_aggregation(config, variants, out, summary,
                                rerun_changed=args.rerun_changed)
    except InfrastructureError as err:
        print(f'realm-ros paired-eval: {err}\n(finished episodes are kept in {out}; '
              're-run the same command to resume)', file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        interrupted = True
        raise  # realm_ros.cli prints the one line (interrupted()) once all is stopped
    finally:
        with stopping.cleanup(interrupted):
            runner.shutdown()
            rclpy.try_shutdown()
    return 0


def interrupted(args: argparse.Namespace) -> str:
    """The line Ctrl-C ends the run with (:mod:`realm_ros.commands.stopping`)."""
    return stopping.interrupted_line(args.out.expanduser().resolve())
