"""The GPU batch worker of a sweep (world ``mjx``) and the CPU/GPU screening helpers.

:class:`BatchRunner` is a sweep worker for the ``mjx`` world: it runs the cells it is given in
MJX batches of up to ``batch`` worlds (``backends/mujoco/mjx_sweep.py``; needs ``mujoco-mjx``
and ``jax``), cells grouped by scene geometry, the scripted ladder's policies batched on the
host. It is what ``realm-ros sweep --device gpu`` runs, in process or as a Ray actor holding a
GPU (``num_gpus=1``).

:func:`plan_grid`, :func:`run_cpu`, :func:`run_gpu` and :func:`agreement` are the one-task
screening helpers ``bench/bench_sweep_gpu.py`` and ``bench/sweep_variant_check.py`` compare the
GPU with CPU MuJoCo with (per-cell joint traces, divergence before first contact).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from realm_ros.core import perturbations
from realm_ros.core.errors import BackendUnavailable, ConfigError
from realm_ros.core.types import EpisodeResult, EpisodeSpec


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


def robot_contact(privileged: Any) -> bool:
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
        if not first and robot_contact(obs.privileged):
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


#: Perturbations ``--device gpu`` refuses: those whose kinds include ``scene`` change the
#: scene's geometry per seed (V-SC's distractors, SB-NOUN's object, SB-VRB's receiver, VB-MOBJ's
#: morph, VSB-NOBJ's new object), so each cell would be its own MJX model with its own
#: compilation (minutes each).
GPU_REFUSED = tuple(code for code, p in perturbations.PERTURBATIONS.items() if 'scene' in p.kinds)


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
            trace: bool = False, progress: Callable[[int], None] | None = None,
            skills: Sequence[int] | None = None
            ) -> tuple[list[dict], list[Trace | None], dict[str, float]]:
    """Run ``cells`` in MJX batches (cells grouped by scene geometry); records and traces in
    cell order, and the steppers' timing summed. ``skills``: a scripted rung per cell (else
    ``skill`` for all)."""
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
                if first[i] is None and robot_contact(obs.privileged):
                    first[i] = k

            steppers: list[Any] = []

            def factory(ws: Sequence[MujocoWorld], steppers: list = steppers) -> Any:
                steppers.append(mjx_sweep.MjxStepper(ws, iterations, ls_iterations))
                return steppers[-1]

            results: list[EpisodeResult] = run_batch(
                [worlds[i] for i in idx],
                [ScriptedPolicy(skill=skills[i] if skills else skill) for i in idx],
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


def require_mjx() -> None:
    """Raise :class:`BackendUnavailable` naming the ``gpu`` extra unless MJX and JAX import."""
    missing = [m for m in ('jax', 'mujoco.mjx') if _spec(m) is None]
    if missing:
        raise BackendUnavailable(f'--device gpu needs {" and ".join(missing)}: pip install '
                                 "'realm_ros[gpu]' (mujoco-mjx, jax; a GPU needs jax[cuda13])")


def _spec(module: str) -> Any:
    import importlib.util
    try:
        return importlib.util.find_spec(module)
    except ModuleNotFoundError:
        return None


class BatchRunner:
    """A sweep worker for the ``mjx`` world: one :func:`run_gpu`-style batch per call.

    Each cell's policy is its scripted rung (``scripted:k``); records have backend ``mjx``.
    """

    def __init__(self, batch: int = 1024, iterations: int | None = None,
                 ls_iterations: int | None = None) -> None:
        require_mjx()
        self.batch = batch
        self.iterations = iterations
        self.ls_iterations = ls_iterations

    def run_cells(self, cells: Sequence[Any]) -> list[dict]:
        """Run ``cells`` (``core.sweep.Cell`` of world ``mjx``); one record per cell, in order."""
        from realm_ros.policies.scripted import skill_level

        for c in cells:
            if c.world != 'mjx' or c.entry.policy != 'scripted':
                raise ConfigError(f'the GPU batch worker runs scripted cells of world mjx, got '
                                  f'{c.entry.policy!r} in {c.world!r}')
        records, _, _ = run_gpu([c.spec for c in cells], 0, self.batch, self.iterations,
                                self.ls_iterations,
                                skills=[skill_level(c.entry.args.get('skill', 0)) for c in cells])
        return records

    def close(self) -> None:
        """Nothing is kept between calls (each batch builds its stepper)."""


def solver_iterations(text: str) -> tuple[int | None, int | None]:
    """Parse ``--solver-iterations`` (``N/M``: MJX solver / line-search iterations; '' = the
    model's own)."""
    if not text:
        return None, None
    try:
        it, ls = (int(v) for v in text.split('/'))
    except ValueError:
        raise ConfigError(f'--solver-iterations must be N/M (e.g. 4/8), got {text!r}') from None
    if min(it, ls) <= 0:
        raise ConfigError(f'--solver-iterations must be > 0, got {min(it, ls)}')
    return it, ls
