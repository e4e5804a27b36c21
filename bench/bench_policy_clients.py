"""Benchmark the latency each policy client adds per inference over loopback.

Each client queries a trivial policy (answers a constant chunk at once) served by a separate
process on 127.0.0.1, so the figures are what the client, the encoding and the socket add on top
of the model's own inference time:

* ``openpi (realm_ros)``: :class:`OpenPIPolicy.infer` on a realm_ros observation (two 180x320
  frames resized to 224x224, encoded, sent, answer parsed) against ``policy_server --policy
  hold`` (realm_ros's openpi-protocol server);
* ``openpi-client (PyPI)``: openpi's own ``WebsocketClientPolicy.infer`` with the already
  resized request dict, against the same server (the protocol's floor with openpi's code);
* ``gr00t n1.6 (realm_ros)``: :class:`Gr00tPolicy.infer` (two 180x320 frames x T=2, state,
  language) against a GR00T-protocol ZeroMQ server process (test/helpers/gr00t_loopback_server.py).

Run: ``.venv/bin/python bench/bench_policy_clients.py [--requests 300]``. Prints p50/p99 ms.
The request loops are bounded; the server processes are stopped at the end.
"""

from __future__ import annotations

import argparse
import logging
import os
import pathlib
import platform
import socket
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def _observation(step: int = 0):
    from realm_ros.core import robot
    from realm_ros.core.types import JointState, Observation
    rng = np.random.default_rng(step)
    images = {name: rng.integers(0, 255, (180, 320, 3), dtype=np.uint8)
              for name in ('exterior_1', 'exterior_2', 'wrist')}
    return Observation(JointState(robot.RESET_Q.copy(), np.zeros(7), np.zeros(7), 0.0), images,
                       'put the green block in the bowl', step)


def _percentiles(samples_ms: list[float]) -> tuple[float, float]:
    p50, p99 = np.percentile(samples_ms, [50, 99])
    return float(p50), float(p99)


def _serve_gr00t(port: int, seconds: float) -> None:
    """Child process: a GR00T-protocol server answering a constant (1, 15, 7) chunk."""
    sys.path.insert(0, str(ROOT / 'test' / 'helpers'))
    from gr00t_loopback_server import Gr00tLoopbackServer

    def constant(observation):
        return {'joint_position': np.zeros((1, 15, 7), dtype=np.float32),
                'gripper_position': np.zeros((1, 15, 1), dtype=np.float32)}

    with Gr00tLoopbackServer(constant, layout='n1.6', max_seconds=seconds, port=port) as server:
        while server.running and server._thread.is_alive():
            time.sleep(0.1)


def _time_calls(fn, requests: int, warmup: int = 10) -> list[float]:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(requests):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000.0)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--requests', type=int, default=300, help='timed requests per client')
    parser.add_argument('--serve-gr00t', type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    # The clients log each refused connection while the server processes start; not news here.
    logging.basicConfig(level=logging.ERROR)
    if args.serve_gr00t:
        _serve_gr00t(args.serve_gr00t, seconds=120.0)
        return

    from openpi_client import image_tools, websocket_client_policy

    from realm_ros.policies.gr00t import Gr00tPolicy
    from realm_ros.policies.openpi import OpenPIPolicy

    bindir = pathlib.Path(sys.executable).parent
    openpi_port, gr00t_port = _free_port(), _free_port()
    servers = [
        subprocess.Popen([str(bindir / 'policy_server'), '--policy', 'hold', '--host',
                          '127.0.0.1', '--port', str(openpi_port), '--action-space',
                          'joint_position', '--max-seconds', '120'],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
        subprocess.Popen([sys.executable, __file__, '--serve-gr00t', str(gr00t_port)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
    ]
    rows = []
    try:
        obs = _observation()
        openpi = OpenPIPolicy(host='127.0.0.1', port=openpi_port, action_space='joint_position',
                              retries=40, backoff_s=0.25, max_backoff_s=0.25)
        samples = _time_calls(lambda: openpi.infer(obs), args.requests)
        rows.append(('openpi (realm_ros) infer()', *_percentiles(samples)))
        transport = openpi._latency.samples[-args.requests:]
        rows.append(('openpi (realm_ros) socket round trip', *_percentiles(transport)))
        openpi.close()

        official = websocket_client_policy.WebsocketClientPolicy(host='127.0.0.1',
                                                                 port=openpi_port)
        request = {
            'observation/exterior_image_1_left':
                image_tools.resize_with_pad(obs.images['exterior_1'], 224, 224),
            'observation/wrist_image_left':
                image_tools.resize_with_pad(obs.images['wrist'], 224, 224),
            'observation/joint_position': obs.joints.position,
            'observation/gripper_position': np.array([0.0]),
            'prompt': obs.instruction,
        }
        samples = _time_calls(lambda: official.infer(request), args.requests)
        rows.append(('openpi-client (PyPI) infer(), pre-resized', *_percentiles(samples)))
        official._ws.close()

        gr00t = Gr00tPolicy(host='127.0.0.1', port=gr00t_port, timeout_s=5.0, retries=10)
        counter = iter(range(10**9))
        samples = _time_calls(lambda: gr00t.infer(_obs_at(obs, next(counter))), args.requests)
        rows.append(('gr00t n1.6 (realm_ros) infer()', *_percentiles(samples)))
        transport = gr00t._latency.samples[-args.requests:]
        rows.append(('gr00t n1.6 (realm_ros) socket round trip', *_percentiles(transport)))
        gr00t.close()
    finally:
        for proc in servers:
            proc.terminate()
            proc.wait(timeout=10)
    print(f'# {platform.machine()} {os.cpu_count()} cores, python {platform.python_version()}, '
          f'{args.requests} requests per client, trivial server policy, loopback')
    print('| client | p50 ms | p99 ms |')
    print('|---|---|---|')
    for name, p50, p99 in rows:
        print(f'| {name} | {p50:.2f} | {p99:.2f} |')


def _obs_at(obs, step):
    """The same observation at a later step (GR00T keeps a video history by step)."""
    from realm_ros.core.types import Observation
    return Observation(obs.joints, obs.images, obs.instruction, step * 15)


if __name__ == '__main__':
    main()
