"""Physics alone, float32: the scripted expert's episodes on MuJoCo Warp against the CPU twin.

No cameras, no learned policy: the scripted expert acts on the privileged state, so whatever
separates the two joint paths is the physics (Warp's float32, its solver's and collision's
sums) and what the expert does with it. For each cell: the largest arm-joint difference (rad)
up to each checkpoint step, and both episodes' progression and success.

    python3 bench/bench_warp_physics.py --worlds 2 --steps 60 --device cpu [--hand-back]

``--hand-back``: the observations read Warp's own derived quantities (``WarpStepper``
``hand_back``: poses, contacts, actuator forces, float32) instead of a host ``mj_forward`` of
the downloaded state per world; the host's CPU time per phase of ``run_batch`` is printed
either way (``load``: the observations).

(The CPU device compiles MuJoCo Warp's physics kernels once, minutes; a control period of two
worlds is about 16 x 0.2 s there.)
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--worlds', type=int, default=2)
    parser.add_argument('--steps', type=int, default=60)
    parser.add_argument('--skill', type=int, default=0, help='the scripted ladder rung')
    parser.add_argument('--device', default='cpu')
    parser.add_argument('--out', default='')
    parser.add_argument('--hand-back', action='store_true',
                        help="the observations read Warp's derived quantities (no host "
                             'mj_forward per world)')
    args = parser.parse_args(argv)
    try:
        from realm_ros.backends.mujoco import warp_sweep
        warp_sweep.import_warp()
    except Exception as err:  # noqa: BLE001 - one line naming what is missing
        print(f'bench_warp_physics: {err}', file=sys.stderr)
        return 2
    import dataclasses

    from realm_ros.backends.mujoco import batch
    from realm_ros.backends.mujoco.batch import run_batch
    from realm_ros.core.episode import run_episode
    from realm_ros.core.policy import make_policy, standard_chain
    from realm_ros.core.sweep import SweepConfig, plan_cells
    from realm_ros.sweep.compare_cpu import cpu_twin
    from realm_ros.sweep.runner import CellRunner
    from realm_ros.sweep.warp import _world

    policy = f'scripted:{args.skill}'
    cells = plan_cells(SweepConfig(tasks=('push_switch',), policies=(policy,),
                                   episodes_per_cell=args.worlds, max_steps=args.steps,
                                   worlds=('warp',)), lambda entry: ())
    cells = [dataclasses.replace(c, cameras=()) for c in cells]
    worlds = [_world(c, (), (64, 36)) for c in cells]
    warp_q: list[list[np.ndarray]] = [[] for _ in cells]
    t0 = time.perf_counter()
    batch.TIMER = time.process_time
    timing: dict[str, float] = {}
    results = run_batch(
        worlds, [make_policy('scripted', skill=args.skill) for _ in cells],
        [c.spec for c in cells],
        lambda ws: warp_sweep.WarpStepper(ws, device=args.device, hand_back=args.hand_back),
        on_step=lambda i, k, obs: warp_q[i].append(obs.joints.position), execute=8,
        infer_batch=None, timing=timing)
    warp_s = time.perf_counter() - t0
    host_ms = {p: round(timing.get(p, 0.0) / timing['steps'] * 1e3, 3)
               for p in ('policy', 'chain', 'controls', 'load', 'score')}
    print(f'host CPU ms per control step of the batch (hand_back={args.hand_back}): {host_ms}')
    runner = CellRunner()
    rows: list[dict[str, Any]] = []
    try:
        for i, cell in enumerate(cells):
            trace: list[np.ndarray] = []
            record = run_episode(
                runner.world(cpu_twin(cell)),
                standard_chain(make_policy('scripted', skill=args.skill)), cell.spec,
                on_step=lambda k, o, a, p, trace=trace: trace.append(o.joints.position)
            ).to_record()
            warp_record = results[i].to_record()
            n = min(len(trace), len(warp_q[i]))
            diff = np.max(np.abs(np.array(trace[:n]) - np.array(warp_q[i][:n])), axis=1)
            checkpoints = {str(k): float(diff[:k].max()) for k in (5, 10, 25, 50, 100, 150)
                           if k <= n}
            checkpoints[str(n)] = float(diff.max())
            rows.append({'seed': cell.spec.seed, 'steps_compared': n,
                         'max_joint_diff_rad_up_to_step': checkpoints,
                         'warp_progression': warp_record['progression'],
                         'cpu_progression': record['progression'],
                         'warp_success': warp_record['success'],
                         'cpu_success': record['success'],
                         'warp_steps': warp_record['steps'], 'cpu_steps': record['steps']})
            print(json.dumps(rows[-1]), flush=True)
    finally:
        runner.close()
    report = {'policy': policy, 'worlds': args.worlds, 'steps': args.steps,
              'device': args.device, 'warp_wall_s': round(warp_s, 1), 'cells': rows,
              'hand_back': args.hand_back, 'host_ms_per_step': host_ms}
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(report, indent=1))
    print(f'warp wall {warp_s:.1f} s (compile included)')
    from benchlib import Recorder

    rec = Recorder('warp_physics')
    rec.figure(f'warp_physics {policy}, {len(rows)} cells, {args.steps} steps max, '
               f'{args.device}: max arm-joint difference Warp vs CPU twin', max(
                   max(r['max_joint_diff_rad_up_to_step'].values()) for r in rows), 'rad')
    rec.figure(f'warp_physics {policy}, {len(rows)} cells: cells with equal progression',
               sum(r['warp_progression'] == r['cpu_progression'] for r in rows) / len(rows),
               'fraction', hand_back=args.hand_back)
    rec.figure(f'warp_physics {policy}, {len(rows)} cells, hand_back={args.hand_back}: host '
               "CPU ms per control step in run_batch's load phase", host_ms['load'], 'ms',
               phases_ms=host_ms, worlds=len(cells))
    return 0


if __name__ == '__main__':
    sys.exit(main())
