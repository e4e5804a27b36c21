"""Helpers for tests that talk to real nodes over DDS."""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import subprocess
import sys
import time
from typing import Any, Callable, Iterator

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from realm_ros.core import robot

BIN = pathlib.Path(sys.executable).parent


@contextlib.contextmanager
def ros_node(name: str, executor_type: type = SingleThreadedExecutor
             ) -> Iterator[tuple[Node, Any]]:
    """Yield a fresh node in its own context with an executor (``executor_type``), shut down
    afterwards."""
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node(name, context=context)
    executor = executor_type(context=context)
    executor.add_node(node)
    try:
        yield node, executor
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)


@contextlib.contextmanager
def run_process(args: list[str], log_path: pathlib.Path,
                stdin: int | None = None) -> Iterator[subprocess.Popen]:
    """Start an executable (a console script of this install) and stop it with SIGINT.

    ``stdin=subprocess.PIPE`` gives the test the process's standard input (text mode).
    """
    exe = BIN / args[0]
    with open(log_path, 'w') as log:
        proc = subprocess.Popen([str(exe), *args[1:]], stdin=stdin, stdout=log,
                                stderr=subprocess.STDOUT, env=dict(os.environ), text=True)
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


#: Seconds a test's client keeps spinning after its service is discovered, before its first
#: request: the server's response writer can match the client's reader after the client sees the
#: server, and a response sent before that is lost (realm_ros.ros.services.NEW_CLIENT_SETTLE_S
#: is the product's version of the same wait).
CLIENT_SETTLE_S = 0.5


def call_service(executor: Any, client: Any, request: Any, timeout: float = 10.0,
                 ready_timeout: float = 20.0, settled: set | None = None) -> Any:
    """Wait for ``client``'s service, let a newly matched client settle, send ``request`` once
    and spin until its answer arrives; return the response (assert on a timeout).

    ``settled`` (a set the caller keeps) remembers clients that already waited."""
    name = getattr(client, 'srv_name', '?')
    assert spin_until(executor, client.service_is_ready, ready_timeout), f'{name} not ready'
    if settled is None or id(client) not in settled:
        deadline = time.monotonic() + CLIENT_SETTLE_S
        while time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        if settled is not None:
            settled.add(id(client))
    future = client.call_async(request)
    assert spin_until(executor, future.done, timeout), f'{name} did not answer in {timeout:g} s'
    return future.result()


def trajectory_command(positions, names=robot.JOINT_NAMES, gripper=None) -> JointTrajectory:
    """Return a one-point position command, optionally with the ``gripper`` pseudo-joint."""
    msg = JointTrajectory()
    msg.joint_names = list(names) + ([robot.GRIPPER_JOINT] if gripper is not None else [])
    point = JointTrajectoryPoint()
    point.positions = [float(v) for v in positions] + ([gripper] if gripper is not None else [])
    msg.points.append(point)
    return msg


def spin_until(executor: SingleThreadedExecutor, predicate: Callable[[], bool],
               timeout: float = 20.0) -> bool:
    """Spin until ``predicate()`` holds or ``timeout`` seconds pass; return whether it held."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        executor.spin_once(timeout_sec=0.05)
    return predicate()


#: The scripted lockstep episode the node tests compare with core (``push_switch``, seed 4,
#: skill 1, chunks of 8).
TASK, SEED, SKILL = 'push_switch', 4, 1


def core_episode() -> tuple[list, Any]:
    """Run :data:`TASK` through core alone; return ((met, joint positions) per step, result)."""
    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.episode import run_episode
    from realm_ros.core.policy import ActionChunker, ActionClipper, GripperBinarizer
    from realm_ros.core.types import EpisodeSpec
    from realm_ros.policies.scripted import ScriptedPolicy

    spec = EpisodeSpec(task=TASK, seed=SEED, max_steps=150)
    world = MujocoWorld(WorldConfig(task=TASK, camera_rate_hz=0, cameras=()))
    expected: list = []
    policy = ActionClipper(GripperBinarizer(ActionChunker(ScriptedPolicy(skill=SKILL), 8)))
    result = run_episode(world, policy, spec,
                         on_step=lambda s, o, a, p: expected.append((p.met, o.joints.position)))
    world.close()
    assert result.progression > 0
    return expected, result
