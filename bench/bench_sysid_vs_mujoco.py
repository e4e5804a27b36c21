"""Benchmark ``realm-ros sysid fit`` beside ``mujoco.sysid`` as a MuJoCo 4.0 user would run it,
on the same bags, in one process, back to back.

Both read the bags with the project's reader, fit the same 14 parameters (per-joint dry friction
and armature) of the same arm-only twin model (``TwinRollout``'s: contacts off, the DROID
impedance actuators), from the same start (the log box's centre: friction 0.055 N m, armature
0.087 kg m^2) within the same bounds (``ParamSpace``: 0.005-3 N m, 0.005-1.5 kg m^2), with 2
rollout threads, and the accuracy of both is scored the same way (parameters against
``--truth``; the held-out bags replayed whole at each one's latency).

* ``realm-ros sysid fit BAGS --out P.yaml --holdout 4`` (in-process, ``realm_ros.cli.main``):
  reading the bags, the latency profile (or ``--latency`` given), the fit and PARAMS.yaml: start
  to written parameters (the file's time; the report folder, written after it, is printed apart).
* ``mujoco.sysid``: ``mujoco.sysid.optimize`` (its default optimizer, ``mujoco.minimize``'s
  Levenberg-Marquardt) over a ``ParameterDict`` (friction, armature; physical units), residual
  ``q_sim - q_real`` in rad on ``--library-windows`` one-second windows (the same windows
  ``sysid fit`` uses, ``sysid.residual_windows``), ``xtol=1e-4``, a cached model (one copy per
  finite-difference column, fields set in place, never recompiled), then
  ``mujoco.sysid.calculate_intervals`` and the parameters written: start to written parameters,
  with the latency ``sysid fit`` found given to it. The residual is the user's own
  (``optimize`` takes any): ``mujoco.sysid``'s rollout sends ``ctrl`` only, and the twin's
  Cartesian impedance also needs its mocap target (FK of the joint target) every step, so the
  user replays the twin's control rows with ``mujoco.rollout`` as ``TwinRollout`` does.

Prints per run the wall and CPU time, the latency, the parameters within 1 % of the truth, the
worst error, the held-out RMSE, the widest 95 % interval, the ratio of the wall times and the
load (``--repeats N``: every contender N times, interleaved, and the medians); appends each
figure to ``bench/results/bench.jsonl``.

Bags: ``realm-ros sysid record --backend digital_real --out BAGS --dynamics FILE
--trajectories 20 --duration 10 --seed S``. Run: ``.venv/bin/python bench/bench_sysid_vs_mujoco.py
--bags BAGS --truth FILE`` (``--library-windows 24,0``: the library on 24 windows and on all).
"""

from __future__ import annotations

import os

os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')  # as bench_sysid.py: tiny matrices

import argparse
import copy
import pathlib
import sys
import tempfile
import time

import numpy as np
import yaml

sys.path.insert(0, os.path.dirname(__file__))
from benchlib import Recorder  # noqa: E402

from realm_ros.core import robot, sysid  # noqa: E402
from realm_ros.core.config import DigitalRealDynamics, DynamicsParams  # noqa: E402


def vector(params: DynamicsParams) -> np.ndarray:
    return np.r_[params.friction, params.armature]


def split(bags: str, holdout: int) -> tuple[list, list]:
    from realm_ros.commands.sysid.fit import read_trajectories

    _, trajs = read_trajectories([bags], None)
    return trajs[:len(trajs) - holdout], trajs[len(trajs) - holdout:]


def ours(bags: str, holdout: int, threads: int, out: pathlib.Path,
         latency: float | None) -> tuple[DynamicsParams, float, float, list[float], str]:
    """``realm-ros sysid fit`` in this process: (params, latency s, wall s, intervals, how)."""
    from realm_ros.cli import main

    argv = ['sysid', 'fit', bags, '--out', str(out), '--holdout', str(holdout), '--threads',
            str(threads), '--quiet']
    if latency is not None:
        argv += ['--latency', repr(latency)]
    t, began = time.perf_counter(), time.time()
    if main(argv) != 0:
        raise SystemExit(f'sysid fit {argv} failed')
    print(f'[vs-mujoco] the whole command (report included): {time.perf_counter() - t:.1f} s')
    wall = out.stat().st_mtime - began  # start to written parameters (the report follows)
    written = yaml.safe_load(out.read_text())
    ci = written.get('confidence_95', {})
    return (DynamicsParams.from_yaml(out), float(written['latency_s']), wall,
            list(ci.get('friction', [])) + list(ci.get('armature', [])),
            'given' if latency is not None else 'profiled')


def library(bags: str, holdout: int, threads: int, out: pathlib.Path, latency: float,
            windows: int) -> tuple[DynamicsParams, float, list[float], int]:
    """``mujoco.sysid.optimize`` as a user would: (params, wall s, intervals, iterations)."""
    import mujoco
    from mujoco import rollout as mj_rollout
    from mujoco import sysid as mj_sysid

    from realm_ros.backends.mujoco.rollout import CONTROL_SPEC, TwinRollout

    t = time.perf_counter()
    train, _ = split(bags, holdout)
    twin = TwinRollout(nthread=threads).with_latency(latency)
    pool = sysid.residual_windows(train, int(round(robot.CONTROL_HZ)), windows)
    init, ctrl = twin.batch_inputs(pool)
    measured = np.stack([w.measured for w in pool])  # (W, K, 7)
    dof, qpos = twin.act.arm_dof, 1 + twin.act.arm_qpos  # FULLPHYSICS state: [time, qpos, ...]
    base = twin.model
    datas = [mujoco.MjData(base) for _ in range(threads)]
    cached: list = []
    space = sysid.ParamSpace()
    start = space.from_unit(np.full(14, 0.5))
    params = mj_sysid.ParameterDict({
        'friction': mj_sysid.Parameter('friction', start.friction, space.low[:7],
                                       space.high[:7]),
        'armature': mj_sysid.Parameter('armature', start.armature, space.low[7:],
                                       space.high[7:])})

    def residual_fn(x: np.ndarray, _params) -> tuple[list[np.ndarray], None, None]:
        columns = x.reshape(14, -1)
        while len(cached) < columns.shape[1]:
            cached.append(copy.copy(base))
        for model, col in zip(cached, columns.T):
            model.dof_frictionloss[dof] = col[:7]
            model.dof_armature[dof] = col[7:]
        n = columns.shape[1]
        state, _ = mj_rollout.rollout(
            [m for m in cached[:n] for _ in pool], datas, np.tile(init, (n, 1)),
            np.tile(ctrl, (n, 1, 1)), control_spec=CONTROL_SPEC, persistent_pool=True)
        q = state[:, twin.substeps - 1::twin.substeps][..., qpos].reshape(n, *measured.shape)
        r = (q - measured[None]).reshape(n, -1).T
        return [r if x.ndim > 1 else r[:, 0]], None, None

    found, result = mj_sysid.optimize(params, residual_fn, optimizer='mujoco', verbose=False,
                                      xtol=1e-4, max_iters=100)
    x = found.as_vector()
    residuals, _, _ = residual_fn(x, found)
    _, half = mj_sysid.calculate_intervals(residuals, result.jac)
    fitted = DynamicsParams(friction=tuple(x[:7]), armature=tuple(x[7:]))
    out.write_text(yaml.safe_dump({'friction': x[:7].tolist(), 'armature': x[7:].tolist(),
                                   'latency_s': latency}))
    wall = time.perf_counter() - t
    iterations = len(result.extras.get('objective', [])) if result.extras else -1
    return fitted, wall, list(np.asarray(half) / x), iterations


def held_out_rmse(held: list, params: DynamicsParams, latency: float, threads: int) -> float:
    from realm_ros.backends.mujoco.rollout import TwinRollout

    sims = TwinRollout(nthread=threads, latency_s=latency).simulate([params], held)
    return float(sysid.joint_rmse(sims, held).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--bags', required=True, help='a directory of sysid record bags')
    parser.add_argument('--truth', default='', help='the dynamics file the bags came from')
    parser.add_argument('--holdout', type=int, default=4)
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--library-windows', default='24',
                        help='comma-separated window counts for mujoco.sysid (0 = every one)')
    parser.add_argument('--repeats', type=int, default=1,
                        help='run every contender this many times, interleaved; medians')
    parser.add_argument('--given', action='store_true',
                        help='also run sysid fit with the latency given (--latency)')
    args = parser.parse_args()
    label = pathlib.Path(args.bags).name + (f' ({pathlib.Path(args.truth).stem})' if args.truth
                                             else '')
    truth = DigitalRealDynamics.from_yaml(args.truth) if args.truth else None
    _, held = split(args.bags, args.holdout)
    rec = Recorder('sysid_vs_mujoco')
    rows = []

    def score(name: str, params: DynamicsParams, latency: float, wall: float, cpu: float,
              intervals: list[float], load: float) -> dict:
        rmse = held_out_rmse(held, params, latency, args.threads)
        row = {'run': name, 'wall_s': wall, 'cpu_s': cpu, 'latency_s': latency,
               'heldout_rmse_rad': rmse, 'load_before': load,
               'widest_interval': float(np.nanmax(np.where(np.isfinite(intervals), intervals,
                                                           np.nan))) if intervals else None,
               'params': vector(params).tolist()}
        text = ''
        if truth is not None and not truth.structural:
            err = np.abs(vector(params) / vector(truth.joint_params()) - 1)
            row.update(within_1pct=int((err < 0.01).sum()), max_error=float(err.max()))
            text = (f'within 1 % {row["within_1pct"]}/14, worst {100 * err.max():.2f} % '
                    f'({"friction" if err.argmax() < 7 else "armature"}[{err.argmax() % 7}]); ')
        widest = row['widest_interval']
        print(f'[vs-mujoco] {label} {name}: {wall:.1f} s wall, {cpu:.1f} s CPU, load '
              f'{load:.1f} -> {os.getloadavg()[0]:.1f}; latency {1e3 * latency:.2f} ms; {text}'
              f'held-out RMSE {1e3 * rmse:.3f} mrad; widest 95 % interval '
              + (f'{100 * widest:.2g} %' if widest is not None else 'n/a'), flush=True)
        rows.append(row)
        return row

    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)
        for _ in range(args.repeats):  # interleaved: every repeat runs each contender once
            load, cpu = os.getloadavg()[0], time.process_time()
            params, latency, wall, ci, how = ours(args.bags, args.holdout, args.threads,
                                                  folder / 'ours.yaml', None)
            score(f'realm-ros sysid fit ({how} latency)', params, latency, wall,
                  time.process_time() - cpu, ci, load)
            if args.given:
                load, cpu = os.getloadavg()[0], time.process_time()
                params, _, wall, ci, how = ours(args.bags, args.holdout, args.threads,
                                                folder / 'given.yaml', latency)
                score('realm-ros sysid fit (latency given)', params, latency, wall,
                      time.process_time() - cpu, ci, load)
            for windows in (int(w) for w in args.library_windows.split(',')):
                load, cpu = os.getloadavg()[0], time.process_time()
                params, wall, ci, iters = library(args.bags, args.holdout, args.threads,
                                                  folder / f'lib{windows}.yaml', latency,
                                                  windows)
                score(f'mujoco.sysid ({windows or "all"} windows, latency given, {iters} '
                      'iterations)', params, latency, wall, time.process_time() - cpu, ci,
                      load)
    # Per contender the median over the repeats (the rest of each row from its first run:
    # the fits are deterministic).
    names = list(dict.fromkeys(r['run'] for r in rows))
    merged = []
    for name in names:
        runs = [r for r in rows if r['run'] == name]
        merged.append(dict(runs[0], wall_s=float(np.median([r['wall_s'] for r in runs])),
                           cpu_s=float(np.median([r['cpu_s'] for r in runs])),
                           walls_s=[r['wall_s'] for r in runs], repeats=len(runs)))
    mine = [r for r in merged if r['run'].startswith('realm-ros')]
    theirs = [r for r in merged if not r['run'].startswith('realm-ros')]
    for row in mine:
        for other in theirs:
            print(f'[vs-mujoco] {label}: {row["run"]} / {other["run"]}: wall ratio '
                  f'{row["wall_s"] / other["wall_s"]:.2f} (medians of {row["repeats"]}: '
                  f'{row["wall_s"]:.1f} / {other["wall_s"]:.1f} s), CPU ratio '
                  f'{row["cpu_s"] / other["cpu_s"]:.2f}')
    for row in merged:
        base = theirs[0] if row in mine else None
        rec.figure(f'wall time, {row["run"]}, {label}', row['wall_s'], 's',
                   base['wall_s'] if base else None, base['run'] if base else '',
                   'sysid fit no slower than mujoco.sysid given the latency, equal accuracy'
                   if base else '', **{k: v for k, v in row.items() if k != 'run'})


if __name__ == '__main__':
    main()
