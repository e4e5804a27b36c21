"""An openpi-protocol policy server that checks every request against DROID's contract.

What it checks comes from openpi itself (Physical-Intelligence/openpi): the request dict of
``examples/droid/main.py`` (exactly ``observation/exterior_image_1_left`` and
``observation/wrist_image_left``, uint8 (224, 224, 3) after ``resize_with_pad``;
``observation/joint_position`` (7,); ``observation/gripper_position`` (1,); ``prompt`` a str),
as ``src/openpi/policies/droid_policy.py`` (``DroidInputs``) reads it; frames are packed with
``openpi_client.msgpack_numpy`` (the real package), the metadata frame comes first (empty, as
``serve_policy.py`` sends for DROID checkpoints), an answer is ``{'actions': (10, 8)}`` (the
DROID client asserts that shape), a failure is a text frame with the traceback and close code
1011 (``websocket_policy_server.py``).

It answers DROID joint velocities (zeros: hold still, gripper open) or, with
``action_space='joint_position'``, absolute joint targets at the measured joints (what a
``*_jointpos`` checkpoint answers). It records, per request, the mean brightness of each image
and the fraction of pixels that are not black, for the tests to assert on.

Run it as a process for the node graph:
``python test/helpers/droid_openpi_server.py --port P --log F`` (one JSON line per request in F).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import traceback
from typing import Any

import numpy as np
from openpi_client import msgpack_numpy
import websockets.asyncio.server as ws_server
import websockets.exceptions
import websockets.frames
from ws_loopback import LoopbackWebsocketServer

DROID_KEYS = {'observation/exterior_image_1_left', 'observation/wrist_image_left',
              'observation/joint_position', 'observation/gripper_position', 'prompt'}
IMAGE_KEYS = ('observation/exterior_image_1_left', 'observation/wrist_image_left')


def check_droid_request(request: Any) -> dict[str, Any]:
    """Raise AssertionError unless ``request`` is what openpi's DROID client sends.

    Returns a summary: image brightness, non-black fraction, joints, prompt.
    """
    assert isinstance(request, dict), f'request must be a dict, got {type(request).__name__}'
    assert set(request) == DROID_KEYS, f'keys {sorted(request)} != {sorted(DROID_KEYS)}'
    summary: dict[str, Any] = {}
    for key in IMAGE_KEYS:
        image = request[key]
        assert isinstance(image, np.ndarray), f'{key} is {type(image).__name__}'
        assert image.dtype == np.uint8, f'{key} dtype {image.dtype} != uint8'
        assert image.shape == (224, 224, 3), f'{key} shape {image.shape} != (224, 224, 3)'
        name = 'wrist' if 'wrist' in key else 'exterior'
        summary[f'{name}_mean'] = float(image.mean())
        summary[f'{name}_lit'] = float(np.mean(image.max(axis=2) > 20))
    q = np.asarray(request['observation/joint_position'])
    assert q.shape == (7,) and np.issubdtype(q.dtype, np.floating), \
        f'joint_position {q.shape} {q.dtype}'
    g = np.asarray(request['observation/gripper_position'])
    assert g.shape == (1,) and np.issubdtype(g.dtype, np.floating), \
        f'gripper_position {g.shape} {g.dtype}'
    assert 0.0 <= float(g[0]) <= 1.0, f'gripper_position {g} outside [0, 1]'
    prompt = request['prompt']
    assert isinstance(prompt, str) and prompt, f'prompt {prompt!r}'
    summary.update(joints=q.tolist(), gripper=float(g[0]), prompt=prompt)
    return summary


class DroidOpenpiServer(LoopbackWebsocketServer):
    """Serve on 127.0.0.1 from a background thread; ``requests`` holds each summary."""

    def __init__(self, port: int = 0, action_space: str = 'joint_velocity',
                 metadata: dict[str, Any] | None = None, log_path: str = '') -> None:
        super().__init__(self._handler, port=port, lifetime_s=600.0, start_timeout_s=10.0,
                         label='DROID openpi test server')
        self.action_space = action_space
        self.metadata = metadata or {}
        self.log_path = log_path
        self.requests: list[dict[str, Any]] = []
        self.errors: list[str] = []

    def answer(self, request: dict[str, Any]) -> np.ndarray:
        """Return the (10, 8) chunk for a checked request."""
        actions = np.zeros((10, 8))
        if self.action_space == 'joint_position':
            actions[:, :7] = np.asarray(request['observation/joint_position'], dtype=float)
        return actions

    async def _handler(self, websocket: ws_server.ServerConnection) -> None:
        await websocket.send(msgpack_numpy.packb(self.metadata))
        while True:
            try:
                request = msgpack_numpy.unpackb(await websocket.recv())
                summary = check_droid_request(request)
                self.requests.append(summary)
                if self.log_path:
                    with open(self.log_path, 'a') as log:
                        log.write(json.dumps(summary) + '\n')
                await websocket.send(msgpack_numpy.packb({
                    'actions': self.answer(request),
                    'server_timing': {'infer_ms': 1.0}}))
            except websockets.exceptions.ConnectionClosed:
                return
            except Exception:  # noqa: BLE001 - as openpi: traceback to the client, then close
                text = traceback.format_exc()
                self.errors.append(text)
                try:
                    await websocket.send(text)
                    await websocket.close(code=websockets.frames.CloseCode.INTERNAL_ERROR,
                                          reason='Internal server error')
                except websockets.exceptions.ConnectionClosed:
                    pass
                return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--port', type=int, required=True)
    parser.add_argument('--log', required=True)
    parser.add_argument('--action-space', default='joint_velocity')
    args = parser.parse_args()
    server = DroidOpenpiServer(args.port, args.action_space, log_path=args.log)
    asyncio.run(server._run(None))


if __name__ == '__main__':
    main()
