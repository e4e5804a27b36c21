"""The learned checkpoints' first chunk from Warp's pictures and from OpenGL's, on the same states.

For ``--cells`` push_switch cells of the sweep's ``--seed`` (each reset, the arm moved by up to
0.3 rad per joint, as ``bench_warp_images.py`` does), each of the learned ladder's checkpoints
(``checkpoints/learned/{early,middle,final}.pt``) answers the same observation twice: once with
the three cameras drawn by MuJoCo Warp (``WarpStepper.host_images``, the sweep's mapping, the
key light's shadows on) and once drawn by the CPU twin's OpenGL (``FrameRenderer`` with its
shadows and reflections on). Prints, per checkpoint, the largest difference of the chunk's arm
joints (rad) and gripper command, median and maximum over the cells: how much the pictures
alone move a policy's first actions. Needs mujoco-warp and warp-lang (Warp's CPU device is
enough):

    PYTHONPATH=/tmp/mjw:$PWD MUJOCO_GL=egl python3 bench/bench_warp_chunks.py --cells 8 --seed 4
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from bench_warp_images import CAMERAS, _sync  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--cells', type=int, default=8)
    parser.add_argument('--seed', type=int, default=4)
    parser.add_argument('--device', default='cpu')
    args = parser.parse_args()
    os.environ.setdefault('MUJOCO_GL', 'egl')
    import mujoco

    from realm_ros.backends.mujoco.render import FrameRenderer
    from realm_ros.backends.mujoco.warp_sweep import WarpStepper, import_warp
    from realm_ros.core import robot
    from realm_ros.core.sweep import SweepConfig, plan_cells
    from realm_ros.policies.learned import LearnedPolicy
    from realm_ros.sweep.warp import _world

    try:
        import_warp()
    except Exception as err:  # noqa: BLE001 - one line naming what is missing
        print(f'bench_warp_chunks: {err}', file=sys.stderr)
        return 2
    config = SweepConfig(tasks=('push_switch',), policies=('scripted:0',),
                         episodes_per_cell=args.cells, max_steps=1, worlds=('warp',),
                         seed=args.seed)
    cells = [dataclasses.replace(c, cameras=CAMERAS)
             for c in plan_cells(config, lambda entry: CAMERAS)]
    worlds = [_world(c, CAMERAS, (320, 180)) for c in cells]
    for world, cell in zip(worlds, cells):
        world.reset(cell.spec)
        rng = np.random.default_rng(cell.spec.seed)
        q = world.data.qpos[world._arm_qpos]
        world.data.qpos[world._arm_qpos] = np.clip(
            q + rng.uniform(-0.3, 0.3, q.shape), robot.JOINT_LOWER, robot.JOINT_UPPER)
        mujoco.mj_forward(world.model, world.data)
    stepper = WarpStepper(worlds, cameras=CAMERAS, image_size=(320, 180), device=args.device,
                          shadows=True, render_options={}, forward=False, decals=True)
    _sync(stepper, [w.model for w in worlds])
    warp = [stepper.host_images(i) for i in range(len(worlds))]
    gl = [FrameRenderer(w.model, 320, 180, shadows=True, reflections=True).render(w.data, CAMERAS)
          for w in worlds]
    for name in ('early', 'middle', 'final'):
        policy = LearnedPolicy(path=f'checkpoints/learned/{name}.pt')
        arm, grip = [], []
        for world, cell, wi, gi in zip(worlds, cells, warp, gl):
            policy.reset(cell.spec)
            base = world.observe()
            a = policy.infer(dataclasses.replace(base, images=wi)).values
            b = policy.infer(dataclasses.replace(base, images=gi)).values
            arm.append(float(np.abs(a - b)[:, :7].max()))
            grip.append(float(np.abs(a - b)[:, 7].max()))
        print(json.dumps({'checkpoint': name, 'cells': len(cells), 'seed': args.seed,
                          'arm_rad_median': round(float(np.median(arm)), 4),
                          'arm_rad_max': round(max(arm), 4),
                          'gripper_median': round(float(np.median(grip)), 4),
                          'gripper_max': round(max(grip), 4)}), flush=True)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
