"""Benchmark whole episodes: core alone (fast vs simple IK), through ROS in lockstep, cameras.

Run: ``.venv/bin/python bench/bench_episodes.py [--task push_switch] [--episodes 5]
[--repeat 3] [--no-cameras] [--no-ros] [--modes composed,events,single]``.

Every case runs the scripted expert on the same seeds, side by side in one run:

* core alone (:func:`realm_ros.core.episode.run_episode`), headless, with the fast IK
  (``ScriptedPolicy(ik='fast')``, the default) and with the simple reference path
  (``ik='reference'``), checking that both give the same episode results;
* through ROS: a real ``world_node`` (lockstep) and ``policy_node`` over DDS on this machine, as
  two processes (with rclpy's events executor, and with its single-threaded one: the simple
  way) and composed in one process (``world_policy_container``: intra-process delivery); the
  probe sets ``episode_spec``, calls ``reset`` with the policy inactive, activates it and times
  both calls and the episode until ``progress`` reports as many steps as the core episode took
  (steps of the new episode only: the reset's step 0 first), then deactivates the policy so the
  world stops between episodes. Besides wall time it
  reads the CPU time of the node processes (``/proc/PID/stat``) over the same window, which
  a shared CPU's load does not inflate the way it inflates wall time;
* three cameras (exterior_1, exterior_2, wrist at 320x180, DROID's stored resolution), one
  frame per step read by the policy (the rig's default render passes), core alone and through
  ROS (the policy node then waits for each image).

``--repeat`` repeats the core/ROS pair and reports the median and the spread of the ratio.
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
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

os.environ.setdefault('MUJOCO_GL', 'egl')
os.environ.setdefault('ROS_DOMAIN_ID', str(random.Random(os.getpid()).randint(101, 200)))
os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
os.environ.setdefault('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')

sys.path.insert(0, os.path.dirname(__file__))
from benchlib import Recorder  # noqa: E402

from realm_ros.backends.mujoco.world import MujocoWorld  # noqa: E402
from realm_ros.core.config import CAMERA_NAMES, WorldConfig  # noqa: E402
from realm_ros.core.episode import run_episode  # noqa: E402
from realm_ros.core.policy import Policy, PolicyWrapper, standard_chain  # noqa: E402
from realm_ros.core.types import ActionChunk, EpisodeSpec, Observation  # noqa: E402
from realm_ros.policies.scripted import ScriptedPolicy  # noqa: E402
from realm_ros.ros.runner import events_executor  # noqa: E402

BIN = pathlib.Path(sys.executable).parent
TICK = os.sysconf('SC_CLK_TCK')


class _Looking(PolicyWrapper):
    """Reads every camera image before the scripted policy answers, as a vision policy would
    (the world renders a step's images only when they are read)."""

    def infer(self, obs: Observation) -> ActionChunk:
        for name in obs.images:
            obs.images[name].shape  # noqa: B018 - the read is the point: it renders
        return self.inner.infer(obs)


def _policy(ik: str = 'fast', cameras: bool = False) -> Policy:
    inner = ScriptedPolicy(skill=0, ik=ik)
    return standard_chain(_Looking(inner) if cameras else inner)


def _spec(task: str, seed: int) -> EpisodeSpec:
    return EpisodeSpec(task=task, seed=seed, max_steps=400)


def no_ros(task: str, episodes: int, cameras: bool, ik: str = 'fast'
           ) -> tuple[float, float, list[int], list[tuple]]:
    """Return (mean wall s, mean CPU s per episode, steps per episode, results) without ROS."""
    config = WorldConfig(task=task, cameras=CAMERA_NAMES if cameras else (),
                         camera_rate_hz=15.0 if cameras else 0.0)
    world = MujocoWorld(config)
    run_episode(world, _policy(ik, cameras), _spec(task, 0))  # warm up (renderer, caches)
    walls, cpus, steps, results = [], [], [], []
    for seed in range(episodes):
        start, cpu = time.perf_counter(), time.process_time()
        result = run_episode(world, _policy(ik, cameras), _spec(task, seed))
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - start)
        steps.append(result.steps)
        results.append((result.outcome.name, result.progression, result.steps))
    world.close()
    return statistics.mean(walls), statistics.mean(cpus), steps, results


def _cpu_s(pids: list[int]) -> float:
    """Return the CPU time (user + system, all threads) of processes ``pids``, s."""
    total = 0
    for pid in pids:
        fields = pathlib.Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
    return total / TICK


class RosGraph:
    """A lockstep world_node + policy_node under ``/bench`` and a probe node that drives them."""

    def __init__(self, task: str, cameras: bool, executor: str = '', ns: str = 'bench') -> None:
        from diagnostic_msgs.msg import DiagnosticStatus
        from rcl_interfaces.srv import SetParameters
        import rclpy
        from std_srvs.srv import SetBool, Trigger

        from realm_ros.ros import convert, qos

        cams = ','.join(CAMERA_NAMES) if cameras else ''
        world_args = [str(BIN / 'world_node'), '--ros-args', '-r', f'__ns:=/{ns}',
                      '-p', 'lockstep:=true', '-p', 'lockstep_timeout_s:=0.0',
                      '-p', f'task:={task}', '-p', f'camera_rate_hz:={15.0 if cameras else 0.0}']
        policy_args = [str(BIN / 'policy_node'), '--ros-args', '-r', f'__ns:=/{ns}',
                       '-p', 'policy:=scripted', '-p', 'use_privileged:=true']
        if cams:
            policy_args += ['-p', f'cameras:={cams}']
        self.logs = tempfile.mkdtemp(prefix='bench_episodes_')
        self.procs: list[subprocess.Popen] = []
        # REALM_ROS_EXECUTOR=single: the nodes spin rclpy's SingleThreadedExecutor (the simple
        # way) instead of the events executor (realm_ros.ros.runner.events_executor).
        env = dict(os.environ, REALM_ROS_EXECUTOR='' if executor == 'composed' else executor)
        processes = ((world_args, 'world'), (policy_args, 'policy'))
        if executor == 'composed':
            # Both nodes in one process, intra-process delivery (world_policy_container); the
            # module is run so that a tree without the installed console script works too.
            # ``cameras`` is the policy's (a comma-separated string; the world's is a list):
            # it goes in a parameters file under the policy's name.
            shared = policy_args[4:]
            if cams:
                shared = shared[:-2]
                params = os.path.join(self.logs, 'policy_params.yaml')
                with open(params, 'w') as f:
                    f.write(f'/{ns}/policy:\n  ros__parameters:\n    cameras: "{cams}"\n')
                shared += ['--params-file', params]
            processes = (([sys.executable, '-m', 'realm_ros.nodes.world_policy_container',
                           *world_args[1:], *shared], 'container'),)
        for args, name in processes:
            log = open(os.path.join(self.logs, f'{name}.log'), 'w')
            self.procs.append(subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                               env=env))
        self.rclpy = rclpy
        if not rclpy.ok():
            rclpy.init()
        self.node = rclpy.create_node(f'{ns}_probe')
        # The probe is the measuring instrument (it shares the 2 cores): the events executor,
        # and a callback that only keeps the message.
        self.executor = events_executor()
        self.executor.add_node(self.node)
        self.convert = convert
        self.steps: list[Any] = []
        self.node.create_subscription(DiagnosticStatus, f'/{ns}/progress', self.steps.append,
                                      qos.STATE)
        self.reset = self.node.create_client(Trigger, f'/{ns}/reset')
        self.active = self.node.create_client(SetBool, f'/{ns}/policy/set_active')
        self.params = self.node.create_client(SetParameters, f'/{ns}/world/set_parameters')
        deadline = time.monotonic() + 60
        while (self.node.count_subscribers(f'/{ns}/joint_states') < 1
               or not self.reset.service_is_ready() or not self.active.service_is_ready()):
            self.executor.spin_once(timeout_sec=0.1)
            if time.monotonic() > deadline:
                raise RuntimeError(f'nodes did not come up; logs in {self.logs}')

    def _call(self, client, request) -> object:
        future = client.call_async(request)
        self.executor.spin_until_future_complete(future, timeout_sec=10)
        if not future.done():
            raise RuntimeError(f'{client.srv_name} did not answer; logs in {self.logs}')
        return future.result()

    def episode(self, spec: EpisodeSpec, steps: int) -> tuple[float, float, float]:
        """Run one lockstep episode to ``steps``; return (wall s, node CPU s, probe CPU s)."""
        from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
        from rcl_interfaces.srv import SetParameters
        from std_srvs.srv import SetBool, Trigger

        value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=spec.to_json())
        self._call(self.params, SetParameters.Request(
            parameters=[Parameter(name='episode_spec', value=value)]))
        pids = [p.pid for p in self.procs]
        self.steps.clear()
        cpu0, probe0 = _cpu_s(pids), time.process_time()
        start = time.perf_counter()
        # The policy is inactive (since the previous episode): the world resets and holds the
        # reset's observation until the policy is activated and answers it, so no step of the
        # previous episode runs inside the measured window.
        self._call(self.reset, Trigger.Request())
        self.active.call_async(SetBool.Request(data=True))
        seen_reset = False
        while True:
            self.executor.spin_once(timeout_sec=0.5)
            # Progress of the new episode begins with the reset's step 0; anything before it
            # is the previous episode's tail.
            done = False
            for step in (self.convert.progress_from_msg(m).step for m in self.steps):
                seen_reset = seen_reset or step == 0
                done = done or (seen_reset and step >= steps)
            self.steps.clear()
            if done:
                break
            if time.perf_counter() - start > 300:
                raise RuntimeError(f'episode did not finish; logs in {self.logs}')
        wall = time.perf_counter() - start
        cpu, probe = _cpu_s(pids) - cpu0, time.process_time() - probe0
        self._call(self.active, SetBool.Request(data=False))  # the world stops stepping
        return wall, cpu, probe

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        for proc in self.procs:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def _spread(values: list[float]) -> str:
    return f'median {statistics.median(values):.3g}, min {min(values):.3g}, max {max(values):.3g}'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--task', default='push_switch')
    parser.add_argument('--episodes', type=int, default=5, help='episodes (seeds) per case')
    parser.add_argument('--repeat', type=int, default=3,
                        help='repetitions of the core / ROS pair (median and spread)')
    parser.add_argument('--no-cameras', action='store_true', help='skip the camera cases')
    parser.add_argument('--no-ros', action='store_true',
                        help='core alone only (a machine without ROS)')
    parser.add_argument('--modes', default='composed,events,single',
                        help='ROS graphs to run, comma-separated: composed (world_policy_container'
                        '), events and single (two processes with that executor; cameras: '
                        'composed and events only)')
    args = parser.parse_args()
    modes = [m for m in args.modes.split(',') if m]
    unknown = set(modes) - {'composed', 'events', 'single'}
    if unknown:
        parser.error(f'--modes: unknown {sorted(unknown)}; choose from composed, events, single')
    rec = Recorder('episodes')
    extra = {'task': args.task, 'episodes': args.episodes, 'repeat': args.repeat}
    print(f'[episodes] task {args.task}, scripted expert, {args.episodes} episodes (seeds '
          f'0..{args.episodes - 1}) per case, {args.repeat} repeats')

    # 1. Core alone, headless: the simple IK path and the fast one, same seeds.
    simple = [no_ros(args.task, args.episodes, False, 'reference') for _ in range(args.repeat)]
    fast = [no_ros(args.task, args.episodes, False, 'fast') for _ in range(args.repeat)]
    if simple[0][3] != fast[0][3]:
        print(f'[episodes] WARNING: fast and simple IK episodes differ: {simple[0][3]} vs '
              f'{fast[0][3]}')
    steps = fast[0][2]
    sim_s = statistics.mean(steps) / 15.0
    speed = [sim_s / r[0] for r in fast]
    speed_simple = [sim_s / r[0] for r in simple]
    print(f'[episodes] core alone, headless: fast IK {_spread(speed)} x real time, simple IK '
          f'{_spread(speed_simple)}; {statistics.mean(steps):.0f} steps per episode; '
          f'results {"identical" if simple[0][3] == fast[0][3] else "DIFFER"}')
    rec.figure('episode, core alone, headless, simulated / wall time',
               statistics.median(speed), 'x', statistics.median(speed_simple),
               'the same episodes with the simple IK path (ik=reference)',
               '>= 50x real time (headless, 2 cores)', steps_per_episode=statistics.mean(steps),
               speed_spread=[min(speed), max(speed)],
               cpu_s_per_episode=statistics.median(r[1] for r in fast),
               same_results=simple[0][3] == fast[0][3], **extra)

    cases = [False] if args.no_cameras else [False, True]
    for cameras in cases:
        label = 'cameras (3 x 320x180)' if cameras else 'headless'
        # Headless, the ROS graph runs twice: with the events executor (what the nodes use) and
        # with rclpy's SingleThreadedExecutor (the simple way), alternating with core alone.
        # Both ways also run composed: world and policy in one process (world_policy_container,
        # intra-process delivery), against the same core-alone runs.
        executors = [] if args.no_ros else [m for m in modes if not cameras or m != 'single']
        graphs = {}
        core_walls, core_cpus = [], []
        ros: dict[str, dict[str, list[float]]] = {
            e: {'wall': [], 'cpu': [], 'probe': []} for e in executors}
        try:
            for e in executors:
                graphs[e] = RosGraph(args.task, cameras, '' if e == 'events' else e,
                                     ns=f'bench_{e}')
            for _ in range(args.repeat):
                wall, cpu, steps, _results = no_ros(args.task, args.episodes, cameras)
                core_walls.append(wall)
                core_cpus.append(cpu)
                for e, graph in graphs.items():
                    runs = [graph.episode(_spec(args.task, seed), n)
                            for seed, n in enumerate(steps)]
                    for key, k in (('wall', 0), ('cpu', 1), ('probe', 2)):
                        ros[e][key].append(statistics.mean(r[k] for r in runs))
        finally:
            for graph in graphs.values():
                graph.close()
            if graphs:
                graphs[executors[0]].rclpy.try_shutdown()
        n = statistics.mean(steps)
        if cameras:
            speed = [n / 15.0 / w for w in core_walls]
            print(f'[episodes] core alone, {label}: {_spread(speed)} x real time')
            rec.figure(f'episode, core alone, {label}, simulated / wall time',
                       statistics.median(speed), 'x', 1.0, 'real time', '>= 2x real time',
                       steps_per_episode=n, speed_spread=[min(speed), max(speed)], **extra)
        print(f'[episodes] {label}, {n:.0f} steps, core alone: {_spread(core_walls)} s wall, '
              f'{_spread(core_cpus)} s CPU per episode')
        for e in executors:
            walls, cpus = ros[e]['wall'], ros[e]['cpu']
            ratio = [r / c for r, c in zip(walls, core_walls)]
            cpu_ratio = [r / c for r, c in zip(cpus, core_cpus)]
            how = ('world_policy_container: one process, intra-process delivery'
                   if e == 'composed' else f'two processes, {e} executor')
            print(f'[episodes] {label}, ROS lockstep ({how}): {_spread(walls)} s wall, '
                  f'{_spread(cpus)} s CPU of world_node + policy_node per episode (probe '
                  f'{statistics.median(ros[e]["probe"]):.3g} s); vs core: wall ratio '
                  f'{_spread(ratio)}, CPU ratio {_spread(cpu_ratio)}; '
                  f'load {os.getloadavg()[0]:.2f}')
            rec.figure(f'episode wall time through world_node + policy_node (lockstep, {how}),'
                       f' {label}', statistics.median(walls), 's',
                       statistics.median(core_walls), 'the same episode through core alone',
                       '<= 1.15 x core alone', steps_per_episode=n,
                       wall_ratio_spread=[min(ratio), max(ratio)], **extra)
            rec.figure(f'episode CPU time of world_node + policy_node (lockstep, {how}), '
                       f'{label}', statistics.median(cpus), 's', statistics.median(core_cpus),
                       'CPU time of the same episode through core alone',
                       '<= 1.15 x core alone', steps_per_episode=n,
                       cpu_ratio_spread=[min(cpu_ratio), max(cpu_ratio)],
                       probe_cpu_s=statistics.median(ros[e]['probe']), **extra)
        if 'composed' in ros and 'events' in ros:
            # The composed graph against the two-process one it replaces, same run.
            for key, what in (('wall', 'wall time'), ('cpu', 'CPU time of the nodes')):
                rec.figure(f'episode {what}, world_policy_container / two processes (events '
                           f'executor), lockstep, {label}',
                           statistics.median(ros['composed'][key]), 's',
                           statistics.median(ros['events'][key]),
                           'the same episode through world_node + policy_node as two processes',
                           'lower', steps_per_episode=n, **extra)


if __name__ == '__main__':
    main()
