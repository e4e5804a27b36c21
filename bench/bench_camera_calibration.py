"""Does ``cameras calibrate`` recover hidden camera offsets? Random offsets nobody tuned on.

Run: ``.venv/bin/python bench/bench_camera_calibration.py [--offsets 20] [--size 640x360]
[--poses 36] [--masks seg|appearance] [--first 1000] [--jobs N] [--wrist-fit]``
(``--jobs``: offsets in parallel processes, one core each; set ``OMP_NUM_THREADS=1``).

For each of ``--offsets`` seeds (1000, 1001, ...), both exterior cameras get a random lab
calibration error off DROID's rig (``core.appearance.camera_offsets``: 2 cm in a random
direction, 1.5 deg about a random axis, +-1 deg of vertical FOV). The digital real, with the
lab_demo appearance and these cameras, renders the arm at ``--poses`` recording poses
(``calibration.record_waypoints``); ``calibration.calibrate`` fits each camera from the
nominal rig. ``--masks seg`` skips background subtraction (robot masks from MuJoCo's
segmentation render: the optimiser and loss alone). Prints per camera the start and fitted
errors (cm, deg, deg of FOV) and, at the end, how many cameras meet the issue's bounds
(1 cm, 0.5 deg, 1 deg) and the worst and median errors.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

os.environ.setdefault('MUJOCO_GL', 'egl')

import numpy as np  # noqa: E402

from realm_ros.backends.mujoco import calibration as cal  # noqa: E402
from realm_ros.backends.mujoco import camera_rig  # noqa: E402
from realm_ros.core import appearance  # noqa: E402


def synthetic_recording(offset_seed: int, size: tuple[int, int], poses: int, masks: str,
                        root: str, tmp: str, cameras: tuple[str, ...] = ('exterior_1',
                                                                         'exterior_2')
                        ) -> tuple[cal.Recording, dict[str, cal.CameraPose],
                                   dict[str, np.ndarray] | None]:
    """Render the digital real (lab_demo look, offsets of ``offset_seed``) at the poses.

    ``cameras``: the exterior cameras (2 cm, 1.5 deg, 1 deg of FOV off DROID's rig), or
    ``('wrist',)`` (its mount 1 cm, 1.5 deg, 1 deg of FOV off the rig's)."""
    import mujoco
    import yaml

    from realm_ros.backends.digital_real import DigitalRealWorld
    from realm_ros.backends.mujoco.actuation import ArmActuation
    from realm_ros.backends.mujoco.render import FrameRenderer
    from realm_ros.backends.mujoco.visual_match import robot_geoms, seg_mask
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.types import EpisodeSpec

    data = yaml.safe_load(open(f'{root}/config/appearance/lab_demo.yaml'))
    rng = np.random.default_rng(offset_seed)
    if cameras == ('wrist',):
        w = camera_rig.load_rig('').wrist
        data['cameras'] = {'wrist': appearance.camera_offsets(
            {'parent': 'gripper', 'position': list(w.pos), 'look_at': list(w.target),
             'up': list(w.up), 'fovy_deg': w.fovy}, rng, 0.01, 1.5, 1.0)}
    else:
        data['cameras'] = {c.name: appearance.camera_offsets(
            {'position': list(c.pos), 'look_at': list(c.target), 'fovy_deg': c.fovy}, rng,
            0.02, 1.5, 1.0) for c in camera_rig.load_rig('').exterior}
    path = f'{tmp}/appearance_{offset_seed}.yaml'
    with open(path, 'w') as f:
        yaml.safe_dump(data, f)
    world = DigitalRealWorld(WorldConfig(task='', backend='digital_real', cameras=cameras,
                                         camera_width=size[0], camera_height=size[1],
                                         appearance_file=path))
    world.reset(EpisodeSpec(task='empty', seed=offset_seed))
    act = ArmActuation(world.model)
    seg_renderer = FrameRenderer(world.model, size[0], size[1], shadows=False)
    robot = robot_geoms(world.model)
    qs = cal.record_waypoints(poses, offset_seed)
    gs = np.array([cal.gripper_for(k) for k in range(len(qs))])
    images = {c: [] for c in cameras}
    seen = {c: [] for c in cameras}
    try:
        for k, (q, g) in enumerate(zip(qs, gs)):
            act.set_arm_state(world.data, q, gripper=g)
            mujoco.mj_forward(world.model, world.data)
            world.step_physics(0)
            world.data.time = 0.1 * (k + 1)
            frame = world.look.finish(world, seg_renderer.render(world.data, cameras),
                                      lambda: {})
            segs = seg_renderer.render(world.data, cameras, segmentation=True)
            for c in cameras:
                images[c].append(frame[c])
                seen[c].append(seg_mask(segs[c], robot))
    finally:
        seg_renderer.close()
        world.close()
    truth = {c: cal.CameraPose.from_spec(camera_rig.camera_from_entry(c, data['cameras'][c], c))
             for c in cameras}
    recording = cal.Recording(qs, gs, {c: np.stack(v) for c, v in images.items()})
    segs = {c: np.stack(v) for c, v in seen.items()}
    if cameras == ('wrist',):
        return recording, truth, None
    if masks != 'seg':
        mask_quality(recording, truth, segs)
        return recording, truth, None
    return recording, truth, segs


def mask_quality(recording: cal.Recording, truth: dict[str, cal.CameraPose],
                 segs: dict[str, np.ndarray]) -> None:
    """Print how well background subtraction finds the robot at its best: against the clean
    plate of the true camera (what the calibration's last stage approaches)."""
    rig = camera_rig.load_rig('')
    points = cal.moving_points(cal.twin_geometry(rig, recording.size), recording)
    for c, seg in segs.items():
        frames = recording.images[c]
        plate, unknown = cal.clean_plate(frames, cal.robot_raster(truth[c], points,
                                                                  recording.size))
        seen = cal.masks_against(frames, plate)
        known = seg & ~unknown[None]
        found = (seen & known).sum() / known.sum() * 100
        false = (seen & ~seg).sum() / seg.sum() * 100
        never = (seg & unknown[None]).sum() / seg.sum() * 100
        print(f'  {c} masks at the true plate: {found:.0f} % of the robot pixels with evidence '
              f'found, {false:.1f} % as many false; {never:.0f} % of the robot pixels never free '
              '(no evidence)', flush=True)


def one_offset(job: tuple) -> tuple[list[tuple[float, float, float]], float]:
    """Render and calibrate one offset; print its lines; return the errors and the seconds
    per camera of the fit."""
    seed, size, poses, masks_kind, root, tmp = job
    rig = camera_rig.load_rig('')
    t0 = time.time()
    recording, truth, masks = synthetic_recording(seed, size, poses, masks_kind, root, tmp)
    t1 = time.time()
    result = cal.calibrate(recording, rig, masks=masks)
    rows = []
    for name, fit in result.fits.items():
        start = fit.start.error_to(truth[name])
        got = fit.pose.error_to(truth[name])
        rows.append(got)
        print(f'offset {seed} {name}: start {start[0] * 100:5.2f} cm {start[1]:5.2f} deg '
              f'{start[2]:5.2f} fov -> {got[0] * 100:5.2f} cm {got[1]:5.2f} deg '
              f'{got[2]:5.2f} fov; loss {fit.loss_start:.2f} -> {fit.loss:.2f} px '
              f'({time.time() - t0:.0f} s)', flush=True)
    return rows, (time.time() - t1) / len(result.fits)


def wrist_observability(size: tuple[int, int], poses: int, root: str) -> None:
    """Print what the wrist camera's recording could tell about its mount offset.

    (a) Observability: the Jacobian of the wrist image's robot-outline residuals (the same
    signed-distance residuals as the exterior cameras' last stage, MuJoCo's segmentation as
    the seen mask) with respect to a move of the camera in its own frame (= a mount offset),
    over the recording's frames: its singular values and the RMS px one unit (cm / deg) moves
    the residuals along the weakest direction. (b) The seen mask: the camera moves with the
    hand, so no temporal plate exists; the fingers stay put in the image for one opening, so
    pixels that hardly change over the frames of one opening are the candidates: how many of
    the robot's pixels that test finds, and how much else it takes.
    """
    import cv2
    import mujoco

    from realm_ros.backends.digital_real import DigitalRealWorld
    from realm_ros.backends.mujoco.actuation import ArmActuation
    from realm_ros.backends.mujoco.render import FrameRenderer
    from realm_ros.backends.mujoco.visual_match import robot_geoms, seg_mask
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.types import EpisodeSpec

    rig = camera_rig.load_rig('')
    geometry = cal.twin_geometry(rig, size)
    world = DigitalRealWorld(WorldConfig(task='', backend='digital_real', cameras=('wrist',),
                                         camera_width=size[0], camera_height=size[1],
                                         appearance_file=f'{root}/config/appearance/'
                                                         'lab_demo.yaml'))
    world.reset(EpisodeSpec(task='empty', seed=0))
    act = ArmActuation(world.model)
    renderer = FrameRenderer(world.model, size[0], size[1], shadows=False)
    robot = robot_geoms(world.model)
    cam = geometry.model.camera('wrist').id
    fovy = float(geometry.model.cam_fovy[cam])
    qs = cal.record_waypoints(poses, 3)
    images, seen, local = [], [], []
    try:
        for k, q in enumerate(qs):
            g = cal.gripper_for(k)
            act.set_arm_state(world.data, q, gripper=g)
            mujoco.mj_forward(world.model, world.data)
            world.step_physics(0)
            world.data.time = 0.1 * (k + 1)
            images.append(world.look.finish(world, renderer.render(world.data, ('wrist',)),
                                            lambda: {})['wrist'])
            seen.append(seg_mask(renderer.render(world.data, ('wrist',),
                                                 segmentation=True)['wrist'], robot))
            pts = geometry.points(q, g)
            mujoco.mj_forward(geometry.model, geometry.data)
            pos = geometry.data.cam_xpos[cam].copy()
            rot = geometry.data.cam_xmat[cam].reshape(3, 3).copy()
            local.append((pts - pos) @ rot)  # the robot in the camera's own frame
    finally:
        renderer.close()
        world.close()
    ident = cal.CameraPose(np.zeros(3), np.eye(3), fovy)
    chosen = [p[cal.edge_points(ident, p, size)] for p in local]
    sdfs = [cal.signed_distance(m) for m in seen]

    def residuals(theta: np.ndarray) -> np.ndarray:
        pose = ident.moved(theta)
        out = []
        for pts, sdf in zip(chosen, sdfs):
            uv = pose.project(pts, *size)[0].astype(np.float32)
            out.append(cv2.remap(sdf, uv[:, 0:1] - 0.5, uv[:, 1:2] - 0.5,
                                 cv2.INTER_LINEAR)[:, 0])
        return np.nan_to_num(np.concatenate(out))

    jac = np.stack([(residuals(e) - residuals(-e)) / 0.2 for e in np.eye(7) * 0.1], 1)
    sv = np.linalg.svd(jac, compute_uv=False)
    print(f'wrist: robot {np.mean([m.mean() for m in seen]) * 100:.1f} % of the image; '
          f'outline residuals {len(jac)} over {len(qs)} frames, singular values '
          f'{np.round(sv, 1).tolist()}; the weakest direction moves them '
          f'{sv[-1] / len(jac) ** 0.5:.3f} px RMS per cm/deg')
    stack = np.stack(images).astype(np.float32)
    masks = np.stack(seen)
    gs = np.array([cal.gripper_for(k) for k in range(len(qs))])
    for g in (0.0, 1.0):
        sel = gs == g
        still = np.median(np.abs(stack[sel] - np.median(stack[sel], 0)).sum(-1), 0) < 20
        always = masks[sel].all(0)
        print(f'wrist, gripper {g:.0f}: pixels still over {int(sel.sum())} frames '
              f'{still.mean() * 100:.1f} % of the image; of the robot pixels in every frame '
              f'{(still & always).sum() / max(always.sum(), 1) * 100:.0f} % found, and '
              f'{(still & ~masks[sel].any(0)).sum() / max(always.sum(), 1):.1f}x as many '
              'pixels that are never robot')


def wrist_fit(job: tuple) -> tuple[float, float, float]:
    """Render one hidden wrist mount error and fit it (:func:`calibration.calibrate_wrist`);
    print the line; return the fitted errors (m, deg, deg)."""
    seed, size, poses, root, tmp = job
    recording, truth, _ = synthetic_recording(seed, size, poses, 'appearance', root, tmp,
                                              cameras=('wrist',))
    t0 = time.time()
    fit = cal.calibrate_wrist(recording, camera_rig.load_rig(''))
    start, got = fit.start.error_to(truth['wrist']), fit.pose.error_to(truth['wrist'])
    kept = cal.wrist_fit_kept(fit)
    print(f'offset {seed} wrist: start {start[0] * 100:5.2f} cm {start[1]:5.2f} deg '
          f'{start[2]:5.2f} fov -> {got[0] * 100:5.2f} cm {got[1]:5.2f} deg {got[2]:5.2f} fov; '
          f'loss {fit.loss_start:.2f} -> {fit.loss:.2f} px, {"kept" if kept else "NOT kept"} '
          f'({time.time() - t0:.0f} s)', flush=True)
    return got if kept else start


def compare(rig_file: str, appearance_file: str) -> None:
    """Print how far DROID's rig and ``rig_file`` (``cameras calibrate``'s) are from the
    cameras of ``appearance_file`` (the lab's truth)."""
    import yaml

    truth = yaml.safe_load(open(appearance_file))['cameras']
    nominal = {c.name: c for c in camera_rig.load_rig('').exterior}
    fitted = {c.name: c for c in camera_rig.load_rig(rig_file).exterior}
    for name, entry in truth.items():
        if name not in fitted:
            continue
        true = cal.CameraPose.from_spec(camera_rig.camera_from_entry(name, entry, name))
        for label, spec in (('DROID rig', nominal[name]), ('calibrated', fitted[name])):
            dp, da, df = cal.CameraPose.from_spec(spec).error_to(true)
            print(f'{name} {label}: {dp * 100:.2f} cm, {da:.2f} deg, {df:.2f} deg of FOV')


def main() -> None:
    """Run the bench."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--offsets', type=int, default=20)
    parser.add_argument('--size', default='640x360')  # cameras record's default
    parser.add_argument('--poses', type=int, default=36)  # cameras record's default
    parser.add_argument('--masks', default='appearance', choices=('seg', 'appearance'))
    parser.add_argument('--first', type=int, default=1000, help='the first offset seed')
    parser.add_argument('--mask-check', action='store_true',
                        help="instead: render each offset and print the masks' quality only")
    parser.add_argument('--compare', default='', metavar='RIG',
                        help="instead: RIG's and DROID's cameras against --appearance's")
    parser.add_argument('--appearance', default='config/appearance/lab_demo.yaml')
    parser.add_argument('--wrist-fit', action='store_true',
                        help='instead: hidden wrist mount errors (1 cm, 1.5 deg, 1 deg of FOV), '
                             'fitted by calibrate_wrist (offsets 2000, ... unless --first)')
    parser.add_argument('--wrist', action='store_true',
                        help="instead: what the recording could tell about the wrist camera's "
                             'mount offset (observability, and the seen mask)')
    parser.add_argument('--jobs', type=int, default=1,
                        help='offsets calibrated in parallel (processes; one core each)')
    args = parser.parse_args()
    w, h = (int(v) for v in args.size.split('x'))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if args.wrist:
        wrist_observability((w, h), args.poses, root)
        return
    if args.wrist_fit:
        tmp = tempfile.mkdtemp(prefix='realm_calib_')
        first = args.first if args.first != 1000 else 2000
        jobs = [(seed, (w, h), args.poses, root, tmp) for seed in
                range(first, first + args.offsets)]
        if args.jobs > 1:
            import multiprocessing

            with multiprocessing.get_context('spawn').Pool(args.jobs) as pool:
                rows = list(pool.imap(wrist_fit, jobs))
        else:
            rows = [wrist_fit(job) for job in jobs]
        errors = np.array(rows)
        print(f"wrist, {len(rows)} offsets (the rig's mount where a fit was not kept): median "
              f'{np.median(errors[:, 0]) * 100:.2f} cm {np.median(errors[:, 1]):.2f} deg '
              f'{np.median(errors[:, 2]):.2f} deg; worst {errors[:, 0].max() * 100:.2f} cm '
              f'{errors[:, 1].max():.2f} deg {errors[:, 2].max():.2f} deg')
        return
    if args.compare:
        compare(args.compare, args.appearance)
        return
    if args.mask_check:
        tmp = tempfile.mkdtemp(prefix='realm_calib_')
        for seed in range(args.first, args.first + args.offsets):
            print(f'offset {seed}:')
            synthetic_recording(seed, (w, h), args.poses, 'appearance', root, tmp)
        return
    tmp = tempfile.mkdtemp(prefix='realm_calib_')
    print(f'load before: {os.getloadavg()[0]:.1f} (1 min), {os.cpu_count()} cores, '
          f'{args.jobs} job(s)', flush=True)
    seeds = range(args.first, args.first + args.offsets)
    jobs = [(seed, (w, h), args.poses, args.masks, root, tmp) for seed in seeds]
    if args.jobs > 1:
        import multiprocessing

        with multiprocessing.get_context('spawn').Pool(args.jobs) as pool:
            results = list(pool.imap(one_offset, jobs))
    else:
        results = [one_offset(job) for job in jobs]
    rows = [row for rows_, _ in results for row in rows_]
    seconds = [s for _, s in results]
    errors = np.array(rows)
    ok = (errors[:, 0] <= 0.01) & (errors[:, 1] <= 0.5) & (errors[:, 2] <= 1.0)
    print(f'{int(ok.sum())}/{len(ok)} cameras within 1 cm, 0.5 deg, 1 deg of FOV; median '
          f'{np.median(errors[:, 0]) * 100:.2f} cm {np.median(errors[:, 1]):.2f} deg '
          f'{np.median(errors[:, 2]):.2f} deg; worst {errors[:, 0].max() * 100:.2f} cm '
          f'{errors[:, 1].max():.2f} deg {errors[:, 2].max():.2f} deg; '
          f'{np.mean(seconds):.0f} s per camera (median {np.median(seconds):.0f}); load after '
          f'{os.getloadavg()[0]:.1f}')


if __name__ == '__main__':
    main()
