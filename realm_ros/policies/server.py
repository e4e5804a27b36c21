"""Serve any realm_ros policy over openpi's websocket protocol.

A lab can then run a realm_ros policy (scripted, replay, torch, ...) on one machine and query it
from anywhere that speaks openpi: realm_ros's own :class:`~realm_ros.policies.openpi.OpenPIPolicy`,
openpi's ``openpi_client.websocket_client_policy.WebsocketClientPolicy``, or openpi's DROID
example client. The wire protocol is openpi's (see :mod:`realm_ros.policies.openpi`):

* on connect the server sends its metadata map: ``{'server': 'realm_ros', 'policy': label,
  'action_space': 'joint_velocity' | 'joint_position', 'image_size': 224}`` plus any extra
  metadata given;
* each binary request frame is an openpi DROID observation map, rebuilt into an
  :class:`Observation` (images named ``exterior_1`` and ``wrist``; joint velocities and efforts
  are not part of the DROID request and are zero); the answer is ``{'actions': (H, 8) float64,
  'server_timing': {'infer_ms', ['prev_total_ms']}, 'policy_timing': {'infer_ms'}}`` with
  H = ``chunk_size`` (default 10: openpi's DROID client asserts a (10, 8) chunk and its
  ``ActionChunkBroker`` indexes up to its action horizon): shorter chunks are padded with
  "hold" rows (the last position target, or zero velocity), longer ones cut;
* a request map with a ``__ctrl__`` key is a realm_ros extension, not part of openpi's protocol
  (openpi's clients never send one): ``{'__ctrl__': 'episode_start'}`` resets the policy at the
  next request, and any ``__ctrl__`` request is answered ``{'__ack__': value}``;
* on any exception the traceback goes back as a text frame and the connection closes with
  INTERNAL_ERROR (1011), as openpi's server does; the server keeps serving new connections;
* ``GET /healthz`` answers 200 ``OK``.

The policy is reset at the first request of each connection, on ``episode_start`` and whenever
the prompt changes. Policies that read privileged simulator state (the scripted ladder) cannot
be served: an openpi request carries no object poses; :class:`PolicyServer` refuses them.
Chunks are converted to the declared action space when the policy produces
the other one: positions p_i become DROID velocities (p_i - p_{i-1}) / 0.2 with p_{-1} the
measured q, and velocities become positions by accumulating q + 0.2 v (DROID rescaling applied).
"""

from __future__ import annotations

import argparse
import asyncio
import http
import json
import logging
import signal
import sys
import threading
import time
import traceback
from typing import Any

import numpy as np
import websockets.asyncio.server as ws_server
import websockets.exceptions
import websockets.frames

from realm_ros.core import control, robot
from realm_ros.core.errors import ConfigError, RealmError
from realm_ros.core.policy import Policy, make_policy
from realm_ros.core.types import ActionChunk, ActionMode, EpisodeSpec, JointState, Observation
from realm_ros.policies import openpi as op
from realm_ros.policies.msgpack_numpy import openpi_packb, openpi_unpackb

_LOG = logging.getLogger(__name__)


def observation_from_request(request: Any, step: int = 0, exterior_camera: str = 'exterior_1',
                             wrist_camera: str = 'wrist') -> Observation:
    """Rebuild an :class:`Observation` from an openpi DROID request map.

    Raises:
        ValueError: the map lacks the joint or gripper position, or has the wrong shapes.
    """
    if not isinstance(request, dict):
        raise ValueError(f'request must be a map, got {type(request).__name__}')
    if op.KEY_JOINTS not in request or op.KEY_GRIPPER not in request:
        raise ValueError(f'request needs {op.KEY_JOINTS!r} (7,) and {op.KEY_GRIPPER!r} (1,); '
                         f'got keys {sorted(map(str, request))}')
    q = np.asarray(request[op.KEY_JOINTS], dtype=float).reshape(-1)
    if q.shape != (robot.NUM_ARM_JOINTS,):
        raise ValueError(f'{op.KEY_JOINTS} must have 7 values, got shape {q.shape}')
    gripper = np.asarray(request[op.KEY_GRIPPER], dtype=float).reshape(-1)
    if gripper.shape != (1,):
        raise ValueError(f'{op.KEY_GRIPPER} must have 1 value, got shape {gripper.shape}')
    images = {}
    for key, camera in ((op.KEY_EXTERIOR, exterior_camera), (op.KEY_WRIST, wrist_camera)):
        if key in request:
            image = np.asarray(request[key])
            if image.ndim != 3 or image.shape[2] != 3:
                raise ValueError(f'{key} must be an (H, W, 3) image, got shape {image.shape}')
            images[camera] = image
    joints = JointState(position=q, velocity=np.zeros(7), effort=np.zeros(7),
                        gripper=float(gripper[0]))
    return Observation(joints=joints, images=images, instruction=str(request.get('prompt', '')),
                       step=step)


def fit_chunk(chunk: ActionChunk, size: int) -> ActionChunk:
    """Return ``chunk`` with exactly ``size`` rows (0 = unchanged).

    Missing rows hold: the last position target again, or zero joint velocity; the gripper
    keeps its last command.
    """
    values = np.asarray(chunk.values, dtype=float)
    if size <= 0 or len(values) == size:
        return chunk
    if len(values) > size:
        return ActionChunk(values[:size].copy(), chunk.mode)
    pad = np.repeat(values[-1:], size - len(values), axis=0)
    if chunk.mode is ActionMode.VELOCITY:
        pad[:, :robot.NUM_ARM_JOINTS] = 0.0
    return ActionChunk(np.concatenate([values, pad]), chunk.mode)


def convert_chunk(chunk: ActionChunk, q: np.ndarray, mode: ActionMode) -> np.ndarray:
    """Return ``chunk``'s (H, 8) values expressed in ``mode``, starting from measured ``q``."""
    values = np.array(chunk.values, dtype=float, copy=True)
    if chunk.mode is mode:
        return values
    previous = np.asarray(q, dtype=float)
    for i in range(len(values)):
        if mode is ActionMode.VELOCITY:
            target = values[i, :7].copy()
            values[i, :7] = (target - previous) / robot.MAX_JOINT_DELTA
        else:
            target = control.velocity_to_target(previous, values[i, :7])
            values[i, :7] = target
        previous = target
    return values


class PolicyServer:
    """Serve one realm_ros :class:`Policy` to openpi websocket clients.

    Use :meth:`serve_forever` in a process of its own, or :meth:`start` / :meth:`stop` to run it
    on a background thread (tests, notebooks). Requests are served one at a time (the policy is
    shared); the event loop stays free for health checks while the policy thinks.
    """

    def __init__(self, policy: Policy, host: str = '127.0.0.1', port: int = 8000,
                 action_space: str = 'joint_velocity', metadata: dict[str, Any] | None = None,
                 task: str = 'empty', chunk_size: int = 10) -> None:
        if policy.needs.privileged:
            raise ConfigError(
                f'policy {policy.label!r} reads privileged simulator state (object poses), '
                'which an openpi request does not carry: it cannot be served. Serve hold, '
                'replay or torch, or run the scripted ladder in the twin (realm-ros episode)')
        if chunk_size < 0:
            raise ConfigError(f'chunk_size must be >= 0 (0 = as the policy answers), got '
                              f'{chunk_size}')
        self.chunk_size = int(chunk_size)
        self.policy = policy
        self.host = host
        self.port = int(port)
        self.action_space = action_space
        self.mode = op.parse_action_space(action_space)
        self.task = task or 'empty'
        self.metadata = {'server': 'realm_ros', 'policy': policy.label,
                         'action_space': action_space, 'image_size': op.DROID_IMAGE_SIZE,
                         **(metadata or {})}
        self.requests = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._lock: asyncio.Lock | None = None

    # ---- lifecycle ---------------------------------------------------------------------------

    def serve_forever(self, max_seconds: float = 0.0) -> None:
        """Serve until interrupted (or for ``max_seconds`` when > 0), blocking."""
        asyncio.run(self._run(None, max_seconds))

    def start(self) -> int:
        """Serve on a background thread; return the bound port (useful with ``port=0``)."""
        ready = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run(ready, 0.0)),
                                        name='realm_ros-policy-server', daemon=True)
        self._thread.start()
        if not ready.wait(timeout=10.0):
            raise RuntimeError(f'policy server did not start on {self.host}:{self.port}')
        return self.port

    def stop(self) -> None:
        """Stop a server started with :meth:`start` and wait for its thread."""
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(timeout=10.0)
            self._thread = None

    def __enter__(self) -> PolicyServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _run(self, ready: threading.Event | None, max_seconds: float) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()
        async with ws_server.serve(self._handler, self.host, self.port, compression=None,
                                   max_size=None, process_request=_health_check) as server:
            self.port = next(iter(server.sockets)).getsockname()[1]
            _LOG.info('serving %s on ws://%s:%d (%s)', self.policy.label, self.host, self.port,
                      self.action_space)
            if ready is not None:
                ready.set()
            try:
                await asyncio.wait_for(self._stop.wait(),
                                       timeout=max_seconds if max_seconds > 0 else None)
            except asyncio.TimeoutError:
                _LOG.info('served for %.1f s; stopping', max_seconds)

    # ---- protocol ----------------------------------------------------------------------------

    async def _handler(self, websocket: ws_server.ServerConnection) -> None:
        await websocket.send(openpi_packb(self.metadata))
        step = 0
        prompt: str | None = None
        prev_total_ms: float | None = None
        while True:
            try:
                frame = await websocket.recv()
                start = time.monotonic()
                if isinstance(frame, str):
                    raise ValueError('expected a binary msgpack frame, got a text frame')
                request = openpi_unpackb(frame)
                if isinstance(request, dict) and '__ctrl__' in request:
                    if request['__ctrl__'] == 'episode_start':
                        prompt = None  # reset at the next request
                        step = 0
                    await websocket.send(openpi_packb({'__ack__': request['__ctrl__']}))
                    continue
                obs = observation_from_request(request, step)
                loop = asyncio.get_running_loop()
                assert self._lock is not None  # set by _run before any connection
                # One policy serves every connection: reset and infer never overlap.
                async with self._lock:
                    if obs.instruction != prompt:
                        prompt = obs.instruction
                        step = 0
                        obs = observation_from_request(request, step)
                        spec = EpisodeSpec(task=self.task, instruction=prompt)
                        await loop.run_in_executor(None, self.policy.reset, spec)
                    infer_start = time.monotonic()
                    chunk = await loop.run_in_executor(None, self.policy.infer, obs)
                    infer_ms = (time.monotonic() - infer_start) * 1000.0
                values = convert_chunk(fit_chunk(chunk, self.chunk_size), obs.joints.position,
                                       self.mode)
                timing = {'infer_ms': (time.monotonic() - start) * 1000.0}
                if prev_total_ms is not None:
                    timing['prev_total_ms'] = prev_total_ms
                await websocket.send(openpi_packb({
                    'actions': values, 'server_timing': timing,
                    'policy_timing': {'infer_ms': infer_ms}}))
                self.requests += 1
                step += len(values)
                prev_total_ms = (time.monotonic() - start) * 1000.0
            except websockets.exceptions.ConnectionClosed:
                return
            except Exception:  # noqa: BLE001 - every failure goes back to the client, as openpi
                text = traceback.format_exc()
                _LOG.error('policy server: request failed:\n%s', text)
                try:
                    await websocket.send(text)
                    await websocket.close(code=websockets.frames.CloseCode.INTERNAL_ERROR,
                                          reason='Internal server error. Traceback included '
                                                 'in previous frame.')
                except websockets.exceptions.ConnectionClosed:
                    pass
                return


def _health_check(connection: ws_server.ServerConnection,
                  request: ws_server.Request) -> ws_server.Response | None:
    """Answer ``GET /healthz`` with 200; let every other request upgrade to a websocket."""
    if request.path == '/healthz':
        return connection.respond(http.HTTPStatus.OK, 'OK\n')
    return None


# ---- command line -------------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``realm-ros serve`` and ``policy_server``."""
    parser.add_argument('--policy', default='hold',
                        help='registered policy to serve (hold, scripted, replay, torch, ...)')
    parser.add_argument('--policy-args', default='{}',
                        help='JSON object of keyword arguments for the policy constructor')
    parser.add_argument('--host', default='0.0.0.0',
                        help='address to bind (0.0.0.0 = every interface, like openpi)')
    parser.add_argument('--port', type=int, default=8000, help='TCP port (openpi default 8000)')
    parser.add_argument('--action-space', default='joint_velocity',
                        choices=sorted(op.ACTION_SPACES),
                        help='what the 7 arm numbers of the answer mean (DROID convention)')
    parser.add_argument('--task', default='empty', help='task name given to policy.reset')
    parser.add_argument('--chunk-size', type=int, default=10,
                        help='rows of every answer (openpi DROID client: 10; 0 = as the policy '
                             'answers); short chunks are padded with hold rows')
    parser.add_argument('--max-seconds', type=float, default=0.0,
                        help='stop after this many seconds (0 = serve until interrupted)')


def run(args: argparse.Namespace) -> int:
    """Build the policy and serve it until interrupted."""
    try:
        policy_args = json.loads(args.policy_args or '{}')
    except json.JSONDecodeError as err:
        raise ConfigError(f'--policy-args is not valid JSON: {err}') from None
    if not isinstance(policy_args, dict):
        raise ConfigError('--policy-args must be a JSON object of keyword arguments')
    policy = make_policy(args.policy, **policy_args)
    try:
        server = PolicyServer(policy, host=args.host, port=args.port,
                              action_space=args.action_space, task=args.task,
                              chunk_size=args.chunk_size)
    except ConfigError:
        policy.close()
        raise
    print(f'serving policy {policy.label!r} on ws://{args.host}:{args.port} '
          f'({args.action_space}); GET /healthz for liveness', flush=True)
    try:
        server.serve_forever(max_seconds=args.max_seconds)
    finally:
        policy.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Console script ``policy_server`` (same options as ``realm-ros serve``).

    Parses its own arguments rather than going through ``realm_ros.cli``: the policies layer
    must not import the command layer above it (test/unit/test_layering.py).
    """
    parser = argparse.ArgumentParser(
        prog='policy_server', description='serve a policy to openpi websocket clients')
    add_arguments(parser)
    args = parser.parse_args(argv)
    # A process started in the background by a non-interactive shell (``cmd &``, nohup, some
    # launchers and CI runners) inherits SIGINT ignored, and asyncio then leaves it ignored:
    # Ctrl-C from ros2 launch would never stop the server. Take SIGINT back explicitly.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return run(args)
    except RealmError as err:
        print(f'policy_server: error: {err}', file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print('policy_server: interrupted', file=sys.stderr)
        return 130


__all__ = ['PolicyServer', 'add_arguments', 'convert_chunk', 'fit_chunk', 'main',
           'observation_from_request', 'run']
