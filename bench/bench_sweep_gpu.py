"""Benchmark batched whole-episode sweeps on the GPU (``realm-ros sweep --device gpu``) against
the same grid on CPU cores (``--device cpu``: ``run_episode`` per cell, one process per core).

A perturbation x seed grid of one task (``--codes``, seeds 0..): for each ``--worlds`` W, the
first W cells in one MJX batch (``mjx_sweep.MjxStepper``; its first call, which compiles, timed
apart); the CPU baseline runs ``--cpu-cells`` cells with ``--cpu-workers`` processes (and on
one core) and its world-steps/s is the baseline. Agreement: the smallest W's cells on both
paths, per perturbation: same success, same progression, joint divergence before the first
robot contact. Prints and appends to bench/results/bench.jsonl. Needs ``mujoco-mjx`` and JAX.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from benchlib import Recorder  # noqa: E402

from realm_ros.sweep import mjx as sweep  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--task', default='stack_cubes')
    parser.add_argument('--codes', default='Default,B-HOBJ,VB-POSE')
    parser.add_argument('--worlds', default='64,256,1024')
    parser.add_argument('--max-steps', type=int, default=250)
    parser.add_argument('--solver', default='', help='MJX iterations/ls_iterations, e.g. 8/16')
    parser.add_argument('--cpu-workers', type=int, default=os.cpu_count() or 1)
    parser.add_argument('--cpu-cells', type=int, default=64)
    parser.add_argument('--no-agreement', action='store_true')
    args = parser.parse_args()
    rec = Recorder('sweep_gpu')
    codes = args.codes.split(',')
    widths = [int(w) for w in args.worlds.split(',')]
    its, ls = sweep.solver_iterations(args.solver)
    solver = args.solver or 'twin 100/50'
    seeds = -(-max(widths + [args.cpu_cells]) // len(codes))
    grid, _ = sweep.plan_grid(args.task, codes, seeds, 1.0, args.max_steps, 0)
    # Interleave the codes so that every prefix of the grid holds each code.
    cells = [c for k in range(seeds) for c in grid[k::seeds]]

    t = time.perf_counter()
    cpu_cells = cells[:args.cpu_cells]
    cpu, cpu_traces = sweep.run_cpu(cpu_cells, 0, args.cpu_workers, trace=True)
    wall = time.perf_counter() - t
    cpu_rate = sum(r['steps'] for r in cpu) / wall
    label = f'CPU run_episode, {args.cpu_workers} processes'
    rec.figure(f'sweep CPU {args.task} {len(cpu_cells)} episodes, {args.cpu_workers} processes',
               cpu_rate, 'world-steps/s', episodes_per_s=len(cpu) / wall, wall_s=wall)
    n1 = max(4, args.cpu_cells // 16)
    t = time.perf_counter()
    one, _ = sweep.run_cpu(cpu_cells[:n1], 0, 1)
    wall1 = time.perf_counter() - t
    rec.figure(f'sweep CPU {args.task} {n1} episodes, 1 process',
               sum(r['steps'] for r in one) / wall1, 'world-steps/s',
               episodes_per_s=n1 / wall1, wall_s=wall1)

    for k, width in enumerate(widths):
        chosen = cells[:width]
        t = time.perf_counter()
        gpu, gpu_traces, timing = sweep.run_gpu(chosen, 0, width, its, ls,
                                                trace=k == 0 and not args.no_agreement)
        wall = time.perf_counter() - t
        steps = sum(r['steps'] for r in gpu)
        warm = wall - timing['compile']
        rec.figure(f'sweep GPU {args.task} {width} worlds (MJX, solver {solver}), excluding '
                   'the first call', steps / warm, 'world-steps/s', cpu_rate, label,
                   goal='> CPU cores', episodes_per_s=width / warm, wall_s=wall,
                   first_call_s=timing['compile'], device_s=timing['device'],
                   host_s=warm - timing['device'] - timing['transfer'],
                   calls=timing['calls'], success=sum(r['success'] for r in gpu) / width)
        if k == 0 and not args.no_agreement:
            n = min(len(chosen), len(cpu))
            table = sweep.agreement(cpu[:n], gpu[:n], cpu_traces[:n], gpu_traces[:n])
            for code, row in table.items():
                rec.figure(f'sweep GPU vs CPU {args.task} {code}: same success '
                           f'({row["n"]} cells, solver {solver})', row['same_success'],
                           'fraction', same_progression=row['same_progression'],
                           precontact_div_max_rad=row['precontact_div_max_rad'],
                           precontact_div_median_rad=row['precontact_div_median_rad'])
    return 0


if __name__ == '__main__':
    sys.exit(main())
