"""The ``lerobot`` policy end to end with the real lerobot, in its own venv (``make lerobot-env``):
a tiny ACT made and saved by lerobot itself (config, weights, the saved pre- and postprocessors
with stats), served by realm_ros/policies/lerobot_server.py from that venv, queried by
realm_ros's client over openpi's websocket protocol; the chunk it answers is LeRobot's own
inference (``predict_action``, as lerobot-record runs it) on the same observation, within float
tolerance, and blanked images change it. A tiny diffusion policy (two observations of history,
DDPM noise) made the same way is served too: over a short episode's observations the actions
realm_ros executes are LeRobot's own ``select_action`` sequence on them. ``realm-ros sweep`` and
``realm-ros paired-eval`` run both as ``label=lerobot:path=...`` policies.

Skipped where the lerobot venv is absent (``make setup`` does not make it: about 4 GB of CUDA
torch wheels, 8 GB installed); ``make lerobot-env`` makes it, or REALM_LEROBOT_PYTHON names one.
"""

import json
import os
import pathlib
import subprocess
import sys

import lerobot_checkpoints
import numpy as np
import pytest

from realm_ros.core.errors import InfrastructureError
from realm_ros.core.policy import ActionChunker, make_policy
from realm_ros.core.types import ActionMode, EpisodeSpec, JointState, Observation
from realm_ros.policies.lerobot_policy import SERVER_SCRIPT, find_python

pytestmark = lerobot_checkpoints.MARKS

H, W = 36, 64

# LeRobot's own select_action sequence over an episode: reset, torch seeded with the episode's
# seed (what the server does at an episode's first query), then predict_action once per step.
OWN_SEQUENCE = r"""
import json, runpy, sys
import numpy as np
server = runpy.run_path(sys.argv[1])
runner = server['LeRobotRunner'](sys.argv[2], 'cpu', 1)
data = np.load(sys.argv[3])
runner.reset(int(sys.argv[5]))
rows = []
for t in range(int(data['steps'])):
    obs = {k.split('/', 1)[1]: data[k] for k in data.files if k.startswith(f'{t}/')}
    rows.append(runner.select(obs, sys.argv[4]).tolist())
print('OWN ' + json.dumps(rows))
"""

# LeRobot's own inference on the same observation: predict_action (select_action's queue), the
# first n_action_steps actions of one chunk, one call each.
OWN = r"""
import json, runpy, sys
import numpy as np
server = runpy.run_path(sys.argv[1])
runner = server['LeRobotRunner'](sys.argv[2], 'cpu', 1)
data = np.load(sys.argv[3])
obs = {k: data[k] for k in data.files}
runner.reset()
rows = [runner.select(obs, sys.argv[4]).tolist() for _ in range(runner.config.n_action_steps)]
print('OWN ' + json.dumps(rows))
"""


@pytest.fixture(scope='module')
def checkpoint(tmp_path_factory):
    return lerobot_checkpoints.make_checkpoint(tmp_path_factory.mktemp('lerobot'),
                                               lerobot_checkpoints.ACT, H, W)


@pytest.fixture(scope='module')
def diffusion(tmp_path_factory):
    return lerobot_checkpoints.make_checkpoint(tmp_path_factory.mktemp('diffusion'),
                                               lerobot_checkpoints.DIFFUSION, H, W)


def observation(seed=0, step=0):
    rng = np.random.default_rng(seed)
    q = np.array([0.0, -0.6, 0.0, -2.2, 0.0, 1.6, 0.8]) + rng.normal(0, 0.05, 7)
    images = {c: rng.integers(0, 255, (H, W, 3), dtype=np.uint8) for c in ('exterior_1', 'wrist')}
    return Observation(joints=JointState(q, np.zeros(7), np.zeros(7), 0.3), images=images,
                       instruction='push the light switch', step=step)


def test_served_chunk_is_lerobots_own_inference(checkpoint, tmp_path):
    obs = observation()
    policy = make_policy('lerobot', path=str(checkpoint))
    try:
        assert policy.needs.image_size == (H, W) and policy.needs.horizon == 8
        policy.reset(EpisodeSpec(task='push_switch', instruction='push the light switch'))
        chunk = policy.infer(obs)
        assert policy.metadata['server'] == 'lerobot' and policy.metadata['policy'] == 'act'
    finally:
        policy.close()
    assert chunk.mode is ActionMode.POSITION and chunk.values.shape == (10, 8)
    assert np.all(np.isfinite(chunk.values))
    arrays = {'observation.state': np.r_[obs.joints.position, obs.joints.gripper]
              .astype(np.float32)}
    arrays.update({f'observation.images.{c}': img for c, img in obs.images.items()})
    np.savez(tmp_path / 'obs.npz', **arrays)
    proc = subprocess.run([find_python(''), '-c', OWN, str(SERVER_SCRIPT), str(checkpoint),
                           str(tmp_path / 'obs.npz'), obs.instruction],
                          capture_output=True, text=True, env={'HF_HUB_OFFLINE': '1',
                                                               'PATH': '/usr/bin:/bin'})
    assert proc.returncode == 0, proc.stderr[-3000:]
    own = np.array(json.loads(proc.stdout.split('OWN ', 1)[1]))
    assert own.shape == (8, 8)
    np.testing.assert_allclose(chunk.values[:8], own, atol=1e-5)


def test_blind_images_change_the_answer_and_a_dead_server_is_infrastructure(checkpoint):
    obs = observation(1)
    spec = EpisodeSpec(task='push_switch', instruction='push the light switch')
    seeing, blind = (make_policy('lerobot', path=str(checkpoint), blind=b) for b in (False, True))
    try:
        seeing.reset(spec)
        blind.reset(spec)
        a, b = seeing.infer(obs).values, blind.infer(obs).values
        assert np.max(np.abs(a - b)) > 1e-6 and blind.label.endswith(':blind')
        proc = seeing._proc
        assert proc is not None
        seeing.close()  # its server exits when its standard input closes (else is ended)
        assert proc.poll() is not None and seeing._proc is None
    finally:
        seeing.close()
        blind.close()
    broken = make_policy('lerobot', path=str(checkpoint),
                         python=str(pathlib.Path('/bin/false')))
    with pytest.raises(InfrastructureError, match='exited with 1 before listening'):
        broken.reset(spec)
    broken.close()


def test_served_diffusion_executes_lerobots_own_select_action_sequence(diffusion, tmp_path):
    """20 control steps (two queries and a half: n_action_steps 8) of random observations
    through the ActionChunker every runner uses, against ``predict_action`` called on each step.

    Same noise on both sides: diffusion draws its starting sample and DDPM's per-step noise from
    torch's global generator (``torch.randn`` with no generator), and nothing else draws from it
    at inference; the server seeds it with the episode's seed when it resets the policy at the
    episode's first query, and the reference seeds it with the same seed right after its reset,
    so both draw the same numbers in the same order. History matters: the second and third
    chunks are computed from two different observations (steps 7 and 8, then 15 and 16), the
    earlier of which only reaches the server as ``realm/history``.
    """
    steps, seed, task = 20, 7, 'push the light switch'
    policy = make_policy('lerobot', path=str(diffusion))
    chain = ActionChunker(policy, policy.needs.horizon)
    observations = [observation(100 + t, step=t) for t in range(steps)]
    try:
        assert policy.info['chunk'] == 8 and policy.info['history'] == 2
        assert policy.needs.horizon == 8 and policy.label.startswith('lerobot:diffusion:')
        chain.reset(EpisodeSpec(task='push_switch', instruction=task, seed=seed))
        executed = np.array([chain.infer(o).values[0] for o in observations])
        assert policy.metadata['policy'] == 'diffusion' and policy.metadata['history'] == 2
    finally:
        chain.close()
    arrays = {'steps': np.array(steps)}
    for t, obs in enumerate(observations):
        arrays[f'{t}/observation.state'] = np.r_[obs.joints.position, obs.joints.gripper] \
            .astype(np.float32)
        arrays.update({f'{t}/observation.images.{c}': img for c, img in obs.images.items()})
    np.savez(tmp_path / 'episode.npz', **arrays)
    proc = subprocess.run([find_python(''), '-c', OWN_SEQUENCE, str(SERVER_SCRIPT),
                           str(diffusion), str(tmp_path / 'episode.npz'), task, str(seed)],
                          capture_output=True, text=True, env={'HF_HUB_OFFLINE': '1',
                                                               'PATH': '/usr/bin:/bin'})
    assert proc.returncode == 0, proc.stderr[-3000:]
    own = np.array(json.loads(proc.stdout.split('OWN ', 1)[1]))
    assert own.shape == executed.shape == (steps, 8)
    assert np.max(np.abs(np.diff(own, axis=0))) > 1e-3  # the policy does not answer a constant
    np.testing.assert_allclose(executed, own, atol=1e-5)


def test_sweep_and_paired_eval_run_lerobot_checkpoints_and_name_them(checkpoint, diffusion,
                                                                   tmp_path):
    """``realm-ros sweep`` over two cells per policy (one episode each, Default and V-LIGHT) with
    the tiny ACT and the tiny diffusion as ``label=lerobot:path=...``: every cell ran (none an
    infrastructure failure) and its record names its policy; then ``realm-ros paired-eval`` (the
    ROS graph: policy_node serves each on both sides of the pair) runs one pair of each."""
    common = ['--tasks', 'push_switch', '--policies', f'act=lerobot:path={checkpoint}',
              f'diff=lerobot:path={diffusion}', '--episodes-per-cell', '1', '--max-steps', '12']
    env = {**os.environ, 'HF_HUB_OFFLINE': '1'}
    sweep = tmp_path / 'sweep'
    proc = subprocess.run([sys.executable, '-m', 'realm_ros.cli', 'sweep', '--out', str(sweep),
                           *common, '--perturbations', 'Default', 'V-LIGHT', '--workers', '1',
                           '--quiet'], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [json.loads(line) for line in (sweep / 'episodes.jsonl').read_text().splitlines()]
    assert sorted((r['policy'], r['pair_id'].split('/')[1]) for r in records) == [
        ('act', 'Default@1'), ('act', 'V-LIGHT@1'), ('diff', 'Default@1'), ('diff', 'V-LIGHT@1')]
    for record in records:
        assert record['pair_id'].endswith('/' + record['policy'])
        assert record['outcome'] != 'infra_failure' and record['steps'] == 12, record
    paired = tmp_path / 'paired'
    proc = subprocess.run([sys.executable, '-m', 'realm_ros.cli', 'paired-eval', '--out',
                           str(paired), *common, '--perturbations', 'Default'],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    pairs = [json.loads(line) for line in (paired / 'episodes.jsonl').read_text().splitlines()]
    assert sorted(r['policy'] for r in pairs) == ['act', 'act', 'diff', 'diff']
    assert all(r['outcome'] != 'infra_failure' and r['steps'] == 12 for r in pairs), pairs
