"""GR00T ZeroMQ client against a loopback server speaking Isaac-GR00T's published protocol."""

from gr00t_loopback_server import Gr00tLoopbackServer
import msgpack
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from realm_ros.core import robot
from realm_ros.core.errors import ConfigError, InfrastructureError
from realm_ros.core.policy import make_policy
from realm_ros.core.rotations import rpy_from_matrix
from realm_ros.core.types import ActionMode, EpisodeSpec, JointState, Observation
from realm_ros.policies.gr00t import Gr00tPolicy, eef_9d, flange_pose
from realm_ros.policies.msgpack_numpy import gr00t_packb, gr00t_unpackb

FAST = {'timeout_s': 0.3, 'retries': 1, 'backoff_s': 0.01}


def _observation(step=0, fill=0, instruction='stack the green block on the yellow block'):
    q = robot.RESET_Q + 0.05
    images = {name: np.full((180, 320, 3), fill + i, dtype=np.uint8)
              for i, name in enumerate(('exterior_1', 'exterior_2', 'wrist'))}
    return Observation(JointState(q, np.zeros(7), np.zeros(7), 0.75), images, instruction, step)


def _n16_action(observation):
    q = observation['state']['joint_position'][0, 0]
    arm = q[None, None, :] + 0.01 * np.arange(15)[None, :, None]
    return {'joint_position': arm.astype(np.float32),
            'gripper_position': np.full((1, 15, 1), 0.9, dtype=np.float32)}


def test_encoding_matches_gr00t_wire_format():
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    raw = msgpack.unpackb(gr00t_packb({'data': {'x': array}}))
    assert raw['data']['x']['__ndarray_class__'] is True
    assert raw['data']['x']['as_npy'][:6] == b'\x93NUMPY'  # np.save's magic
    np.testing.assert_array_equal(gr00t_unpackb(gr00t_packb({'x': array}))['x'], array)
    config = {'__ModalityConfig_class__': True, 'as_json': '{"modality_keys": ["a"]}'}
    assert gr00t_unpackb(msgpack.packb({'v': config}))['v'] == {'modality_keys': ['a']}


def test_n16_request_layout_and_joint_position_chunk():
    with Gr00tLoopbackServer(_n16_action, layout='n1.6', api_token='s3cret') as server:
        policy = make_policy('gr00t', common={'skill': 'stack', 'seed': 1}, host='127.0.0.1',
                             port=server.port, layout='n1.7', api_token='s3cret', **FAST)
        assert policy.ping()
        policy.reset(EpisodeSpec(instruction='from spec'))
        obs = _observation()
        chunk = policy.infer(obs)
        policy.close()
    assert isinstance(policy, Gr00tPolicy)
    assert chunk.mode is ActionMode.POSITION and chunk.values.shape == (15, 8)
    np.testing.assert_allclose(chunk.values[0, :7], obs.joints.position, atol=1e-6)
    np.testing.assert_allclose(chunk.values[:, 7], 0.9, atol=1e-6)
    request = server.requests[-1]
    assert request['endpoint'] == 'get_action' and request['api_token'] == 's3cret'
    assert request['data']['options'] is None
    observation = request['data']['observation']
    video = observation['video']
    assert sorted(video) == ['exterior_image_1_left', 'wrist_image_left']
    # Modality delta_indices [-15, 0]: T = 2 frames of 180x320 (the first query repeats its own).
    assert video['exterior_image_1_left'].shape == (1, 2, 180, 320, 3)
    assert video['exterior_image_1_left'].dtype == np.uint8
    assert int(video['wrist_image_left'][0, 1, 90, 160, 0]) == 2
    state = observation['state']
    assert state['joint_position'].shape == (1, 1, 7)
    assert state['joint_position'].dtype == np.float32
    assert state['gripper_position'].shape == (1, 1, 1) and state['eef_9d'].shape == (1, 1, 9)
    language = observation['language']['annotation.language.language_instruction']
    assert language == [['stack the green block on the yellow block']]
    assert policy.latency.count == 1


def test_n16_video_history_uses_the_frame_from_15_steps_before():
    with Gr00tLoopbackServer(_n16_action, layout='n1.6') as server:
        policy = Gr00tPolicy(host='127.0.0.1', port=server.port, **FAST)
        policy.reset(EpisodeSpec())
        policy.infer(_observation(step=0, fill=10))
        policy.infer(_observation(step=15, fill=100))
        policy.close()
    frames = server.requests[-1]['data']['observation']['video']['exterior_image_1_left'][0]
    assert int(frames[0, 90, 160, 0]) == 10 and int(frames[1, 90, 160, 0]) == 100


def _n15_joint_action(data):
    assert data['video.exterior_image_1'].shape == (1, 180, 320, 3)
    assert data['video.exterior_image_2'].shape == (1, 180, 320, 3)
    assert data['state.eef_position'].shape == (1, 3)
    assert data['state.eef_rotation'].shape == (1, 3)
    assert data['state.gripper_position'].shape == (1, 1)
    assert data['annotation.language.language_instruction'] == ['open the drawer']
    q = data['state.joint_position'][0]
    return {'action.joint_position': np.tile(q, (16, 1)),
            'action.gripper_position': np.zeros((16, 1))}


def test_n15_flat_layout_with_joint_actions():
    with Gr00tLoopbackServer(_n15_joint_action, layout='n1.5') as server:
        policy = Gr00tPolicy(host='127.0.0.1', port=server.port, layout='n1.5', **FAST)
        obs = _observation(instruction='open the drawer')
        chunk = policy.infer(obs)
        policy.close()
    assert chunk.values.shape == (16, 8) and chunk.mode is ActionMode.POSITION
    np.testing.assert_allclose(chunk.values[:, :7], np.tile(obs.joints.position, (16, 1)),
                               atol=1e-6)


def test_n15_cartesian_deltas_are_refused_with_a_clear_message():
    def eef_deltas(data):
        return {'action.eef_position_delta': np.zeros((16, 3)),
                'action.eef_rotation_delta': np.zeros((16, 3)),
                'action.gripper_position': np.zeros((16, 1))}

    with Gr00tLoopbackServer(eef_deltas, layout='n1.5') as server:
        policy = Gr00tPolicy(host='127.0.0.1', port=server.port, layout='n1.5', **FAST)
        with pytest.raises(ConfigError, match='Cartesian end-effector deltas'):
            policy.infer(_observation())
        policy.close()


def test_server_down_times_out_and_recreates_the_socket():
    import socket
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
    policy = Gr00tPolicy(host='127.0.0.1', port=port, **FAST)
    assert not policy.ping()
    with pytest.raises(InfrastructureError, match='did not answer'):
        policy.infer(_observation())
    assert policy.timeouts == 4  # two attempts for ping, two for get_modality_config
    policy.close()


def test_timeout_then_recovery_on_a_fresh_req_socket():
    with Gr00tLoopbackServer(_n16_action, layout='n1.6', delay_s=0.6) as server:
        policy = Gr00tPolicy(host='127.0.0.1', port=server.port, timeout_s=0.2, retries=0)
        policy.modality_config()
        with pytest.raises(InfrastructureError, match='did not answer .get_action. within 0.2 s'):
            policy.infer(_observation())
        server.delay_s = 0.0
        policy.timeout_s = 3.0  # the server first finishes the abandoned request
        policy._close_socket()
        chunk = policy.infer(_observation())
        policy.close()
    assert chunk.values.shape == (15, 8) and policy.timeouts == 1


def test_server_errors_become_infrastructure_errors():
    def broken(observation):
        raise KeyError('joint_position')

    with Gr00tLoopbackServer(broken, layout='n1.6', api_token='right') as server:
        wrong = Gr00tPolicy(host='127.0.0.1', port=server.port, api_token='wrong', **FAST)
        with pytest.raises(InfrastructureError, match='Unauthorized'):
            wrong.infer(_observation())
        wrong.close()
        policy = Gr00tPolicy(host='127.0.0.1', port=server.port, api_token='right', **FAST)
        with pytest.raises(InfrastructureError, match="failed on 'get_action'.*joint_position"):
            policy.infer(_observation())
        policy.close()


@pytest.mark.parametrize('raw, match', [
    (b'\xc1 garbage', 'malformed answer'),
    (b'ERROR', 'answered ERROR'),
    (msgpack.packb([1, 2, 3]), 'malformed modality config'),
])
def test_malformed_answers_become_infrastructure_errors(raw, match):
    with Gr00tLoopbackServer(_n16_action, raw_reply=raw) as server:
        policy = Gr00tPolicy(host='127.0.0.1', port=server.port, **FAST)
        with pytest.raises(InfrastructureError, match=match):
            policy.infer(_observation())
        policy.close()


def test_malformed_action_shapes_are_refused():
    def short(observation):
        return {'joint_position': np.zeros((1, 15, 6)), 'gripper_position': np.zeros((1, 15, 1))}

    with Gr00tLoopbackServer(short, layout='n1.6') as server:
        policy = Gr00tPolicy(host='127.0.0.1', port=server.port, **FAST)
        with pytest.raises(InfrastructureError, match=r'joint_position \(N, 7\)'):
            policy.infer(_observation())
        policy.close()


def test_end_effector_state_conventions():
    q = robot.RESET_Q + 0.1
    xyz, rotation = flange_pose(q)
    angles = rpy_from_matrix(rotation)
    np.testing.assert_allclose(Rotation.from_euler('xyz', angles).as_matrix(), rotation,
                               atol=1e-9)
    nine = eef_9d(q)
    np.testing.assert_allclose(nine[:3], xyz, atol=1e-6)
    rows = nine[3:].reshape(2, 3)
    np.testing.assert_allclose(rows @ rows.T, np.eye(2), atol=1e-5)
    with pytest.raises(ConfigError, match='layout'):
        Gr00tPolicy(layout='n2')
