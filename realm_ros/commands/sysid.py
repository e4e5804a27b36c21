"""``realm-ros sysid``: record excitation bags on a world, fit the twin's friction and armature.

``realm-ros sysid record --backend fake|franka --out BAGDIR`` writes one bag per excitation
trajectory, ``BAGDIR/traj_000``, ``traj_001``, ... (rosbag2/MCAP, topics ``<ns>/command`` and
``<ns>/joint_states``). Each bag starts with the joint state the first command answers and
holds exactly one trajectory, so boundaries need no markers.

``realm-ros sysid fit BAGDIR... --out PARAMS.yaml`` replays the commands in the batched twin
from each recorded initial state, estimates the actuation latency (``sysid.identify``: a
profile of full fits over whole-physics-step latencies), minimises sum ||q_real - q_sim||^2 and
writes ``friction``, ``armature`` (N m, kg m^2; loadable by ``DynamicsParams.from_yaml``) and
``latency_s`` (s; ``MujocoWorld`` replays it when the file is its ``sim_params_file``) plus a
report folder ``PARAMS_report/`` beside it. ``--latency S`` / ``--no-latency`` skip the
estimate.

``--backend fake`` records the digital real as the embedded default runs it: ``fake_franka``
behind ``world_node backend:=franka`` (:func:`digital_real_specs`), in this process.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import pathlib
import time
from typing import Any, Iterator

import numpy as np
import yaml

from realm_ros.core import robot, sysid
from realm_ros.core.config import DigitalRealDynamics, DynamicsParams, sim_params_latency
from realm_ros.core.errors import ConfigError, DataError

#: Watchdog of the excitation driver: largest allowed |q_measured - q_next_target|, rad, and
#: the longest silence of ``joint_states``, s. The targets move at most 0.1 rad per step at half
#: the velocity limit; an arm with heavy friction and armature plus latency lags up to 0.27 rad
#: (config/dynamics/sysid_demo.yaml, 25 trajectories). It stays below the bridge's safety rule
#: ``safety.max_target_error_rad`` (0.3 rad), so the driver stops before the bridge refuses.
TRACKING_LIMIT = 0.28
STATE_TIMEOUT_S = 0.5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``record`` and ``fit``."""
    sub = parser.add_subparsers(dest='sysid_command', required=True, metavar='ACTION')
    rec = sub.add_parser('record', help='execute excitation trajectories and record bags')
    rec.add_argument('--backend', choices=('fake', 'franka'), default='fake',
                     help='fake = the digital real brought up here (lockstep); franka = a '
                          'running lab world in real time')
    rec.add_argument('--out', required=True, help='directory for the bags (must not exist)')
    rec.add_argument('--dynamics', default='',
                     help='fake only: hidden dynamics YAML of the digital real')
    rec.add_argument('--trajectories', type=int, default=20, help='number of trajectories')
    rec.add_argument('--duration', type=float, default=10.0, help='seconds per trajectory')
    rec.add_argument('--seed', type=int, default=0, help='seed of the excitation')
    rec.add_argument('--namespace', default='/real', help="the world's namespace")
    fit = sub.add_parser('fit', help='fit friction and armature to recorded bags')
    fit.add_argument('bags', nargs='+', help='bag directories, or directories of bags')
    fit.add_argument('--backend', choices=('mujoco', 'physx'), default='mujoco',
                     help='the twin: mujoco, or physx (kit-less PhysX, cloned arms)')
    fit.add_argument('--out', required=True, help='PARAMS.yaml to write')
    fit.add_argument('--method', choices=('cmaes', 'anneal'), default='cmaes')
    fit.add_argument('--seed', type=int, default=0)
    fit.add_argument('--generations', type=int, default=80)
    fit.add_argument('--popsize', type=int, default=12)
    fit.add_argument('--minibatch', type=int, default=12,
                     help='windows simulated per generation (all candidates share them)')
    fit.add_argument('--window', type=float, default=1.0,
                     help='window length, s (0 = whole trajectories)')
    fit.add_argument('--holdout', type=int, default=-1,
                     help='trajectories held out for validation (-1 = 20 %%, at least 1 if '
                          'there are 2 or more)')
    latency = fit.add_mutually_exclusive_group()
    latency.add_argument('--latency', type=float, default=None, metavar='S',
                         help='known actuation latency of the recorded arm, s: replayed in '
                              'the fit instead of estimating it from the bags')
    latency.add_argument('--no-latency', action='store_true',
                         help='fit a twin without actuation latency (latency_s: 0; the '
                              'behaviour before latency estimation)')
    fit.add_argument('--max-latency', type=float, default=0.05,
                     help='largest actuation latency searched, s')
    fit.add_argument('--threads', type=int, default=2, help='rollout threads')
    fit.add_argument('--namespace', default=None, help='world namespace inside the bags')
    fit.add_argument('--truth', default='',
                     help='digital real only: its dynamics YAML, to report recovery errors')
    fit.add_argument('--quiet', action='store_true', help='no progress bar')
    ev = sub.add_parser('eval', help='per-joint RMSE of the twin with a params file on bags')
    ev.add_argument('bags', nargs='+', help='bag directories, or directories of bags')
    ev.add_argument('--params', default='', help='PARAMS.yaml ("" = the twin defaults)')
    ev.add_argument('--latency', type=float, default=None,
                    help="actuation latency to replay, s (default: the params file's "
                         'latency_s, else 0)')
    ev.add_argument('--namespace', default=None, help='world namespace inside the bags')


def run(args: argparse.Namespace) -> int:
    """Dispatch to record or fit."""
    if args.sysid_command == 'record':
        return record(args)
    if args.sysid_command == 'eval':
        return eval_command(args)
    return fit_command(args)


def eval_command(args: argparse.Namespace) -> int:
    """Print the per-joint RMSE (mrad) of the twin with ``--params`` replaying the bags."""
    from realm_ros.backends.mujoco.rollout import TwinRollout
    from realm_ros.io.bags import read_run, run_to_trajectory

    trajs = [run_to_trajectory(read_run(b, namespace=args.namespace))
             for b in find_bags(args.bags)]
    params = DynamicsParams.from_yaml(args.params) if args.params else DynamicsParams()
    latency = args.latency
    if latency is None:
        latency = sim_params_latency(args.params) if args.params else 0.0
    sims = TwinRollout(latency_s=latency).simulate([params], trajs)
    rmse = sysid.joint_rmse(sims, trajs) * 1e3
    print(f'{len(trajs)} trajectories, params {args.params or "twin defaults"}, latency '
          f'{latency:.6g} s')
    print('joint RMSE, mrad: ' + ' '.join(f'{v:.3f}' for v in rmse) + f'  mean {rmse.mean():.3f}')
    return 0


# -- record ----------------------------------------------------------------------------------

#: Namespace of the digital real's franka_ros2-shaped side, below the world's namespace.
ROBOT_SUBNAMESPACE = 'franka'


def digital_real_specs(namespace: str, dynamics_file: str) -> list:
    """Return the digital real as the embedded default runs it: two :class:`NodeSpec`.

    ``fake_franka`` (the franka_ros2-shaped arm, ``<namespace>/franka``, lockstep, hidden
    dynamics ``dynamics_file``) behind ``world_node backend:=franka`` (``<namespace>``, the
    shared world interface that is driven and recorded, ``fr3_`` joints, digital-real resets),
    both with ``/clock`` remapped to ``<namespace>/clock``. The bridge's safety monitor checks
    every excitation target exactly as it would on the lab's arm.
    """
    from realm_ros.graph import NodeSpec

    robot_ns = f'{namespace}/{ROBOT_SUBNAMESPACE}'
    clock = (('/clock', f'{namespace}/clock'),)
    fake = {'lockstep': True, 'arm_prefix': 'fr3_'}
    if dynamics_file:
        fake['dynamics_file'] = str(pathlib.Path(dynamics_file).expanduser().resolve())
    return [
        NodeSpec('fake_franka', 'fake_franka', robot_ns, fake, clock),
        NodeSpec('world_node', 'world', namespace, {
            'backend': 'franka', 'lockstep': True, 'lockstep_timeout_s': 0.0,
            'camera_rate_hz': 0.0, 'joint_prefix': 'fr3_', 'franka.namespace': robot_ns,
            'franka.digital_real': True}, clock),
    ]


@contextlib.contextmanager
def digital_real_graph(context: Any, namespace: str, dynamics_file: str) -> Iterator[None]:
    """Bring up :func:`digital_real_specs` in this process (``context``) and spin it.

    Each node spins in its own executor thread, as two processes would: ``world_node``'s
    constructor and reset service wait inside a callback for fake_franka's joint state and
    services, so fake_franka must spin independently. The driver and the recorder only use the
    world's topics and services.
    """
    import threading

    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter

    nodes: list = []
    executors: list = []
    threads: list = []
    try:
        for spec in digital_real_specs(namespace, dynamics_file):
            overrides = [Parameter(k, value=v) for k, v in spec.parameters.items()]
            remaps = [arg for a, b in spec.remappings for arg in ('-r', f'{a}:={b}')]
            nodes.append(spec.node_class()(
                context=context, namespace=spec.namespace, parameter_overrides=overrides,
                cli_args=['--ros-args', *remaps], use_global_arguments=False))
            executors.append(SingleThreadedExecutor(context=context))
            executors[-1].add_node(nodes[-1])
            threads.append(threading.Thread(target=executors[-1].spin, daemon=True,
                                            name=spec.name))
            threads[-1].start()
        yield None
    finally:
        for executor in executors:
            executor.shutdown(timeout_sec=2.0)
        for thread in threads:
            thread.join(timeout=2.0)
        for node in reversed(nodes):
            close = getattr(getattr(node, 'world', None), 'close', None)
            if close is not None:
                close()
            node.destroy_node()


def record(args: argparse.Namespace) -> int:
    """Generate excitation trajectories, execute them on the world and record one bag each."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState
    from std_srvs.srv import Trigger
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from realm_ros.nodes.recorder_node import RecorderNode
    from realm_ros.ros import convert, qos

    out = pathlib.Path(args.out)
    if out.exists() and any(out.iterdir()):
        raise ConfigError(f'--out {out} exists and is not empty; choose a new directory')
    if args.trajectories < 1:
        raise ConfigError('--trajectories must be >= 1')
    if args.backend == 'franka' and args.dynamics:
        raise ConfigError('--dynamics applies to --backend fake only')
    spec = sysid.ExcitationSpec(duration_s=args.duration)
    plans = [sysid.excitation_trajectory(spec, args.seed * 1000 + i)
             for i in range(args.trajectories)]
    ns = args.namespace.rstrip('/')
    lockstep = args.backend == 'fake'

    context = rclpy.Context()
    rclpy.init(context=context)
    nodes: list = []
    try:
        graph = (digital_real_graph(context, ns, args.dynamics) if lockstep
                 else contextlib.nullcontext())
        with graph:
            recorder = RecorderNode(context=context, parameter_overrides=[
                Parameter('out_dir', value=str(out)), Parameter('namespace', value=ns or '/'),
                Parameter('bag_prefix', value='traj')])
            driver = rclpy.create_node('sysid_driver', context=context)
            nodes = [recorder, driver]
            executor = SingleThreadedExecutor(context=context)
            for node in nodes:
                executor.add_node(node)
            states: list = []
            driver.create_subscription(JointState, f'{ns}/joint_states', states.append,
                                       qos.STATE)
            cmd_pub = driver.create_publisher(JointTrajectory, f'{ns}/command', qos.COMMAND)
            reset = driver.create_client(Trigger, f'{ns}/reset')
            split = driver.create_client(Trigger, '/recorder/split')

            def spin_until(pred, timeout: float) -> bool:
                deadline = time.monotonic() + timeout
                while time.monotonic() < deadline and not pred():
                    executor.spin_once(timeout_sec=0.01)
                return pred()

            def call(client, timeout: float = 20.0) -> Any:
                if not client.wait_for_service(timeout_sec=timeout):
                    raise DataError(f'service {client.srv_name} is not available')
                future = client.call_async(Trigger.Request())
                if not spin_until(future.done, timeout) or not future.result().success:
                    msg = future.result().message if future.done() else 'timed out'
                    raise DataError(f'{client.srv_name} failed: {msg}')
                return future.result()

            js_topic = f'{ns}/joint_states'
            cmd_topic = f'{ns}/command'
            last_seen: list = [None]
            for i, plan in enumerate(plans):
                if i > 0:
                    call(split)
                for _ in range(10):  # until the recorder sees the world (DDS discovery)
                    seen = recorder.bag.counts.get(js_topic, 0)
                    n_states = len(states)
                    call(reset)
                    if spin_until(lambda s=seen, n=n_states: recorder.bag.counts.get(
                            js_topic, 0) > s and len(states) > n, 2.0):
                        break
                else:
                    raise DataError(f'no joint states from {ns} after reset')
                if not lockstep:
                    spin_until(lambda: False, 3.0)  # let the arm settle at the reset pose
                period = 1.0 / robot.CONTROL_HZ
                next_time = time.monotonic()
                last_state_wall = time.monotonic()
                for q_d in plan:
                    # Watchdog: stop (the world then holds its last target) if the arm stops
                    # reporting or strays from the excitation by more than TRACKING_LIMIT rad.
                    if len(states) and states[-1] is not last_seen[0]:
                        last_seen[0], last_state_wall = states[-1], time.monotonic()
                    if time.monotonic() - last_state_wall > STATE_TIMEOUT_S:
                        raise DataError(f'no joint states for {STATE_TIMEOUT_S} s; stopped')
                    error = np.abs(np.array(states[-1].position[:7]) - q_d)
                    if np.max(error) > TRACKING_LIMIT:
                        raise DataError(
                            f'tracking error {np.max(error):.3f} rad on '
                            f'{robot.JOINT_NAMES[int(np.argmax(error))]} exceeds '
                            f'{TRACKING_LIMIT} rad; stopped the excitation')
                    msg = JointTrajectory()
                    msg.header.stamp = (states[-1].header.stamp if lockstep
                                        else driver.get_clock().now().to_msg())
                    msg.joint_names = list(robot.JOINT_NAMES) + [robot.GRIPPER_JOINT]
                    msg.points = [JointTrajectoryPoint(
                        positions=[float(v) for v in q_d] + [0.0])]
                    n = len(states)
                    cmd_pub.publish(msg)
                    if lockstep:  # one command = one control step; wait for its state
                        if not spin_until(lambda n=n: len(states) > n, 10.0):
                            raise DataError('the world stopped answering commands')
                    else:
                        next_time += period
                        spin_until(lambda t=next_time: time.monotonic() >= t, period * 2)
                expected = len(plan)
                ok = spin_until(lambda e=expected: recorder.bag.counts.get(cmd_topic, 0) >= e,
                                5.0)
                spin_until(lambda: False, 0.05 if lockstep else 0.5)  # trailing states
                if not ok:
                    raise DataError(f'recorder missed commands of trajectory {i}')
                print(f'trajectory {i}: {expected} steps -> {recorder.bag.path} '
                      f'({convert.from_time(states[-1].header.stamp):.2f} s)')
            recorder.close()
    finally:
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown(context=context)
    print(f'recorded {len(plans)} bags in {out}')
    return 0


# -- fit -------------------------------------------------------------------------------------

def find_bags(paths: list[str]) -> list[pathlib.Path]:
    """Return bag directories: each path is a bag or a directory of bags (sorted)."""
    bags = []
    for item in paths:
        path = pathlib.Path(item)
        if (path / 'metadata.yaml').exists() or path.suffix == '.mcap':
            bags.append(path)
        elif path.is_dir():
            found = sorted(p.parent for p in path.glob('*/metadata.yaml'))
            if not found:
                raise DataError(f'{path} holds no bags (no */metadata.yaml)')
            bags += found
        else:
            raise DataError(f'{path} is not a bag or a directory of bags')
    return bags


def fit_command(args: argparse.Namespace) -> int:
    """Fit, write PARAMS.yaml and the report."""
    from realm_ros.backends.mujoco.rollout import TwinRollout
    from realm_ros.io.bags import read_run, run_to_trajectory

    out = pathlib.Path(args.out)
    bags = find_bags(args.bags)
    trajs = [run_to_trajectory(read_run(b, namespace=args.namespace)) for b in bags]
    holdout = args.holdout if args.holdout >= 0 else (
        max(1, round(0.2 * len(trajs))) if len(trajs) >= 2 else 0)
    if holdout >= len(trajs):
        raise ConfigError(f'--holdout {holdout} leaves no trajectory to fit ({len(trajs)} bags)')
    train, held = trajs[:len(trajs) - holdout], trajs[len(trajs) - holdout:]
    window = int(round(args.window * robot.CONTROL_HZ))
    if args.latency is not None and not 0.0 <= args.latency <= 0.5:
        raise ConfigError(f'--latency must be in [0, 0.5] s, got {args.latency}')
    if not 0.0 < args.max_latency <= 0.5:
        raise ConfigError(f'--max-latency must be in (0, 0.5] s, got {args.max_latency}')
    rollouts: dict[float, TwinRollout] = {}

    def make_evaluator(latency_s: float) -> TwinRollout:
        if latency_s not in rollouts:
            if args.backend == 'physx':
                from realm_ros.backends.physx.rollout import PhysxRollout
                rollouts[latency_s] = PhysxRollout(latency_s=latency_s)
            else:
                rollouts[latency_s] = TwinRollout(nthread=args.threads, latency_s=latency_s)
        return rollouts[latency_s]

    print(f'fitting on {len(train)} trajectories ({sum(t.steps for t in train)} steps), '
          f'{len(held)} held out; method {args.method}')
    fit_kwargs = dict(method=args.method, generations=args.generations, popsize=args.popsize,
                      minibatch=args.minibatch, window=window, progress=not args.quiet)
    t0 = time.perf_counter()
    searches: list[sysid.LatencyEstimate] = []
    if args.no_latency or args.latency is not None:
        latency, source = (0.0, '--no-latency') if args.no_latency else (args.latency, 'given')
        result = sysid.fit(make_evaluator(latency), train, seed=args.seed, **fit_kwargs)
    else:
        ident = sysid.identify(make_evaluator, train, max_latency_s=args.max_latency,
                               seed=args.seed, **fit_kwargs)
        result, latency, searches = ident.fit, ident.latency_s, ident.searches
        source = f'estimated ({ident.fits} fits)'
        for latency_k, value in ident.profile.items():
            print(f'fit at latency {1e3 * latency_k:.2f} ms: loss {1e6 * value:.3g} mrad^2 per '
                  'step')
        for k, search in enumerate(searches):
            print(f'latency search {k + 1} ({search.seconds:.1f} s): best '
                  f'{1e3 * search.latency_s:.2f} ms; loss per step by candidate, ms: mrad^2: '
                  + ', '.join(f'{1e3 * c:.1f}: {1e6 * v:.3g}'
                              for c, v in zip(search.candidates_s, search.losses)))
    fit_s = time.perf_counter() - t0
    evaluator = make_evaluator(latency)
    print(f'actuation latency {1e3 * latency:.2f} ms ({source})')
    default = DynamicsParams()
    sets = {'train': train, 'holdout': held} if held else {'train': train}
    rmse: dict[str, dict[str, list[float]]] = {}
    sims: dict[str, list[np.ndarray]] = {}
    for label, group in sets.items():
        # "before" is the twin as it ran before sysid: default parameters, no latency.
        sim = [np.concatenate([b, a]) for b, a in zip(
            make_evaluator(0.0).simulate([default], group),
            evaluator.simulate([result.params], group))]
        sims[label] = sim
        rmse[label] = {'before': sysid.joint_rmse(sim, group, 0).tolist(),
                       'after': sysid.joint_rmse(sim, group, 1).tolist()}
    write_params(out, result.params, latency, source, bags[:len(train)], args)
    report = out.parent / f'{out.stem}_report'
    hidden = DigitalRealDynamics.from_yaml(args.truth) if args.truth else None
    truth = hidden.joint_params() if hidden else None
    write_report(report, result, rmse, sets, sims, fit_s, truth, latency, searches)
    print_table(rmse, result, fit_s, truth)
    if hidden is not None:
        print(f'latency: estimated {1e3 * latency:.2f} ms, true {1e3 * hidden.latency_s:.2f} ms '
              f'(the twin replays whole physics steps: {1e3 / 240:.2f} ms each)')
    print(f'wrote {out} and {report}/')
    return 0


def write_params(out: pathlib.Path, params: DynamicsParams, latency_s: float, source: str,
                 bags: list[pathlib.Path], args: argparse.Namespace) -> None:
    """Write the identified parameters (``DynamicsParams.from_yaml`` and ``sim_params_file``)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    header = (f'# Identified by realm-ros sysid fit ({args.method}, seed {args.seed}, latency '
              f'{source}) from {len(bags)} bags (held-out bags excluded).\n'
              '# friction: dry joint friction, N m (MuJoCo frictionloss); armature: kg m^2. '
              'Joint order panda_joint1..7.\n'
              '# latency_s: actuation delay, s, as MujocoWorld replays it (a target acts '
              'round(latency_s * physics_hz) - 1 physics steps late).\n')
    body = {'friction': [round(v, 6) for v in params.friction],
            'armature': [round(v, 6) for v in params.armature],
            'latency_s': round(float(latency_s), 6)}
    out.write_text(header + yaml.safe_dump(body, default_flow_style=None, sort_keys=False))
    DynamicsParams.from_yaml(out)  # what we wrote must load
    sim_params_latency(out)


def write_report(report: pathlib.Path, result: sysid.FitResult, rmse: dict, sets: dict,
                 sims: dict, fit_s: float, truth: DynamicsParams | None, latency_s: float = 0.0,
                 searches: list | None = None) -> None:
    """Write loss per generation (CSV + PNG), RMSE (JSON) and trajectory overlays (PNG)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    report.mkdir(parents=True, exist_ok=True)
    hist = np.array(result.history)
    header = 'generation,evaluations,best_loss,median_loss,estimate_loss,elapsed_s'
    np.savetxt(report / 'loss.csv', hist, delimiter=',', header=header, comments='',
               fmt=['%d', '%d', '%.9g', '%.9g', '%.9g', '%.3f'])
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.semilogy(hist[:, 0], hist[:, 2], label='best candidate (minibatch)')
    ax.semilogy(hist[:, 0], hist[:, 3], label='median candidate (minibatch)', alpha=0.5)
    ax.semilogy(hist[:, 0], hist[:, 4], label='current estimate (minibatch)')
    ax.set_xlabel('generation')
    ax.set_ylabel('loss per window step, rad$^2$')
    ax.legend()
    fig.tight_layout()
    fig.savefig(report / 'loss.png', dpi=100)
    plt.close(fig)
    summary: dict[str, Any] = {
        'rmse_rad': rmse, 'fit_seconds': fit_s, 'stop_reason': result.stop_reason,
        'timing_s': result.timing, 'params': {'friction': list(result.params.friction),
                                              'armature': list(result.params.armature),
                                              'latency_s': latency_s},
        'latency_searches': [{'candidates_s': s.candidates_s, 'loss_per_step_rad2': s.losses,
                              'best_s': s.latency_s, 'seconds': s.seconds}
                             for s in searches or []]}
    if truth is not None:
        summary['relative_error'] = relative_errors(result.params, truth)
    (report / 'rmse.json').write_text(json.dumps(summary, indent=2))
    for label, group in sets.items():
        traj, sim = group[0], sims[label][0]
        fig, axes = plt.subplots(7, 2, figsize=(12, 12), sharex=True)
        t = np.arange(1, traj.steps + 1) * traj.dt
        for j in range(7):
            ax, err = axes[j]
            ax.plot(t, traj.measured[:, j], 'k', lw=1.5, label='real (recorded)')
            ax.plot(t, sim[0][:, j], 'r--', lw=1, label='twin, defaults')
            ax.plot(t, sim[1][:, j], 'b:', lw=1.5, label='twin, identified')
            ax.set_ylabel(f'q{j + 1}, rad')
            # The differences are milliradians: they only show as errors, not as overlays.
            err.plot(t, 1e3 * (sim[0][:, j] - traj.measured[:, j]), 'r', lw=1,
                     label='twin defaults - real')
            err.plot(t, 1e3 * (sim[1][:, j] - traj.measured[:, j]), 'b', lw=1,
                     label='twin identified - real')
            err.set_ylabel('error, mrad')
        axes[0, 0].legend(loc='upper right', fontsize=7)
        axes[0, 1].legend(loc='upper right', fontsize=7)
        axes[0, 0].set_title(f'{label}: {traj.name}')
        axes[-1, 0].set_xlabel('time, s')
        axes[-1, 1].set_xlabel('time, s')
        fig.tight_layout()
        fig.savefig(report / f'overlay_{label}.png', dpi=80)
        plt.close(fig)


def relative_errors(params: DynamicsParams, truth: DynamicsParams) -> dict[str, list[float]]:
    """Return |identified - true| / true per joint for friction and armature."""
    return {name: (np.abs(np.array(getattr(params, name)) - getattr(truth, name))
                   / np.maximum(getattr(truth, name), 1e-9)).tolist()
            for name in ('friction', 'armature')}


def print_table(rmse: dict, result: sysid.FitResult, fit_s: float,
                truth: DynamicsParams | None) -> None:
    """Print per-joint RMSE before/after (mrad) and, with a truth file, recovery errors."""
    print(f'fit: {fit_s:.1f} s, {len(result.history)} generations, stop: {result.stop_reason}')
    print('timing, s: ' + ', '.join(f'{k} {v:.2f}' for k, v in result.timing.items()))
    cols = ' '.join(f'{f"q{j + 1}":>7}' for j in range(7))
    print(f'{"joint RMSE, mrad":<22}{cols} {"mean":>7}')
    for label, values in rmse.items():
        for when in ('before', 'after'):
            row = np.array(values[when]) * 1e3
            print(f'{label + " " + when:<22}' + ' '.join(f'{v:7.3f}' for v in row)
                  + f' {row.mean():7.3f}')
        ratio = np.mean(values['before']) / max(np.mean(values['after']), 1e-12)
        print(f'{label + " improvement":<22}{ratio:7.1f}x')
    p = result.params
    print(f'{"friction, N m":<22}' + ' '.join(f'{v:7.4f}' for v in p.friction))
    print(f'{"armature, kg m^2":<22}' + ' '.join(f'{v:7.4f}' for v in p.armature))
    if truth is not None:
        errors = relative_errors(p, truth)
        for name in ('friction', 'armature'):
            print(f'{name + " error, %":<22}'
                  + ' '.join(f'{100 * v:7.1f}' for v in errors[name]))
