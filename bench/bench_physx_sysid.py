"""Identify the MuJoCo twin and the PhysX twin against the digital real; compare the gaps.

Run: ``.venv/bin/python bench/bench_physx_sysid.py [--out DIR]``. No ROS: excitation
trajectories are executed on the digital real in this process (as ``bench_sysid.py`` does),
``core.sysid.fit`` (CMA-ES) fits friction and armature of each twin on the first
``--fit`` trajectories at the digital real's latency rounded to physics steps (the same for both
engines, so the comparison is about friction and armature), and the per-joint RMS gap of
measured positions is computed on the remaining held-out trajectories:

* each twin vs the digital real, before (defaults) and after identification;
* the PhysX twin vs the MuJoCo twin, both before and both after.

The digital real is MuJoCo, so the MuJoCo twin can match it up to sensor noise; the PhysX twin
has to bridge an engine gap (contact-free here: solver, joint friction model, drive
integration) with the same 14 numbers. Writes ``mujoco_params.yaml`` and ``physx_params.yaml``
(``--sim-params`` for ``realm-ros paired-eval``) into ``--out``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import time

from bench_sysid import digital_real_trajectories
import numpy as np
import yaml

from realm_ros.backends.digital_real import DEFAULT_DYNAMICS_FILE
from realm_ros.backends.mujoco.rollout import TwinRollout
from realm_ros.backends.physx.rollout import PhysxRollout
from realm_ros.core import robot, sysid
from realm_ros.core.config import DigitalRealDynamics, DynamicsParams


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--fit', type=int, default=4, help='trajectories to fit on')
    parser.add_argument('--eval', type=int, default=2, help='held-out trajectories')
    parser.add_argument('--duration', type=float, default=10.0)
    parser.add_argument('--generations', type=int, default=20)
    parser.add_argument('--popsize', type=int, default=12)
    parser.add_argument('--minibatch', type=int, default=4)
    parser.add_argument('--window', type=int, default=15, help='control steps per window')
    parser.add_argument('--out', default='physx_sysid_out')
    args = parser.parse_args()

    hidden = DigitalRealDynamics.from_yaml(DEFAULT_DYNAMICS_FILE)
    latency = round(hidden.latency_s * robot.PHYSICS_HZ) / robot.PHYSICS_HZ
    trajs = digital_real_trajectories(args.fit + args.eval, args.duration, DEFAULT_DYNAMICS_FILE)
    train, held = trajs[:args.fit], trajs[args.fit:]
    engines = {'mujoco': lambda lat: TwinRollout(nthread=2, latency_s=lat),
               'physx': lambda lat: PhysxRollout(latency_s=lat,
                                                 envs=(args.popsize + 1) * args.minibatch)}
    kwargs = dict(generations=args.generations, popsize=args.popsize,
                  minibatch=args.minibatch, window=args.window, progress=False)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fitted: dict[str, DynamicsParams] = {}
    sims: dict[str, dict[str, list[np.ndarray]]] = {}
    seconds = {}
    for name, make in engines.items():
        evaluator = make(latency)
        t = time.perf_counter()
        result = sysid.fit(evaluator, train, seed=0, **kwargs)
        seconds[name] = time.perf_counter() - t
        fitted[name] = result.params
        (out / f'{name}_params.yaml').write_text(yaml.safe_dump(
            {**result.params.to_dict(), 'latency_s': latency,
             'identified_for': f'{name} twin (bench/bench_physx_sysid.py)'}))
        before = make(0.0).simulate([DynamicsParams()], held)
        after = evaluator.simulate([result.params], held)
        sims[name] = {'before': [b[0] for b in before], 'after': [a[0] for a in after]}

    def rms(a: list[np.ndarray], b: list[np.ndarray]) -> np.ndarray:
        sq = sum(np.sum((x - y) ** 2, axis=0) for x, y in zip(a, b))
        return 1000.0 * np.sqrt(sq / sum(len(x) for x in a))

    real = [tr.measured for tr in held]
    rows = {
        'mujoco twin vs digital real, before': rms(sims['mujoco']['before'], real),
        'mujoco twin vs digital real, after': rms(sims['mujoco']['after'], real),
        'physx twin vs digital real, before': rms(sims['physx']['before'], real),
        'physx twin vs digital real, after': rms(sims['physx']['after'], real),
        'physx vs mujoco twin, both before': rms(sims['physx']['before'],
                                                 sims['mujoco']['before']),
        'physx vs mujoco twin, both after': rms(sims['physx']['after'],
                                                sims['mujoco']['after']),
    }
    print(f'{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load '
          f'{os.getloadavg()[0]:.2f}; fit on {len(train)} x {args.duration:g} s, evaluated on '
          f'{len(held)} held-out trajectories; latency {1e3 * latency:.2f} ms for both; CMA-ES '
          f'{args.generations} generations x {args.popsize}, {args.minibatch} windows of '
          f'{args.window} steps')
    print('\nper-joint RMS gap on held-out trajectories, mrad\n')
    print('| pair | ' + ' | '.join(f'j{i + 1}' for i in range(7)) + ' | mean |')
    print('|---|' + '---|' * 8)
    for label, gap in rows.items():
        print(f'| {label} | ' + ' | '.join(f'{v:.2f}' for v in gap) + f' | {gap.mean():.2f} |')
    truth = hidden.joint_params()
    print('\n| parameter | digital real (hidden) | mujoco twin fit | physx twin fit |')
    print('|---|---|---|---|')
    for field in ('friction', 'armature'):
        for j in range(7):
            print(f'| {field} j{j + 1} | {getattr(truth, field)[j]:.3f} | '
                  f'{getattr(fitted["mujoco"], field)[j]:.3f} | '
                  f'{getattr(fitted["physx"], field)[j]:.3f} |')
    print('\nfit wall time: ' + ', '.join(f'{k} {v:.0f} s' for k, v in seconds.items()))
    print(f'wrote {out}/mujoco_params.yaml and {out}/physx_params.yaml')


if __name__ == '__main__':
    main()
