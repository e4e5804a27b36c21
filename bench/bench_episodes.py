"""Benchmark whole episodes: episodes per hour, no ROS vs through ROS in lockstep, +- cameras.

Run: ``.venv/bin/python bench/bench_episodes.py [--task push_switch] [--episodes 3]``.
The no-ROS cases call :func:`realm_ros.core.episode.run_episode`; the ROS cases start a real
``world_node`` (lockstep) and ``policy_node`` (scripted expert) over DDS on this machine and
trigger ``reset`` once per episode, timing until the world reports as many steps as the no-ROS
episode took. Cameras: exterior_1, exterior_2 and wrist at 320x180, one frame per step.
"""

from __future__ import annotations

import os

# Single-threaded BLAS: the matrices are tiny (IK, 6x6 solves), and on a shared CPU BLAS
# threads spin and multiply the cost (measured: 71 ms per 6x6 solve at load 20).
os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')

import argparse
import pathlib
import random
import signal
import subprocess
import sys
import tempfile
import time

os.environ.setdefault('MUJOCO_GL', 'egl')
os.environ.setdefault('ROS_DOMAIN_ID', str(random.Random(os.getpid()).randint(101, 200)))
os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
os.environ.setdefault('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')

sys.path.insert(0, os.path.dirname(__file__))
from benchlib import Recorder  # noqa: E402

from realm_ros.backends.mujoco.world import MujocoWorld  # noqa: E402
from realm_ros.core.config import CAMERA_NAMES, WorldConfig  # noqa: E402
from realm_ros.core.episode import run_episode  # noqa: E402
from realm_ros.core.policy import Policy, standard_chain  # noqa: E402
from realm_ros.core.types import EpisodeSpec  # noqa: E402
from realm_ros.policies.scripted import ScriptedPolicy  # noqa: E402

BIN = pathlib.Path(sys.executable).parent


def _policy() -> Policy:
    return standard_chain(ScriptedPolicy(skill=0))


def no_ros(task: str, episodes: int, cameras: bool) -> tuple[float, list[int]]:
    """Return (mean wall s per episode, steps per episode) without ROS."""
    config = WorldConfig(task=task, cameras=CAMERA_NAMES if cameras else (),
                         camera_rate_hz=15.0 if cameras else 0.0)
    world = MujocoWorld(config)
    walls, steps = [], []
    for seed in range(episodes):
        start = time.perf_counter()
        result = run_episode(world, _policy(), EpisodeSpec(task=task, seed=seed, max_steps=400))
        walls.append(time.perf_counter() - start)
        steps.append(result.steps)
    world.close()
    return sum(walls) / len(walls), steps


def through_ros(task: str, steps: list[int], cameras: bool) -> float:
    """Return mean wall s per episode through world_node + policy_node in lockstep."""
    from diagnostic_msgs.msg import DiagnosticStatus
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters
    import rclpy
    from std_srvs.srv import Trigger

    from realm_ros.ros import convert, qos

    cams = ','.join(CAMERA_NAMES) if cameras else ''
    world_args = [str(BIN / 'world_node'), '--ros-args', '-r', '__ns:=/bench',
                  '-p', 'lockstep:=true', '-p', 'lockstep_timeout_s:=0.0',
                  '-p', f'task:={task}', '-p', f'camera_rate_hz:={15.0 if cameras else 0.0}']
    policy_args = [str(BIN / 'policy_node'), '--ros-args', '-r', '__ns:=/bench',
                   '-p', 'policy:=scripted', '-p', 'use_privileged:=true']
    if cams:
        policy_args += ['-p', f'cameras:={cams}']
    logs = tempfile.mkdtemp(prefix='bench_episodes_')
    procs = []
    rclpy.init()
    node = rclpy.create_node('bench_probe')
    try:
        for args, name in ((world_args, 'world'), (policy_args, 'policy')):
            log = open(os.path.join(logs, f'{name}.log'), 'w')
            procs.append(subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT))
        last = []
        node.create_subscription(DiagnosticStatus, '/bench/progress',
                                 lambda m: last.append(convert.progress_from_msg(m).step),
                                 qos.STATE)
        reset = node.create_client(Trigger, '/bench/reset')
        params = node.create_client(SetParameters, '/bench/world/set_parameters')
        deadline = time.monotonic() + 60
        while node.count_subscribers('/bench/joint_states') < 1 or not reset.service_is_ready():
            rclpy.spin_once(node, timeout_sec=0.1)
            if time.monotonic() > deadline:
                raise RuntimeError(f'nodes did not come up; logs in {logs}')
        walls = []
        for seed, n in enumerate(steps):
            spec = EpisodeSpec(task=task, seed=seed, max_steps=400)
            value = ParameterValue(type=ParameterType.PARAMETER_STRING,
                                   string_value=spec.to_json())
            future = params.call_async(SetParameters.Request(
                parameters=[Parameter(name='episode_spec', value=value)]))
            rclpy.spin_until_future_complete(node, future, timeout_sec=10)
            last.clear()
            start = time.perf_counter()
            future = reset.call_async(Trigger.Request())
            while not (last and last[-1] >= n):
                rclpy.spin_once(node, timeout_sec=0.5)
                if time.perf_counter() - start > 300:
                    raise RuntimeError(f'episode did not finish; logs in {logs}')
            walls.append(time.perf_counter() - start)
        return sum(walls) / len(walls)
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
        for proc in procs:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--task', default='push_switch')
    parser.add_argument('--episodes', type=int, default=3)
    parser.add_argument('--no-cameras', action='store_true', help='skip the camera cases')
    parser.add_argument('--no-ros', action='store_true',
                        help='core alone only (a machine without ROS)')
    args = parser.parse_args()
    rec = Recorder('episodes')
    print(f'[episodes] task {args.task}, scripted expert, {args.episodes} episodes per case')
    print('| case | steps per episode | wall s per episode | episodes per hour |')
    print('|---|---|---|---|')
    rows = []
    for cameras in (False, True) if not args.no_cameras else (False,):
        label = 'cameras (3 x 320x180)' if cameras else 'headless'
        wall, steps = no_ros(args.task, args.episodes, cameras)
        mean_steps = sum(steps) / len(steps)
        print(f'| no ROS, {label} | {mean_steps:.0f} | {wall:.2f} | {3600 / wall:,.0f} |',
              flush=True)
        ros_wall = None if args.no_ros else through_ros(args.task, steps, cameras)
        if ros_wall is not None:
            print(f'| ROS lockstep, {label} | {mean_steps:.0f} | {ros_wall:.2f} | '
                  f'{3600 / ros_wall:,.0f} |', flush=True)
        rows.append((label, mean_steps, wall, ros_wall))
    for label, mean_steps, wall, ros_wall in rows:
        sim_s = mean_steps / 15.0
        extra = {'task': args.task, 'episodes': args.episodes, 'steps_per_episode': mean_steps}
        rec.figure(f'episode, core alone, {label}, simulated / wall time', sim_s / wall, 'x',
                   1.0, 'real time',
                   '>= 50x (headless, 2 cores)' if label == 'headless' else '>= 2x', **extra)
        if ros_wall is not None:
            rec.figure(f'episode wall time through world_node + policy_node (lockstep), '
                       f'{label}', ros_wall, 's', wall, 'the same episode through core alone',
                       '<= 1.15 x core alone', **extra)


if __name__ == '__main__':
    main()
