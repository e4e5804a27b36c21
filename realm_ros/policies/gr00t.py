"""Client for NVIDIA Isaac-GR00T policy servers (ZeroMQ REQ/REP + msgpack), N1.5 and N1.6/N1.7.

Transport (both versions): a ZeroMQ REQ socket to ``tcp://host:5555``; each request is
msgpack of ``{'endpoint': name, 'data': ..., ['api_token': token]}`` (``data`` omitted for
endpoints without input), ndarrays as ``{'__ndarray_class__': True, 'as_npy': np.save bytes}``
(the encoding since Aug/Sep 2025; older servers pickled with torch.save and are not supported).
Endpoints used: ``ping``, ``get_modality_config``, ``get_action``. A server error comes back as
``{'error': str}``. A REQ socket that timed out is stuck mid-exchange, so it is closed and
recreated before the next attempt.

Layouts (``layout``):

``n1.6`` (also ``n1.7``; Isaac-GR00T main, ``examples/DROID/main_gr00t.py``,
embodiment ``OXE_DROID_RELATIVE_EEF_RELATIVE_JOINT``)
    ``get_action`` data ``{'observation': {'video': {key: (1, T, 180, 320, 3) uint8},
    'state': {key: (1, 1, D) float32}, 'language': {key: [[instruction]]}}, 'options': None}``,
    answered by ``[action, info]`` with ``action['joint_position']`` (1, N, 7) rad and
    ``action['gripper_position']`` (1, N, 1). realm_ros executes these absolute joint targets
    (DROID ``joint_position`` action space) as an :attr:`ActionMode.POSITION` chunk. Video,
    state and language keys and the video history T come from ``get_modality_config``.

``n1.5`` (``scripts/inference_service.py``, data config ``oxe_droid``)
    ``get_action`` data is a flat map: ``video.exterior_image_1``, ``video.exterior_image_2``,
    ``video.wrist_image`` (1, H, W, 3) uint8; ``state.eef_position`` (1, 3),
    ``state.eef_rotation`` (1, 3), ``state.gripper_position`` (1, 1), ``state.joint_position``
    (1, 7) when the modality config asks for it; ``annotation.language.language_instruction``
    [str]. The answer maps ``action.<key>`` to (16, D). The released ``oxe_droid`` head outputs
    **Cartesian end-effector deltas** (``action.eef_position_delta``,
    ``action.eef_rotation_delta``); realm_ros has no IK on its command path and cannot execute
    them, so such an answer raises :class:`ConfigError`. N1.5 checkpoints fine-tuned with
    joint actions (``action.joint_position`` (16, 7) + ``action.gripper_position``) are
    supported.

The end-effector state realm_ros sends (``eef_9d``, ``state.eef_*``) is the Panda flange pose
from forward kinematics of the measured joints in ``base_link`` (m); DROID's recorded pose is
Polymetis' end-effector frame, which may add a tool offset: check it against your checkpoint.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Mapping

import numpy as np
import zmq

from realm_ros.core import robot
from realm_ros.core.errors import ConfigError, InfrastructureError
from realm_ros.core.policy import Policy, PolicyNeeds, Prompt
from realm_ros.core.rotations import rpy_from_matrix
from realm_ros.core.types import ActionChunk, ActionMode, EpisodeSpec, Observation
from realm_ros.policies.image_tools import resize_with_pad
from realm_ros.policies.latency import LatencyRecorder, LatencyStats
from realm_ros.policies.msgpack_numpy import gr00t_packb, gr00t_unpackb

_LOG = logging.getLogger(__name__)

LAYOUTS = ('n1.5', 'n1.6', 'n1.7')

#: Isaac-GR00T's DROID example sends images at this size (rows, columns).
DROID_RESOLUTION = (180, 320)

#: OXE DROID's end-effector rotation correction (R_euler post-multiplied), N1.6/N1.7 eef_9d.
DROID_EEF_ROTATION_CORRECT = np.array([[0.0, 0.0, -1.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])

#: N1.6/N1.7 defaults when the server has no modality config (examples/DROID/main_gr00t.py).
N16_DEFAULTS: dict[str, dict[str, Any]] = {
    'video': {'modality_keys': ['exterior_image_1_left', 'wrist_image_left'],
              'delta_indices': [0]},
    'state': {'modality_keys': ['eef_9d', 'gripper_position', 'joint_position'],
              'delta_indices': [0]},
    'language': {'modality_keys': ['annotation.language.language_instruction'],
                 'delta_indices': [0]},
}

#: N1.5 ``oxe_droid`` defaults (gr00t/experiment/data_config.py).
N15_DEFAULTS: dict[str, dict[str, Any]] = {
    'video': {'modality_keys': ['video.exterior_image_1', 'video.exterior_image_2',
                                'video.wrist_image'], 'delta_indices': [0]},
    'state': {'modality_keys': ['state.eef_position', 'state.eef_rotation',
                                'state.gripper_position'], 'delta_indices': [0]},
    'language': {'modality_keys': ['annotation.language.language_instruction'],
                 'delta_indices': [0]},
}


def flange_pose(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the flange position (3,) m and rotation (3, 3) in ``base_link`` for joints ``q``."""
    pose = robot.forward_kinematics(np.asarray(q, dtype=float))[-1]
    return pose[:3, 3].copy(), pose[:3, :3].copy()


def eef_9d(q: np.ndarray) -> np.ndarray:
    """Return GR00T N1.6/N1.7 DROID ``eef_9d``: xyz (m) + first two rows of R @ correction."""
    xyz, rotation = flange_pose(q)
    rot = rotation @ DROID_EEF_ROTATION_CORRECT
    return np.concatenate([xyz, rot[:2, :].reshape(6)]).astype(np.float32)


def _modality(config: Mapping[str, Any], name: str, defaults: Mapping[str, Any]
              ) -> tuple[list[str], list[int]]:
    entry = config.get(name) if isinstance(config, Mapping) else None
    if not isinstance(entry, Mapping):
        entry = defaults[name]
    keys = [str(k) for k in entry.get('modality_keys', defaults[name]['modality_keys'])]
    deltas = [int(d) for d in entry.get('delta_indices', [0]) or [0]]
    return keys, deltas


class Gr00tPolicy(Policy):
    """A policy served by an Isaac-GR00T inference server (``run_gr00t_server.py``)."""

    name = 'gr00t'

    def __init__(self, host: str = 'localhost', port: int = 5555, layout: str = 'n1.6',
                 api_token: str | None = None, timeout_s: float = 15.0, retries: int = 1,
                 backoff_s: float = 0.5, exterior_camera: str = 'exterior_1',
                 exterior_camera_2: str = 'exterior_2', wrist_camera: str = 'wrist',
                 image_height: int = DROID_RESOLUTION[0], image_width: int = DROID_RESOLUTION[1],
                 prompt: str = '') -> None:
        """Configure the client; nothing is sent until the first :meth:`reset` or :meth:`infer`.

        Args:
            host, port: the server (GR00T's default port is 5555).
            layout: ``n1.6``/``n1.7`` (nested observation, joint-position actions) or ``n1.5``
                (flat ``video.*``/``state.*`` keys).
            api_token: sent as ``api_token`` when the server was started with one.
            timeout_s: seconds to wait for each answer.
            retries: extra attempts after a timeout (each on a fresh REQ socket).
            backoff_s: wait between attempts, s (doubling).
            exterior_camera, exterior_camera_2, wrist_camera: realm_ros camera names for
                DROID's exterior 1, exterior 2 and wrist images.
            image_height, image_width: size the images are padded/resized to, px.
            prompt: instruction used when neither the observation nor the spec has one.
        """
        layout = str(layout).lower()
        if layout not in LAYOUTS:
            raise ConfigError(f'layout must be one of {list(LAYOUTS)}, got {layout!r}')
        if timeout_s <= 0 or retries < 0 or backoff_s < 0:
            raise ConfigError('timeout_s must be > 0 and retries, backoff_s >= 0; got '
                              f'{timeout_s}, {retries}, {backoff_s}')
        self.layout = 'n1.5' if layout == 'n1.5' else 'n1.6'
        # A launch file may pass empty defaults (host '', port 0) meaning "the usual".
        self.host = str(host or 'localhost')
        self.port = int(port or 5555)
        self.endpoint = f'tcp://{self.host}:{self.port}'
        self.api_token = api_token or None
        self.timeout_s = float(timeout_s)
        self.retries = int(retries)
        self.backoff_s = float(backoff_s)
        self.cameras = {'exterior_1': exterior_camera, 'exterior_2': exterior_camera_2,
                        'wrist': wrist_camera}
        self.image_size = (int(image_height), int(image_width))
        self.prompt = Prompt(prompt)
        self._context = zmq.Context()
        self._socket: zmq.Socket | None = None
        self._modality: dict[str, Any] | None = None
        self._frames: list[tuple[int, dict[str, np.ndarray]]] = []
        self._latency = LatencyRecorder()
        self.timeouts = 0

    @property
    def label(self) -> str:
        return f'gr00t-{self.layout}@{self.endpoint}'

    @property
    def needs(self) -> PolicyNeeds:
        """DROID cameras at 180x320, joint positions; horizon 15 (N1.6/N1.7) or 8 (N1.5).

        The cameras are the layout's defaults (N1.6/N1.7: exterior 1 and wrist; N1.5: both
        exteriors and wrist) or, once fetched, those the server's modality config names.
        """
        defaults = N16_DEFAULTS if self.layout == 'n1.6' else N15_DEFAULTS
        keys, _ = _modality(self._modality or {}, 'video', defaults)
        cameras = tuple(dict.fromkeys(self.cameras[self._role(key)] for key in keys))
        return PolicyNeeds(cameras=cameras, image_size=self.image_size,
                           action_space='joint_position',
                           horizon=15 if self.layout == 'n1.6' else 8)

    @property
    def latency(self) -> LatencyStats:
        """Round-trip time of each ``get_action`` request, ms."""
        return self._latency.stats()

    # ---- Policy interface --------------------------------------------------------------------

    def reset(self, spec: EpisodeSpec) -> None:
        """Remember the instruction, drop the video history, fetch the modality config once."""
        self.prompt.reset(spec)
        self._frames.clear()
        self.modality_config()

    def observe(self, obs: Observation) -> None:
        """Keep this control step's frames for the video history (``delta_indices`` < 0)."""
        if self._modality is None:
            return  # not reset yet: no modality config to say which frames to keep
        defaults = N16_DEFAULTS if self.layout == 'n1.6' else N15_DEFAULTS
        keys, deltas = _modality(self._modality, 'video', defaults)
        if min(deltas) < 0:
            self._remember(obs, keys, deltas)

    def infer(self, obs: Observation) -> ActionChunk:
        """Ask the server for a chunk for ``obs``.

        Raises:
            InfrastructureError: server down, timeout, server error, malformed answer.
            ConfigError: a needed camera is missing, or the answer holds Cartesian deltas.
        """
        prompt = self.prompt.for_observation(obs)
        config = self.modality_config()
        if self.layout == 'n1.6':
            data = {'observation': self._nested_observation(obs, prompt, config), 'options': None}
        else:
            data = self._flat_observation(obs, prompt, config)
        start = time.perf_counter()
        response = self.call('get_action', data)
        self._latency.add((time.perf_counter() - start) * 1000.0)
        if self.layout == 'n1.6':
            return self._parse_nested(response)
        return self._parse_flat(response)

    def close(self) -> None:
        """Close the socket and the ZeroMQ context."""
        self._close_socket()
        self._context.term()

    # ---- endpoints ---------------------------------------------------------------------------

    def ping(self) -> bool:
        """Return True if the server answers ``ping``."""
        try:
            self.call('ping', requires_input=False)
            return True
        except InfrastructureError:
            return False

    def modality_config(self) -> dict[str, Any]:
        """The server's modality config (fetched once), or the layout's defaults."""
        if self._modality is None:
            try:
                config = self.call('get_modality_config', requires_input=False)
            except InfrastructureError as err:
                if 'Unknown endpoint' not in str(err):
                    raise
                config = {}  # a server without the endpoint: use the layout's defaults
            if not isinstance(config, dict):
                raise InfrastructureError(
                    f'malformed modality config from GR00T server {self.endpoint}: '
                    f'{type(config).__name__}')
            self._modality = config
        return self._modality

    def call(self, endpoint: str, data: Any = None, requires_input: bool = True) -> Any:
        """Send one request and return the decoded answer.

        Raises:
            InfrastructureError: no answer within ``timeout_s`` after every attempt, an
                undecodable answer, or ``{'error': ...}`` from the server.
        """
        request: dict[str, Any] = {'endpoint': endpoint}
        if requires_input:
            request['data'] = data
        if self.api_token:
            request['api_token'] = self.api_token
        payload = gr00t_packb(request)
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            sock = self._ensure_socket()
            try:
                sock.send(payload)
                reply = sock.recv()
                break
            except zmq.Again:
                # REQ is now stuck waiting for a reply that may never come: start afresh.
                self.timeouts += 1
                self._close_socket()
                _LOG.warning('GR00T server %s: no answer to %s within %.1f s (attempt %d)',
                             self.endpoint, endpoint, self.timeout_s, attempt + 1)
            except zmq.ZMQError as err:
                self._close_socket()
                raise InfrastructureError(
                    f'GR00T server {self.endpoint}: ZeroMQ error on {endpoint}: {err}') from err
        else:
            raise InfrastructureError(
                f'GR00T server {self.endpoint} did not answer {endpoint!r} within '
                f'{self.timeout_s} s ({self.retries + 1} attempt(s)); is run_gr00t_server.py '
                'running there, and the port open?')
        if reply == b'ERROR':
            raise InfrastructureError(f'GR00T server {self.endpoint} answered ERROR to '
                                      f'{endpoint!r}; is it the right policy server?')
        try:
            response = gr00t_unpackb(reply)
        except Exception as err:  # noqa: BLE001 - any decoding failure is a malformed answer
            raise InfrastructureError(
                f'malformed answer from GR00T server {self.endpoint} to {endpoint!r}: {err} '
                '(servers before Sep 2025 pickle with torch.save: upgrade the server)') from err
        if isinstance(response, dict) and 'error' in response:
            raise InfrastructureError(
                f'GR00T server {self.endpoint} failed on {endpoint!r}: {response["error"]}')
        return response

    def _ensure_socket(self) -> zmq.Socket:
        if self._socket is None:
            sock = self._context.socket(zmq.REQ)
            timeout_ms = max(1, int(self.timeout_s * 1000))
            sock.setsockopt(zmq.RCVTIMEO, timeout_ms)
            sock.setsockopt(zmq.SNDTIMEO, timeout_ms)
            sock.setsockopt(zmq.LINGER, 0)  # never block close on an unsent request
            sock.connect(self.endpoint)
            self._socket = sock
        return self._socket

    def _close_socket(self) -> None:
        if self._socket is not None:
            self._socket.close(linger=0)
            self._socket = None

    # ---- observation mapping -----------------------------------------------------------------

    def _image(self, obs: Observation, role: str) -> np.ndarray:
        camera = self.cameras[role]
        if camera not in obs.images:
            raise ConfigError(
                f'the GR00T DROID policy needs camera {camera!r} ({role}) but the observation '
                f'has {sorted(obs.images)}; render it in the world (world_node `cameras`) or map '
                'another with policy_args exterior_camera / exterior_camera_2 / wrist_camera')
        return resize_with_pad(obs.images[camera], *self.image_size)

    @staticmethod
    def _role(key: str) -> str:
        name = key.split('.')[-1]
        if 'wrist' in name:
            return 'wrist'
        if 'exterior_image_2' in name or 'exterior_2' in name:
            return 'exterior_2'
        if 'exterior' in name:
            return 'exterior_1'
        raise ConfigError(f'GR00T video key {key!r} has no realm_ros camera; known: exterior '
                          'image 1/2 and wrist')

    def _state(self, key: str, obs: Observation) -> np.ndarray:
        name = key.split('.')[-1]
        q = np.asarray(obs.joints.position, dtype=float)
        if name == 'joint_position':
            return q.astype(np.float32)
        if name == 'gripper_position':
            return np.array([obs.joints.gripper], dtype=np.float32)
        if name == 'eef_9d':
            return eef_9d(q)
        if name == 'eef_position':
            return flange_pose(q)[0].astype(np.float32)
        if name == 'eef_rotation':
            return np.array(rpy_from_matrix(flange_pose(q)[1]), dtype=np.float32)
        raise ConfigError(f'GR00T state key {key!r} is not one realm_ros can fill; known: '
                          'joint_position, gripper_position, eef_9d, eef_position, eef_rotation')

    def _remember(self, obs: Observation, keys: list[str], deltas: list[int]) -> None:
        """Store ``obs``'s frames (once per step) and drop those older than the history."""
        if not self._frames or self._frames[-1][0] != obs.step:
            if self._frames and obs.step < self._frames[-1][0]:
                self._frames.clear()  # a new episode without reset: start the history afresh
            self._frames.append(
                (obs.step, {key: self._image(obs, self._role(key)) for key in keys}))
        horizon = max(0, -min(deltas))
        self._frames = [(s, f) for s, f in self._frames if s >= obs.step - horizon]

    def _video_frames(self, obs: Observation, keys: list[str], deltas: list[int]
                      ) -> dict[str, np.ndarray]:
        """Return {key: (T, H, W, 3)}; negative deltas come from the frames of earlier steps.

        Every control step's frames are kept (:meth:`observe` sees the steps the
        ActionChunker answers from a stored chunk), so delta -15 is the frame 15 control
        steps back, whatever the execute horizon.
        """
        self._remember(obs, keys, deltas)
        out = {}
        for key in keys:
            stack = []
            for delta in deltas:
                wanted = obs.step + delta
                # The newest frame at or before the wanted step, else the oldest kept (as
                # GR00T's DROID client does while its history fills up).
                earlier = [f for s, f in self._frames if s <= wanted]
                stack.append((earlier[-1] if earlier else self._frames[0][1])[key])
            out[key] = np.stack(stack)
        return out

    def _nested_observation(self, obs: Observation, prompt: str, config: Mapping[str, Any]
                            ) -> dict[str, Any]:
        video_keys, video_deltas = _modality(config, 'video', N16_DEFAULTS)
        state_keys, _ = _modality(config, 'state', N16_DEFAULTS)
        language_keys, _ = _modality(config, 'language', N16_DEFAULTS)
        video = {key: frames[None] for key, frames in
                 self._video_frames(obs, video_keys, video_deltas).items()}  # (1, T, H, W, 3)
        state = {key: self._state(key, obs)[None, None] for key in state_keys}  # (1, 1, D)
        return {'video': video, 'state': state, 'language': {language_keys[0]: [[prompt]]}}

    def _flat_observation(self, obs: Observation, prompt: str, config: Mapping[str, Any]
                          ) -> dict[str, Any]:
        video_keys, _ = _modality(config, 'video', N15_DEFAULTS)
        state_keys, _ = _modality(config, 'state', N15_DEFAULTS)
        language_keys, _ = _modality(config, 'language', N15_DEFAULTS)
        data: dict[str, Any] = {key: self._image(obs, self._role(key))[None]
                                for key in video_keys}  # (1, H, W, 3)
        data.update({key: self._state(key, obs)[None] for key in state_keys})  # (1, D)
        data[language_keys[0]] = [prompt]
        return data

    # ---- answers -----------------------------------------------------------------------------

    def _malformed(self, why: str) -> InfrastructureError:
        return InfrastructureError(f'malformed action from GR00T server {self.endpoint}: {why}')

    def _chunk(self, arm: Any, gripper: Any) -> ActionChunk:
        if not isinstance(arm, np.ndarray) or not isinstance(gripper, np.ndarray):
            raise self._malformed('joint_position and gripper_position must be arrays')
        arm = np.asarray(arm, dtype=float)
        gripper = np.asarray(gripper, dtype=float)
        if arm.ndim == 3:
            arm = arm[0]
        if gripper.ndim == 3:
            gripper = gripper[0]
        if gripper.ndim == 1:
            gripper = gripper[:, None]
        if arm.ndim != 2 or arm.shape[1] != 7 or arm.shape[0] < 1 \
                or gripper.shape != (arm.shape[0], 1):
            raise self._malformed(f'expected joint_position (N, 7) and gripper_position (N, 1), '
                                  f'got {arm.shape} and {gripper.shape}')
        values = np.concatenate([arm, gripper], axis=1)
        if not np.all(np.isfinite(values)):
            raise self._malformed('NaN or inf in the action')
        return ActionChunk(values, ActionMode.POSITION)

    def _parse_nested(self, response: Any) -> ActionChunk:
        if not isinstance(response, (list, tuple)) or len(response) != 2 \
                or not isinstance(response[0], dict):
            raise self._malformed(f'expected [action, info], got {type(response).__name__}')
        action = response[0]
        if 'joint_position' not in action or 'gripper_position' not in action:
            raise self._malformed(f'no joint_position/gripper_position (keys {sorted(action)}); '
                                  'realm_ros executes the joint-position DROID head only')
        return self._chunk(action['joint_position'], action['gripper_position'])

    def _parse_flat(self, response: Any) -> ActionChunk:
        if not isinstance(response, dict):
            raise self._malformed(f'expected a map of action.* arrays, got '
                                  f'{type(response).__name__}')
        if 'action.joint_position' in response and 'action.gripper_position' in response:
            return self._chunk(response['action.joint_position'],
                               response['action.gripper_position'])
        if any(key.startswith('action.eef_') for key in response):
            raise ConfigError(
                f'GR00T server {self.endpoint} answers Cartesian end-effector deltas '
                f'({sorted(response)}): realm_ros executes joint actions only (no IK on the '
                'command path). Use an N1.6/N1.7 DROID server (joint_position head) or an N1.5 '
                'checkpoint fine-tuned with action.joint_position')
        raise self._malformed(f'no action.joint_position/action.gripper_position '
                              f'(keys {sorted(response)})')


__all__ = ['DROID_RESOLUTION', 'Gr00tPolicy', 'LAYOUTS', 'eef_9d', 'flange_pose']
