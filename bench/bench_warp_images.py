"""Pictures alone: MuJoCo Warp's ray tracer against the CPU twin's OpenGL on the same states.

For a few push_switch seeds (the sweep's worlds, reset from each cell's spec: the panel, the
objects, the lights and the cameras of that seed) every camera is drawn twice, by
``WarpStepper.host_images`` (MuJoCo Warp, no physics: the poses come from the host's
``mj_forward``) and by the twin's ``FrameRenderer`` (OpenGL), and the difference is taken
apart by cause: each *ablation* removes one scene feature from **both** sides (the host models
and the Warp model's arrays alike), so what the difference loses is that feature's share; each
*Warp variant* changes only how Warp renders (``create_render_context`` options: a recompile of
the render kernel each, ~100 s on the CPU device), so what it gains is what a mapping fixes.

Figure: the mean absolute difference per camera, in grey levels (0-255, over pixels and RGB
channels), mean over the seeds; the signed mean (Warp minus OpenGL) says brighter or darker.

    MUJOCO_GL=egl python3 bench/bench_warp_images.py --seeds 3 --size 320x180 --device cpu \\
        --out /tmp/warp_images [--gl-passes on] [--variants base,spp2,...]

``--gl-passes on``: OpenGL's shadows and reflections on, as the CPU twin draws them on a GPU
machine (the H200's EGL; the sweep's agreement figures come from there); ``off`` as on a
software rasteriser (here, llvmpipe: ``auto`` turns them off). Writes ``OUT/images.json`` and
``OUT/side_by_side.png`` (per camera: OpenGL, Warp, |difference| x4).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import sys
import time
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
os.environ.setdefault('MUJOCO_GL', 'egl')

CAMERAS = ('exterior_1', 'exterior_2', 'wrist')

#: Warp-only variants: create_render_context options over the stepper's TWIN_RENDER.
VARIANTS: dict[str, dict[str, Any]] = {
    'twin': {},  # the sweep's mapping (TWIN_RENDER, shadows on, coplanar decals)
    'no_shadows': {'use_shadows': False},
    'shadows03': {'shadow_light_fraction': 0.3},  # Warp's default fraction
    'spp2': {'samples_per_pixel': 2},
    'no_backface': {'enable_backface_culling': False},
    'no_decals': {},  # coplanar decals left where they are
    'before': {'use_shadows': False, 'shadow_light_fraction': 0.3},  # with no_decals: as before
}


def _ablate(name: str) -> Callable[[Any], None] | None:
    """An edit of a host MjModel that removes one feature (applied to both renderers)."""
    if name == 'none':
        return None

    def edit(m: Any) -> None:
        if name == 'emission':
            m.mat_emission[:] = 0
        elif name == 'specular':
            m.mat_specular[:] = 0
            m.light_specular[:] = 0
        elif name == 'textures':
            m.mat_texid[:] = -1
        elif name in ('key', 'fill', 'room'):
            i = m.light(name).id
            m.light_diffuse[i] = 0
            m.light_specular[i] = 0
            m.light_ambient[i] = 0
        elif name == 'lights':
            m.light_diffuse[:] = 0
            m.light_specular[:] = 0
        elif name == 'flat':  # ambient and headlight only
            m.light_diffuse[:] = 0
            m.light_specular[:] = 0
            m.mat_specular[:] = 0
            m.mat_emission[:] = 0
        elif name == 'flat_headlight_ambient':  # the headlight's ambient alone
            _ablate('flat')(m)  # type: ignore[misc]
            m.vis.headlight.diffuse[:] = 0
        elif name == 'flat_headlight_diffuse':  # the headlight's diffuse alone
            _ablate('flat')(m)  # type: ignore[misc]
            m.vis.headlight.ambient[:] = 0
        elif name == 'reflectance':
            m.mat_reflectance[:] = 0
        else:
            raise SystemExit(f'bench_warp_images: unknown ablation {name!r}')
    return edit


#: Fields an ablation may touch, copied to the Warp model after each edit.
SYNCED = ('mat_emission', 'mat_specular', 'light_specular', 'mat_texid', 'light_diffuse',
          'light_ambient', 'mat_reflectance')


def _sync(stepper: Any, models: list[Any]) -> None:
    wp = stepper.wp
    with wp.ScopedDevice(stepper.device):
        for name in SYNCED:
            target = getattr(stepper.m, name, None)
            if target is None or not target.size:
                continue
            ref = target.numpy()
            values = np.stack([np.asarray(getattr(m, name)) for m in models])
            if ref.shape[0] != len(models):
                values = values[:1]
            target.assign(values.astype(ref.dtype).reshape(ref.shape))
    stepper._torch_images = None


def _diff(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    d = a.astype(float) - b.astype(float)
    return float(np.abs(d).mean()), float(d.mean())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--seeds', type=int, default=3)
    parser.add_argument('--arm-noise', type=float, default=0.3,
                        help='rad: each seed moves the arm joints by uniform(-x, x) from the '
                             'reset pose, so the states differ in more than the panel (0: reset)')
    parser.add_argument('--skip', type=int, default=0,
                        help='leave out the first K seeds (held-out states: the mapping was '
                             'chosen on the first 3)')
    parser.add_argument('--size', default='320x180')
    parser.add_argument('--device', default='cpu')
    parser.add_argument('--out', required=True)
    parser.add_argument('--gl-passes', choices=('on', 'off'), default='on')
    parser.add_argument('--variants', default='base')
    parser.add_argument('--ablations', default='none,emission,specular,textures,key,fill,'
                        'room,lights,reflectance')
    parser.add_argument('--gl-antialias', type=int, default=0,
                        help="OpenGL's multisamples (a rig's render.antialias; 0: the default "
                             "rig's none)")
    parser.add_argument('--time-renders', type=int, default=0,
                        help='render each variant K more times and report the median (s)')
    parser.add_argument('--dump', action='store_true', help='save every image set (.npy)')
    args = parser.parse_args(argv)
    try:
        w, h = (int(v) for v in args.size.lower().split('x'))
    except ValueError:
        print(f'bench_warp_images: --size: expected WxH, got {args.size!r}', file=sys.stderr)
        return 2
    try:
        from realm_ros.backends.mujoco.warp_sweep import WarpStepper, import_warp
        import_warp()
    except Exception as err:  # noqa: BLE001 - one line naming what is missing
        print(f'bench_warp_images: {err}', file=sys.stderr)
        return 2
    from realm_ros.backends.mujoco.render import FrameRenderer
    from realm_ros.core.metrics import bootstrap_ci
    from realm_ros.core.sweep import SweepConfig, plan_cells
    from realm_ros.sweep.warp import _world

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cells = plan_cells(SweepConfig(tasks=('push_switch',), policies=('scripted:0',),
                                   episodes_per_cell=args.skip + args.seeds, max_steps=1,
                                   worlds=('warp',)), lambda entry: CAMERAS)
    cells = [dataclasses.replace(c, cameras=CAMERAS) for c in cells][args.skip:]
    worlds = [_world(c, CAMERAS, (w, h)) for c in cells]
    import mujoco

    from realm_ros.core import robot

    for world, cell in zip(worlds, cells):
        world.reset(cell.spec)
        rng = np.random.default_rng(cell.spec.seed)
        q = world.data.qpos[world._arm_qpos]
        world.data.qpos[world._arm_qpos] = np.clip(
            q + rng.uniform(-args.arm_noise, args.arm_noise, q.shape),
            robot.JOINT_LOWER, robot.JOINT_UPPER)
        mujoco.mj_forward(world.model, world.data)
    models = [wd.model for wd in worlds]
    headlight = (np.array(models[0].vis.headlight.ambient),
                 np.array(models[0].vis.headlight.diffuse))
    originals = {name: [np.array(getattr(m, name)) for m in models] for name in SYNCED}
    gl_pass = args.gl_passes == 'on'
    for m in models:
        m.vis.quality.offsamples = args.gl_antialias

    def gl_renderers() -> list[Any]:
        # A fresh context per ablation: mjr_makeContext copies the materials' texture ids.
        return [FrameRenderer(m, w, h, shadows=gl_pass, reflections=gl_pass) for m in models]

    gls = gl_renderers()
    report: dict[str, Any] = {'size': [w, h], 'seeds': [c.spec.seed for c in cells],
                              'gl_passes': args.gl_passes, 'gl_renderer': gls[0].gl_renderer,
                              'rows': []}
    panels: list[np.ndarray] = []
    for variant in args.variants.split(','):
        for ablation in args.ablations.split(','):
            for name in SYNCED:
                for m, orig in zip(models, originals[name]):
                    getattr(m, name)[...] = orig
            for m in models:
                m.vis.headlight.ambient[:] = headlight[0]
                m.vis.headlight.diffuse[:] = headlight[1]
            edit = _ablate(ablation)
            if edit is not None:
                for m in models:
                    edit(m)
            # Built per ablation: the headlight is compiled into Warp's render kernel.
            t0 = time.perf_counter()
            stepper = WarpStepper(worlds, cameras=CAMERAS, image_size=(w, h),
                                  device=args.device, shadows=gl_pass,
                                  render_options=VARIANTS[variant], forward=False,
                                  decals=variant not in ('no_decals', 'before'))
            t_setup = time.perf_counter() - t0
            _sync(stepper, models)
            t1 = time.perf_counter()
            warp_images = [stepper.host_images(i) for i in range(len(worlds))]
            t_render = time.perf_counter() - t1
            repeat_s = []
            for _ in range(args.time_renders):  # the render alone, compiled, all worlds
                stepper._torch_images = None
                t2 = time.perf_counter()
                stepper.render()
                repeat_s.append(time.perf_counter() - t2)
            for g in gls:
                g.close()
            gls = gl_renderers()
            gl_images = [g.render(wd.data, CAMERAS) for g, wd in zip(gls, worlds)]
            row: dict[str, Any] = {'variant': variant, 'ablation': ablation,
                                   'setup_s': round(t_setup, 1),
                                   'render_s': round(t_render, 2)}
            if repeat_s:
                row['render_again_s'] = round(float(np.median(repeat_s)), 3)
            for cam in CAMERAS:
                per = [_diff(wi[cam], gi[cam]) for wi, gi in zip(warp_images, gl_images)]
                row[cam] = round(float(np.mean([p[0] for p in per])), 2)
                row[cam + '_signed'] = round(float(np.mean([p[1] for p in per])), 2)
                row[cam + '_per_seed'] = [round(p[0], 2) for p in per]
                if len(per) > 1:  # 95 % bootstrap interval over the seeds
                    row[cam + '_ci'] = [round(v, 2) for v in bootstrap_ci([p[0] for p in per])]
            report['rows'].append(row)
            del stepper
            print(json.dumps({k: v for k, v in row.items() if not k.endswith('_seed')}),
                  flush=True)
            if args.dump:
                np.save(out / f'warp_{variant}_{ablation}.npy', np.stack(
                    [[wi[c] for c in CAMERAS] for wi in warp_images]))
                np.save(out / f'gl_{ablation}.npy', np.stack(
                    [[gi[c] for c in CAMERAS] for gi in gl_images]))
            if ablation == 'none':
                strip = []
                for cam in CAMERAS:
                    a, b = gl_images[0][cam], warp_images[0][cam]
                    d = np.clip(np.abs(a.astype(int) - b.astype(int)) * 4, 0, 255)
                    strip.append(np.concatenate([a, b, d.astype(np.uint8)], axis=1))
                panels.append(np.concatenate(strip, axis=0))
                np.save(out / f'warp_{variant}.npy', np.stack(
                    [[wi[c] for c in CAMERAS] for wi in warp_images]))
                np.save(out / 'gl.npy', np.stack([[gi[c] for c in CAMERAS] for gi in gl_images]))
    for g in gls:
        g.close()
    (out / 'images.json').write_text(json.dumps(report, indent=1))
    from benchlib import Recorder

    rec = Recorder('warp_images')
    shown = [r for r in report['rows'] if r['ablation'] == 'none']
    before = next((r for r in shown if r['variant'] == 'before'), None)
    for row in shown:
        for cam in CAMERAS:
            rec.figure(f"warp_images {row['variant']} vs OpenGL ({args.gl_passes}), {cam}, "
                       f'{w}x{h}, {len(cells)} seeds from {args.skip}: mean abs difference',
                       row[cam], 'grey levels', baseline=before[cam] if before else None,
                       baseline_label='before the mapping', ci=row.get(cam + '_ci'),
                       signed=row[cam + '_signed'])
    try:
        from PIL import Image

        for variant, panel in zip(args.variants.split(','), panels):
            Image.fromarray(panel).save(out / f'side_by_side_{variant}.png')
        if (out / 'warp_before.npy').exists() and (out / 'warp_twin.npy').exists():
            # One seed: per camera OpenGL | Warp before | Warp with the mapping | |before -
            # OpenGL| x4 | |mapping - OpenGL| x4, each tile at half size.
            gl_all = np.load(out / 'gl.npy')[0]
            old, new = np.load(out / 'warp_before.npy')[0], np.load(out / 'warp_twin.npy')[0]
            rows = []
            for k in range(len(CAMERAS)):
                diff = [np.clip(np.abs(x[k].astype(int) - gl_all[k].astype(int)) * 4, 0, 255)
                        .astype(np.uint8) for x in (old, new)]
                rows.append(np.concatenate([gl_all[k], old[k], new[k], *diff], axis=1))
            sheet = Image.fromarray(np.concatenate(rows, axis=0))
            sheet.resize((sheet.width // 2, sheet.height // 2), Image.BILINEAR).save(
                out / 'before_after.png', optimize=True)
    except ImportError:
        print('bench_warp_images: no Pillow: side-by-side PNG not written', file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
