"""A GR00T-protocol test server on 127.0.0.1: ZeroMQ REP + msgpack, as Isaac-GR00T publishes it.

It imitates ``gr00t/policy/server_client.py`` (N1.6/N1.7) and ``gr00t/eval/service.py`` (N1.5)
faithfully at the wire level, with a test-supplied action function instead of a model:

* requests ``{'endpoint', ['data'], ['api_token']}``, answers msgpack with ndarrays as
  ``{'__ndarray_class__': True, 'as_npy': np.save bytes}`` and modality configs as
  ``{'__ModalityConfig_class__': True, 'as_json': ...}`` (a JSON string for N1.5, a map for N1.6);
* endpoints ``ping``, ``kill``, ``get_modality_config``, ``get_action`` (and ``reset`` for N1.6);
  N1.6 calls the handler with ``**data`` and answers ``[action, info]``;
* any failure answers ``{'error': str}``; a wrong token answers the Unauthorized error.

It is a test double, named as such: it runs on a thread, polls with a short timeout and stops by
itself after ``max_seconds`` or on :meth:`stop`.
"""

from __future__ import annotations

import io
import json
import threading
import time
from typing import Any, Callable

import msgpack
import numpy as np
import zmq


def _encode(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        buffer = io.BytesIO()
        np.save(buffer, obj, allow_pickle=False)
        return {'__ndarray_class__': True, 'as_npy': buffer.getvalue()}
    if isinstance(obj, ModalityConfig):
        return obj.encoded()
    return obj


def _decode(obj: dict) -> Any:
    if '__ndarray_class__' in obj:
        return np.load(io.BytesIO(obj['as_npy']), allow_pickle=False)
    return obj


class ModalityConfig:
    """Stand-in for GR00T's ModalityConfig: ``delta_indices`` and ``modality_keys``."""

    def __init__(self, delta_indices: list[int], modality_keys: list[str],
                 as_string: bool) -> None:
        self.fields = {'delta_indices': delta_indices, 'modality_keys': modality_keys}
        self.as_string = as_string

    def encoded(self) -> dict[str, Any]:
        payload = json.dumps(self.fields) if self.as_string else self.fields
        return {'__ModalityConfig_class__': True, 'as_json': payload}


N16_MODALITY = {
    'video': ([-15, 0], ['exterior_image_1_left', 'wrist_image_left']),
    'state': ([0], ['eef_9d', 'gripper_position', 'joint_position']),
    'action': (list(range(15)), ['joint_position', 'gripper_position']),
    'language': ([0], ['annotation.language.language_instruction']),
}
N15_MODALITY = {
    'video': ([0], ['video.exterior_image_1', 'video.exterior_image_2', 'video.wrist_image']),
    'state': ([0], ['state.eef_position', 'state.eef_rotation', 'state.gripper_position',
                    'state.joint_position']),
    'action': (list(range(16)), ['action.joint_position', 'action.gripper_position']),
    'language': ([0], ['annotation.language.language_instruction']),
}


class Gr00tLoopbackServer:
    """Serve ``action_fn(observation) -> action`` with GR00T's REP protocol on a free port.

    Args:
        action_fn: N1.6: takes the nested observation, returns the action map; N1.5: takes the
            flat observation, returns the ``action.*`` map.
        layout: ``n1.6`` or ``n1.5``.
        api_token: require this token, like ``--api-token``.
        delay_s: sleep before answering ``get_action`` (to provoke client timeouts).
        raw_reply: if set, answer every request with these bytes (malformed-reply tests).
        max_seconds: the server stops by itself after this long.
        port: port to bind on 127.0.0.1 (0 = a free one, see ``port`` afterwards).
    """

    def __init__(self, action_fn: Callable[[dict], dict], layout: str = 'n1.6',
                 api_token: str | None = None, delay_s: float = 0.0,
                 raw_reply: bytes | None = None, max_seconds: float = 60.0,
                 port: int = 0) -> None:
        self.action_fn = action_fn
        self.layout = layout
        self.api_token = api_token
        self.delay_s = delay_s
        self.raw_reply = raw_reply
        self.max_seconds = max_seconds
        self.requests: list[dict] = []
        self.running = False
        self._context = zmq.Context()
        self._socket = self._context.socket(zmq.REP)
        self._socket.setsockopt(zmq.LINGER, 0)
        if port:
            self._socket.bind(f'tcp://127.0.0.1:{port}')
            self.port = port
        else:
            self.port = self._socket.bind_to_random_port('tcp://127.0.0.1')
        self._thread = threading.Thread(target=self._serve, daemon=True)
        modality = N16_MODALITY if layout == 'n1.6' else N15_MODALITY
        self.modality = {name: ModalityConfig(d, k, as_string=layout == 'n1.5')
                         for name, (d, k) in modality.items()}

    def __enter__(self) -> Gr00tLoopbackServer:
        self.running = True
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.running = False
        if self._thread.is_alive():
            self._thread.join(timeout=5.0)
        self._socket.close(linger=0)
        self._context.term()

    def _handle(self, request: dict) -> Any:
        if self.api_token is not None and request.get('api_token') != self.api_token:
            return {'error': 'Unauthorized: Invalid API token'}
        endpoint = request.get('endpoint', 'get_action')
        if endpoint == 'ping':
            return {'status': 'ok', 'message': 'Server is running'}
        if endpoint == 'kill':
            self.running = False
            return {}
        if endpoint == 'get_modality_config':
            return self.modality
        if endpoint == 'reset' and self.layout == 'n1.6':
            return {}
        if endpoint != 'get_action':
            raise ValueError(f'Unknown endpoint: {endpoint}')
        data = request.get('data', {})
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.layout == 'n1.6':
            observation, options = data['observation'], data.get('options')
            del options
            return [self.action_fn(observation), {}]
        return self.action_fn(data)

    def _serve(self) -> None:
        poller = zmq.Poller()
        poller.register(self._socket, zmq.POLLIN)
        deadline = time.monotonic() + self.max_seconds
        while self.running and time.monotonic() < deadline:
            if not poller.poll(50):
                continue
            message = self._socket.recv()
            if self.raw_reply is not None:
                self._socket.send(self.raw_reply)
                continue
            try:
                request = msgpack.unpackb(message, object_hook=_decode)
                self.requests.append(request)
                reply = self._handle(request)
            except Exception as err:  # noqa: BLE001 - GR00T answers every failure as {'error'}
                reply = {'error': str(err)}
            self._socket.send(msgpack.packb(reply, default=_encode))
