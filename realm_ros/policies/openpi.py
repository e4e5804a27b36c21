"""Client for openpi websocket policy servers (pi0, pi0-FAST, pi0.5 DROID checkpoints).

Protocol (as openpi serves it; see README "Protocol notes"):

1. Plain websocket at ``ws://host:port`` (``wss://`` if ``host`` says so), no compression, no
   message size limit; an ``Authorization: Api-Key <key>`` header when ``api_key`` is set.
2. Right after the handshake the server sends one binary frame: its metadata dict (may be ``{}``).
3. Then each request is one binary frame, msgpack of the observation dict in openpi's numpy
   encoding (:mod:`realm_ros.policies.msgpack_numpy`), answered by one binary frame holding a
   dict with ``actions`` (H, 8) and ``server_timing`` (``infer_ms``, later ``prev_total_ms``).
4. A *text* frame is the server's traceback: it failed and closes the connection with
   INTERNAL_ERROR. ``GET /healthz`` answers 200 when the server is up.

Observation mapping (openpi ``examples/droid/main.py``, DROID convention):

=====================================  =========================================================
request key                            realm_ros source
=====================================  =========================================================
``observation/exterior_image_1_left``  ``obs.images[exterior_camera]`` resized with padding to
                                       224x224 uint8 RGB (default camera ``exterior_1``)
``observation/wrist_image_left``       ``obs.images[wrist_camera]`` likewise (default ``wrist``)
``observation/joint_position``         ``obs.joints.position`` (7,) rad, ``panda_joint1..7``
``observation/gripper_position``       ``[obs.joints.gripper]`` (1,), 1 = closed
``prompt``                             ``obs.instruction`` (else the episode spec's instruction)
=====================================  =========================================================

The answer's ``actions`` is (H, 8): H is read from the array (10 for ``pi0_droid`` and
``pi0_fast_droid``, 15 for ``pi05_droid``). With ``action_space='joint_velocity'`` (the released
DROID checkpoints) the seven arm numbers are DROID joint velocities, returned as an
:attr:`ActionMode.VELOCITY` chunk (the world applies q + 0.2 v); with
``action_space='joint_position'`` (``*_jointpos`` checkpoints, REALM's interface) they are absolute
joint targets (rad), an :attr:`ActionMode.POSITION` chunk. The gripper column is passed through
unbinarised for :class:`~realm_ros.core.policy.GripperBinarizer`; open-loop execution of k of H
actions is :class:`~realm_ros.core.policy.ActionChunker`'s job.
"""

from __future__ import annotations

import http.client
import inspect
import logging
import time
from typing import Any
import urllib.parse

import numpy as np
import websockets.exceptions
import websockets.sync.client

from realm_ros.core import robot
from realm_ros.core.errors import ConfigError, InfrastructureError
from realm_ros.core.policy import Policy, PolicyNeeds, Prompt
from realm_ros.core.types import ActionChunk, ActionMode, EpisodeSpec, Observation
from realm_ros.policies.action_space import ACTION_SPACES, parse_action_space
from realm_ros.policies.image_tools import resize_with_pad
from realm_ros.policies.latency import LatencyRecorder, LatencyStats
from realm_ros.policies.msgpack_numpy import openpi_packb, openpi_unpackb

_LOG = logging.getLogger(__name__)

#: openpi's DROID image size (pixels, square).
DROID_IMAGE_SIZE = 224

KEY_EXTERIOR = 'observation/exterior_image_1_left'
KEY_WRIST = 'observation/wrist_image_left'
KEY_JOINTS = 'observation/joint_position'
KEY_GRIPPER = 'observation/gripper_position'
KEY_PROMPT = 'prompt'

# websockets >= 15 reads proxy settings from the environment unless told not to (a policy server
# on the lab network must be reached directly); >= 17.1 wants `legacy=True` for a connection kept
# outside a `with` block. Older releases have neither argument.
_CONNECT_PARAMETERS = inspect.signature(websockets.sync.client.connect).parameters


def websocket_uri(host: str, port: int | None) -> str:
    """Return ``ws://host:port`` (``host`` may already carry a ``ws://`` or ``wss://`` scheme)."""
    uri = host if host.startswith(('ws://', 'wss://')) else f'ws://{host}'
    return uri if port is None else f'{uri}:{int(port)}'


def droid_request(obs: Observation, prompt: str, exterior_camera: str = 'exterior_1',
                  wrist_camera: str = 'wrist', image_size: int = DROID_IMAGE_SIZE
                  ) -> dict[str, Any]:
    """Build openpi's DROID request dict from a realm_ros observation.

    Raises:
        ConfigError: a camera the checkpoint needs is not in ``obs.images``.
    """
    images = {}
    for key, camera in ((KEY_EXTERIOR, exterior_camera), (KEY_WRIST, wrist_camera)):
        if camera not in obs.images:
            raise ConfigError(
                f'the openpi DROID policy needs camera {camera!r} but the observation has '
                f'{sorted(obs.images)}; render it in the world (world_node `cameras`) or pick '
                'another with policy_args exterior_camera / wrist_camera')
        images[key] = resize_with_pad(obs.images[camera], image_size, image_size)
    return {
        **images,
        KEY_JOINTS: np.asarray(obs.joints.position, dtype=np.float64).reshape(7),
        KEY_GRIPPER: np.array([float(obs.joints.gripper)], dtype=np.float64),
        KEY_PROMPT: str(prompt),
    }


def parse_actions(response: Any, source: str) -> np.ndarray:
    """Return the (H, 8) float array of an openpi response, or raise InfrastructureError."""
    if not isinstance(response, dict):
        raise InfrastructureError(
            f'malformed response from {source}: expected a map, got {type(response).__name__}')
    actions = response.get('actions')
    if not isinstance(actions, np.ndarray):
        raise InfrastructureError(
            f'malformed response from {source}: no `actions` array (keys {sorted(response)})')
    if actions.ndim != 2 or actions.shape[0] < 1 or actions.shape[1] < 8:
        raise InfrastructureError(
            f'malformed response from {source}: `actions` must be (H, 8) with H >= 1, got '
            f'{actions.shape}')
    if not np.issubdtype(actions.dtype, np.number):
        raise InfrastructureError(
            f'malformed response from {source}: `actions` dtype {actions.dtype} is not numeric')
    # openpi's DROID output transform already cuts to 8 dims; a wider array (a model with padded
    # action dims) keeps the first 8: 7 arm + gripper.
    values = np.asarray(actions[:, :8], dtype=float)
    if not np.all(np.isfinite(values)):
        raise InfrastructureError(f'malformed response from {source}: `actions` has NaN or inf')
    return values


def check_velocities(values: np.ndarray, q: np.ndarray, source: str) -> None:
    """Refuse a joint-velocity chunk that is plainly absolute joint positions.

    DROID joint velocities live in [-1, 1] (openpi's DROID client clips to it). A chunk whose
    first arm row lies within 0.3 rad of the measured joints on every joint while some value
    is beyond 1.2 in magnitude is a joint-position checkpoint's answer (the Panda's fourth
    joint is always below -0.07 rad, at -2.5 rad in DROID's reset pose): executing it as
    velocities would drive the arm at full speed. openpi's servers send empty metadata, so
    this is the only place the mismatch shows.

    Raises:
        ConfigError: naming ``action_space`` and how to set it.
    """
    arm = np.asarray(values[:, :robot.NUM_ARM_JOINTS], dtype=float)
    near = float(np.max(np.abs(arm[0] - np.asarray(q, dtype=float))))
    if float(np.max(np.abs(arm))) > 1.2 and near < 0.3:
        raise ConfigError(
            f'openpi server {source} answers absolute joint positions (the first action is '
            f'within {near:.3f} rad of the measured joints, values up to '
            f'{float(np.max(np.abs(arm))):.2f}) but this client reads joint velocities: it is a '
            'joint-position checkpoint (*_jointpos); set policy_args '
            '{"action_space": "joint_position"}')


class OpenPIPolicy(Policy):
    """A policy served by an openpi websocket server (``serve_policy.py --env=DROID``).

    Connects lazily (on the first :meth:`reset` or :meth:`infer`), so a node can start while the
    server is still loading its checkpoint; reconnects with exponential backoff when the
    connection drops. Every failure to get a well-formed answer raises
    :class:`InfrastructureError` naming the server and what went wrong.
    """

    name = 'openpi'

    def __init__(self, host: str = 'localhost', port: int | None = 8000,
                 action_space: str = '', api_key: str | None = None,
                 timeout_s: float = 30.0, connect_timeout_s: float = 10.0, retries: int = 3,
                 backoff_s: float = 0.5, max_backoff_s: float = 5.0,
                 exterior_camera: str = 'exterior_1', wrist_camera: str = 'wrist',
                 image_size: int = DROID_IMAGE_SIZE, prompt: str = '') -> None:
        """Configure the client; nothing is connected yet.

        Args:
            host: server host name or address, or a full ``ws://`` / ``wss://`` URI.
            port: server port (openpi's default 8000); None when ``host`` is a URI with one.
            action_space: ``joint_velocity`` (released DROID checkpoints) or ``joint_position``
                (``*_jointpos`` checkpoints); '' = what the server's metadata declares, else
                ``joint_velocity``. openpi's own servers send empty metadata, so a
                joint-position checkpoint must be declared; a velocity chunk that is plainly
                absolute joint positions raises :class:`ConfigError` (:func:`check_velocities`).
            api_key: sent as ``Authorization: Api-Key <key>`` (for servers behind a gateway).
            timeout_s: seconds to wait for one answer before giving up (InfrastructureError).
            connect_timeout_s: seconds for the TCP + websocket handshake and the metadata frame.
            retries: extra connection attempts per request after the first fails.
            backoff_s, max_backoff_s: first and largest wait between attempts, s (doubling).
            exterior_camera, wrist_camera: realm_ros camera names sent as DROID's exterior and
                wrist images.
            image_size: side of the square images sent, px (openpi DROID: 224).
            prompt: instruction used when neither the observation nor the spec has one.
        """
        self.declared = bool(action_space)
        self.action_space = action_space or 'joint_velocity'
        self.mode = parse_action_space(self.action_space)
        if timeout_s <= 0 or connect_timeout_s <= 0:
            raise ConfigError(f'timeout_s and connect_timeout_s must be > 0, got {timeout_s} and '
                              f'{connect_timeout_s}')
        if retries < 0 or backoff_s < 0:
            raise ConfigError(f'retries and backoff_s must be >= 0, got {retries}, {backoff_s}')
        # A launch file may pass empty defaults (host '', port 0) meaning "the usual".
        self.host = str(host or 'localhost')
        if port in (None, '', 0):
            port = None if self.host.startswith(('ws://', 'wss://')) else 8000
        self.port = None if port is None else int(port)
        self.uri = websocket_uri(self.host, self.port)
        self.api_key = api_key or None
        self.timeout_s = float(timeout_s)
        self.connect_timeout_s = float(connect_timeout_s)
        self.retries = int(retries)
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self.exterior_camera = exterior_camera
        self.wrist_camera = wrist_camera
        self.image_size = int(image_size)
        self.prompt = Prompt(prompt)
        self._conn: Any = None
        self._metadata: dict[str, Any] | None = None
        self._latency = LatencyRecorder()
        self._server_latency = LatencyRecorder()
        self.reconnects = 0

    # ---- Policy interface --------------------------------------------------------------------

    @property
    def label(self) -> str:
        return f'openpi@{self.uri}'

    @property
    def needs(self) -> PolicyNeeds:
        """DROID's two cameras at 224x224, open-loop horizon 8 (openpi's DROID client)."""
        return PolicyNeeds(cameras=(self.exterior_camera, self.wrist_camera),
                           image_size=(self.image_size, self.image_size),
                           action_space=self.action_space, horizon=8)

    def reset(self, spec: EpisodeSpec) -> None:
        """Remember the episode's instruction and make sure the server is reachable."""
        self.prompt.reset(spec)
        self._ensure_connected()

    def infer(self, obs: Observation) -> ActionChunk:
        """Send one DROID request and return the server's (H, 8) chunk.

        Raises:
            InfrastructureError: server down, timeout, server-side error, malformed answer.
            ConfigError: a needed camera is missing from ``obs``.
        """
        prompt = self.prompt.for_observation(obs)
        request = droid_request(obs, prompt, self.exterior_camera, self.wrist_camera,
                                self.image_size)
        response = self._round_trip(openpi_packb(request))
        values = parse_actions(response, f'openpi server {self.uri}')
        if self.mode is ActionMode.VELOCITY:
            check_velocities(values, obs.joints.position, self.uri)
        timing = response.get('server_timing')
        if isinstance(timing, dict) and isinstance(timing.get('infer_ms'), (int, float)):
            self._server_latency.add(float(timing['infer_ms']))
        return ActionChunk(values, self.mode)

    def close(self) -> None:
        """Close the connection (a later call reconnects)."""
        self._drop()

    # ---- extras ------------------------------------------------------------------------------

    @property
    def metadata(self) -> dict[str, Any]:
        """The server's metadata frame (connects if needed)."""
        self._ensure_connected()
        return dict(self._metadata or {})

    @property
    def latency(self) -> LatencyStats:
        """Round-trip time per request as seen by this client (send to answer parsed), ms."""
        return self._latency.stats()

    @property
    def server_latency(self) -> LatencyStats:
        """Inference time per request as reported by the server (``server_timing.infer_ms``)."""
        return self._server_latency.stats()

    def health_check(self, timeout_s: float = 2.0) -> bool:
        """Return True if ``GET /healthz`` on the server answers 200."""
        parsed = urllib.parse.urlparse(self.uri)
        cls = http.client.HTTPSConnection if parsed.scheme == 'wss' else http.client.HTTPConnection
        if parsed.hostname is None:
            return False
        conn = cls(parsed.hostname, parsed.port, timeout=timeout_s)
        try:
            conn.request('GET', '/healthz')
            return conn.getresponse().status == 200
        except OSError:
            return False
        finally:
            conn.close()

    # ---- transport ---------------------------------------------------------------------------

    def _connect_once(self) -> None:
        headers = {'Authorization': f'Api-Key {self.api_key}'} if self.api_key else None
        # No keepalive pings: a server busy compiling or inferring (openpi runs the model on
        # its event loop) cannot answer them; `timeout_s` bounds every wait instead.
        options: dict[str, Any] = {'compression': None, 'max_size': None,
                                   'additional_headers': headers,
                                   'open_timeout': self.connect_timeout_s,
                                   'ping_interval': None}
        if 'proxy' in _CONNECT_PARAMETERS:
            options['proxy'] = None
        if 'legacy' in _CONNECT_PARAMETERS:
            options['legacy'] = True
        conn = websockets.sync.client.connect(self.uri, **options)
        try:
            frame = conn.recv(timeout=self.connect_timeout_s)
        except BaseException:
            conn.close()
            raise
        if isinstance(frame, str):
            conn.close()
            raise InfrastructureError(
                f'openpi server {self.uri} sent an error instead of its metadata:\n{frame}')
        try:
            metadata = openpi_unpackb(frame)
        except Exception as err:  # noqa: BLE001 - any decoding failure means a foreign peer
            conn.close()
            raise InfrastructureError(
                f'openpi server {self.uri} sent an unreadable metadata frame ({err}); is this '
                'an openpi websocket server?') from err
        if not isinstance(metadata, dict):
            conn.close()
            raise InfrastructureError(
                f'openpi server {self.uri} sent metadata of type {type(metadata).__name__}, '
                'expected a map')
        declared = metadata.get('action_space')
        if isinstance(declared, str) and declared in ACTION_SPACES and not self.declared:
            self.action_space, self.mode = declared, parse_action_space(declared)
        elif isinstance(declared, str) and declared in ACTION_SPACES \
                and declared != self.action_space:
            conn.close()
            raise ConfigError(
                f'openpi server {self.uri} serves action_space {declared!r} but this client is '
                f'configured for {self.action_space!r}; set policy_args action_space')
        self._conn, self._metadata = conn, metadata

    def _ensure_connected(self) -> Any:
        """Return an open connection, connecting with exponential backoff."""
        if self._conn is not None:
            return self._conn
        last: BaseException | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1)))
            try:
                self._connect_once()
                if attempt or self._metadata is not None:
                    _LOG.info('connected to openpi server %s', self.uri)
                return self._conn
            except (OSError, TimeoutError, websockets.exceptions.WebSocketException) as err:
                last = err
                _LOG.warning('openpi server %s: connection attempt %d failed: %s',
                             self.uri, attempt + 1, err)
        raise InfrastructureError(
            f'cannot reach openpi server {self.uri} after {self.retries + 1} attempt(s): '
            f'{type(last).__name__}: {last}. Is `serve_policy.py` running there, and the port '
            'open?') from last

    def _drop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # noqa: BLE001 - closing a broken connection may fail; it is gone
                pass
        self._conn = None

    def _round_trip(self, payload: bytes) -> Any:
        """Send one request frame and return the decoded answer, reconnecting if dropped."""
        last: BaseException | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                self.reconnects += 1
                time.sleep(min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1)))
            conn = self._ensure_connected()
            start = time.perf_counter()
            try:
                conn.send(payload)
                frame = conn.recv(timeout=self.timeout_s)
            except TimeoutError as err:
                # The request may still be running on the server; a fresh connection avoids
                # reading its late answer as the answer to the next request.
                self._drop()
                raise InfrastructureError(
                    f'openpi server {self.uri} did not answer within {self.timeout_s} s') from err
            except websockets.exceptions.ConnectionClosed as err:
                self._drop()
                last = err
                _LOG.warning('openpi server %s closed the connection (%s); reconnecting',
                             self.uri, err)
                continue
            except OSError as err:
                self._drop()
                last = err
                continue
            if isinstance(frame, str):
                self._drop()
                raise InfrastructureError(f'openpi server {self.uri} failed:\n{frame}')
            try:
                response = openpi_unpackb(frame)
            except Exception as err:  # noqa: BLE001 - any decoding failure is a malformed answer
                self._drop()
                raise InfrastructureError(
                    f'malformed response from openpi server {self.uri}: {err}') from err
            self._latency.add((time.perf_counter() - start) * 1000.0)
            return response
        raise InfrastructureError(
            f'openpi server {self.uri} dropped the connection {self.retries + 1} time(s): '
            f'{last}') from last


__all__ = ['ACTION_SPACES', 'DROID_IMAGE_SIZE', 'OpenPIPolicy', 'check_velocities',
           'droid_request', 'parse_actions', 'parse_action_space', 'websocket_uri']
