"""``realm-ros sweep``: a perturbation x seed grid of whole episodes of one task, on CPU or GPU.

Each cell is one episode: ``(--task, perturbation, seed)`` with the scripted expert (``--skill``
picks a rung) in the MuJoCo twin, scored with REALM's tiered progression, written as the same
records as ``episode``/``ladder`` (``--jsonl``). ``--device cpu`` runs the grid episode by
episode through ``run_episode`` (``--workers N``: N processes); ``--device gpu`` runs it in MJX
batches of up to ``--batch`` worlds (``backends/mujoco/mjx_sweep.py``; needs ``mujoco-mjx``
and ``jax``), cells grouped by scene geometry. ``--compare-cpu`` also runs the CPU path and
prints per cell how far the two agree (same success, same progression, joint divergence before
the first contact). Incompatible task/perturbation pairs are skipped with REALM's reason.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any, Callable, Sequence

import numpy as np

from realm_ros.commands import require_positive
from realm_ros.core import perturbations, tasks
from realm_ros.core.errors import ConfigError
from realm_ros.core.types import EpisodeResult, EpisodeSpec

DEVICES = ('cpu', 'gpu')


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Task, grid, policy rung, device and batch."""
    parser.add_argument('--task', required=True, choices=sorted(tasks.TASKS), help='REALM task')
    parser.add_argument('--seeds', type=int, default=8, help='seeds 0..N-1 per perturbation')
    parser.add_argument('--perturbations', default='Default',
                        help='comma-separated REALM codes (Default, B-HOBJ, VB-POSE, ...) or '
                             '"all"')
    parser.add_argument('--intensity', type=float, default=1.0, help='perturbation intensity')
    parser.add_argument('--skill', default='0', help='scripted ladder rung: 0..3 or a name')
    parser.add_argument('--max-steps', type=int, default=400, help='control steps per episode')
    parser.add_argument('--device', default='cpu', choices=DEVICES,
                        help='cpu: run_episode per cell; gpu: MJX batches (mujoco-mjx + jax)')
    parser.add_argument('--workers', type=int, default=1,
                        help='cpu: processes running cells in parallel')
    parser.add_argument('--batch', type=int, default=1024, help='gpu: worlds per MJX batch')
    parser.add_argument('--solver-iterations', default='',
                        help='gpu: MJX solver iterations/line-search iterations, e.g. 4/8 '
                             "(default: the twin's 100/50)")
    parser.add_argument('--compare-cpu', action='store_true',
                        help='gpu: also run the grid on the CPU path and print the agreement')
    parser.add_argument('--jsonl', default='', help='write one record per episode here')
    parser.add_argument('--no-progress', action='store_true', help='no progress bar')


def plan_grid(task: str, codes: Sequence[str], seeds: int, intensity: float, max_steps: int,
              skill: int) -> tuple[list[EpisodeSpec], dict[str, str]]:
    """Return the grid's cells (perturbation-major, seeds 0..N-1) and the skipped codes with
    REALM's reason."""
    from realm_ros.policies.scripted import SKILLS

    cells, skipped = [], {}
    for code in codes:
        if code not in perturbations.PERTURBATIONS:
            raise ConfigError(f'--perturbations: unknown code {code!r}; choose from '
                              f'{list(perturbations.PERTURBATIONS)}')
        reason = perturbations.skip_reason(task, code)
        if reason:
            skipped[code] = reason
            continue
        cells += [EpisodeSpec(task=task, seed=s, perturbation=code, intensity=intensity,
                              max_steps=max_steps, policy=f'scripted-{SKILLS[skill].name}')
                  for s in range(seeds)]
    return cells, skipped


#: Per-episode trace for the agreement: (arm q per step (K, 7), first step with a robot
#: contact or None).
Trace = tuple[np.ndarray, int | None]


def _robot_contact(privileged: Any) -> bool:
    return any(c.get('robot') for c in privileged.get('contacts', {}).values())


def _cpu_cell(args: tuple[EpisodeSpec, int, bool]) -> tuple[dict, Trace | None]:
    """Run one cell with run_episode in a MujocoWorld of its own (building one costs about 5 ms,
    a small part of an episode): its record and, with ``trace``, its :data:`Trace`."""
    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.episode import run_episode
    from realm_ros.core.policy import standard_chain
    from realm_ros.policies.scripted import ScriptedPolicy

    spec, skill, trace = args
    qs: list[np.ndarray] = []
    first: list[int] = []

    def on_step(k: int, obs: Any, action: Any, progress: Any) -> None:
        qs.append(obs.joints.position)
        if not first and _robot_contact(obs.privileged):
            first.append(k)

    world = MujocoWorld(WorldConfig(task=spec.task, cameras=(), camera_rate_hz=0.0))
    try:
        result = run_episode(world, standard_chain(ScriptedPolicy(skill=skill), execute=8), spec,
                             on_step=on_step if trace else None)
    finally:
        world.close()
    return result.to_record(), (np.array(qs), first[0] if first else None) if trace else None


def run_cpu(cells: Sequence[EpisodeSpec], skill: int, workers: int = 1, trace: bool = False,
            progress: Callable[[int], None] | None = None
            ) -> tuple[list[dict], list[Trace | None]]:
    """Run ``cells`` through run_episode, in ``workers`` processes; records and traces in
    cell order."""
    jobs = [(c, skill, trace) for c in cells]
    results: list[tuple[dict, Trace | None]] = []
    if workers <= 1:
        for job in jobs:
            results.append(_cpu_cell(job))
            if progress is not None:
                progress(1)
    else:
        import multiprocessing

        with multiprocessing.get_context('spawn').Pool(workers) as pool:
            for result in pool.imap(_cpu_cell, jobs):
                results.append(result)
                if progress is not None:
                    progress(1)
    return [r for r, _ in results], [t for _, t in results]


#: Perturbations ``--device gpu`` refuses: they change the scene's geometry per seed (V-SC's
#: distractors, SB-NOUN's object, SB-VRB's receiver, VB-MOBJ's morph, VSB-NOBJ's new object),
#: so each cell would be its own MJX model with its own compilation (minutes each).
GPU_REFUSED = ('V-SC', 'SB-NOUN', 'SB-VRB', 'VB-MOBJ', 'VSB-NOBJ')


def refuse_on_gpu(cells: Sequence[EpisodeSpec]) -> None:
    """Raise :class:`ConfigError` for cells ``--device gpu`` does not run (:data:`GPU_REFUSED`)."""
    bad = sorted({c.perturbation for c in cells if c.perturbation in GPU_REFUSED})
    if bad:
        raise ConfigError(
            f'--device gpu does not run {", ".join(bad)}: these change the scene geometry per '
            'seed, so each cell would compile its own MJX model; run them with --device cpu. '
            'The GPU runs Default, B-HOBJ, VB-POSE and the visual/semantic codes (V-AUG, '
            "V-VIEW, V-LIGHT, S-*), whose physics is the default scene's")


def run_gpu(cells: Sequence[EpisodeSpec], skill: int, batch: int = 1024,
            iterations: int | None = None, ls_iterations: int | None = None,
            trace: bool = False, progress: Callable[[int], None] | None = None
            ) -> tuple[list[dict], list[Trace | None], dict[str, float]]:
    """Run ``cells`` in MJX batches (cells grouped by scene geometry); records and traces in
    cell order, and the steppers' timing summed."""
    from realm_ros.backends.mujoco import mjx_sweep
    from realm_ros.backends.mujoco.batch import run_batch
    from realm_ros.backends.mujoco.mjx_rollout import enable_compilation_cache
    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.core.config import WorldConfig
    from realm_ros.policies.scripted import ScriptedPolicy, infer_batch

    refuse_on_gpu(cells)
    enable_compilation_cache()
    config = WorldConfig(task=cells[0].task, cameras=(), camera_rate_hz=0.0)
    worlds = [MujocoWorld(config) for _ in cells]
    groups: dict[tuple, list[int]] = {}
    for i, (w, spec) in enumerate(zip(worlds, cells)):
        w.reset(spec)
        groups.setdefault(mjx_sweep.structure_key(w), []).append(i)
    records: list[Any] = [None] * len(cells)
    traces: list[Trace | None] = [None] * len(cells)
    timing = {'compile': 0.0, 'device': 0.0, 'transfer': 0.0, 'calls': 0, 'groups': 0}
    for members in groups.values():
        for lo in range(0, len(members), batch):
            idx = members[lo:lo + batch]
            qs: list[list[np.ndarray]] = [[] for _ in idx]
            first: list[int | None] = [None] * len(idx)

            def on_step(i: int, k: int, obs: Any, qs: list = qs, first: list = first) -> None:
                qs[i].append(obs.joints.position)
                if first[i] is None and _robot_contact(obs.privileged):
                    first[i] = k

            steppers: list[Any] = []

            def factory(ws: Sequence[MujocoWorld], steppers: list = steppers) -> Any:
                steppers.append(mjx_sweep.MjxStepper(ws, iterations, ls_iterations))
                return steppers[-1]

            results: list[EpisodeResult] = run_batch(
                [worlds[i] for i in idx], [ScriptedPolicy(skill=skill) for _ in idx],
                [cells[i] for i in idx], factory, on_step=on_step if trace else None,
                progress=progress, infer_batch=infer_batch)
            for k, i in enumerate(idx):
                records[i] = results[k].to_record()
                traces[i] = (np.array(qs[k]), first[k]) if trace else None
            for key, value in steppers[0].timing.items():
                timing[key] += value
            timing['groups'] += 1
    return records, traces, timing


def agreement(cpu: Sequence[dict], gpu: Sequence[dict], cpu_traces: Sequence[Trace | None],
              gpu_traces: Sequence[Trace | None]) -> dict[str, dict[str, float]]:
    """Per perturbation: fraction of cells with the same success and the same progression
    (tier), and the largest arm joint difference (rad) before either run's first robot
    contact (the median and maximum over cells)."""
    out: dict[str, dict[str, Any]] = {}
    for c, g, tc, tg in zip(cpu, gpu, cpu_traces, gpu_traces):
        row = out.setdefault(c['perturbation'], {'n': 0, 'same_success': 0,
                                                 'same_progression': 0, 'div': []})
        row['n'] += 1
        row['same_success'] += int(c['success'] == g['success'])
        row['same_progression'] += int(abs(c['progression'] - g['progression']) < 1e-9)
        if tc is not None and tg is not None:
            contacts = [f for f in (tc[1], tg[1]) if f is not None]
            n = min(len(tc[0]), len(tg[0]), *(f - 1 for f in contacts))
            if n > 0:
                row['div'].append(float(np.max(np.abs(tc[0][:n] - tg[0][:n]))))
    return {code: {'n': r['n'], 'same_success': r['same_success'] / r['n'],
                   'same_progression': r['same_progression'] / r['n'],
                   'precontact_div_median_rad': float(np.median(r['div'])) if r['div'] else
                   float('nan'),
                   'precontact_div_max_rad': float(np.max(r['div'])) if r['div'] else
                   float('nan')}
            for code, r in out.items()}


def summary(records: Sequence[dict]) -> dict[str, dict[str, float]]:
    """Per perturbation: episodes, success rate, mean progression, world-steps."""
    out: dict[str, dict[str, float]] = {}
    for r in records:
        row = out.setdefault(r['perturbation'], {'n': 0, 'success': 0.0, 'progression': 0.0,
                                                 'steps': 0})
        row['n'] += 1
        row['success'] += r['success']
        row['progression'] += r['progression']
        row['steps'] += r['steps']
    for row in out.values():
        row['success'] /= row['n']
        row['progression'] /= row['n']
    return out


def _bar(total: int, enabled: bool) -> Any:
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit='ep', desc='sweep')


def _solver(text: str) -> tuple[int | None, int | None]:
    if not text:
        return None, None
    try:
        it, ls = (int(v) for v in text.split('/'))
    except ValueError:
        raise ConfigError(f'--solver-iterations must be N/M (e.g. 4/8), got {text!r}') from None
    require_positive('--solver-iterations', min(it, ls))
    return it, ls


def run(args: argparse.Namespace) -> int:
    """Run the grid, print the per-cell table and the throughput; write --jsonl."""
    from realm_ros.policies.scripted import skill_level

    os.environ.setdefault('MUJOCO_GL', 'disable')
    require_positive('--seeds', args.seeds)
    require_positive('--max-steps', args.max_steps)
    require_positive('--workers', args.workers)
    require_positive('--batch', args.batch)
    iterations, ls_iterations = _solver(args.solver_iterations)
    codes = list(perturbations.PERTURBATIONS) if args.perturbations == 'all' else [
        c.strip() for c in args.perturbations.split(',') if c.strip()]
    skill = skill_level(args.skill)
    cells, skipped = plan_grid(args.task, codes, args.seeds, args.intensity, args.max_steps,
                               skill)
    for code, reason in skipped.items():
        print(f'skipped {code}: {reason}')
    if not cells:
        raise ConfigError('--perturbations: every code is incompatible with this task')
    trace = args.compare_cpu
    bar = _bar(len(cells), not args.no_progress)
    tick = bar.update if bar is not None else None
    start = time.perf_counter()
    timing: dict[str, float] = {}
    if args.device == 'gpu':
        records, traces, timing = run_gpu(cells, skill, args.batch, iterations, ls_iterations,
                                          trace, tick)
    else:
        records, traces = run_cpu(cells, skill, args.workers, trace, tick)
    wall = time.perf_counter() - start
    if bar is not None:
        bar.close()
    if args.jsonl:
        with open(args.jsonl, 'w') as f:
            for r in records:
                f.write(json.dumps(r) + '\n')
    table = summary(records)
    agree = None
    if args.compare_cpu:
        cpu_records, cpu_traces = run_cpu(cells, skill, args.workers, True)
        agree = agreement(cpu_records, records, cpu_traces, traces)
    print(f'\n{args.task}: {len(cells)} episodes ({args.device}), scripted-'
          f'{cells[0].policy.split("-", 1)[1]}, max {args.max_steps} steps\n')
    head = '| perturbation | episodes | success | mean progression |'
    rule = '|---|---|---|---|'
    if agree:
        head += ' same success | same progression | joint divergence before contact |'
        rule += '---|---|---|'
    print(head)
    print(rule)
    for code, row in table.items():
        line = f'| {code} | {row["n"]} | {row["success"]:.2f} | {row["progression"]:.2f} |'
        if agree:
            a = agree[code]
            line += (f' {a["same_success"]:.2f} | {a["same_progression"]:.2f} | '
                     f'{a["precontact_div_max_rad"]:.2e} rad |')
        print(line)
    world_steps = sum(r['steps'] for r in records)
    print(f'\n{world_steps} world-steps in {wall:.1f} s: {world_steps / wall:.0f} world-steps/s, '
          f'{len(records) / wall:.2f} episodes/s')
    if timing:
        print(f'GPU: {timing["groups"]} batches, first call (compile) {timing["compile"]:.1f} s, '
              f'device {timing["device"]:.1f} s over {timing["calls"]} calls')
    return 0
