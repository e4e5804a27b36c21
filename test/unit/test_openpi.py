"""openpi websocket protocol: our client, our server, and openpi's own published client.

Every test talks over a real websocket on 127.0.0.1 (port 0). Wire compatibility is checked
against ``openpi-client`` from PyPI (code we did not write) in both directions.
"""

import asyncio
import http.client
import os
import socket
import subprocess
import sys
import time

import numpy as np
from openpi_client import image_tools as openpi_image_tools
from openpi_client import msgpack_numpy as openpi_msgpack
from openpi_client import websocket_client_policy
import pytest
from ws_loopback import LoopbackWebsocketServer

from realm_ros.core import robot
from realm_ros.core.errors import ConfigError, InfrastructureError
from realm_ros.core.policy import ActionChunker, Policy, make_policy
from realm_ros.core.types import ActionChunk, ActionMode, EpisodeSpec, JointState, Observation
from realm_ros.policies.image_tools import resize_with_pad
from realm_ros.policies.msgpack_numpy import openpi_packb, openpi_unpackb
from realm_ros.policies.openpi import OpenPIPolicy
from realm_ros.policies.server import PolicyServer, convert_chunk

# openpi-client 0.1.2 connects without a `with` block, which websockets >= 17.1 flags.
pytestmark = pytest.mark.filterwarnings('ignore:connect\\(\\) must be used:DeprecationWarning')

FAST = {'timeout_s': 2.0, 'connect_timeout_s': 2.0, 'retries': 1, 'backoff_s': 0.01}


class EchoChunkPolicy(Policy):
    """Answers a chunk that encodes what it saw, so tests can check the mapping end to end."""

    name = 'echo'

    def __init__(self, horizon=10, mode=ActionMode.VELOCITY, fail=False):
        self.horizon = horizon
        self.mode = mode
        self.fail = fail
        self.seen = []
        self.resets = []

    def reset(self, spec):
        self.resets.append(spec.instruction)

    def infer(self, obs):
        if self.fail:
            raise RuntimeError('model exploded on purpose')
        self.seen.append(obs)
        values = np.zeros((self.horizon, 8))
        values[:, 0] = np.arange(self.horizon) * 0.01
        values[:, 1:7] = obs.joints.position[1:7] * 0.1
        values[:, 7] = obs.joints.gripper
        if self.mode is ActionMode.POSITION:
            values[:, :7] = obs.joints.position + 0.01 * np.arange(self.horizon)[:, None]
        return ActionChunk(values, self.mode)


def _observation(instruction='put the green block in the bowl', gripper=0.25, seed=0):
    rng = np.random.default_rng(seed)
    q = robot.RESET_Q + rng.uniform(-0.1, 0.1, 7)
    images = {'exterior_1': rng.integers(0, 255, (180, 320, 3), dtype=np.uint8),
              'exterior_2': rng.integers(0, 255, (180, 320, 3), dtype=np.uint8),
              'wrist': rng.integers(0, 255, (180, 320, 3), dtype=np.uint8)}
    return Observation(JointState(q, np.zeros(7), np.zeros(7), gripper), images, instruction)


def _openpi_request(obs):
    """The request openpi's DROID example would build, using openpi's own image tools."""
    return {
        'observation/exterior_image_1_left':
            openpi_image_tools.resize_with_pad(obs.images['exterior_1'], 224, 224),
        'observation/wrist_image_left':
            openpi_image_tools.resize_with_pad(obs.images['wrist'], 224, 224),
        'observation/joint_position': obs.joints.position,
        'observation/gripper_position': np.array([obs.joints.gripper]),
        'prompt': obs.instruction,
    }


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


@pytest.fixture
def echo_server():
    policy = EchoChunkPolicy(horizon=15)
    with PolicyServer(policy, host='127.0.0.1', port=0, metadata={'note': 'test'},
                      chunk_size=0) as server:
        yield server, policy


# ---- encoding -----------------------------------------------------------------------------------

def test_numpy_encoding_is_wire_compatible_with_openpi_client():
    payload = {'a': np.arange(12, dtype=np.float32).reshape(3, 4), 'b': np.uint8(7),
               'c': {'d': np.array([True, False]), 'e': 'text', 'f': [1, 2.5]},
               'g': np.zeros((0, 8)), 'h': np.float64(2.5)}
    theirs = openpi_msgpack.unpackb(openpi_packb(payload))
    ours = openpi_unpackb(openpi_msgpack.packb(payload))
    for decoded in (theirs, ours):
        np.testing.assert_array_equal(decoded['a'], payload['a'])
        assert decoded['a'].dtype == np.float32 and decoded['a'].shape == (3, 4)
        assert decoded['b'] == 7 and decoded['b'].dtype == np.uint8
        assert decoded['c']['d'].tolist() == [True, False] and decoded['c']['e'] == 'text'
        assert decoded['g'].shape == (0, 8)
        assert decoded['h'] == 2.5  # np.float64 is a Python float: msgpack packs it natively
    # Byte-for-byte the same frame as openpi's packer for the same input.
    assert openpi_packb(payload) == openpi_msgpack.packb(payload)
    with pytest.raises(ValueError, match='pickle'):
        openpi_packb({'x': np.array([object()])})


def test_resize_with_pad_matches_openpi_geometry():
    image = np.full((180, 320, 3), 200, dtype=np.uint8)
    image[:, :160] = 50
    ours = resize_with_pad(image, 224, 224)
    theirs = openpi_image_tools.resize_with_pad(image, 224, 224)
    assert ours.shape == theirs.shape == (224, 224, 3) and ours.dtype == np.uint8
    # Same black bands (126 picture rows centred: 49 above, 49 below) and same picture.
    np.testing.assert_array_equal(ours[:49], 0)
    np.testing.assert_array_equal(ours[-49:], 0)
    assert np.mean(np.abs(ours.astype(int) - theirs.astype(int))) < 2.0
    assert resize_with_pad(ours, 224, 224) is ours or np.array_equal(
        resize_with_pad(ours, 224, 224), ours)
    with pytest.raises(ValueError, match='H, W, 3'):
        resize_with_pad(np.zeros((4, 4)), 224, 224)


# ---- our server, openpi's client ----------------------------------------------------------------

def test_openpi_client_against_realm_server(echo_server):
    server, policy = echo_server
    client = websocket_client_policy.WebsocketClientPolicy(host='127.0.0.1', port=server.port)
    try:
        metadata = client.get_server_metadata()
        assert metadata['server'] == 'realm_ros' and metadata['note'] == 'test'
        assert metadata['action_space'] == 'joint_velocity'
        obs = _observation()
        request = _openpi_request(obs)
        first = client.infer(request)
        second = client.infer(request)
    finally:
        client._ws.close()
    actions = first['actions']
    assert actions.shape == (15, 8)
    np.testing.assert_allclose(actions[:, 0], np.arange(15) * 0.01)
    np.testing.assert_allclose(actions[:, 7], 0.25)
    assert first['server_timing']['infer_ms'] >= 0
    assert 'prev_total_ms' not in first['server_timing']
    assert second['server_timing']['prev_total_ms'] >= 0
    seen = policy.seen[0]
    np.testing.assert_allclose(seen.joints.position, obs.joints.position)
    assert seen.joints.gripper == 0.25 and seen.instruction == obs.instruction
    np.testing.assert_array_equal(seen.images['exterior_1'],
                                  request['observation/exterior_image_1_left'])
    np.testing.assert_array_equal(seen.images['wrist'], request['observation/wrist_image_left'])
    assert policy.resets == [obs.instruction]  # reset once per connection and prompt


def test_openpi_client_sees_traceback_when_policy_fails():
    with PolicyServer(EchoChunkPolicy(fail=True), host='127.0.0.1', port=0) as server:
        client = websocket_client_policy.WebsocketClientPolicy(host='127.0.0.1',
                                                               port=server.port)
        with pytest.raises(RuntimeError, match='model exploded on purpose'):
            client.infer(_openpi_request(_observation()))
        # The server closed that connection with INTERNAL_ERROR (1011) but keeps serving.
        with pytest.raises(Exception) as closed:
            client._ws.recv(timeout=2.0)
        assert '1011' in str(closed.value)
        again = websocket_client_policy.WebsocketClientPolicy(host='127.0.0.1', port=server.port)
        again._ws.close()


def test_healthz_answers_200(echo_server):
    server, _ = echo_server
    conn = http.client.HTTPConnection('127.0.0.1', server.port, timeout=2.0)
    conn.request('GET', '/healthz')
    assert conn.getresponse().status == 200
    conn.close()
    assert OpenPIPolicy(host='127.0.0.1', port=server.port).health_check()
    assert not OpenPIPolicy(host='127.0.0.1', port=_free_port()).health_check(timeout_s=0.5)


# ---- our client, our server ---------------------------------------------------------------------

@pytest.mark.parametrize('horizon', [10, 15])
def test_realm_client_against_realm_server(horizon):
    policy = EchoChunkPolicy(horizon=horizon)
    # chunk_size=0: the server passes the policy's H through (the client reads H from it).
    with PolicyServer(policy, host='127.0.0.1', port=0, chunk_size=0) as server:
        client = make_policy('openpi', common={'skill': 'put', 'seed': 3}, host='127.0.0.1',
                             port=server.port, **FAST)
        client.reset(EpisodeSpec(instruction='from the spec'))
        obs = _observation(instruction='')
        chunk = client.infer(obs)
        assert client.metadata['action_space'] == 'joint_velocity'
        client.close()
    assert isinstance(client, OpenPIPolicy)
    assert chunk.mode is ActionMode.VELOCITY and chunk.values.shape == (horizon, 8)
    np.testing.assert_allclose(chunk.values[:, 0], np.arange(horizon) * 0.01)
    seen = policy.seen[0]
    assert seen.instruction == 'from the spec'  # falls back to the episode's instruction
    for camera in ('exterior_1', 'wrist'):
        expected = resize_with_pad(obs.images[camera], 224, 224)
        np.testing.assert_array_equal(seen.images[camera], expected)
    assert client.latency.count == 1 and client.latency.p50_ms > 0
    assert client.server_latency.count == 1


def test_joint_position_variant_and_action_space_check():
    policy = EchoChunkPolicy(horizon=10, mode=ActionMode.POSITION)
    with PolicyServer(policy, host='127.0.0.1', port=0, action_space='joint_position') as server:
        client = OpenPIPolicy(host='127.0.0.1', port=server.port, action_space='joint_position',
                              **FAST)
        obs = _observation()
        chunk = client.infer(obs)
        client.close()
        mismatched = OpenPIPolicy(host='127.0.0.1', port=server.port,
                                  action_space='joint_velocity', **FAST)
        with pytest.raises(ConfigError, match='joint_position'):
            mismatched.infer(obs)
    assert chunk.mode is ActionMode.POSITION
    np.testing.assert_allclose(chunk.values[0, :7], obs.joints.position)
    with pytest.raises(ConfigError, match='action_space'):
        OpenPIPolicy(action_space='cartesian_velocity')
    # Empty launch defaults mean openpi's usual endpoint.
    assert OpenPIPolicy(host='', port=0).uri == 'ws://localhost:8000'
    assert OpenPIPolicy(host='wss://gpu.lab:443', port=0).uri == 'wss://gpu.lab:443'


def test_chunker_executes_8_of_15_then_requeries(echo_server):
    server, policy = echo_server
    chunker = ActionChunker(OpenPIPolicy(host='127.0.0.1', port=server.port, **FAST), execute=8)
    chunker.reset(EpisodeSpec())
    for _ in range(17):
        action = chunker.infer(_observation())
        assert len(action) == 1
    chunker.close()
    assert len(policy.seen) == 3 and server.requests == 3


def test_server_converts_position_chunks_to_droid_velocity():
    q = robot.RESET_Q.copy()
    targets = np.tile(np.r_[q, 1.0], (3, 1))
    targets[:, 0] += np.array([0.1, 0.3, 0.3])
    velocity = convert_chunk(ActionChunk(targets, ActionMode.POSITION), q, ActionMode.VELOCITY)
    np.testing.assert_allclose(velocity[:, 0], [0.5, 1.0, 0.0])
    np.testing.assert_allclose(velocity[:, 1:7], 0.0, atol=1e-12)
    back = convert_chunk(ActionChunk(velocity, ActionMode.VELOCITY), q, ActionMode.POSITION)
    np.testing.assert_allclose(back[:, :7], targets[:, :7], atol=1e-12)


def test_missing_camera_is_a_config_error(echo_server):
    server, _ = echo_server
    obs = _observation()
    blind = Observation(obs.joints, {'exterior_1': obs.images['exterior_1']}, 'x')
    with pytest.raises(ConfigError, match="camera 'wrist'"):
        OpenPIPolicy(host='127.0.0.1', port=server.port, **FAST).infer(blind)


# ---- failures -----------------------------------------------------------------------------------

def test_server_down_raises_infrastructure_error():
    client = OpenPIPolicy(host='127.0.0.1', port=_free_port(), **FAST)
    start = time.monotonic()
    with pytest.raises(InfrastructureError, match='cannot reach openpi server'):
        client.infer(_observation())
    assert time.monotonic() - start < 5.0


def _metadata_then(respond):
    async def handler(connection):
        await connection.send(openpi_packb({}))
        async for frame in connection:
            await respond(connection, frame)
    return handler


def test_timeout_raises_infrastructure_error():
    async def silent(connection, frame):
        await asyncio.sleep(1.0)

    with LoopbackWebsocketServer(_metadata_then(silent)) as server:
        client = OpenPIPolicy(host='127.0.0.1', port=server.port, **{**FAST, 'timeout_s': 0.2})
        with pytest.raises(InfrastructureError, match='did not answer within 0.2 s'):
            client.infer(_observation())
        client.close()


@pytest.mark.parametrize('answer, match', [
    (openpi_packb({'not_actions': 1}), 'no `actions` array'),
    (openpi_packb({'actions': np.zeros((10, 7))}), r'must be \(H, 8\)'),
    (openpi_packb({'actions': np.full((10, 8), np.nan)}), 'NaN'),
    (openpi_packb([1, 2, 3]), 'expected a map'),
    (b'\xc1 not msgpack', 'malformed response'),
])
def test_malformed_response_raises_infrastructure_error(answer, match):
    async def reply(connection, frame):
        await connection.send(answer)

    with LoopbackWebsocketServer(_metadata_then(reply)) as server:
        client = OpenPIPolicy(host='127.0.0.1', port=server.port, **FAST)
        with pytest.raises(InfrastructureError, match=match):
            client.infer(_observation())
        client.close()


def test_server_error_text_frame_raises_with_traceback():
    with PolicyServer(EchoChunkPolicy(fail=True), host='127.0.0.1', port=0) as server:
        client = OpenPIPolicy(host='127.0.0.1', port=server.port, **FAST)
        with pytest.raises(InfrastructureError, match='(?s)failed:.*Traceback.*exploded'):
            client.infer(_observation())


def test_reconnects_after_the_server_drops_the_connection():
    async def drop_first(connection, frame):
        if server.connections == 1:
            await connection.close()
        else:
            await connection.send(openpi_packb({'actions': np.ones((10, 8)) * 0.5}))

    with LoopbackWebsocketServer(_metadata_then(drop_first)) as server:
        client = OpenPIPolicy(host='127.0.0.1', port=server.port, **FAST)
        chunk = client.infer(_observation())
        client.close()
    assert chunk.values.shape == (10, 8) and server.connections == 2 and client.reconnects == 1


def test_policy_server_console_script_serves_openpi_clients():
    port = _free_port()
    exe = os.path.join(os.path.dirname(sys.executable), 'policy_server')
    proc = subprocess.Popen([exe, '--policy', 'hold', '--host', '127.0.0.1', '--port',
                             str(port), '--action-space', 'joint_position', '--max-seconds', '30'],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        client = OpenPIPolicy(host='127.0.0.1', port=port, action_space='joint_position',
                              timeout_s=5.0, connect_timeout_s=2.0, retries=20, backoff_s=0.25,
                              max_backoff_s=0.25)
        obs = _observation()
        chunk = client.infer(obs)
        client.close()
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    assert chunk.mode is ActionMode.POSITION
    np.testing.assert_allclose(chunk.values[0, :7], obs.joints.position)  # hold = stay put
    assert f'ws://127.0.0.1:{port}' in out


def test_serve_rejects_bad_policy_args():
    proc = subprocess.run([sys.executable, '-m', 'realm_ros.cli', 'serve', '--policy-args',
                           '[1]'], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and 'JSON object' in proc.stderr
