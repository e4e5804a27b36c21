"""Serve a LeRobot checkpoint over openpi's websocket protocol, from lerobot's own environment.

lerobot pins its own torch (0.4.4: torch < 2.11; 0.6: Python 3.12), so it cannot share the
project's venv. This file runs with the lerobot venv's interpreter and imports nothing from
realm_ros: only lerobot, torch, numpy, msgpack and websockets (``make lerobot-env`` installs
them). :class:`realm_ros.policies.lerobot.LeRobotPolicy` starts it and speaks to it;
openpi's own ``WebsocketClientPolicy`` can too::

    ~/.local/share/realm_ros/lerobot-venv/bin/python realm_ros/policies/lerobot_server.py \\
        --checkpoint OUT/checkpoints/last/pretrained_model --port 8000

Inference is LeRobot's own, step for step as ``predict_action`` (what ``lerobot-record`` runs on
a robot; ``lerobot.utils.control_utils`` in 0.4, ``lerobot.common.control_utils`` in 0.6, see
:func:`lerobot_api`): ``prepare_observation_for_inference`` (HWC uint8 ->
CHW float in [0, 1], batch of 1), the checkpoint's saved preprocessor (normalisation with the
training set's stats), then ``policy.predict_action_chunk`` (where ``predict_action`` calls
``select_action``, which pops the same chunk's rows one by one), then the saved postprocessor
(unnormalisation). What one query answers is read from the checkpoint's config by
:func:`action_plan` (``chunk`` rows, ``execute`` of them run open loop, ``history`` observations
in): ACT answers its ``chunk_size`` rows from the current observation; diffusion answers its
``n_action_steps`` rows from its last ``n_obs_steps`` observations, kept in the policy's own
queues as ``select_action`` keeps them (LeRobot's ``populate_queues``: filled with copies of
the first observation after a reset, then one entry per control step), so the request carries
the steps the client ran open loop since its last query (``realm/history``).

Protocol (openpi's, as :mod:`realm_ros.policies.server`): metadata frame on connect
``{'server': 'lerobot', 'policy': type, 'lerobot': version, 'action_space': 'joint_position',
'cameras': [...], 'image_size': [h, w], 'chunk': n, 'execute': k, 'history': o}``; a request is
openpi's DROID map (``observation/exterior_image_1_left``, ``observation/wrist_image_left``,
``observation/joint_position`` (7,), ``observation/gripper_position`` (1,), ``prompt``), plus,
for a policy with ``history`` > 1, ``realm/history``: the same maps (no prompt) of the earlier
control steps the policy has not seen yet, oldest first (at most ``history`` - 1); images of
another size are resized (shrinking area-averaged, padding bands of a 224x224 openpi frame
removed first); the answer is ``{'actions': (H, 8) float64, 'server_timing': {'infer_ms'}}``.
``{'__ctrl__': 'episode_start', 'seed': s}`` resets the policy before the next request (its
queues, ACT's temporal ensembler) and seeds torch with ``s`` there (answered
``{'__ack__': ...}``): diffusion's noise is then the same on every run of that episode. A failure
goes back as a text frame (the traceback) and the connection closes with 1011, as openpi does.
Once listening it prints ``LEROBOT_SERVER_READY port=N`` on stdout; it exits when its standard
input closes (the realm_ros process that started it has gone).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
import json
import os
import sys
import threading
import time
import traceback
from typing import Any

import msgpack
import numpy as np

#: openpi DROID request keys -> the realm_ros / dataset camera they carry.
DROID_CAMERAS = {'observation/exterior_image_1_left': 'exterior_1',
                 'observation/wrist_image_left': 'wrist'}
KEY_JOINTS = 'observation/joint_position'
KEY_GRIPPER = 'observation/gripper_position'
#: realm_ros's key for the earlier control steps' observations (a list of DROID maps).
KEY_HISTORY = 'realm/history'


def _encode(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return {b'__ndarray__': True, b'data': np.ascontiguousarray(obj).tobytes(),
                b'dtype': obj.dtype.str, b'shape': list(obj.shape)}
    if isinstance(obj, np.generic):
        return {b'__npgeneric__': True, b'data': obj.item(), b'dtype': obj.dtype.str}
    raise TypeError(f'cannot serialise {type(obj).__name__}')


def _decode(obj: dict) -> Any:
    if b'__ndarray__' in obj:
        dtype = np.dtype(obj[b'dtype'])
        if dtype.kind in 'OVc':
            raise ValueError(f'refused dtype {dtype}')
        return np.frombuffer(obj[b'data'], dtype=dtype).reshape(obj[b'shape']).copy()
    if b'__npgeneric__' in obj:
        return np.dtype(obj[b'dtype']).type(obj[b'data'])
    return obj


def packb(obj: Any) -> bytes:
    return msgpack.packb(obj, default=_encode, use_bin_type=True)


def unpackb(data: bytes) -> Any:
    return msgpack.unpackb(data, object_hook=_decode, raw=False, strict_map_key=False)


def fit_image(image: np.ndarray, height: int, width: int) -> np.ndarray:
    """(H, W, 3) uint8 at the checkpoint's size: a square openpi frame loses its padding bands,
    then the picture is area-resized (what realm_ros's client already sent needs nothing)."""
    image = np.asarray(image, dtype=np.uint8)
    if image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f'expected an (H, W, 3) image, got shape {image.shape}')
    if image.shape[:2] == (height, width):
        return image
    import cv2

    rows = np.flatnonzero(image.reshape(image.shape[0], -1).any(axis=1))
    cols = np.flatnonzero(image.transpose(1, 0, 2).reshape(image.shape[1], -1).any(axis=1))
    if rows.size and cols.size:
        image = image[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]
    return cv2.resize(np.ascontiguousarray(image), (width, height), interpolation=cv2.INTER_AREA)


def action_plan(config: Mapping[str, Any]) -> dict[str, int]:
    """What one query of a LeRobot policy answers, from its ``config.json``: ``{'chunk': rows
    ``predict_action_chunk`` returns, 'execute': rows ``select_action`` runs before it predicts
    again, 'history': observations it is given}``.

    Read from the fields, the same for every type: ``n_obs_steps`` (default 1) observations in;
    ``chunk_size`` rows out where the config has one (ACT), else ``n_action_steps`` (diffusion's
    ``generate_actions`` keeps the ``n_action_steps`` rows from the current step of its
    ``horizon``); ``n_action_steps`` of them executed. LeRobot's own rules on these numbers are
    checked here (diffusion: ``n_action_steps <= horizon - n_obs_steps + 1``).

    Raises:
        ValueError: one line naming the field that does not fit.
    """
    def number(name: str, default: int) -> int:
        value = config.get(name, default)
        if value is None:
            value = default
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f'config field {name!r} must be an integer >= 1, got {value!r}')
        return int(value)

    history = number('n_obs_steps', 1)
    execute = number('n_action_steps', 1)
    if 'chunk_size' in config:
        chunk = number('chunk_size', 1)
        if execute > chunk:
            raise ValueError(f'config field n_action_steps ({execute}) exceeds chunk_size '
                             f'({chunk})')
    else:
        chunk = execute
        if 'horizon' in config:
            horizon = number('horizon', 1)
            if execute > horizon - history + 1:
                raise ValueError(f'config field n_action_steps ({execute}) exceeds horizon - '
                                 f'n_obs_steps + 1 ({horizon} - {history} + 1)')
    return {'chunk': chunk, 'execute': execute, 'history': history}


#: Where each piece of LeRobot's inference lives, by release: (module, name) tried in order.
#: 0.4.x and 0.6.x share all but ``predict_action``, which 0.6 moved from ``lerobot.utils``
#: to ``lerobot.common``.
LEROBOT_API = {
    'PreTrainedConfig': (('lerobot.configs.policies', 'PreTrainedConfig'),),
    'get_policy_class': (('lerobot.policies.factory', 'get_policy_class'),),
    'make_pre_post_processors': (('lerobot.policies.factory', 'make_pre_post_processors'),),
    'prepare_observation_for_inference': (('lerobot.policies.utils',
                                           'prepare_observation_for_inference'),),
    'populate_queues': (('lerobot.policies.utils', 'populate_queues'),),
    'predict_action': (('lerobot.common.control_utils', 'predict_action'),    # 0.6
                       ('lerobot.utils.control_utils', 'predict_action')),    # 0.4
}


class LeRobotAPIError(ImportError):
    """This lerobot lacks a piece the server needs (a release other than 0.4 / 0.6)."""


def lerobot_api() -> dict[str, Any]:
    """The functions and classes of :data:`LEROBOT_API` from the installed lerobot.

    Raises:
        ImportError: lerobot itself is not importable.
        LeRobotAPIError: lerobot is there but one piece is in none of the known places (one
            line: the version and what is missing).
    """
    import importlib

    importlib.import_module('lerobot')
    found: dict[str, Any] = {}
    for name, places in LEROBOT_API.items():
        for module, attr in places:
            try:
                found[name] = getattr(importlib.import_module(module), attr)
                break
            except (ImportError, AttributeError):
                continue
        else:
            from importlib.metadata import PackageNotFoundError, version

            try:
                have = version('lerobot')
            except PackageNotFoundError:
                have = '?'
            where = ' or '.join(f'{m}.{a}' for m, a in places)
            raise LeRobotAPIError(f'lerobot {have} has no {where}; the server knows lerobot '
                                  '0.4 and 0.6')
    return found


class LeRobotRunner:
    """One LeRobot checkpoint with its saved pre- and postprocessors."""

    def __init__(self, checkpoint: str, device: str = 'cpu', threads: int = 0) -> None:
        import torch

        self.api = api = lerobot_api()
        PreTrainedConfig = api['PreTrainedConfig']  # noqa: N806 - lerobot's class
        get_policy_class = api['get_policy_class']
        make_pre_post_processors = api['make_pre_post_processors']

        if threads > 0:
            torch.set_num_threads(threads)
        self.torch = torch
        self.device = torch.device(device)
        self.config = PreTrainedConfig.from_pretrained(checkpoint)
        self.config.device = device
        if getattr(self.config, 'pretrained_backbone_weights', None):
            # The checkpoint holds the whole backbone (parameters and frozen statistics); built
            # from torchvision's pretrained weights first, loading would fetch, or fail to fetch
            # offline, weights that the checkpoint's own then replace.
            self.config.pretrained_backbone_weights = None
        self.policy = get_policy_class(self.config.type).from_pretrained(checkpoint,
                                                                         config=self.config)
        self.policy.to(self.device).eval()
        overrides = {'device_processor': {'device': device}}
        self.pre, self.post = make_pre_post_processors(
            self.config, pretrained_path=checkpoint, preprocessor_overrides=overrides)
        with open(os.path.join(checkpoint, 'config.json')) as f:
            self.plan = action_plan(json.load(f))
        self.cameras: dict[str, tuple[int, int]] = {}
        for key, feature in self.config.image_features.items():
            shape = tuple(feature.shape)  # (C, H, W)
            self.cameras[key.rsplit('.', 1)[-1]] = (int(shape[1]), int(shape[2]))
        self.robot_type = ''

    def metadata(self) -> dict[str, Any]:
        from importlib.metadata import version

        size = next(iter(self.cameras.values()), (0, 0))
        return {'server': 'lerobot', 'policy': self.config.type, 'lerobot': version('lerobot'),
                'action_space': 'joint_position', 'cameras': sorted(self.cameras),
                'image_size': list(size), **self.plan}

    def observation(self, request: dict[str, Any]) -> dict[str, np.ndarray]:
        """openpi DROID map -> the dict of numpy arrays lerobot-record hands predict_action."""
        if KEY_JOINTS not in request or KEY_GRIPPER not in request:
            raise ValueError(f'request needs {KEY_JOINTS!r} and {KEY_GRIPPER!r}; got '
                             f'{sorted(map(str, request))}')
        q = np.asarray(request[KEY_JOINTS], dtype=np.float32).reshape(-1)
        g = np.asarray(request[KEY_GRIPPER], dtype=np.float32).reshape(-1)
        if q.shape != (7,) or g.shape != (1,):
            raise ValueError(f'joint_position must be (7,) and gripper_position (1,), got '
                             f'{q.shape} and {g.shape}')
        obs: dict[str, np.ndarray] = {'observation.state': np.r_[q, g].astype(np.float32)}
        by_camera = {camera: key for key, camera in DROID_CAMERAS.items()}
        for camera, (h, w) in self.cameras.items():
            key = by_camera.get(camera)
            if key is None or key not in request:
                raise ValueError(f'the checkpoint needs camera {camera!r}; the request has '
                                 f'{sorted(k for k in map(str, request) if "image" in k)}')
            obs[f'observation.images.{camera}'] = fit_image(request[key], h, w)
        return obs

    def reset(self, seed: int | None = None) -> None:
        """A new episode: the policy's queues emptied; torch seeded with ``seed`` if given."""
        self.policy.reset()
        if seed is not None:
            self.torch.manual_seed(int(seed))

    def chunk(self, observations: list[dict[str, np.ndarray]], task: str) -> np.ndarray:
        """The answer to one query, (chunk, action_dim) float64, through lerobot's own steps.

        ``observations``: the control steps the policy has not seen yet, oldest first, the
        current one last. With ``history`` 1 (ACT) only the current one is used. Otherwise each
        enters the policy's own observation queues through LeRobot's ``populate_queues``,
        stacked as ``select_action`` stacks them (cameras on ``observation.images``), and
        ``predict_action_chunk`` reads the last ``n_obs_steps`` from there, as it does when
        ``select_action`` calls it.
        """
        prepare_observation_for_inference = self.api['prepare_observation_for_inference']
        with self.torch.inference_mode():
            batches = [self.pre(prepare_observation_for_inference(dict(obs), self.device, task,
                                                                  self.robot_type))
                       for obs in observations]
            batch = batches[-1]
            if self.plan['history'] > 1:
                batches = [self._with_images(b) for b in batches]
                for step in batches:
                    self.policy._queues = self.api['populate_queues'](  # noqa: SLF001
                        self.policy._queues, step)  # noqa: SLF001 - LeRobot's own queues
                batch = batches[-1]
            actions = self.policy.predict_action_chunk(batch)
            actions = self.post(actions)
        return actions[0, :self.plan['chunk']].to('cpu', self.torch.float64).numpy()

    def _with_images(self, batch: dict[str, Any]) -> dict[str, Any]:
        """``batch`` as ``select_action`` puts it in the queues: no ``action`` entry (the
        preprocessor leaves one, None), the cameras stacked on ``observation.images``
        (B, N, C, H, W), the key and layout LeRobot's queue policies read."""
        step = {k: v for k, v in batch.items() if k != 'action'}
        keys = list(self.config.image_features)
        if keys:
            step['observation.images'] = self.torch.stack([step[k] for k in keys], dim=-4)
        return step

    def select(self, obs: dict[str, np.ndarray], task: str) -> np.ndarray:
        """One action as lerobot-record gets it: ``predict_action`` (select_action's queue)."""
        predict_action = self.api['predict_action']
        action = predict_action(dict(obs), self.policy, self.device, self.pre, self.post,
                                False, task, self.robot_type)
        return action.reshape(-1).to('cpu', self.torch.float64).numpy()


def serve(runner: LeRobotRunner, host: str, port: int, max_seconds: float = 0.0) -> None:
    from websockets.http11 import Response
    from websockets.sync.server import serve as ws_serve

    lock = threading.Lock()
    meta = runner.metadata()

    def health(connection: Any, request: Any) -> Response | None:
        if request.path == '/healthz':
            return connection.respond(200, 'OK\n')
        return None

    def handler(websocket: Any) -> None:
        websocket.send(packb(meta))
        prompt: str | None = None
        seed: int | None = None
        prev_total_ms: float | None = None
        while True:
            try:
                frame = websocket.recv()
            except Exception:  # noqa: BLE001 - the client went away
                return
            start = time.monotonic()
            try:
                if isinstance(frame, str):
                    raise ValueError('expected a binary msgpack frame, got a text frame')
                request = unpackb(frame)
                if not isinstance(request, dict):
                    raise ValueError(f'request must be a map, got {type(request).__name__}')
                if '__ctrl__' in request:
                    if request['__ctrl__'] == 'episode_start':
                        prompt = None
                        seed = request.get('seed')
                    websocket.send(packb({'__ack__': request['__ctrl__']}))
                    continue
                history = request.get(KEY_HISTORY, [])
                if not isinstance(history, list) or not all(isinstance(h, dict)
                                                            for h in history):
                    raise ValueError(f'{KEY_HISTORY} must be a list of observation maps')
                observations = [runner.observation(h) for h in history]
                observations.append(runner.observation(request))
                task = str(request.get('prompt', ''))
                with lock:
                    if task != prompt:
                        runner.reset(seed)
                        prompt = task
                    t0 = time.monotonic()
                    actions = runner.chunk(observations, task)
                    infer_ms = (time.monotonic() - t0) * 1000.0
                timing = {'infer_ms': (time.monotonic() - start) * 1000.0}
                if prev_total_ms is not None:
                    timing['prev_total_ms'] = prev_total_ms
                websocket.send(packb({'actions': actions, 'server_timing': timing,
                                      'policy_timing': {'infer_ms': infer_ms}}))
                prev_total_ms = (time.monotonic() - start) * 1000.0
            except Exception:  # noqa: BLE001 - every failure goes back to the client, as openpi
                text = traceback.format_exc()
                print(text, file=sys.stderr, flush=True)
                try:
                    websocket.send(text)
                    websocket.close(code=1011, reason='Internal server error. Traceback '
                                                      'included in previous frame.')
                except Exception:  # noqa: BLE001
                    pass
                return

    with ws_serve(handler, host, port, compression=None, max_size=None,
                  process_request=health) as server:
        bound = server.socket.getsockname()[1]
        print(f'LEROBOT_SERVER_READY port={bound} meta={json.dumps(meta)}', flush=True)
        if max_seconds > 0:
            threading.Timer(max_seconds, server.shutdown).start()
        server.serve_forever()


def _exit_with_parent() -> None:
    """End the process when standard input closes (its parent has gone)."""
    try:
        while sys.stdin.read(4096):
            pass
    finally:
        os._exit(0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog='lerobot_server.py', description=__doc__.split('\n')[0])
    parser.add_argument('--checkpoint', required=True,
                        help='pretrained_model folder written by lerobot-train')
    parser.add_argument('--host', default='127.0.0.1')
    parser.add_argument('--port', type=int, default=8000, help='0 = any free port')
    parser.add_argument('--device', default='cpu')
    parser.add_argument('--threads', type=int, default=0, help='torch threads (0 = default)')
    parser.add_argument('--max-seconds', type=float, default=0.0)
    parser.add_argument('--exit-with-stdin', action='store_true',
                        help='exit when standard input closes (set by LeRobotPolicy)')
    args = parser.parse_args(argv)
    try:
        runner = LeRobotRunner(args.checkpoint, args.device, args.threads)
    except LeRobotAPIError as err:
        print(f'lerobot_server: {err}', file=sys.stderr)
        return 2
    except ImportError as err:
        print(f'lerobot_server: lerobot is not importable here ({err}); run it with the lerobot '
              'venv (make lerobot-env)', file=sys.stderr)
        return 2
    if args.exit_with_stdin:
        threading.Thread(target=_exit_with_parent, daemon=True).start()
    serve(runner, args.host, args.port, args.max_seconds)
    return 0


if __name__ == '__main__':
    sys.exit(main())
