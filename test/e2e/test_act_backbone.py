"""bench/act_backbone.py: the backbone LeRobot's ACT starts from, pretrained on demonstrations.

What LeRobot reads of it is torchvision's ResNet18 state dict (through torchvision's weight
cache): every key and shape of ``torchvision.models.resnet18()`` must be there, BatchNorm
statistics included, or ``load_state_dict`` (strict) refuses it. The layout is written out here
from torchvision's architecture (no torchvision in this venv; the GPU machine's torchvision
loads the file into ACT, docs/learned-policy.md).
"""

import json

from bench_module import load_bench
import numpy as np
import pytest

from realm_ros.io.lerobot import Episode, open_writer

torch = pytest.importorskip('torch')

act_backbone = load_bench('act_backbone')


def torchvision_resnet18_layout():
    """torchvision.models.resnet18()'s state dict: name -> shape."""
    layout = {'conv1.weight': (64, 3, 7, 7)}

    def bn(prefix, n):
        layout.update({f'{prefix}.weight': (n,), f'{prefix}.bias': (n,),
                       f'{prefix}.running_mean': (n,), f'{prefix}.running_var': (n,),
                       f'{prefix}.num_batches_tracked': ()})

    bn('bn1', 64)
    cin = 64
    for i, w in enumerate((64, 128, 256, 512)):
        for j in range(2):
            p = f'layer{i + 1}.{j}'
            first_in = cin if j == 0 else w
            layout[f'{p}.conv1.weight'] = (w, first_in, 3, 3)
            bn(f'{p}.bn1', w)
            layout[f'{p}.conv2.weight'] = (w, w, 3, 3)
            bn(f'{p}.bn2', w)
            if j == 0 and i > 0:
                layout[f'{p}.downsample.0.weight'] = (w, cin, 1, 1)
                bn(f'{p}.downsample.1', w)
        cin = w
    layout.update({'fc.weight': (1000, 512), 'fc.bias': (1000,)})
    return layout


def make_episode(rng, n, size=(36, 64)):
    images = {c: rng.integers(0, 255, (n, *size, 3), dtype=np.uint8)
              for c in act_backbone.CAMERAS}
    return Episode(instruction='push the light switch',
                   states=rng.normal(size=(n, 8)).astype(np.float32),
                   actions=rng.normal(size=(n, 8)).astype(np.float32), images=images,
                   extra={'seed': 0, 'task': 'push_switch'})


@pytest.fixture(scope='module')
def shards(tmp_path_factory):
    root = tmp_path_factory.mktemp('shards')
    rng = np.random.default_rng(0)
    paths, episodes = [], []
    for s in range(2):
        path = root / f'shard_push_switch_{s:02d}'
        writer = open_writer(path, 'v3.0', fps=15, cameras=act_backbone.CAMERAS)
        for n in (9, 7):
            ep = make_episode(rng, n)
            writer.add(ep)
            episodes.append(ep)
        paths.append(str(path))
    return paths, episodes


def test_chunks_and_episode_ids(shards):
    paths, episodes = shards
    data = act_backbone.load(paths, chunk=4, workers=1)
    assert data['frames'].shape == (32, 2, 36, 64, 3)
    assert data['episode'].tolist() == [0] * 9 + [1] * 7 + [2] * 9 + [3] * 7
    # frame t's target k is action min(t + k, end): the last frames repeat the final action
    first = episodes[0].actions
    assert np.allclose(data['targets'][0], first[0:4], atol=1e-6)
    assert np.allclose(data['targets'][8], np.repeat(first[8:9], 4, axis=0), atol=1e-6)
    assert np.allclose(data['targets'][16], episodes[2].actions[0:4], atol=1e-6)


def test_trained_file_is_torchvision_resnet18(shards, tmp_path):
    paths, _ = shards
    out = tmp_path / 'bb'
    code = act_backbone.main(['--data', *paths, '--out', str(out), '--steps', '3',
                              '--batch', '4', '--device', 'cpu', '--workers', '1'])
    assert code == 0
    state = torch.load(out / 'hub' / 'checkpoints' / 'resnet18-f37072fd.pth', weights_only=True)
    layout = torchvision_resnet18_layout()
    assert sorted(state) == sorted(layout)
    for key, shape in layout.items():
        assert tuple(state[key].shape) == shape, key
    # trained: BatchNorm's statistics moved from their initial mean 0 / variance 1
    assert float(state['bn1.running_mean'].abs().sum()) > 0
    assert int(state['bn1.num_batches_tracked']) == 3
    meta = json.loads((out / 'backbone.json').read_text())
    assert 'NOT ImageNet' in meta['what'] and meta['steps'] == 3
    row = meta['log'][-1]
    assert row['step'] == 3 and row['val_l1'] > 0 and row['val_l1_blind'] > 0
