"""Is what realm_ros executes for a LeRobot checkpoint what LeRobot's own inference does?

Run: ``.venv/bin/python bench/lerobot_parity.py --checkpoint DIR [--task push_switch] [--seed 0]
[--max-steps 160] [--image-size 160x90]``.

1. One episode on the digital real (its hidden look and dynamics) with the ``lerobot`` policy in
   the ``standard_chain`` every runner uses; every query's observation, exactly as the server got
   it (state, the camera images at the checkpoint's size, prompt), and the chunk it answered are
   recorded.
2. In the lerobot venv, LeRobot's own ``predict_action`` (``select_action`` with its action
   queue, as ``lerobot-record`` runs a robot) is fed the same observations in order:
   ``n_action_steps`` calls per query, the first computing the chunk from that observation.
3. Prints one JSON line: queries, actions compared, the largest absolute difference, success.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
from typing import Any

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

OWN = r"""
import json, runpy, sys
import numpy as np
server = runpy.run_path(sys.argv[1])
runner = server['LeRobotRunner'](sys.argv[2], 'cpu', 1)
data = np.load(sys.argv[3])
queries, steps = int(data['queries']), runner.config.n_action_steps
runner.reset()
rows = []
for k in range(queries):
    obs = {key.split('/', 1)[1]: data[key] for key in data.files if key.startswith(f'{k}/')}
    rows.append([runner.select(obs, sys.argv[4]).tolist() for _ in range(steps)])
print('OWN ' + json.dumps(rows))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog='bench/lerobot_parity.py')
    parser.add_argument('--checkpoint', required=True, help='pretrained_model folder')
    parser.add_argument('--task', default='push_switch')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--max-steps', type=int, default=160)
    parser.add_argument('--image-size', default='160x90', help='rendered WxH, px')
    args = parser.parse_args(argv)
    from realm_ros.commands.episode import parse_image_size
    from realm_ros.core.errors import ConfigError

    try:
        width, height = parse_image_size(args.image_size)
    except ConfigError as err:
        print(err, file=sys.stderr)
        return 2

    import torch

    from realm_ros.core import robot, tasks
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.episode import run_episode
    from realm_ros.core.policy import standard_chain
    from realm_ros.core.types import ActionChunk, EpisodeSpec, Observation
    from realm_ros.core.world import make_world
    from realm_ros.policies.image_tools import resize_with_pad
    from realm_ros.policies.lerobot_policy import SERVER_SCRIPT, LeRobotPolicy, find_python

    torch.set_num_threads(1)
    world = make_world(WorldConfig(
        backend='digital_real', task=args.task, cameras=('exterior_1', 'wrist'),
        camera_rate_hz=robot.CONTROL_HZ, camera_width=width, camera_height=height,
        appearance_file=str(REPO / 'config' / 'appearance' / 'lab_demo.yaml')))
    policy = LeRobotPolicy(path=args.checkpoint, threads=1)
    recorded: dict[str, Any] = {}
    chunks: list[np.ndarray] = []
    inner_infer = policy.infer

    def infer(obs: Observation) -> ActionChunk:
        k = len(chunks)
        h, w = policy.image_hw
        recorded[f'{k}/observation.state'] = np.r_[obs.joints.position,
                                                   obs.joints.gripper].astype(np.float32)
        for camera in policy.cameras:
            recorded[f'{k}/observation.images.{camera}'] = resize_with_pad(obs.images[camera],
                                                                           h, w)
        chunk = inner_infer(obs)
        chunks.append(chunk.values)
        return chunk

    policy.infer = infer  # type: ignore[method-assign]
    instruction = tasks.get_task(args.task).instruction
    spec = EpisodeSpec(task=args.task, seed=args.seed, policy='lerobot',
                       max_steps=args.max_steps, instruction=instruction)
    try:
        result = run_episode(world, standard_chain(policy, execute=policy.horizon), spec)
    finally:
        policy.close()
        world.close()
    work = pathlib.Path(tempfile.mkdtemp(prefix='lerobot_parity_'))
    np.savez(work / 'obs.npz', queries=np.array(len(chunks)), **recorded)
    env = dict(os.environ, HF_HUB_OFFLINE='1', PYTHONPATH='', OMP_NUM_THREADS='1')
    proc = subprocess.run([find_python(''), '-c', OWN, str(SERVER_SCRIPT),
                           str(policy.checkpoint), str(work / 'obs.npz'), instruction],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        print(proc.stderr[-3000:])
        return 1
    own = np.array(json.loads(proc.stdout.split('OWN ', 1)[1]))
    steps = own.shape[1]
    served = np.stack([c[:steps] for c in chunks])
    diff = float(np.max(np.abs(served - own)))
    print(json.dumps({'checkpoint': str(policy.checkpoint), 'task': args.task,
                      'seed': args.seed, 'episode_steps': int(result.steps),
                      'success': bool(result.success), 'queries': len(chunks),
                      'actions_compared': int(served.shape[0] * steps * served.shape[2]),
                      'max_abs_diff': diff}), flush=True)
    return 0 if diff < 1e-5 else 1


if __name__ == '__main__':
    sys.exit(main())
