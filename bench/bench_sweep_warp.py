"""Benchmark the learned policy's sweep on MuJoCo Warp (``realm-ros sweep --device gpu``):
N worlds of one task stepped, ray traced (three cameras) and driven by the learned checkpoint
in one batch on the device, against the same cells on the CPU twin (``run_episode``).

For each ``--worlds`` W: the grid's first W cells (seeds of ``--task`` / Default, the
sweep's own seeds) in one Warp batch (``--episodes-per-world K``: K x W cells in W worlds, a
world taking the next cell when its episode ends; ``--lockstep``: batches of W one after
another instead): a short first run (``--warmup-steps``; it compiles the
kernels, or loads them from ``~/.cache/warp``, builds the render context and captures the
CUDA graph) is timed apart as the compile time, then the full episodes (``--max-steps``).
Real-time factor = simulated seconds of all worlds / wall seconds. The CPU figure: the first
``--cpu-episodes`` of those cells with ``run_episode`` on the CPU twin (same cameras, OpenGL),
in this process, and its agreement with the Warp records of the same cells
(``sweep.warp.compare``: progression within 0.25 and the same success).

``--processes P`` splits the worlds between P batch processes sharing the device (the
sweep's ``--gpu-workers``; the host side of a batch, policy chains and scoring, is Python and
takes one core per process), after one compile in this process; the wall time runs from the
first process's start to the last one's end.

Prints and appends to bench/results/bench.jsonl. Needs mujoco-warp, warp-lang and torch; runs
on the CPU device when there is no GPU (use tiny sizes: ``--worlds 2 --max-steps 4
--image-size 64x36``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pathlib
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from benchlib import Recorder  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _shadows(option: str) -> bool | str:
    return {'on': True, 'off': False}.get(option, 'auto')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--task', default='push_switch')
    parser.add_argument('--policy', default=str(ROOT / 'checkpoints/learned/final.pt'),
                        help='learned checkpoint')
    parser.add_argument('--worlds', default='256,1024', help='world counts, comma separated')
    parser.add_argument('--max-steps', type=int, default=150)
    parser.add_argument('--warmup-steps', type=int, default=2)
    parser.add_argument('--image-size', default='320x180', help='WIDTHxHEIGHT per camera')
    parser.add_argument('--cameras', type=int, default=3, choices=(2, 3),
                        help="3: the rig's three cameras rendered; 2: the policy's own")
    parser.add_argument('--device', default='', help='Warp device (default: cuda:0 if any)')
    parser.add_argument('--cpu-episodes', type=int, default=4)
    parser.add_argument('--shadows', choices=('auto', 'on', 'off'), default='auto',
                        help="ray-traced shadows of the key light (auto: as the CPU twin's "
                             'OpenGL on this machine: on with a GPU, off on the CPU device)')
    parser.add_argument('--twin-passes', choices=('auto', 'on'), default='auto',
                        help="the CPU twin's OpenGL shadows and reflections (auto: the rig's, "
                             'off on a software rasteriser; on: as on a GPU machine)')
    parser.add_argument('--no-graph', action='store_true',
                        help='launch the physics steps one by one (no CUDA graph)')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--hand-back', action='store_true',
                        help="the observations read Warp's own derived quantities "
                             '(WarpStepper hand_back) instead of a host mj_forward per world')
    parser.add_argument('--stagger', type=float, default=0.0,
                        help="seconds between the worker processes' starts (process k starts "
                             'k x S after the first, so that their host and device phases '
                             'interleave instead of coinciding; the wall time includes it)')
    parser.add_argument('--episodes-per-world', type=int, default=1,
                        help='cells run per world: K x W cells in W worlds, each world taking '
                             "the next cell when its episode ends (the sweep's refill)")
    parser.add_argument('--lockstep', action='store_true',
                        help='no refill: batches of W cells one after another, each stepped '
                             'until its longest episode ends (the behaviour before the refill)')
    parser.add_argument('--processes', type=int, default=1,
                        help='batch processes sharing the device, worlds split between them '
                             "(the sweep's --gpu-workers): the host side is Python")
    args = parser.parse_args()
    os.environ.setdefault('MUJOCO_GL', 'egl')

    from realm_ros.backends.mujoco.warp_sweep import ALL_CAMERAS, default_device
    from realm_ros.core.evaluation import PolicyEntry
    from realm_ros.core.sweep import SweepConfig, plan_cells
    from realm_ros.sweep.compare_cpu import compare, cpu_runner, cpu_twin

    width, height = (int(v) for v in args.image_size.lower().split('x'))
    widths = [int(w) for w in args.worlds.split(',')]
    device = args.device or default_device()
    rec = Recorder('sweep_warp')
    label = f'learned:path={args.policy}'
    config = SweepConfig(tasks=(args.task,), policies=(label,), perturbations=('Default',),
                         episodes_per_cell=max([w * args.episodes_per_world for w in widths]
                                               + [args.cpu_episodes]),
                         max_steps=args.max_steps, seed=args.seed, worlds=('warp',),
                         cameras=args.cameras == 3)

    def cameras_for(entry: PolicyEntry) -> tuple[str, ...]:
        if args.cameras == 3:
            return ALL_CAMERAS
        return tuple(c for c in ALL_CAMERAS if c in ('exterior_1', 'wrist'))

    cells = plan_cells(config, cameras_for)
    options = {'batch': max(widths), 'device': device, 'image_size': (width, height),
               'shadows': _shadows(args.shadows), 'graph': False if args.no_graph else None,
               'hand_back': args.hand_back}
    cams = f'{len(cells[0].cameras)} cameras {width}x{height}'
    first_records: list[dict] = []
    if args.processes > 1:
        # Compile (or load from ~/.cache/warp) once here, so the worker processes only load the
        # cached kernels instead of compiling the same ones side by side.
        t = time.perf_counter()
        _shard(0, cells[:2], options, args.warmup_steps, None, args.warmup_steps)
        cold = time.perf_counter() - t
        rec.figure(f'sweep Warp {args.task} 2 worlds, {args.warmup_steps} steps twice in this '
                   'process before the workers start (kernel compile or cache load, render '
                   'context, graph capture)', cold, 's', device=device)
    for w in widths:
        count = w * args.episodes_per_world
        group = cells[:count]
        shards = [group[k::args.processes] for k in range(args.processes)]
        # each process's batch: its share of the W worlds
        opts = {**options, 'batch': -(-w // args.processes), 'refill': not args.lockstep}
        if args.processes == 1:
            results = [_shard(0, shards[0], opts, args.warmup_steps, None)]
        else:
            results = _in_processes(shards, opts, args.warmup_steps, args.stagger)
        # Records back in the grid's order (shard k holds cells k, k + P, ...).
        records: list[dict] = [{}] * count
        for k, result in enumerate(results):
            for j, record in enumerate(result['records']):
                records[k + j * args.processes] = record
        wall = max(r['end'] for r in results) - min(r['start'] for r in results)
        compile_s = max(r['first_run_s'] for r in results)
        timing: dict[str, float] = {}
        for r in results:
            for key, value in r['timing'].items():
                timing[key] = timing.get(key, 0.0) + value
        if not first_records:
            first_records = records
        sim = timing['sim_s']
        per = args.processes
        # world-steps of live episodes over world-steps stepped (every world of a batch is
        # stepped on each of its loop's steps, live or not)
        stepped = timing.get('host_steps', 0.0) * opts['batch']
        success = sum(bool(r['success']) for r in records) / len(records)
        cells_in = (f'{count} cells in {w} worlds ({"lockstep" if args.lockstep else "refill"})'
                    if count > w else f'{w} worlds')
        rec.figure(f'sweep Warp {args.task} learned, {cells_in}, {cams}, {device}, {per} '
                   'process(es): real-time factor summed over worlds', sim / wall,
                   'x real time', goal='>= 1,000 (H200)', worlds=w, cells=count,
                   refill=not args.lockstep, processes=per, wall_s=wall,
                   live_fraction=timing['world_steps'] / stepped if stepped else None,
                   sim_s=sim, world_steps=timing['world_steps'],
                   world_steps_per_s=timing['world_steps'] / wall, first_run_s=compile_s,
                   setup_s=timing.get('setup', 0.0) / per,
                   build_worlds_s=timing['build_s'] / per,
                   physics_s=timing.get('physics', 0.0) / per,
                   graph_capture_s=timing.get('compile', 0.0) / per,
                   render_s=timing.get('render', 0.0) / per, renders=timing.get('renders', 0),
                   policy_s=timing.get('policy_infer', 0.0) / per,
                   policy_calls=timing.get('policy_calls', 0),
                   transfer_s=timing.get('transfer', 0.0) / per, success=success,
                   host_loop_s={k[5:]: v / per for k, v in timing.items()
                                if k.startswith('host_')},
                   max_steps=args.max_steps, shadows=_shadows(args.shadows),
                   start_unix=min(r['start'] for r in results), stagger_s=args.stagger,
                   hand_back=args.hand_back,
                   note='timing fields: seconds per process (summed over processes / P)')
        rec.figure(f'sweep Warp {args.task} {w} worlds: first run ({args.warmup_steps} steps: '
                   'kernel compile or cache load, render context, graph capture)', compile_s,
                   's', worlds=w, device=device, processes=per)
    if args.cpu_episodes:
        chosen = cells[:min(args.cpu_episodes, widths[0])]
        rig = ''
        if args.twin_passes == 'on':
            import tempfile

            handle, rig = tempfile.mkstemp(suffix='.yaml')
            os.close(handle)
            pathlib.Path(rig).write_text(
                'cameras: {}\nrender: {shadows: true, reflections: true}\n')
        cpu = cpu_runner((width, height), rig)
        t = time.perf_counter()
        try:
            records_cpu = [cpu.run(cpu_twin(c)) for c in chosen]
        except Exception as err:  # noqa: BLE001 - e.g. no OpenGL (EGL) for the CPU twin here
            print(f'[sweep_warp] the CPU twin could not run here ({type(err).__name__}: {err}); '
                  'the Warp figures above are recorded (MUJOCO_GL=egl needs a GL driver)',
                  file=sys.stderr)
            return 1
        finally:
            cpu.close()
        wall = time.perf_counter() - t
        sim = sum(r['steps'] for r in records_cpu) / 15.0
        rec.figure(f'sweep CPU twin {args.task} learned, {len(chosen)} episodes run_episode in '
                   f'one process, {cams} (OpenGL)', sim / wall, 'x real time', wall_s=wall,
                   sim_s=sim,
                   success=sum(bool(r['success']) for r in records_cpu) / len(records_cpu))
        result = compare(first_records[:len(chosen)], records_cpu)
        rec.figure(f'sweep Warp vs CPU twin {args.task} learned: cells with progression '
                   f'within {result["tolerance"]["progression"]} ({len(chosen)} cells; Warp '
                   f'shadows {args.shadows}, twin passes {args.twin_passes}, seed {args.seed})',
                   result['progression_within'], 'fraction', goal='>= 0.8',
                   same_success=result['same_success'],
                   mean_abs_progression_diff=result['mean_abs_progression_diff'],
                   within_tolerance=result['within_tolerance'], per_cell=result['per_cell'],
                   ci=result['progression_within_ci'],
                   gpu_success_rate=result['gpu_success_rate'],
                   cpu_success_rate=result['cpu_success_rate'])
    return 0


def _shard(index: int, cells: list, options: dict, warmup: int, queue: Any,
           steps: int = 0, delay: float = 0.0) -> dict:
    """Run ``cells`` in one Warp batch (``steps``: that many steps each) after a
    ``warmup``-step first run; with ``queue`` (a worker process) wait for the others before
    the timed run (and ``delay`` seconds more) and put the result there."""
    from realm_ros.sweep.warp import WarpBatchRunner, run_warp

    runner = WarpBatchRunner(**options)
    short = [dataclasses.replace(c, spec=dataclasses.replace(c.spec, max_steps=warmup))
             for c in cells[:options['batch']]]
    t = time.perf_counter()
    run_warp(short, runner)
    first = time.perf_counter() - t
    if queue is not None:
        queue[1].wait()
    start = time.time()  # the wall time counts the stagger's delay
    time.sleep(delay)
    if steps:
        cells = [dataclasses.replace(c, spec=dataclasses.replace(c.spec, max_steps=steps))
                 for c in cells]
    records, timing = run_warp(cells, runner)
    result = {'index': index, 'records': records, 'timing': timing, 'first_run_s': first,
              'start': start, 'end': time.time()}
    if queue is not None:
        queue[0].put(result)
    return result


def _in_processes(shards: list, options: dict, warmup: int, stagger: float = 0.0
                  ) -> list[dict]:
    import multiprocessing

    ctx = multiprocessing.get_context('spawn')
    queue, barrier = ctx.Queue(), ctx.Barrier(len(shards))
    procs = [ctx.Process(target=_shard,
                         args=(k, shard, options, warmup, (queue, barrier), 0, k * stagger))
             for k, shard in enumerate(shards)]
    for p in procs:
        p.start()
    results = [queue.get() for _ in procs]
    for p in procs:
        p.join()
    return sorted(results, key=lambda r: r['index'])


if __name__ == '__main__':
    raise SystemExit(main())
