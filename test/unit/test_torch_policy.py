"""Torch policy: TorchScript and state-dict loading, the input/output contract, timing."""

import numpy as np
import pytest

from realm_ros.core import robot
from realm_ros.core.errors import ConfigError, InfrastructureError
from realm_ros.core.policy import make_policy
from realm_ros.core.types import ActionMode, JointState, Observation

torch = pytest.importorskip('torch')
# torch >= 2.10 deprecates torch.jit.script; the TorchScript files users have still load.
pytestmark = pytest.mark.filterwarnings('ignore::DeprecationWarning')
from torch_test_models import ImageMeanNet, TinyChunkNet  # noqa: E402 - needs torch first


def _observation(gripper=0.5):
    images = {'wrist': np.full((180, 320, 3), 51, dtype=np.uint8)}
    return Observation(JointState(robot.RESET_Q.copy(), np.zeros(7), np.zeros(7), gripper),
                       images, 'pick the spoon')


def test_torchscript_file_runs_batch_free(tmp_path):
    net = TinyChunkNet(horizon=4)
    with torch.no_grad():
        net.offset.copy_(torch.arange(32, dtype=torch.float32).reshape(4, 8) * 0.01)
    path = tmp_path / 'policy.pt'
    torch.jit.script(net).save(str(path))
    policy = make_policy('torch', common={'host': 'ignored', 'seed': 3}, path=str(path),
                         device='cpu')
    chunk = policy.infer(_observation())
    assert chunk.mode is ActionMode.POSITION and chunk.values.shape == (4, 8)
    expected = np.r_[robot.RESET_Q, 0.5][None] + np.arange(32).reshape(4, 8) * 0.01
    np.testing.assert_allclose(chunk.values, expected, atol=1e-6)
    assert policy.latency.count == 1 and policy.latency.p50_ms > 0
    assert 'policy.pt' in policy.label


def test_state_dict_into_module_with_velocity_space(tmp_path):
    net = TinyChunkNet(horizon=3)
    with torch.no_grad():
        net.offset.fill_(0.25)
    path = tmp_path / 'weights.pth'
    torch.save(net.state_dict(), path)
    policy = make_policy('torch', path=str(path), module='torch_test_models:TinyChunkNet',
                         module_kwargs='{"horizon": 3}', action_space='joint_velocity')
    chunk = policy.infer(_observation())
    assert chunk.mode is ActionMode.VELOCITY and chunk.values.shape == (3, 8)
    np.testing.assert_allclose(chunk.values[:, 0], robot.RESET_Q[0] + 0.25, atol=1e-6)


def test_images_are_fed_as_unit_range_tensors(tmp_path):
    path = tmp_path / 'image.pt'
    torch.jit.script(ImageMeanNet()).save(str(path))
    policy = make_policy('torch', path=str(path), cameras=['wrist'], image_size=[56, 56])
    chunk = policy.infer(_observation())
    assert chunk.values.shape == (1, 8)
    # 56x56 square: the 180x320 picture fills 31 rows; the rest is black padding.
    rows = int(180 / (320 / 56))
    assert chunk.values[0, 7] == pytest.approx(0.2 * rows / 56, rel=1e-3)
    blind = Observation(_observation().joints, {}, '')
    with pytest.raises(ConfigError, match="camera 'wrist'"):
        policy.infer(blind)


def test_contract_violations(tmp_path):
    class Wrong(torch.nn.Module):
        def forward(self, state):
            return state[:, :7]

    class Nan(torch.nn.Module):
        def forward(self, state):
            return state * float('nan')

    for name, module in (('wrong.pt', Wrong()), ('nan.pt', Nan())):
        torch.jit.script(module).save(str(tmp_path / name))
    with pytest.raises(ConfigError, match=r'\(1, H, 8\)'):
        make_policy('torch', path=str(tmp_path / 'wrong.pt')).infer(_observation())
    with pytest.raises(InfrastructureError, match='NaN'):
        make_policy('torch', path=str(tmp_path / 'nan.pt')).infer(_observation())
    with pytest.raises(ConfigError, match='is not a file'):
        make_policy('torch', path=str(tmp_path / 'missing.pt'))
    with pytest.raises(ConfigError, match='needs'):
        make_policy('torch')
    with pytest.raises(ConfigError, match='cannot import'):
        make_policy('torch', module='torch_test_models:Missing')


def test_module_without_weights_and_signature_mismatch():
    policy = make_policy('torch', module='torch_test_models:ImageMeanNet')  # needs images
    with pytest.raises(ConfigError, match='does not take the inputs'):
        policy.infer(_observation())


def test_forward_failure_is_an_infrastructure_error(tmp_path):
    class Broken(torch.nn.Module):
        def forward(self, state):
            return state @ torch.zeros(3, 3)  # shape error at run time

    path = tmp_path / 'broken.pt'
    torch.jit.script(Broken()).save(str(path))
    with pytest.raises(InfrastructureError, match='failed'):
        make_policy('torch', path=str(path)).infer(_observation())


def test_torch_export_archive(tmp_path):
    net = TinyChunkNet(horizon=2)
    program = torch.export.export(net, (torch.zeros(1, 8),))
    path = tmp_path / 'policy.pt2'
    torch.export.save(program, str(path))
    chunk = make_policy('torch', path=str(path)).infer(_observation())
    np.testing.assert_allclose(chunk.values, np.tile(np.r_[robot.RESET_Q, 0.5], (2, 1)),
                               atol=1e-6)


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA GPU')
def test_cuda_device_matches_cpu(tmp_path):
    net = TinyChunkNet(horizon=15)
    with torch.no_grad():
        net.offset.normal_()
    path = tmp_path / 'policy.pt'
    torch.jit.script(net).save(str(path))
    cpu = make_policy('torch', path=str(path), device='cpu').infer(_observation())
    gpu_policy = make_policy('torch', path=str(path), device='cuda')
    for _ in range(20):
        gpu = gpu_policy.infer(_observation())
    np.testing.assert_allclose(gpu.values, cpu.values, atol=1e-5)
    assert 'cuda' in gpu_policy.label
    print(f'cuda torch policy latency: {gpu_policy.latency}')
