"""The vision ladder at scale on one machine: demonstrations, evaluation and the summary.

Three sub-commands, run on the GPU machine (16 cores) by ``bench/device_ladder.sh`` and usable
anywhere (tiny sizes on a laptop):

``gen``: ``--shards`` copies of ``realm-ros dataset --world digital_real`` side by side, one per
    core (``taskset``), the same number for each task, each on its own seed range (a task's
    shard j: ``--episodes`` seeds from ``1000 + j * episodes``); every shard is a LeRobot v3.0
    folder and ``realm-ros train --data DIR/shard_*`` trains on them all. A ``--deadline``
    ends the shards with SIGTERM, which keeps every finished episode.
``eval``: every checkpoint (``NAME=PATH`` of ``realm-ros train``, or ``NAME=lerobot:DIR`` of
    ``lerobot-train``, run by the ``lerobot`` policy from its own venv) on the digital real
    (its hidden dynamics and ``config/appearance/lab_demo.yaml``'s look) over the evaluation
    seeds 0..N-1 of each task,
    the same with its images blanked (``--blind``, the ``learned`` policy's ``blind=true``),
    and under ``--looks`` other looks of the digital real: lab_demo with variant k of
    :class:`~realm_ros.core.appearance.VariantSet` laid over it (walls and floor, light, table
    or distractors: the lab's cameras and sensor stay). One JSON line per episode, episodes
    spread over ``--workers`` processes. ``--world mujoco`` runs the same in the twin instead.
``summary``: per checkpoint and condition, success with Wilson 95 % intervals and mean
    progression with bootstrap 95 % intervals over the distinct episodes, as Markdown and JSON.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import pathlib
import signal
import subprocess
import sys
import time
from typing import Any

REPO = pathlib.Path(__file__).resolve().parents[1]
LAB_LOOK = REPO / 'config' / 'appearance' / 'lab_demo.yaml'


def gen(args: argparse.Namespace) -> int:
    """Run the dataset shards in parallel and wait (or stop them at the deadline)."""
    from realm_ros.commands.episode import parse_image_size
    from realm_ros.core.errors import ConfigError

    try:
        parse_image_size(args.image_size)
    except ConfigError as err:
        print(f'gen: {err}', file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    task_names = [t for t in args.tasks.split(',') if t]
    per_task = max(1, args.shards // len(task_names))
    procs, names = [], []
    for i, (task, j) in enumerate((t, j) for t in task_names for j in range(per_task)):
        name = f'shard_{task}_{j:02d}'
        cmd = [sys.executable, '-m', 'realm_ros.cli', 'dataset', '--world', 'digital_real',
               '--out', str(args.out / name), '--tasks', task,
               '--episodes', str(args.episodes), '--seed-offset',
               str(args.seed_offset + j * args.episodes), '--max-steps', str(args.max_steps),
               '--image-size', args.image_size, '--quiet']
        if args.pin:
            cmd = ['taskset', '-c', str(i % (os.cpu_count() or 1)), *cmd]
        log = open(args.out / f'{name}.log', 'w')
        procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                      env=dict(os.environ, OMP_NUM_THREADS='1')))
        names.append(name)
    start = time.monotonic()
    while any(p.poll() is None for p in procs):
        if args.deadline and time.monotonic() - start > args.deadline:
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for p in procs:
                p.wait()
            break
        time.sleep(2)
    kept: collections.Counter[str] = collections.Counter()
    tried: collections.Counter[str] = collections.Counter()
    for name in names:
        path = args.out / name / 'meta' / 'realm_attempts.jsonl'
        for line in (path.read_text().splitlines() if path.is_file() else []):
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            tried[row['task']] += 1
            kept[row['task']] += bool(row['kept'])
    print(json.dumps({'gen_s': round(time.monotonic() - start, 1), 'shards': args.shards,
                      'attempted': dict(tried), 'kept': dict(kept)}), flush=True)
    return 0


def look_files(out: pathlib.Path, count: int, seed: int) -> dict[str, str]:
    """Write lab_demo with VariantSet's variants 1..count laid over it; {name: path}."""
    import yaml

    from realm_ros.core.appearance import Appearance, VariantSet

    lab = yaml.safe_load(LAB_LOOK.read_text())
    variants = VariantSet(count=count + 1, seed=seed)
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    for k in range(1, count + 1):
        over = variants.mapping(k)
        look = dict(lab, seed=over['seed'])
        look['materials'] = {**lab.get('materials', {}), **over.get('materials', {})}
        if 'light' in over:
            look['light'] = over['light']
        look['clutter'] = [*lab.get('clutter', []), *over.get('clutter', [])]
        Appearance.from_mapping(look, variants.name(k))  # refuse a bad one here
        path = out / f'{variants.name(k)}.yaml'
        path.write_text(yaml.safe_dump(look, sort_keys=False))
        files[variants.name(k)] = str(path)
    return files


_WORLD: dict[str, Any] = {}
_POLICIES: dict[tuple[str, bool], Any] = {}


def _episode(job: dict[str, Any]) -> dict[str, Any]:
    """Run one evaluation episode in this worker (worlds and policies cached per worker)."""
    import torch

    from realm_ros.core import robot, tasks
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.episode import run_episode
    from realm_ros.core.policy import standard_chain
    from realm_ros.core.types import EpisodeSpec
    from realm_ros.core.world import make_world
    from realm_ros.policies.learned import LearnedPolicy

    torch.set_num_threads(1)
    world = job.get('world', 'digital_real')
    width, height = job.get('image_size', (320, 180))
    key = f"{world}|{job['task']}|{job['appearance']}|{width}x{height}"
    if _WORLD.get('key') != key:
        if 'world' in _WORLD:
            _WORLD['world'].close()
        # The twin (mujoco) never reads the digital real's hidden look or dynamics.
        _WORLD['world'] = make_world(WorldConfig(
            backend=world, task=job['task'], cameras=('exterior_1', 'wrist'),
            camera_rate_hz=robot.CONTROL_HZ, camera_width=width, camera_height=height,
            appearance_file=job['appearance'] if world == 'digital_real' else ''))
        _WORLD['key'] = key
    pkey = (job['path'], job['blind'])
    if pkey not in _POLICIES:
        if job['path'].startswith('lerobot:'):  # a lerobot-train checkpoint, served from its venv
            from realm_ros.policies.lerobot_policy import LeRobotPolicy
            _POLICIES[pkey] = LeRobotPolicy(path=job['path'][len('lerobot:'):],
                                            blind=job['blind'])
        else:
            _POLICIES[pkey] = LearnedPolicy(path=job['path'], blind=job['blind'])
    inner = _POLICIES[pkey]
    spec = EpisodeSpec(task=job['task'], seed=job['seed'], policy=job['rung'],
                       max_steps=job['max_steps'],
                       instruction=tasks.get_task(job['task']).instruction)
    start = time.monotonic()
    result = run_episode(_WORLD['world'], standard_chain(inner, execute=8), spec)
    return {**{k: job[k] for k in ('rung', 'condition', 'look', 'task', 'seed')},
            'success': bool(result.success), 'progression': float(result.progression),
            'steps': int(result.steps), 'wall_s': round(time.monotonic() - start, 2)}


def evaluate(args: argparse.Namespace) -> int:
    """Run every (checkpoint, condition, task, seed) episode; one JSON line each."""
    import multiprocessing

    looks = look_files(args.out.parent / 'looks', args.looks, args.look_seed) \
        if args.looks else {}
    rungs = {}
    for item in args.checkpoints:
        name, _, path = item.rpartition('=')
        kind, colon, rest = path.partition(':')
        if colon and kind == 'lerobot':  # NAME=lerobot:PATH: a LeRobot checkpoint
            rungs[name or pathlib.Path(rest).name] = 'lerobot:' + str(pathlib.Path(rest).resolve())
        else:
            rungs[name or pathlib.Path(path).stem] = str(pathlib.Path(path).resolve())
    task_names = [t for t in args.tasks.split(',') if t]
    lab = str(LAB_LOOK)
    from realm_ros.commands.episode import parse_image_size
    from realm_ros.core.errors import ConfigError

    try:
        image_size = parse_image_size(args.image_size)
    except ConfigError as err:
        print(f'eval: {err}', file=sys.stderr)
        return 2
    if args.world != 'digital_real' and looks:
        sys.exit('eval: --looks are looks of the digital real; pass --looks 0 with --world mujoco')
    jobs = []

    def add(rung: str, condition: str, look: str, appearance: str, seeds: int,
            blind: bool = False) -> None:
        for task in task_names:
            for seed in range(args.seed_offset, args.seed_offset + seeds):
                jobs.append({'rung': rung, 'path': rungs[rung], 'blind': blind,
                             'condition': condition, 'look': look, 'appearance': appearance,
                             'task': task, 'seed': seed, 'max_steps': args.max_steps,
                             'world': args.world, 'image_size': image_size})

    for rung in rungs:
        add(rung, 'lab', 'lab_demo', lab, args.seeds)
        for name, path in looks.items():
            add(rung, 'looks', name, path, args.look_seeds)
    unknown = sorted(set(args.blind) - set(rungs))
    if unknown:
        sys.exit(f'eval: --blind names no checkpoint: {unknown}; the rungs are {sorted(rungs)}')
    for rung in args.blind:
        add(rung, 'blind', 'lab_demo', lab, args.seeds, blind=True)
    jobs.sort(key=lambda j: (j['appearance'], j['task'], j['rung'], j['blind'], j['seed']))
    done = set()
    if args.out.is_file():  # resume: skip the episodes already written
        for line in args.out.read_text().splitlines():
            row = json.loads(line)
            done.add((row['rung'], row['condition'], row['look'], row['task'], row['seed']))
    jobs = [j for j in jobs
            if (j['rung'], j['condition'], j['look'], j['task'], j['seed']) not in done]
    print(f'eval: {len(jobs)} episodes on {args.workers} workers', flush=True)
    start = time.monotonic()
    ctx = multiprocessing.get_context('spawn')
    with ctx.Pool(args.workers) as pool, open(args.out, 'a') as out:
        for n, row in enumerate(pool.imap_unordered(_episode, jobs, chunksize=args.chunk), 1):
            out.write(json.dumps(row) + '\n')
            out.flush()
            if n % 50 == 0 or n == len(jobs):
                print(f'eval: {n}/{len(jobs)} in {time.monotonic() - start:.0f} s', flush=True)
            if args.deadline and time.monotonic() - start > args.deadline:
                print(f'eval: deadline, {n} of {len(jobs)} written', flush=True)
                pool.terminate()
                break
    return 0


def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score 95 % interval of a success rate ((0, 1) with no episodes)."""
    if n == 0:
        return (0.0, 1.0)
    from realm_ros.core.metrics import wilson_interval
    low, high = wilson_interval(successes, n, z)
    return (low, high)


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """{rung: {condition: figures}} with per-task and per-look breakdowns."""
    from realm_ros.core.metrics import bootstrap_ci

    groups: dict[tuple[str, str], list[dict[str, Any]]] = collections.defaultdict(list)
    for row in rows:
        groups[(row['rung'], row['condition'])].append(row)
        groups[(row['rung'], f"{row['condition']}:{row['task']}")].append(row)
        if row['condition'] == 'looks':
            groups[(row['rung'], f"look:{row['look']}")].append(row)
    out: dict[str, Any] = collections.defaultdict(dict)
    for (rung, condition), items in sorted(groups.items()):
        wins = sum(r['success'] for r in items)
        prog = [r['progression'] for r in items]
        lo, hi = wilson(wins, len(items))
        plo, phi = bootstrap_ci(prog)
        out[rung][condition] = {'n': len(items), 'success': round(wins / len(items), 3),
                                'success_ci': [round(lo, 3), round(hi, 3)],
                                'progression': round(sum(prog) / len(prog), 3),
                                'progression_ci': [round(plo, 3), round(phi, 3)],
                                'mean_steps': round(sum(r['steps'] for r in items)
                                                    / len(items), 1)}
    return dict(out)


def summary(args: argparse.Namespace) -> int:
    """Print the Markdown table; write the JSON beside the episodes."""
    rows = [json.loads(line) for path in args.episodes
            for line in pathlib.Path(path).read_text().splitlines() if line.strip()]
    table = summarize(rows)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(table, indent=1) + '\n')

    def cell(fig: dict[str, Any] | None) -> str:
        if not fig:
            return '-'
        s, p = fig['success_ci'], fig['progression_ci']
        return (f"{fig['success']:.2f} [{s[0]:.2f}, {s[1]:.2f}] / {fig['progression']:.2f} "
                f"[{p[0]:.2f}, {p[1]:.2f}] (n {fig['n']})")

    rungs = [r for r in (args.rungs or table) if r in table]
    print('| rung | digital real (lab look) | blind | other looks |')
    print('|---|---|---|---|')
    for rung in rungs:
        conds = table[rung]
        print(f"| {rung} | {cell(conds.get('lab'))} | {cell(conds.get('blind'))} | "
              f"{cell(conds.get('looks'))} |")
    tasks = sorted({r['task'] for r in rows})
    print('\n| rung | ' + ' | '.join(f'{t}: lab look | {t}: other looks' for t in tasks) + ' |')
    print('|---' * (1 + 2 * len(tasks)) + '|')
    for rung in rungs:
        conds = table[rung]
        print(f'| {rung} | ' + ' | '.join(
            f"{cell(conds.get(f'lab:{t}'))} | {cell(conds.get(f'looks:{t}'))}" for t in tasks)
            + ' |')
    looks = sorted({r['look'] for r in rows if r['condition'] == 'looks'},
                   key=lambda name: int(name.split('_')[1]))
    if looks:
        print('\nsuccesses / episodes per other look (both tasks)\n')
        print('| rung | ' + ' | '.join(looks) + ' |')
        print('|---' * (1 + len(looks)) + '|')
        for rung in rungs:
            conds = table[rung]
            print(f'| {rung} | ' + ' | '.join(
                f"{round(conds[f'look:{k}']['success'] * conds[f'look:{k}']['n'])}/"
                f"{conds[f'look:{k}']['n']}" if f'look:{k}' in conds else '-'
                for k in looks) + ' |')
    return 0


def median_interval(times: list[float], level: float = 0.95) -> list[float]:
    """Distribution-free interval of the median (order statistics: the ranks j..k that a
    Binomial(n, 1/2) count falls between with probability >= ``level``), ms."""
    n, values = len(times), sorted(times)
    cdf = [sum(math.comb(n, i) for i in range(j + 1)) / 2 ** n for j in range(n + 1)]
    j = max([r for r in range(n) if cdf[r] <= (1 - level) / 2], default=0)  # P(B <= j)
    return [round(values[j], 2), round(values[n - 1 - j], 2)]


def latency(args: argparse.Namespace) -> int:
    """CPU time of one chunk per checkpoint (``infer``: two 320x180 frames resized, forward,
    decode), one thread: median and 90th percentile over ``--calls`` calls, ms. A
    ``lerobot:DIR`` checkpoint is timed through its server (round trip, and the server's own
    time per chunk)."""
    import numpy as np
    import torch

    from realm_ros.core.types import EpisodeSpec, JointState, Observation
    from realm_ros.policies.learned import LearnedPolicy

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    zeros = np.zeros(7)
    for path in args.checkpoints:
        policy: Any
        if path.startswith('lerobot:'):  # round trip to its server (one torch thread there)
            from realm_ros.policies.lerobot_policy import LeRobotPolicy
            policy = LeRobotPolicy(path=path[len('lerobot:'):], threads=1)
        else:
            policy = LearnedPolicy(path=path)
        policy.reset(EpisodeSpec(task='push_switch', seed=0, policy='learned', max_steps=1,
                                 instruction='push the light switch'))
        times = []
        for k in range(args.calls + 5):
            obs = Observation(joints=JointState(zeros, zeros, zeros, 0.0), images={
                c: rng.integers(0, 255, (180, 320, 3), dtype=np.uint8) for c in policy.cameras})
            start = time.perf_counter()
            policy.infer(obs)
            if k >= 5:  # the first calls warm up
                times.append((time.perf_counter() - start) * 1000.0)
        row = {'checkpoint': path, 'threads': 1, 'calls': args.calls,
               'median_ms': round(float(np.median(times)), 2),
               'median_ci95_ms': median_interval(times),
               'p90_ms': round(float(np.quantile(times, 0.9)), 2)}
        if path.startswith('lerobot:'):  # the server's own time per chunk, without the wire
            server = policy._server_latency.samples[5:]  # noqa: SLF001 - after the warm-up
            row['server_median_ms'] = round(float(np.median(server)), 2)
            row['server_p90_ms'] = round(float(np.quantile(server, 0.9)), 2)
            policy.close()
        print(json.dumps(row), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog='bench/device_ladder.py')
    sub = parser.add_subparsers(dest='cmd', required=True)
    g = sub.add_parser('gen', help='demonstrations on the digital real, one shard per core')
    g.add_argument('--out', type=pathlib.Path, required=True)
    g.add_argument('--tasks', default='push_switch,pick_spoon')
    g.add_argument('--shards', type=int, default=16)
    g.add_argument('--episodes', type=int, default=44, help='attempts per shard')
    g.add_argument('--seed-offset', type=int, default=1000)
    g.add_argument('--max-steps', type=int, default=200)
    g.add_argument('--deadline', type=float, default=0, help='s; 0 = none')
    g.add_argument('--pin', action='store_true', help='one core per shard (taskset)')
    g.add_argument('--image-size', default='320x180', help='recorded WxH, px (both cameras)')
    e = sub.add_parser('eval', help='checkpoints on the digital real, blind, other looks')
    e.add_argument('--checkpoints', nargs='+', required=True, metavar='NAME=PATH')
    e.add_argument('--blind', nargs='*', default=[], metavar='NAME',
                   help='rungs also run with their images blanked')
    e.add_argument('--tasks', default='push_switch,pick_spoon')
    e.add_argument('--seeds', type=int, default=20, help='evaluation seeds per task (lab look)')
    e.add_argument('--seed-offset', type=int, default=0,
                   help='first evaluation seed (fresh seeds check a rung chosen on 0..N-1)')
    e.add_argument('--looks', type=int, default=8, help='other looks (VariantSet 1..N)')
    e.add_argument('--look-seed', type=int, default=0, help="VariantSet's seed")
    e.add_argument('--look-seeds', type=int, default=3, help='seeds per task and look')
    e.add_argument('--max-steps', type=int, default=200)
    e.add_argument('--world', default='digital_real', choices=('digital_real', 'mujoco'),
                   help="digital_real (the lab's hidden look and dynamics) or mujoco (the twin)")
    e.add_argument('--image-size', default='320x180', help='rendered WxH, px')
    e.add_argument('--workers', type=int, default=16)
    e.add_argument('--chunk', type=int, default=4)
    e.add_argument('--deadline', type=float, default=0, help='s; 0 = none')
    e.add_argument('--out', type=pathlib.Path, required=True, help='episodes .jsonl (resumed)')
    s = sub.add_parser('summary', help='tables with 95 % intervals')
    s.add_argument('episodes', nargs='+')
    s.add_argument('--json', default='')
    s.add_argument('--rungs', nargs='*', default=[], help='rows to print, in order')
    t = sub.add_parser('latency', help='CPU time per chunk, one thread')
    t.add_argument('checkpoints', nargs='+')
    t.add_argument('--calls', type=int, default=100)
    args = parser.parse_args(argv)
    return {'gen': gen, 'eval': evaluate, 'summary': summary,
            'latency': latency}[args.cmd](args)


if __name__ == '__main__':
    sys.exit(main())
