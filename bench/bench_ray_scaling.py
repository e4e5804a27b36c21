"""The sweep on Ray at 1..N workers of one many-core machine, and a worker killed mid-run.

One local Ray (``num_cpus`` = the machine's cores, no dashboard) is started once; for each N in
``--workers`` a :class:`RayExecutor` of N actors is started (its start-up timed apart: actors up,
each world built, one 10-step cell each), then a grid of ``--cells-per-worker`` x N cells of
``--cell-steps`` control steps (the ``hold`` policy in the MuJoCo twin, headless; every cell
runs its full length: ``hold`` never ends an episode early, and the bench checks that each
record has ``--cell-steps`` steps) is timed. Per N it stores:

- cells/s, and per worker against one worker (``per_worker`` = rate(N) / (N x rate(1)));
- the cells' own mean wall time (``cell_s``): a cell that runs slower on a busier machine shows
  here, not as a scheduling gap;
- "busy in cells": sum of the cells' wall times / (N x the sweep's wall time);
- the scheduling cost per cell: the workers' idle time per cell, (N x wall - sum of cells) / C
  (the driver's round trip, the fsynced log line, and the last round's tail);
- every record's (k, wall time, steps), so that a cell's cost can be compared by seed.

Then: ``--tiny`` one-step cells on 1 worker and on the largest N (the driver's own ceiling in
cells/s: what the model for 100 and 1,000 workers needs); ``--kill-at`` workers with one actor's
process SIGKILLed after ``--kill-after`` records (every cell must come back exactly once, with
the records of the undisturbed run at that N, wall time aside); the same cells on 1 and 2
workers (``--same-cells``: the super-linear question with the seeds held fixed); then, time
permitting, ``--repeat`` - 1 more passes over ``--workers`` (the spread between passes) and
local processes at the same N. Each record also carries its cell's CPU time (``cpu_s``).
``--deadline`` seconds after the start the parts not yet begun are skipped (so that one call
on a rented machine ends in time); each figure is appended as soon as it is measured
(``$REALM_BENCH_RESULTS``).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from benchlib import Recorder  # noqa: E402

from realm_ros.core.sweep import SweepConfig, comparable, plan_cells  # noqa: E402
from realm_ros.sweep.driver import run_sweep  # noqa: E402
from realm_ros.sweep.executors import InProcessExecutor, ProcessExecutor  # noqa: E402

T0 = time.monotonic()


class CpuClock:
    """A cell hook: adds the cell's own CPU time in its worker process (``cpu_s``, user +
    system) to its record, so that a cell slowed by a shared core (wall time up, CPU time not)
    is told apart from a cell that did more work."""

    def __init__(self) -> None:
        self._t = 0.0

    def begin(self, cell: Any) -> None:
        self._t = time.process_time()
        return None

    def end(self, cell: Any, record: Any) -> dict[str, float]:
        return {'cpu_s': time.process_time() - self._t}


def _same(record: dict) -> dict:
    return {k: v for k, v in comparable(record).items() if k != 'cpu_s'}


def _cells(n: int, steps: int, first: int = 0) -> list:
    config = SweepConfig(tasks=('stack_cubes',), policies=('hold',),
                         episodes_per_cell=first + n, max_steps=steps)
    return plan_cells(config)[first:]


def _k(pair_id: str) -> int:
    return int(pair_id.split('/')[2])


def _run(executor: Any, cells: list, on_record: Any = None) -> tuple[Any, list[dict]]:
    with tempfile.TemporaryDirectory() as out:
        run, log = run_sweep(cells, executor, out, on_record=on_record)
        return run, list(log.records)


def _summary(n: int, cells: list, run: Any, records: list[dict], steps: int) -> dict[str, Any]:
    times = [r['wall_time_s'] for r in records]
    cpu = [r.get('cpu_s', 0.0) for r in records]
    short = [r['pair_id'] for r in records if int(r.get('steps', 0)) != steps]
    return {'workers': n, 'cells': len(cells), 'wall_s': run.wall_s,
            'rate': len(cells) / run.wall_s, 'cell_s': statistics.mean(times),
            'cell_s_min': min(times), 'cell_s_max': max(times), 'cell_cpu_s': statistics.mean(cpu),
            'busy': sum(times) / (n * run.wall_s),
            'idle_per_cell_ms': (n * run.wall_s - sum(times)) / len(cells) * 1e3,
            'short_cells': short,
            'per_cell': [[_k(r['pair_id']), round(r['wall_time_s'], 4),
                          round(r.get('cpu_s', 0.0), 4), int(r.get('steps', 0))]
                         for r in records]}


def _late(args: argparse.Namespace, what: str) -> bool:
    if time.monotonic() - T0 > args.deadline:
        print(f'deadline ({args.deadline:.0f} s) passed: {what} skipped', flush=True)
        return True
    return False


def _ray_run(n: int, cells: list, clock: CpuClock) -> tuple[Any, list[dict], float, float]:
    """``cells`` on ``n`` warm Ray actors (each has run one 10-step cell first); returns the run,
    its records, the seconds until the actors were up and until each had run its first cell."""
    from realm_ros.sweep.ray_executor import RayExecutor

    t = time.perf_counter()
    ex = RayExecutor(None, workers=n, hook=clock)
    try:
        ex.warm_up()
        up = time.perf_counter() - t
        _run(ex, _cells(n, 10, first=10_000))
        startup = time.perf_counter() - t
        run, records = _run(ex, cells)
    finally:
        ex.close()
    return run, records, up, startup


def interleaved(args: argparse.Namespace, rec: Recorder, clock: CpuClock) -> None:
    """``--interleave`` rounds of 1, N1, 1, N2, ..., 1: each N run's per-worker figure is its
    rate over N x the mean rate of the two 1-worker runs beside it, so that the drift of the
    machine between runs minutes apart (15-35 % measured) falls out of the ratio."""
    steps, cpw = args.cell_steps, args.cells_per_worker
    many = [n for n in args.workers if n > 1]
    one = _cells(cpw, steps)  # the same cells in every 1-worker run
    last: float | None = None
    ratios: dict[int, list[float]] = {n: [] for n in many}

    def single(rnd: int) -> float:
        run, records, _, startup = _ray_run(1, one, clock)
        s = _summary(1, one, run, records, steps)
        rec.figure(f'ray_scaling interleaved 1 Ray worker (round {rnd + 1})', s['rate'],
                   'cells/s', startup_s=startup, load_now=os.getloadavg()[0], **s)
        return s['rate']

    for rnd in range(args.interleave):
        for n in many:
            if _late(args, f'interleaved round {rnd + 1}, {n} workers'):
                break
            before = last if last is not None else single(rnd)
            cells = _cells(n * cpw, steps)
            run, records, _, startup = _ray_run(n, cells, clock)
            s = _summary(n, cells, run, records, steps)
            after = single(rnd)
            last = after
            base = (before + after) / 2
            rec.figure(f'ray_scaling interleaved {n} Ray workers, {steps}-step cells '
                       f'(round {rnd + 1})', s['rate'], 'cells/s',
                       baseline=base * n, baseline_label=f'{n} x the mean of the 1-worker runs '
                       'just before and after', goal='>= 0.8 per worker',
                       per_worker=s['rate'] / (n * base), one_before=before, one_after=after,
                       startup_s=startup, load_now=os.getloadavg()[0], **s)
            ratios[n].append(s['rate'] / (n * base))
    for n, r in ratios.items():
        if r:
            print(f'{n} workers: per worker {min(r):.3f}-{max(r):.3f}, mean '
                  f'{statistics.mean(r):.3f} over {len(r)} rounds', flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--workers', type=int, nargs='+', default=[1, 2, 4, 8, 15])
    parser.add_argument('--cell-steps', type=int, default=1000)
    parser.add_argument('--cells-per-worker', type=int, default=4)
    parser.add_argument('--tiny', type=int, default=150, help='one-step cells per tiny run')
    parser.add_argument('--kill-at', type=int, default=8, help='workers of the kill run (0: none)')
    parser.add_argument('--kill-after', type=int, default=10, help='records before the kill')
    parser.add_argument('--same-cells', type=int, default=8,
                        help='cells run on 1 and on 2 workers alike (0: skip)')
    parser.add_argument('--repeat', type=int, default=1,
                        help='passes over --workers (every other one in reverse order)')
    parser.add_argument('--processes', action='store_true', help='local processes too, last')
    parser.add_argument('--deadline', type=float, default=1e9,
                        help='seconds after start after which no new part begins')
    parser.add_argument('--interleave', type=int, default=0,
                        help='only K rounds of [1 worker, N workers] for each N > 1 of --workers, '
                             'each N run judged against the 1-worker runs just before and after '
                             'it (the machine drifts between runs minutes apart)')
    args = parser.parse_args()
    os.environ.setdefault('MUJOCO_GL', 'egl')
    rec = Recorder('ray_scaling')
    steps, cpw = args.cell_steps, args.cells_per_worker
    cores = os.cpu_count() or 1
    load0 = os.getloadavg()[0]
    print(f'load before: {load0:.2f} on {cores} cores', flush=True)

    # One worker in this process: the cell as it runs inside the driver.
    clock = CpuClock()
    with InProcessExecutor(hook=clock) as ex:
        _run(ex, _cells(1, 10))
        run, records = _run(ex, _cells(cpw, steps))
    s = _summary(1, records, run, records, steps)
    rec.figure(f'ray_scaling in process, {steps}-step cells', s['rate'], 'cells/s', **s)

    from realm_ros.sweep.ray_executor import RayExecutor, import_ray

    ray = import_ray()  # (a local Ray binds 127.0.0.1)
    t = time.perf_counter()
    ray.init(num_cpus=cores, include_dashboard=False, log_to_driver=False)
    rec.figure('ray_scaling ray.init (local, one node)', time.perf_counter() - t, 's',
               num_cpus=cores)

    if args.interleave:
        interleaved(args, rec, clock)
        ray.shutdown()
        print(f'load after: {os.getloadavg()[0]:.2f}; {time.monotonic() - T0:.0f} s', flush=True)
        return 0

    rate1: list[float] = []
    reference: dict[str, dict[str, Any]] = {}

    def table(rep: int) -> None:
        """One pass over ``--workers`` (every other pass in reverse order)."""
        for n in args.workers if rep % 2 == 0 else args.workers[::-1]:
            if _late(args, f'{n} Ray workers (pass {rep + 1})'):
                return
            cells = _cells(n * cpw, steps)
            run, records, up, startup = _ray_run(n, cells, clock)
            s = _summary(n, cells, run, records, steps)
            if not rate1:
                rate1.append(s['rate'] / n)
            if n == args.kill_at:
                reference.update({r['pair_id']: _same(r) for r in records})
            rec.figure(f'ray_scaling {n} Ray workers, {steps}-step cells (pass {rep + 1})',
                       s['rate'], 'cells/s',
                       baseline=rate1[0] * n, baseline_label=f'{n} x one Ray worker (pass 1)',
                       goal='>= 0.8 per worker', per_worker=s['rate'] / (n * rate1[0]),
                       actors_up_s=up, startup_s=startup, load_now=os.getloadavg()[0], **s)

    table(0)

    # The driver's ceiling and the per-cell cost with nothing to do: one-step cells.
    for n in sorted({1, max(args.workers)}):
        if _late(args, f'tiny cells on {n}'):
            break
        tiny = _cells(args.tiny, 1, first=20_000)
        ex = RayExecutor(None, workers=n)
        stamps: list[float] = []
        try:
            ex.warm_up()
            _run(ex, _cells(n, 1, first=30_000))
            run, records = _run(ex, tiny, on_record=lambda c, r, stamps=stamps: stamps.append(
                time.perf_counter()))
        finally:
            ex.close()
        gaps = sorted(b - a for a, b in zip(stamps, stamps[1:]))
        own = statistics.median(r['wall_time_s'] for r in records)
        rec.figure(f'ray_scaling one-step cells on {n} Ray workers', len(tiny) / run.wall_s,
                   'cells/s', median_gap_ms=gaps[len(gaps) // 2] * 1e3,
                   p90_gap_ms=gaps[int(0.9 * len(gaps))] * 1e3, cell_own_ms=own * 1e3,
                   cells=len(tiny), workers=n)

    # A worker killed mid-run: every cell exactly once, the same records.
    if args.kill_at and not _late(args, 'the kill run'):
        n = args.kill_at
        cells = _cells(n * cpw, steps)
        ex = RayExecutor(None, workers=n, hook=clock)
        killed: list[int] = []
        try:
            placement = ex.warm_up()
            victim = sorted(pid for _, pid in placement.values())[0]

            def on_record(cell: Any, record: Any, seen: list[int] = []) -> None:  # noqa: B006
                seen.append(1)
                if len(seen) == args.kill_after:
                    os.kill(victim, signal.SIGKILL)
                    killed.append(len(seen))

            run, records = _run(ex, cells, on_record=on_record)
        finally:
            ex.close()
        ids = [r['pair_id'] for r in records]
        same = (None if not reference else
                sum(_same(r) == reference.get(r['pair_id']) for r in records))
        ok = (bool(killed) and len(ids) == len(cells) and len(set(ids)) == len(cells)
              and run.duplicates == 0 and run.worker_lost >= 1
              and (same is None or same == len(cells)))
        rec.figure(f'ray_scaling {n} Ray workers, one killed after {args.kill_after} records: '
                   'every cell exactly once', float(ok), 'pass', cells=len(cells),
                   records=len(ids), unique=len(set(ids)), worker_lost=run.worker_lost,
                   duplicates=run.duplicates, same_records_as_undisturbed=same,
                   wall_s=run.wall_s, killed_pid=victim)

    # The super-linear question with the seeds held fixed: the same cells on 1 and 2 workers.
    if args.same_cells:
        for n in (1, 2):
            if _late(args, f'same cells on {n}'):
                break
            cells = _cells(args.same_cells, steps, first=40_000)
            run, records, _, _ = _ray_run(n, cells, clock)
            s = _summary(n, cells, run, records, steps)
            rec.figure(f'ray_scaling same {len(cells)} cells on {n} Ray workers', s['rate'],
                       'cells/s', **s)
    for rep in range(1, args.repeat):  # the spread between passes, once the rest is measured
        table(rep)
    ray.shutdown()

    if args.processes:
        prate1: float | None = None
        for n in args.workers:
            if _late(args, f'{n} processes'):
                break
            cells = _cells(n * cpw, steps)
            t = time.perf_counter()
            pex = ProcessExecutor(n, hook=clock)
            try:
                _run(pex, _cells(n, 10, first=10_000))
                startup = time.perf_counter() - t
                run, records = _run(pex, cells)
            finally:
                pex.close()
            s = _summary(n, cells, run, records, steps)
            prate1 = prate1 or s['rate'] / n
            rec.figure(f'ray_scaling {n} local processes, {steps}-step cells', s['rate'],
                       'cells/s', per_worker=s['rate'] / (n * prate1), startup_s=startup, **s)
    print(f'load after: {os.getloadavg()[0]:.2f}; {time.monotonic() - T0:.0f} s', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
