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

``--align``: instead of the chunks, whether the two renderers' pictures differ by a geometric
map (a camera's focal length or principal point read another way): per camera and state, the
mean absolute grey-level difference (blurred by 1 pixel, 8-pixel border left out) as is and
after the best zoom about the image's centre (0.96-1.04 in steps of 0.005) and shift (-1.5 to
1.5 pixels in steps of 0.25) of Warp's picture; and per camera the least-squares line from
Warp's levels to OpenGL's (each pixel's mean over RGB, all states): ``tone`` (A, B) with
OpenGL ~ A x Warp + B, what ``bench_twin_passes.py --warp-tone A,B`` applies.
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
    parser.add_argument('--align', action='store_true',
                        help="the pictures' best zoom and shift instead of the chunks")
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
    if args.align:
        for cam in CAMERAS:
            fits = [_best_zoom_and_shift(wi[cam], gi[cam]) for wi, gi in zip(warp, gl)]
            levels = [np.concatenate([im[cam].reshape(-1, 3) for im in side]).mean(axis=1)
                      for side in (warp, gl)]
            tone = np.polyfit(levels[0], levels[1], 1)
            print(json.dumps({'camera': cam, 'cells': len(cells), 'seed': args.seed,
                              'tone': [round(float(tone[0]), 4), round(float(tone[1]), 3)],
                              'states': fits}), flush=True)
        return 0
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


def _best_zoom_and_shift(warp: np.ndarray, gl: np.ndarray) -> dict:
    """Mean |difference| in grey levels as is and after the best zoom and shift of ``warp``."""
    import cv2

    def grey(image: np.ndarray) -> np.ndarray:
        g = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY).astype(np.float32)
        return cv2.GaussianBlur(g, (0, 0), 1.0)

    a, b = grey(warp), grey(gl)
    h, w = a.shape
    inner = (slice(8, -8), slice(8, -8))
    as_is = float(np.abs(a - b)[inner].mean())
    best = (as_is, 1.0, 0.0, 0.0)
    for zoom in np.arange(0.96, 1.0401, 0.005):
        for dx in np.arange(-1.5, 1.51, 0.25):
            for dy in np.arange(-1.5, 1.51, 0.25):
                m = np.array([[zoom, 0, (1 - zoom) * (w - 1) / 2 + dx],
                              [0, zoom, (1 - zoom) * (h - 1) / 2 + dy]], np.float32)
                moved = cv2.warpAffine(a, m, (w, h), flags=cv2.INTER_LINEAR,
                                       borderMode=cv2.BORDER_REPLICATE)
                err = float(np.abs(moved - b)[inner].mean())
                if err < best[0] - 1e-6:
                    best = (err, float(zoom), float(dx), float(dy))
    return {'as_is': round(as_is, 2), 'best': round(best[0], 2), 'zoom': round(best[1], 3),
            'dx_px': best[2], 'dy_px': best[3]}


if __name__ == '__main__':
    raise SystemExit(main())
