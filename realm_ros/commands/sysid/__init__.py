"""``realm-ros sysid``: record excitation bags on a world, fit the twin's friction and armature.

``realm-ros sysid record --backend digital_real|franka --out BAGDIR`` writes one bag per excitation
trajectory, ``BAGDIR/traj_000``, ``traj_001``, ... (rosbag2/MCAP, topics ``<ns>/command`` and
``<ns>/joint_states``). Each bag starts with the joint state the first command answers and
holds exactly one trajectory, so boundaries need no markers.

``realm-ros sysid fit BAGDIR... --out PARAMS.yaml`` replays the commands in the batched twin
from each recorded initial state, estimates the actuation latency (``sysid.identify``: a
profile of fits over whole-physics-step latencies), minimises sum ||q_real - q_sim||^2 and
writes ``friction``, ``armature`` (N m, kg m^2; loadable by ``DynamicsParams.from_yaml``) and
``latency_s`` (s; ``MujocoWorld`` replays it when the file is its ``sim_params_file``) plus a
report folder ``PARAMS_report/`` beside it. ``--latency S`` / ``--no-latency`` skip the
estimate. ``realm-ros sysid eval BAGDIR... --params PARAMS.yaml`` scores a params file.

The parts, one idea each: ``record.py`` (the excitation driver), ``graph.py`` (the digital real
brought up in this process), ``fit.py`` (fit and eval, the progress bar), ``report.py``
(PARAMS.yaml, plots, the console table).
"""

from __future__ import annotations

import argparse

from realm_ros.commands import (
    add_quiet_flag,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
)
from realm_ros.commands.sysid.fit import eval_command, find_bags, fit_command
from realm_ros.commands.sysid.graph import (
    ROBOT_SUBNAMESPACE,
    digital_real_graph,
    digital_real_specs,
)
from realm_ros.commands.sysid.record import STATE_TIMEOUT_S, TRACKING_LIMIT, record
from realm_ros.commands.sysid.report import (
    print_table,
    relative_errors,
    write_params,
    write_report,
)
from realm_ros.core import backends, robot
from realm_ros.core.config import renamed

__all__ = [
    'add_arguments', 'digital_real_graph', 'digital_real_specs', 'eval_command', 'find_bags',
    'fit_command', 'print_table', 'record', 'relative_errors', 'ROBOT_SUBNAMESPACE', 'run',
    'STATE_TIMEOUT_S', 'TRACKING_LIMIT', 'write_params', 'write_report',
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``record`` and ``fit``."""
    sub = parser.add_subparsers(dest='sysid_command', required=True, metavar='ACTION')
    rec = sub.add_parser('record', help='execute excitation trajectories and record bags')
    rec.add_argument('--backend', choices=backends.RECORDABLE, default='digital_real',
                     type=lambda name: renamed(name, '--backend'),
                     help='digital_real = the digital real brought up here (lockstep); franka = '
                          'a running lab world in real time')
    rec.add_argument('--out', required=True, help='directory for the bags (must not exist)')
    rec.add_argument('--dynamics', default='',
                     help='digital_real only: hidden dynamics YAML of the digital real')
    rec.add_argument('--trajectories', type=positive_int, default=20,
                     help='number of trajectories')
    rec.add_argument('--duration', type=positive_float, default=10.0,
                     help='seconds per trajectory')
    rec.add_argument('--seed', type=non_negative_int, default=0, help='seed of the excitation')
    rec.add_argument('--namespace', default='/real', help="the world's namespace")
    rec.add_argument('--world-params', default='', metavar='FILE',
                     help="--backend franka: the lab world_node's parameter file (e.g. "
                          "config/franka_bridge.yaml); the excitation keeps to its safety.* "
                          "workspace box and look-ahead, so the bridge never holds one of its "
                          "targets (default: SafetyConfig's defaults, as the digital real)")
    add_quiet_flag(rec)
    rec.add_argument('--verbose', action='store_true',
                     help="every node's log lines on the console (default: ROS's log files)")
    rec.add_argument('--arm-id', default='fr3', choices=robot.ARM_IDS,
                     help='the arm whose joint position and velocity limits the excitation '
                          'keeps to (fr3; fer/panda); --backend digital_real: also the arm the '
                          'digital real imitates and the bridge checks limits for. A real '
                          'arm: give its id here and set franka.arm_id on its world_node')
    fit = sub.add_parser('fit', help='fit friction and armature to recorded bags')
    fit.add_argument('bags', nargs='+', help='bag directories, or directories of bags')
    fit.add_argument('--backend', choices=backends.FITTABLE, default='mujoco',
                     help='the twin: mujoco, or physx (kit-less PhysX, cloned arms)')
    fit.add_argument('--out', required=True, help='PARAMS.yaml to write')
    fit.add_argument('--method', choices=('lm', 'cma', 'cmaes', 'anneal'), default=None,
                     help='lm (default on cpu) = least squares (Levenberg-Marquardt) on a '
                          'fixed residual of --lm-windows windows: exact on noise-free data, at '
                          'the noise floor on noisy data, with confidence intervals; a local '
                          'method, from the centre of the parameter box (also the default '
                          'and only choice on --device gpu --engine warp). cma (cmaes; default '
                          'and only choice on --engine mjx) = CMA-ES on random minibatches '
                          "(REALM's method): a global search, the fallback when LM stops at a "
                          'poor fit (a held-out RMSE far above the encoder noise). anneal = '
                          "simulated annealing (SIMPLER's baseline)")
    fit.add_argument('--seed', type=non_negative_int, default=0)
    fit.add_argument('--generations', type=positive_int, default=None,
                     help='most CMA-ES/annealing generations (default 80) or LM iterations '
                          'of the main fit (default 12; LM stops at its tolerance first)')
    fit.add_argument('--popsize', type=positive_int, default=12, help='cma/anneal: candidates per '
                                                              'generation')
    fit.add_argument('--minibatch', type=positive_int, default=12,
                     help='cma/anneal: windows simulated per generation (all candidates share '
                          'them)')
    fit.add_argument('--lm-windows', type=non_negative_int, default=24,
                     help='lm: windows in the fixed residual, spread evenly over the bags (0 = '
                          'every window; each LM iteration simulates 15 candidates on them)')
    fit.add_argument('--lm-interval-target', type=non_negative_float, default=0.005,
                     help='lm: the widest 95 %% interval (relative, 0.005 = 0.5 %%) the fit must '
                          'reach; wider on the --lm-windows sample, one Gauss-Newton step on '
                          'more windows (0 = off)')
    fit.add_argument('--window', type=non_negative_float, default=1.0,
                     help='window length, s (0 = whole trajectories)')
    fit.add_argument('--holdout', type=int, default=-1,
                     help='trajectories held out for validation (-1 = 20 %%, at least 1 if '
                          'there are 2 or more)')
    latency = fit.add_mutually_exclusive_group()
    latency.add_argument('--latency', type=non_negative_float, default=None, metavar='S',
                         help='known actuation latency of the recorded arm, s: replayed in '
                              'the fit instead of estimating it from the bags')
    latency.add_argument('--no-latency', action='store_true',
                         help='fit a twin without actuation latency (latency_s: 0; the '
                              'behaviour before latency estimation)')
    fit.add_argument('--max-latency', type=non_negative_float, default=0.05,
                     help='largest actuation latency searched, s')
    fit.add_argument('--profile', choices=('fast', 'full'), default='fast',
                     help='latency profile: fast = one full fit at the searched latency and '
                          'short warm-started fits at its neighbours; full = a full fit from '
                          'scratch at every latency visited (the simple path)')
    fit.add_argument('--device', choices=('cpu', 'gpu'), default='cpu',
                     help='cpu = mujoco.rollout threads; gpu = on a GPU, by --engine')
    fit.add_argument('--engine', choices=('warp', 'mjx'), default='warp',
                     help='--device gpu: warp = least squares at every latency in lockstep '
                          'on MuJoCo Warp (core/sysid/lsq_batch.py; --lm-windows, --window, '
                          '--generations apply; needs the warp extra); mjx = the whole fit '
                          '(every latency, the CMA-ES population, the windows) in jitted '
                          'MuJoCo MJX calls on JAX, with its own schedule '
                          '(mjx_fit.DeviceFitOptions: 3-step windows; --generations, '
                          '--popsize, --minibatch, --window, --profile apply to cpu only; '
                          'needs the gpu extra)')
    fit.add_argument('--threads', type=positive_int, default=2, help='rollout threads (cpu)')
    fit.add_argument('--namespace', default=None, help='world namespace inside the bags')
    fit.add_argument('--truth', default='',
                     help='digital real only: its dynamics YAML, to report recovery errors')
    add_quiet_flag(fit)
    ev = sub.add_parser('eval', help='per-joint RMSE of the twin with a params file on bags')
    ev.add_argument('bags', nargs='+', help='bag directories, or directories of bags')
    ev.add_argument('--params', default='', help='PARAMS.yaml ("" = the twin defaults)')
    ev.add_argument('--latency', type=non_negative_float, default=None,
                    help="actuation latency to replay, s (default: the params file's "
                         'latency_s, else 0)')
    ev.add_argument('--namespace', default=None, help='world namespace inside the bags')


def run(args: argparse.Namespace) -> int:
    """Dispatch to record, fit or eval."""
    if args.sysid_command == 'record':
        return record(args)
    if args.sysid_command == 'eval':
        return eval_command(args)
    return fit_command(args)
