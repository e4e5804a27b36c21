"""``realm-ros sysid record``: execute excitation trajectories on a world and record one bag each.

The driver (:class:`ExcitationDriver`) talks to the world only through its topics and services
(``<ns>/command``, ``<ns>/joint_states``, ``<ns>/reset``); a :class:`RecorderNode` in the same
process writes the bags and splits them between trajectories. ``--backend digital_real`` brings the
digital real up here (``graph.py``) and drives it in lockstep; ``--backend franka`` drives a
running lab world in real time, with a watchdog.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import pathlib
import time
from typing import Any, Callable

import numpy as np

from realm_ros.commands import dynamics_flag
from realm_ros.commands.sysid.graph import digital_real_graph
from realm_ros.core import backends, robot, sysid
from realm_ros.core.config import SafetyConfig, safety_from_params_file
from realm_ros.core.errors import ConfigError, DataError

#: Watchdog of the excitation driver: largest allowed |q_measured - q_next_target|, rad, and
#: the longest silence of ``joint_states``, s. The targets move at most 0.1 rad per step at half
#: the velocity limit; an arm with heavy friction and armature plus latency lags up to 0.27 rad
#: (config/dynamics/sysid_demo.yaml, 25 trajectories). It stays below the bridge's safety rule
#: ``safety.max_target_error_rad`` (0.3 rad), so the driver stops before the bridge refuses.
TRACKING_LIMIT = 0.28
#: Real time only: control steps between a target and the joint state that shows it (the world's
#: 15 Hz tick, a JointTrajectoryController reaching each point one period later, the state's
#: way back; measured about 4 through the franka_ros2-shaped digital real + the bridge). The
#: tracking error there is the distance to the nearest of the last REAL_TIME_LAG_STEPS + 1
#: targets; in lockstep the state answers its own step, so it is the distance to the next target.
REAL_TIME_LAG_STEPS = 4
STATE_TIMEOUT_S = 0.5


class ExcitationDriver:
    """Publishes one excitation trajectory at a time to a world and watches its joint states."""

    def __init__(self, context: Any, namespace: str, lockstep: bool, recorder: Any) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from sensor_msgs.msg import JointState
        from std_srvs.srv import Trigger
        from trajectory_msgs.msg import JointTrajectory

        from realm_ros.ros import qos, topics

        self.ns = namespace
        self.lockstep = lockstep
        self.recorder = recorder
        self.node = rclpy.create_node('sysid_driver', context=context)
        self.executor = SingleThreadedExecutor(context=context)
        for node in (recorder, self.node):
            self.executor.add_node(node)
        self.states: list = []
        #: The last targets (real time: the state may show any of them, see
        #: REAL_TIME_LAG_STEPS).
        self.recent: collections.deque = collections.deque(maxlen=REAL_TIME_LAG_STEPS + 1)
        self.js_topic = f'{namespace}/{topics.JOINT_STATES}'
        self.cmd_topic = f'{namespace}/{topics.COMMAND}'
        self.node.create_subscription(JointState, self.js_topic, self.states.append, qos.STATE)
        self.commands = self.node.create_publisher(JointTrajectory, self.cmd_topic, qos.COMMAND)
        self.reset_client: Any = self.node.create_client(Trigger, f'{namespace}/{topics.RESET}')
        self.split_client: Any = self.node.create_client(Trigger, '/recorder/split')

    def spin_until(self, pred: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not pred():
            self.executor.spin_once(timeout_sec=0.01)
        return pred()

    def call(self, client: Any, timeout: float = 20.0) -> Any:
        """Call a Trigger service and return its response; DataError if it fails."""
        from std_srvs.srv import Trigger

        if not client.wait_for_service(timeout_sec=timeout):
            raise DataError(f'service {client.srv_name} is not available')
        future = client.call_async(Trigger.Request())
        if not self.spin_until(future.done, timeout) or not future.result().success:
            msg = future.result().message if future.done() else 'timed out'
            raise DataError(f'{client.srv_name} failed: {msg}')
        return future.result()

    def reset(self) -> None:
        """Reset the world and wait until both the recorder and the driver see its state."""
        for _ in range(10):  # until the recorder sees the world (DDS discovery)
            seen = self.recorder.bag.counts.get(self.js_topic, 0)
            n_states = len(self.states)
            self.call(self.reset_client)
            def seen_more(s: int = seen, n: int = n_states) -> bool:
                return self.recorder.bag.counts.get(self.js_topic, 0) > s and \
                    len(self.states) > n

            if self.spin_until(seen_more, 2.0):
                break
        else:
            raise DataError(f'no joint states from {self.ns} after reset')
        if not self.lockstep:
            self.spin_until(lambda: False, 3.0)  # let the arm settle at the reset pose

    def check(self, q_d: np.ndarray, watchdog: list) -> None:
        """The watchdog: stop (the world then holds its last target) if the arm stops
        reporting or strays from the excitation by more than TRACKING_LIMIT rad."""
        if len(self.states) and self.states[-1] is not watchdog[0]:
            watchdog[0], watchdog[1] = self.states[-1], time.monotonic()
        if time.monotonic() - watchdog[1] > STATE_TIMEOUT_S:
            raise DataError(f'no joint states for {STATE_TIMEOUT_S} s; stopped')
        q = np.array(self.states[-1].position[:7])
        self.recent.append(np.asarray(q_d, dtype=float))
        targets = [q_d] if self.lockstep else list(self.recent)
        errors = [np.abs(q - t) for t in targets]
        error = errors[int(np.argmin([np.max(e) for e in errors]))]
        if np.max(error) > TRACKING_LIMIT:
            raise DataError(
                f'tracking error {np.max(error):.3f} rad on '
                f'{robot.JOINT_NAMES[int(np.argmax(error))]} exceeds '
                f'{TRACKING_LIMIT} rad; stopped the excitation')

    def send(self, q_d: np.ndarray) -> None:
        """Publish one target (one control step); in lockstep, wait for its state."""
        from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

        msg = JointTrajectory()
        msg.header.stamp = (self.states[-1].header.stamp if self.lockstep
                            else self.node.get_clock().now().to_msg())
        msg.joint_names = list(robot.JOINT_NAMES) + [robot.GRIPPER_JOINT]
        msg.points = [JointTrajectoryPoint(positions=[float(v) for v in q_d] + [0.0])]
        n = len(self.states)
        self.commands.publish(msg)
        if self.lockstep and not self.spin_until(lambda: len(self.states) > n, 10.0):
            raise DataError('the world stopped answering commands')

    def execute(self, plan: np.ndarray) -> None:
        """Reset, then send every row of ``plan`` at the control rate; wait for the recorder."""
        self.reset()
        self.recent.clear()
        period = 1.0 / robot.CONTROL_HZ
        next_time = time.monotonic()
        watchdog: list = [None, time.monotonic()]
        for q_d in plan:
            self.check(q_d, watchdog)
            self.send(q_d)
            if not self.lockstep:
                next_time += period
                def due(t: float = next_time) -> bool:
                    return time.monotonic() >= t

                self.spin_until(due, period * 2)
        ok = self.spin_until(
            lambda: self.recorder.bag.counts.get(self.cmd_topic, 0) >= len(plan), 5.0)
        self.spin_until(lambda: False, 0.05 if self.lockstep else 0.5)  # trailing states
        if not ok:
            raise DataError('recorder missed commands')


def excitation_plans(args: argparse.Namespace) -> list[np.ndarray]:
    """Return the (K, 7) target arrays ``record`` executes: ``--trajectories`` excitations of
    ``--duration`` s from ``--seed``, within the joint limits of ``--arm-id`` and planned against
    the world's safety rules (``--world-params``' ``safety.*``; default: SafetyConfig's)."""
    world_params = getattr(args, 'world_params', '')
    spec = sysid.ExcitationSpec(
        duration_s=args.duration, arm_id=args.arm_id,
        safety=safety_from_params_file(world_params) if world_params else SafetyConfig())
    return [sysid.excitation_trajectory(spec, args.seed * 1000 + i)
            for i in range(args.trajectories)]


def record(args: argparse.Namespace) -> int:
    """Generate excitation trajectories, execute them on the world and record one bag each."""
    import rclpy
    from rclpy.parameter import Parameter

    from realm_ros.nodes.recorder_node import RecorderNode
    from realm_ros.ros import convert

    out = pathlib.Path(args.out)
    if out.exists() and any(out.iterdir()):
        raise ConfigError(f'--out {out} exists and is not empty; choose a new directory')
    if args.trajectories < 1:
        raise ConfigError('--trajectories must be >= 1')
    arm = backends.get(args.backend)
    if not arm.hidden and args.dynamics:
        raise ConfigError('--dynamics applies to --backend digital_real only')
    args.dynamics = dynamics_flag(args.dynamics)  # read now, not when the digital real starts
    if not arm.bridge and bool(getattr(args, 'world_params', '')):
        raise ConfigError('--world-params applies to --backend franka only (the digital real '
                          "brought up here checks SafetyConfig's defaults)")
    plans = excitation_plans(args)
    ns = args.namespace.rstrip('/')
    lockstep = arm.lockstep  # the digital real, brought up here in lockstep

    from realm_ros import console
    from realm_ros.ros import logs
    from realm_ros.ros.runner import NodeRunner

    verbose, quiet = getattr(args, 'verbose', False), getattr(args, 'quiet', False)
    console.set_quiet(quiet)
    console.capture_warnings()
    context = rclpy.Context()
    # Node lines to ROS's log files (OUT holds bags only); warnings and errors above the bar.
    rclpy.init(context=context, args=logs.init_args(None, verbose))
    nodes: list = []
    echo = NodeRunner(context)
    try:
        if not verbose:
            echo.add(logs.ConsoleEcho(context=context))
        graph = (digital_real_graph(context, ns, args.dynamics, args.arm_id) if lockstep
                 else contextlib.nullcontext())
        with graph, console.phase('sysid record', len(plans), 'traj') as bar:
            recorder = RecorderNode(context=context, parameter_overrides=[
                Parameter('out_dir', value=str(out)), Parameter('namespace', value=ns or '/'),
                Parameter('bag_prefix', value='traj')])
            nodes.append(recorder)
            driver = ExcitationDriver(context, ns, lockstep, recorder)
            nodes.append(driver.node)
            for i, plan in enumerate(plans):
                try:
                    driver.execute(plan)
                except DataError as err:
                    raise DataError(f'trajectory {i}: {err}') from err
                # Close the trajectory's bag before saying it is done: a kill after this line
                # leaves it complete (the next bag opens with the split).
                assert recorder.bag is not None  # open from the start until closed below
                path = recorder.bag.path
                if i < len(plans) - 1:
                    driver.call(driver.split_client)
                else:
                    recorder.close()
                # One line per finished bag (scripts and the crash test read them), above the bar.
                console.line(f'trajectory {i}: {len(plan)} steps -> {path} '
                             f'({convert.from_time(driver.states[-1].header.stamp):.2f} s)')
                bar.update(1)
    finally:
        echo.shutdown()
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown(context=context)
    console.result(f'recorded {len(plans)} bags in {out}' + (
        '' if verbose else f'; node logs in {logs.log_dir()}'))
    return 0
