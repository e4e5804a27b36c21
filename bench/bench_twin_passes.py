"""The learned policy on the CPU twin with each OpenGL pass on or off: does its score move?

Runs the sweep's learned cells (push_switch, Default, the sweep's seeds of ``--seed``) with
``run_episode`` on the CPU twin (the CPU sweep's worker, three cameras), once per rig render
setting: ``auto`` (the rig's default: off on a software rasteriser such as llvmpipe), both
passes on, shadows alone, reflections alone; prints successes and progressions per setting.

    MUJOCO_GL=egl python3 bench/bench_twin_passes.py --cells 16 --seed 1
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import sys
import tempfile
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from benchlib import Recorder  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
SETTINGS = {'auto': '', 'both': '{shadows: true, reflections: true}',
            'shadows': '{shadows: true, reflections: false}',
            'reflections': '{shadows: false, reflections: true}'}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--cells', type=int, default=16)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--max-steps', type=int, default=150)
    parser.add_argument('--policy', default=str(ROOT / 'checkpoints/learned/final.pt'))
    parser.add_argument('--settings', default='auto,both,shadows,reflections')
    parser.add_argument('--darken', type=float, default=0.0,
                        help='an experiment: subtract this many grey levels from every camera '
                             "image before the policy sees it (Warp's pictures are about 1.5 "
                             "levels darker than OpenGL's: docs/performance.md)")
    parser.add_argument('--pictures', choices=('opengl', 'warp'), default='opengl',
                        help="warp: an experiment: the policy's pictures drawn by MuJoCo Warp's "
                             "ray tracer (the Warp sweep's, on Warp's CPU device: shadows on, "
                             "as on a GPU machine) from the CPU twin's own states, so that the "
                             "physics is the CPU twin's and only the pictures are Warp's")
    parser.add_argument('--warp-cameras', default='',
                        help='with --pictures warp: only these cameras (comma separated) drawn '
                             'by Warp, the others by OpenGL (default: every camera)')
    parser.add_argument('--bottom-rows', type=int, default=0,
                        help='with --pictures warp: the bottom N rows of each Warp-drawn camera '
                             "are OpenGL's (where OpenGL's near plane cuts the hand in the wrist "
                             "view); negative: only the bottom -N rows are Warp's")
    parser.add_argument('--warp-shadows', choices=('on', 'off'), default='on',
                        help="with --pictures warp: Warp's ray-traced shadows of the key light")
    parser.add_argument('--warp-texture-blur', type=int, default=0,
                        help="with --pictures warp: Warp's textures box-filtered K x K before "
                             "they go to the device (a fixed stand-in for OpenGL's mipmaps)")
    parser.add_argument('--warp-spp', type=int, default=1,
                        help="with --pictures warp: Warp's samples per pixel (supersampling)")
    parser.add_argument('--warp-tone', default='',
                        help="with --pictures warp: A,B: each Warp-drawn pixel v becomes "
                             "A * v + B (clipped, rounded) before the policy sees it: a fit of "
                             "OpenGL's levels to Warp's (Warp's darks are darker)")
    parser.add_argument('--no-textures', action='store_true',
                        help='an ablation on both renderers: every material drawn without its '
                             'texture (the worlds reset, then mat_texid cleared)')
    args = parser.parse_args()
    os.environ.setdefault('MUJOCO_GL', 'egl')
    if args.no_textures:
        _untextured()
    try:
        tone = tuple(float(x) for x in args.warp_tone.split(',')) if args.warp_tone else ()
        if tone and len(tone) != 2:
            raise ValueError
    except ValueError:
        print(f'bench_twin_passes: --warp-tone: A,B (two numbers), got {args.warp_tone!r}',
              file=sys.stderr)
        return 2
    if args.pictures == 'warp':
        _warp_pictures(tuple(c for c in args.warp_cameras.split(',') if c), args.bottom_rows,
                       args.warp_shadows == 'on', args.warp_texture_blur, args.warp_spp, tone)
    if args.darken:
        _darkened(args.darken)
    # The experiment's settings: in each run's printed line and in its figure's name.
    experiment = {'darken': args.darken, 'pictures': args.pictures,
                  'warp_cameras': args.warp_cameras or 'all', 'bottom_rows': args.bottom_rows,
                  'warp_shadows': args.warp_shadows, 'no_textures': args.no_textures,
                  'blur': args.warp_texture_blur, 'spp': args.warp_spp,
                  'tone': args.warp_tone or 'none'}
    from realm_ros.core.sweep import SweepConfig, plan_cells
    from realm_ros.sweep.compare_cpu import cpu_runner, cpu_twin

    cameras = ('exterior_1', 'exterior_2', 'wrist')
    config = SweepConfig(tasks=('push_switch',), policies=(f'learned:path={args.policy}',),
                         perturbations=('Default',), episodes_per_cell=args.cells,
                         max_steps=args.max_steps, seed=args.seed, worlds=('warp',),
                         cameras=True)
    cells = [dataclasses.replace(c, cameras=cameras)
             for c in plan_cells(config, lambda entry: cameras)]
    rec = Recorder('twin_passes')
    for setting in args.settings.split(','):
        if setting not in SETTINGS:
            print(f'bench_twin_passes: --settings: unknown {setting!r}', file=sys.stderr)
            return 2
        rig = ''
        if SETTINGS[setting]:
            handle, rig = tempfile.mkstemp(suffix='.yaml')
            os.close(handle)
            pathlib.Path(rig).write_text(f'cameras: {{}}\nrender: {SETTINGS[setting]}\n')
        runner = cpu_runner((320, 180), rig)
        try:
            records = [runner.run(cpu_twin(c)) for c in cells]
        finally:
            runner.close()
        wins = sum(bool(r['success']) for r in records)
        progressions = [round(r['progression'], 2) for r in records]
        steps = [int(r['steps']) for r in records]
        print(json.dumps({'setting': setting, **experiment, 'successes': wins,
                          'cells': len(records), 'progressions': progressions,
                          'steps': steps}), flush=True)
        rec.figure(f'twin_passes learned on the CPU twin, render {setting}, {len(records)} '
                   f'cells of seed {args.seed}, '
                   f'{", ".join(f"{k} {v}" for k, v in experiment.items())}: successes',
                   wins / len(records), 'fraction', progressions=progressions, steps=steps,
                   policy=args.policy)
    return 0


def _darkened(levels: float) -> None:
    """Subtract ``levels`` grey levels from every picture a CPU twin world draws."""
    import numpy as np

    from realm_ros.backends.mujoco.world import MujocoWorld

    drawn = MujocoWorld.render

    def darker(self: MujocoWorld) -> dict[str, np.ndarray]:
        return {cam: np.clip(np.rint(img.astype(np.float32) - levels), 0, 255
                             ).astype(img.dtype) for cam, img in drawn(self).items()}

    MujocoWorld.render = darker  # type: ignore[method-assign]


def _blur_textures(model: Any, k: int) -> None:
    """Box-filter every 2-D texture of ``model`` k x k in place (edges repeated)."""
    import cv2

    for t in range(model.ntex):
        h, w, c = int(model.tex_height[t]), int(model.tex_width[t]), int(model.tex_nchannel[t])
        adr = int(model.tex_adr[t])
        image = model.tex_data[adr:adr + h * w * c].reshape(h, w, c)
        model.tex_data[adr:adr + h * w * c] = cv2.blur(image, (k, k)).reshape(-1)


def _untextured() -> None:
    """Clear every material's texture after each reset (both renderers read the model)."""
    from realm_ros.backends.mujoco.world import MujocoWorld

    reset = MujocoWorld.reset

    def untextured_reset(self: MujocoWorld, spec: Any) -> Any:
        obs = reset(self, spec)
        self.model.mat_texid[:] = -1
        return obs

    MujocoWorld.reset = untextured_reset  # type: ignore[method-assign]


def _warp_pictures(only: tuple[str, ...] = (), bottom_rows: int = 0,
                   shadows: bool = True, blur: int = 0, spp: int = 1,
                   tone: tuple[float, ...] = ()) -> None:
    """Make every CPU twin world draw its camera images with a one-world ``WarpStepper``
    (``forward=False``: no Warp physics; each read loads the world's current poses), built
    again at each episode (the switch is placed per episode); ``only``: just these cameras
    (the others OpenGL's); ``bottom_rows``: see ``--bottom-rows``; ``tone``: ``--warp-tone``'s
    (A, B), applied to the Warp-drawn rows."""
    import numpy as np

    from realm_ros.backends.mujoco.warp_sweep import WarpStepper
    from realm_ros.backends.mujoco.world import MujocoWorld

    steppers: dict[int, tuple[Any, Any]] = {}  # world -> (its episode's seed, stepper)
    opengl = MujocoWorld.render

    def warp_render(self: MujocoWorld) -> dict[str, np.ndarray]:
        key = self.perturbation.get('seed')  # each cell its own seed
        held = steppers.get(id(self))
        if held is None or held[0] != key:
            size = (self.config.camera_width, self.config.camera_height)
            kept = self.model.tex_data.copy()
            if blur > 1:  # the device's copy only: the host model is restored below
                _blur_textures(self.model, blur)
            try:
                steppers[id(self)] = held = (key, WarpStepper(
                    [self], cameras=self.config.cameras, image_size=size, device='cpu',
                    shadows=shadows, forward=False,
                    render_options={'samples_per_pixel': spp} if spp > 1 else None))
            finally:
                self.model.tex_data[:] = kept
        stepper = held[1]
        stepper.load_poses([self])
        images = {cam: img.copy() for cam, img in stepper.host_images(0).items()}
        if tone:
            images = {cam: np.clip(np.rint(img.astype(np.float32) * tone[0] + tone[1]), 0, 255
                                   ).astype(img.dtype) for cam, img in images.items()}
        gl = opengl(self) if only or bottom_rows else {}
        for cam in (only or tuple(images)):
            if bottom_rows > 0:
                images[cam][-bottom_rows:] = gl[cam][-bottom_rows:]
            elif bottom_rows < 0:
                images[cam] = np.concatenate([gl[cam][:bottom_rows], images[cam][bottom_rows:]])
        return {**gl, **{c: images[c] for c in (only or tuple(images))}}

    MujocoWorld.render = warp_render  # type: ignore[method-assign]


if __name__ == '__main__':
    sys.exit(main())
