"""How a sweep scales with its workers here, and what scheduling a cell costs against running it.

Throughput: a grid of ``--cells-per-worker`` x N cells of ``--cell-steps`` control steps each
(the ``hold`` policy in the MuJoCo twin, headless: a cell of a few seconds of pure simulation)
run by N = 1..``--workers`` local worker processes and N Ray actors (a local Ray started with N
CPUs; actors started and warm before the clock starts, their start-up timed apart), against
one worker in process. The figure is cells/s per N and the speed-up over one in-process worker
(ideal: N, up to the number of free cores).

Scheduling cost: ``--tiny`` cells of one control step on one worker of each executor, so that
they run one after the other: the median time between two records written less the cell's own
wall time is what the driver and the transport add per cell (pickling the cell, the call, the
record back, the driver's fsynced log line), against the cell time of the throughput grid.
The driver's log write (one fsynced line) is timed apart.
"Busy in cells" is the cells' own wall time summed over N x the sweep's wall time: the share of
the workers' time the executor keeps filled (1 = no scheduling gaps), which a loaded machine
does not hide (it slows the cells, not the gaps).

The machine's load (1-minute average before and after) is printed and stored with every
figure: this machine has 2 cores shared with other jobs, so only N <= 2 can scale at all.
Prints and appends to bench/results/bench.jsonl.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from benchlib import Recorder  # noqa: E402

from realm_ros.core.evaluation import EpisodeLog  # noqa: E402
from realm_ros.core.sweep import SweepConfig, plan_cells  # noqa: E402
from realm_ros.sweep.driver import run_sweep  # noqa: E402
from realm_ros.sweep.executors import InProcessExecutor, ProcessExecutor  # noqa: E402


def _cells(n: int, steps: int) -> list:
    config = SweepConfig(tasks=('stack_cubes',), policies=('hold',), episodes_per_cell=n,
                         max_steps=steps)
    return plan_cells(config)


def _timed(executor, cells) -> tuple[float, float]:
    """Run ``cells`` on ``executor`` into a fresh folder; return (wall s, mean cell s)."""
    with tempfile.TemporaryDirectory() as out:
        run, log = run_sweep(cells, executor, out)
        cell_s = sum(r['wall_time_s'] for r in log.records) / len(log.records)
    return run.wall_s, cell_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--workers', type=int, default=4, help='largest N')
    parser.add_argument('--cell-steps', type=int, default=1500,
                        help='control steps per cell (hold policy, headless)')
    parser.add_argument('--cells-per-worker', type=int, default=3)
    parser.add_argument('--tiny', type=int, default=100, help='one-step cells for the overhead')
    parser.add_argument('--no-ray', action='store_true')
    args = parser.parse_args()
    os.environ.setdefault('MUJOCO_GL', 'egl')
    rec = Recorder('sweep_scaling')
    load0 = os.getloadavg()[0]
    print(f'load before: {load0:.2f} on {os.cpu_count()} cores', flush=True)

    # Baseline: one worker in process.
    n_base = args.cells_per_worker
    with InProcessExecutor() as ex:
        _timed(ex, _cells(1, 10))  # warm the world
        wall, cell_s = _timed(ex, _cells(n_base, args.cell_steps))
    base, base_cell_s = n_base / wall, cell_s
    rec.figure(f'sweep 1 in-process worker, cells of {args.cell_steps} steps', base, 'cells/s',
               cell_s=cell_s, wall_s=wall, load_before=load0)

    kinds = ['processes'] + ([] if args.no_ray else ['ray'])
    for kind in kinds:
        for n in range(1, args.workers + 1):
            cells = _cells(n * args.cells_per_worker, args.cell_steps)
            t = time.perf_counter()
            if kind == 'ray':
                from realm_ros.sweep.ray_executor import RayExecutor
                ex = RayExecutor(None, workers=n, init_kwargs={'num_cpus': n})
            else:
                ex = ProcessExecutor(n)
            try:
                _timed(ex, _cells(n, 10))  # every worker starts and builds its world
                startup = time.perf_counter() - t
                wall, cell_s = _timed(ex, cells)
            finally:
                ex.close()
            rate = len(cells) / wall
            rec.figure(f'sweep {n} {kind} workers, cells of {args.cell_steps} steps', rate,
                       'cells/s', baseline=base, baseline_label='1 in-process worker',
                       goal=f'>= {0.8 * n:.1f} x on {n} free cores', cell_s=cell_s,
                       wall_s=wall, startup_s=startup, cells=len(cells),
                       load_now=os.getloadavg()[0])
            # The share of the workers' wall time spent inside cells: what the executor keeps
            # busy, whatever the cores' speed (a loaded machine slows the cells themselves).
            rec.figure(f'sweep {n} {kind} workers busy in cells', len(cells) * cell_s / (n * wall),
                       'fraction', goal='>= 0.8')

    # Scheduling cost per cell: tiny cells on one worker, so that cells run one after the
    # other; the time between two records written minus the cell's own wall time is what the
    # driver and the transport add per cell (the log line's fsync included).
    tiny = _cells(args.tiny, 1)
    for kind in ['in-process'] + kinds:
        if kind == 'ray':
            from realm_ros.sweep.ray_executor import RayExecutor
            ex = RayExecutor(None, workers=1, init_kwargs={'num_cpus': 1})
        elif kind == 'processes':
            ex = ProcessExecutor(1)
        else:
            ex = InProcessExecutor()
        stamps: list[tuple[float, float]] = []
        try:
            _timed(ex, tiny[:5])
            with tempfile.TemporaryDirectory() as out:
                run_sweep(tiny, ex, out, on_record=lambda c, r, stamps=stamps: stamps.append(
                    (time.perf_counter(), r['wall_time_s'])))
        finally:
            ex.close()
        gaps = sorted(b[0] - a[0] - b[1] for a, b in zip(stamps, stamps[1:]))
        tiny_ms = sorted(s[1] for s in stamps)[len(stamps) // 2] * 1e3
        rec.figure(f'sweep scheduling cost per cell, {kind}', gaps[len(gaps) // 2] * 1e3, 'ms',
                   baseline=base_cell_s * 1e3,
                   baseline_label=f'a {args.cell_steps}-step cell in process',
                   tiny_cell_ms=tiny_ms, p90_ms=gaps[int(0.9 * len(gaps))] * 1e3,
                   tiny_cells=args.tiny)
    with tempfile.TemporaryDirectory() as out:
        log = EpisodeLog(os.path.join(out, 'episodes.jsonl'))
        record = {'pair_id': 'x', 'role': '', 'backend': 'mujoco', 'world': 'mujoco',
                  'steps': 1, 'outcome': 'timeout', 'error': '', 'stages': ['a'] * 4}
        t = time.perf_counter()
        for k in range(200):
            log.append(dict(record, pair_id=f'x{k}'))
        rec.figure('sweep driver log write (one fsynced line)',
                   (time.perf_counter() - t) / 200 * 1e3, 'ms')
    print(f'load after: {os.getloadavg()[0]:.2f}', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
