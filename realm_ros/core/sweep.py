"""A sweep's grid without ROS or a simulator: the config, its cells, and the summary.

A *cell* is one episode: (world, task, perturbation, intensity, episode index, policy). Its seed
is :func:`~realm_ros.core.evaluation.derive_seed` of (seed, task, perturbation, episode index),
the very seed ``paired-eval`` gives the same episode: every policy, every intensity and every
world of the grid faces the same initial states, and the twin's cells of a sweep are the sim
side of the paired evaluation with the same ``--seed``. A cell is a deterministic function of
its :class:`Cell`: the same grid gives the same records on any executor (``realm_ros/sweep``).

Records are :meth:`EpisodeResult.to_record` lines in the crash-safe
:class:`~realm_ros.core.evaluation.EpisodeLog`, keyed by ``(pair_id, world)``, where the world
is the record's backend (``mujoco``, ``physx``, ``mjx``, ``warp``): a re-run skips what is done.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from realm_ros.core import backends, metrics, perturbations, prediction, provenance
from realm_ros.core.errors import ConfigError, DataError
from realm_ros.core.evaluation import EvalConfig, PolicyEntry, derive_seed, scored
from realm_ros.core.tasks import TaskDef, get_task
from realm_ros.core.types import DEFAULT_MAX_STEPS, EpisodeSpec, record_role

#: Worlds a sweep runs: the MuJoCo twin, the twin on kit-less PhysX, and the twin batched in
#: MJX on a GPU (``--device gpu``; the scripted ladder only, run by a GPU batch worker), the
#: twin batched on MuJoCo Warp (``--device gpu`` for learned policies: cameras ray traced and
#: the policy run on the device, ``sweep/warp.py``), and the twin with another look.
#: Worlds that are the MuJoCo twin with another look: ``matched`` (visual matching, a
#: ``cameras match`` folder) and ``variants`` (SIMPLER's variant aggregation: episode k on
#: variant k mod N of :class:`~realm_ros.core.appearance.VariantSet`).
LOOK_WORLDS = ('matched', 'variants')
#: Worlds whose cells a GPU batch worker runs (a CPU worker runs the others): the registered
#: backends' GPU engines (``Backend.gpu_engines``).
BATCH_WORLDS = backends.gpu_engines()
#: The sweepable backends (``Backend.sweep``), their GPU engines, the looked worlds.
WORLDS = (*backends.SWEEPABLE, *BATCH_WORLDS, *LOOK_WORLDS)
#: Record fields that differ between two runs of the same cell (the wall clock).
TIMING_FIELDS = ('wall_time_s',)


@dataclasses.dataclass(frozen=True)
class SweepConfig:
    """What a sweep runs (``realm-ros sweep``; the flags are ``paired-eval``'s where shared)."""

    # The command's flags, not ROS parameters (so not in docs/parameters.md): docs/cli.md.
    tasks: tuple[str, ...] = ('pick_spoon',)
    #: policy[:skill] or label=policy[:key=value,...], as paired-eval.
    policies: tuple[str, ...] = ('scripted:0',)
    perturbations: tuple[str, ...] = ('Default',)  # REALM codes
    intensities: tuple[float, ...] = (1.0,)  # each in [0, 1]
    episodes_per_cell: int = 5  # seeds per (task, perturbation, intensity, policy)
    max_steps: int = DEFAULT_MAX_STEPS  # control steps per episode
    seed: int = 0  # initial states derive from it, as in paired-eval
    worlds: tuple[str, ...] = ('mujoco',)  # of WORLDS
    cameras: bool = False  # render every camera (vision policies get theirs anyway)
    execute_horizon: int = 0  # actions executed open loop per chunk (0 = the policy's)
    sim_params_file: str = ''  # identified twin parameters YAML
    visual_match_dir: str = ''  # world matched: a `realm-ros cameras match` folder
    twin_variants: int = 9  # world variants: how many looks (SIMPLER's 9)
    #: Policy labels run in the later worlds only, not in the first (the reference, as the
    #: real side): their reference score is predicted (:mod:`realm_ros.core.prediction`).
    twin_only: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ('tasks', 'policies', 'perturbations', 'intensities', 'worlds'):
            values = tuple(getattr(self, name))
            if not values:
                raise ConfigError(f'SweepConfig.{name} must not be empty')
            if len(set(values)) != len(values):
                raise ConfigError(f'SweepConfig.{name} has duplicates: {list(values)}')
            object.__setattr__(self, name, values)
        unknown = [w for w in self.worlds if w not in WORLDS]
        if unknown:
            raise ConfigError(f'SweepConfig.worlds: unknown {unknown}; choose from {list(WORLDS)}')
        if 'matched' in self.worlds and not self.visual_match_dir:
            raise ConfigError('SweepConfig.worlds: matched needs visual_match_dir '
                              '(--visual-match DIR, a `realm-ros cameras match` folder)')
        if 'variants' in self.worlds:
            from realm_ros.core.appearance import VariantSet
            VariantSet(self.twin_variants, self.seed)  # checks the count
        object.__setattr__(self, 'twin_only', tuple(self.twin_only))
        if self.twin_only:
            labels = [e.label for e in self.policy_entries()]
            unknown = [p for p in self.twin_only if p not in labels]
            if unknown:
                raise ConfigError(f'SweepConfig.twin_only: no policy labelled {unknown}; '
                                  f'labels: {labels}')
            if len(self.worlds) < 2:
                raise ConfigError('SweepConfig.twin_only: a policy run in the later worlds '
                                  'only needs two worlds (the first is the reference)')
            if len(labels) - len(set(self.twin_only)) < 2:
                raise ConfigError('SweepConfig.twin_only: at least two policies must run in '
                                  'every world, to fit the map that predicts the others')
        if self.execute_horizon < 0:
            raise ConfigError(f'SweepConfig.execute_horizon must be >= 0, got '
                              f'{self.execute_horizon}')
        # The checks paired-eval makes (names, compatible pairs, labels, ranges), said once.
        for intensity in self.intensities:
            try:
                EvalConfig(tasks=self.tasks, policies=self.policies,
                           perturbations=self.perturbations, intensity=float(intensity),
                           episodes_per_cell=self.episodes_per_cell, max_steps=self.max_steps,
                           seed=self.seed)
            except ConfigError as err:
                raise ConfigError(str(err).replace('EvalConfig.', 'SweepConfig.')) from None
        self.task_defs  # noqa: B018 - the names resolved to TaskDefs here, once, at the edge
        # A perturbation's delta needs its baseline: Default runs too (the command says so).
        object.__setattr__(self, 'perturbations', perturbations.with_baseline(self.perturbations))
        if 'mjx' in self.worlds and any(e.policy != 'scripted' for e in self.policy_entries()):
            raise ConfigError('SweepConfig.worlds: mjx (--device gpu) runs the scripted ladder '
                              'only (its policies are batched on the host); run other '
                              'policies in the mujoco world')

    def policy_entries(self) -> list[PolicyEntry]:
        """Return the parsed policy entries."""
        return [PolicyEntry.parse(p) for p in self.policies]

    @functools.cached_property
    def task_defs(self) -> tuple[TaskDef, ...]:
        """The tasks, resolved once (when the config is made): the plan passes these down,
        not names to look up again."""
        return tuple(get_task(name) for name in self.tasks)


@dataclasses.dataclass(frozen=True)
class Cell:
    """One episode of the grid, everything a worker needs to run it and nothing else.

    ``cameras`` are the cameras the world renders for this cell's policy; ``servers`` the
    policy-server addresses (``host:port``) a remote policy is spread over (a worker picks one
    by its index: the answer does not depend on which).
    """

    world: str
    entry: PolicyEntry
    spec: EpisodeSpec
    cameras: tuple[str, ...] = ()
    execute_horizon: int = 0
    sim_params_file: str = ''
    servers: tuple[str, ...] = ()
    #: A look on the MuJoCo twin: a visual-match folder, or a variant (index, count, seed) of
    #: :class:`~realm_ros.core.appearance.VariantSet`.
    visual_match_dir: str = ''
    variant: tuple[int, ...] = ()

    @property
    def backend(self) -> str:
        """The World backend that runs the cell (the MuJoCo twin for a looked world)."""
        return 'mujoco' if self.visual_match_dir or self.variant else self.world

    @property
    def key(self) -> tuple[str, str]:
        """The cell's key in the episode log: ``(pair_id, world)``."""
        return (self.spec.pair_id, self.world)

    @property
    def cell_id(self) -> str:
        """A readable unique name: ``world:pair_id``."""
        return f'{self.world}:{self.spec.pair_id}'


def pair_id(task: str, perturbation: str, intensity: float, k: int, label: str) -> str:
    """Return a cell's ``pair_id``: ``task/perturbation@intensity/k/label``."""
    return f'{task}/{perturbation}@{intensity:g}/{k}/{label}'


def plan_cells(config: SweepConfig,
               cameras_for: Callable[[PolicyEntry], tuple[str, ...]] | None = None,
               servers: Mapping[str, Sequence[str]] | None = None) -> list[Cell]:
    """Return the grid's cells in run order (world, task, perturbation, intensity, episode,
    policy); incompatible (task, perturbation) pairs are left out (:func:`skipped_cells`).

    Args:
        cameras_for: the cameras a policy entry needs (default: none; the command asks each
            policy's :attr:`~realm_ros.core.policy.Policy.needs`).
        servers: policy label -> server addresses shared by the workers.
    """
    entries = config.policy_entries()
    labels = {e.label for e in entries}
    unknown = sorted(set(servers or {}) - labels)
    if unknown:
        raise ConfigError(f'--servers: no policy labelled {unknown}; labels: {sorted(labels)}')
    cams = {e.label: (cameras_for(e) if cameras_for else ()) for e in entries}
    cells = []
    for world in config.worlds:
        for task_def in config.task_defs:
            task = task_def.name
            for code in config.perturbations:
                if perturbations.skip_reason(task_def, code):
                    continue
                for intensity in config.intensities:
                    for k in range(config.episodes_per_cell):
                        seed = derive_seed(config.seed, task, code, k)
                        for entry in entries:
                            if world == config.worlds[0] and entry.label in config.twin_only:
                                continue  # predicted, not run (SweepConfig.twin_only)
                            spec = EpisodeSpec(
                                task=task, seed=seed, policy=entry.label, perturbation=code,
                                intensity=float(intensity), max_steps=config.max_steps,
                                pair_id=pair_id(task, code, float(intensity), k, entry.label))
                            cells.append(Cell(
                                world=world, entry=entry, spec=spec, cameras=cams[entry.label],
                                execute_horizon=config.execute_horizon,
                                sim_params_file=config.sim_params_file,
                                servers=tuple((servers or {}).get(entry.label, ())),
                                **_look(config, world, k)))
    return cells


#: Sweep settings set by a flag other than ``--<setting>`` (provenance's messages name it).
FLAGS = {'variant': '--twin-variants'}


def settings_of(cells: Sequence[Cell]) -> Callable[[Mapping[str, Any]], dict[str, Any] | None]:
    """Return ``record -> made_by``: the settings that change a cell's episode
    (:mod:`realm_ros.core.provenance`; files by content, each read once); None for a record
    of no cell of ``cells``."""
    by_key = {c.key: c for c in cells}
    files: dict[str, Any] = {}

    def digest(path: str, of: Callable[[str], Any]) -> Any:
        if path not in files:
            files[path] = of(path)
        return files[path]

    def made_by(record: Mapping[str, Any]) -> dict[str, Any] | None:
        cell = by_key.get((record['pair_id'], record_role(record)))
        if cell is None:
            return None
        return {'policy': provenance.policy_setting(cell.entry.policy, cell.entry.args),
                'max_steps': cell.spec.max_steps, 'cameras': list(cell.cameras),
                'execute_horizon': cell.execute_horizon,
                'sim_params': digest(cell.sim_params_file, provenance.file_setting),
                'visual_match': digest(cell.visual_match_dir, provenance.dir_setting),
                'variant': list(cell.variant), 'code': provenance.code_version()}
    return made_by


def _look(config: SweepConfig, world: str, k: int) -> dict[str, Any]:
    """Return the look fields of world ``world``'s cell of episode ``k``."""
    if world == 'matched':
        return {'visual_match_dir': config.visual_match_dir}
    if world == 'variants':
        return {'variant': (k % config.twin_variants, config.twin_variants, config.seed)}
    return {}


def skipped_cells(config: SweepConfig) -> list[dict[str, str]]:
    """Return the (task, perturbation) pairs REALM cannot run, each with the reason."""
    reasons = [(t.name, c, perturbations.skip_reason(t, c))
               for t in config.task_defs for c in config.perturbations]
    return [{'task': t, 'perturbation': c, 'reason': why} for t, c, why in reasons if why]


def comparable(record: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``record`` without the fields that differ between runs (:data:`TIMING_FIELDS`)."""
    return {k: v for k, v in record.items() if k not in TIMING_FIELDS}


def _entry(records: Sequence[Mapping[str, Any]], seed: int) -> dict[str, Any]:
    prog = [float(r['progression']) for r in records]
    succ = [1.0 if r['success'] else 0.0 for r in records]
    return {'episodes': len(records),
            'progress': float(np.mean(prog)),
            'progress_ci': list(metrics.bootstrap_ci(prog, seed=seed)),
            'success': float(np.mean(succ)),
            'success_ci': list(metrics.bootstrap_ci(succ, seed=seed + 1000))}


def condition(record: Mapping[str, Any]) -> str:
    """Return a record's perturbation condition: ``code@intensity`` (``Default`` alone)."""
    code = str(record['perturbation'])
    return code if code == perturbations.DEFAULT else f'{code}@{float(record["intensity"]):g}'


def summarize_sweep(records: Sequence[Mapping[str, Any]], seed: int = 0,
                    skipped: Sequence[Mapping[str, str]] = ()) -> dict[str, Any]:
    """Return ``summary.json``'s content for a sweep, per world.

    Per world, as paired-eval's per-world columns: per policy (overall, per task, per
    perturbation condition) mean progression and success rate with bootstrap 95% CIs over
    episodes; a Bradley-Terry ranking from pairwise comparisons on the same (task,
    perturbation, intensity, seed); each condition's mean progression change vs Default and
    REALM's RMSD over (policy, task) cells. With several worlds, each later world's agreement
    with the first (:func:`_cross_world`) and its prediction of the first's per-policy mean
    progression (:func:`_predictions`). Infrastructure failures are counted, never scored.

    Raises:
        DataError: no scored record.
    """
    usable = scored(records)
    if not usable:
        raise DataError('no cell has finished with a score yet: nothing to summarise')
    worlds = list(dict.fromkeys(record_role(r) for r in usable))
    policies = list(dict.fromkeys(r['policy'] for r in usable))
    tasks = sorted({r['task'] for r in usable})
    conditions = list(dict.fromkeys(condition(r) for r in usable))
    out: dict[str, Any] = {
        'episodes': len(usable), 'infra_failures': len(records) - len(usable),
        'worlds': worlds, 'policies': policies, 'tasks': tasks, 'conditions': conditions,
        'per_world': {}, 'skipped': [dict(c) for c in skipped]}
    for world in worlds:
        mine = [r for r in usable if record_role(r) == world]

        def rows(subset: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
            found = []
            for k, policy in enumerate(policies):
                chosen = [r for r in subset if r['policy'] == policy]
                if chosen:
                    found.append({'policy': policy, **_entry(chosen, seed + k)})
            return found

        outcomes: dict[tuple, dict[str, float]] = {}
        for r in mine:
            key = (r['task'], r['perturbation'], float(r['intensity']), r['seed'])
            outcomes.setdefault(key, {})[r['policy']] = float(r['progression'])
        try:
            ranking = [dataclasses.asdict(x) for x in
                       metrics.bradley_terry(outcomes, n_resamples=200, seed=seed)]
        except DataError:
            ranking = []
        out['per_world'][world] = {
            'episodes': len(mine),
            'per_policy': rows(mine),
            'per_task': {t: rows([r for r in mine if r['task'] == t]) for t in tasks},
            'per_condition': {c: rows([r for r in mine if condition(r) == c])
                              for c in conditions},
            'ranking': ranking,
            'perturbations': _deltas(mine),
        }
    out['agreement'] = _cross_world(out['per_world'], worlds)
    out['prediction'] = _predictions(usable, worlds)
    return out


def _predictions(usable: Sequence[Mapping[str, Any]], worlds: Sequence[str]) -> dict[str, Any]:
    """Each later world's prediction of the first's per-policy mean progression
    (:func:`prediction.report`, the first world in the real role): leave-one-policy-out, and
    for a policy with no episode in the first world from all the others."""
    out: dict[str, Any] = {}
    progressions: dict[tuple[str, str], list[float]] = {}
    for r in usable:
        progressions.setdefault((record_role(r), r['policy']), []).append(
            float(r['progression']))
    for world in worlds[1:]:
        policies = list(dict.fromkeys(p for w, p in progressions if w == world))
        out[f'{world} vs {worlds[0]}'] = prediction.report(
            {p: (progressions[(world, p)], progressions.get((worlds[0], p))) for p in policies})
    return out


def _cross_world(per_world: Mapping[str, Any], worlds: Sequence[str]) -> dict[str, Any]:
    """Each later world against the first over per-policy mean progression (Pearson r,
    MMRV, mean gap): the first world's scores take the ``real`` role, as the reference whose
    magnitudes MMRV weighs."""
    out: dict[str, Any] = {}
    if len(worlds) < 2:
        return out
    reference = {e['policy']: e['progress'] for e in per_world[worlds[0]]['per_policy']}
    for world in worlds[1:]:
        other = {e['policy']: e['progress'] for e in per_world[world]['per_policy']}
        shared = [p for p in reference if p in other]
        if len(shared) >= 2:
            out[f'{world} vs {worlds[0]}'] = metrics.agreement(
                sim=[other[p] for p in shared], real=[reference[p] for p in shared]).as_dict()
    return out


def _deltas(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Each condition's mean progression change vs Default over (policy, task) cells, and
    REALM's RMSD."""
    cells: dict[tuple[str, str, str], list[float]] = {}
    for r in records:
        cells.setdefault((condition(r), r['policy'], r['task']), []).append(
            float(r['progression']))
    means = {k: float(np.mean(v)) for k, v in cells.items()}
    out = {}
    for cond in dict.fromkeys(k[0] for k in means):
        if cond == perturbations.DEFAULT:
            continue
        pert, default = [], []
        for (c, policy, task), value in means.items():
            if c == cond and ('Default', policy, task) in means:
                pert.append(value)
                default.append(means[('Default', policy, task)])
        if pert:
            out[cond] = {'delta': float(np.mean(np.array(pert) - np.array(default))),
                         'rmsd': metrics.rmsd_vs_default(pert, default), 'cells': len(pert)}
    return out


def format_sweep_table(summary: Mapping[str, Any]) -> str:
    """Return the plain-text summary printed at the end of a sweep."""
    lines: list[str] = []
    for world, w in summary['per_world'].items():
        lines.append(f'{world}: {w["episodes"]} episodes')
        header = f'{"policy":<16} {"n":>5} {"progress":>9} {"95% CI":>15} {"success":>8} ' \
                 f'{"BT score":>9}'
        lines += [header, '-' * len(header)]
        bt = {r['policy']: r['score'] for r in w['ranking']}
        for e in w['per_policy']:
            ci = e['progress_ci']
            lines.append(f'{e["policy"]:<16} {e["episodes"]:>5} {e["progress"]:>9.3f} '
                         f'{f"[{ci[0]:.2f}, {ci[1]:.2f}]":>15} {e["success"]:>8.2f} '
                         f'{_fmt(bt.get(e["policy"])):>9}')
        if len(summary['tasks']) > 1:
            lines.append('per task (mean progression per policy):')
            for task, entries in w['per_task'].items():
                lines.append(f'  {task:<28} ' + '  '.join(
                    f'{e["policy"]} {e["progress"]:.3f}' for e in entries))
        if w['perturbations']:
            lines.append('perturbation deltas vs Default (mean progression change; RMSD):')
            for cond, d in w['perturbations'].items():
                lines.append(f'  {cond:<16} {_fmt(d["delta"])} ({_fmt(d["rmsd"])})')
        lines.append('')
    for name, a in summary.get('agreement', {}).items():
        # One core.metrics.Metric per figure (its report column's name: the worlds are not
        # real and sim), as paired-eval's table prints them.
        shown = [m for m in metrics.METRICS.values() if m.name in a]
        lines.append(f'agreement {name} (per-policy mean progression): '
                     + ', '.join(f'{m.column or m.label} = {m.with_interval(a)}'
                                 for m in shown))
    for name, section in summary.get('prediction', {}).items():
        world, _, reference = name.partition(' vs ')
        lines.append(f'{reference} mean progression predicted from {world} (a map fitted on the '
                     'other policies):')
        lines += prediction.format_lines(section)
    for cell in summary.get('skipped', ()):
        lines.append(f'skipped {cell["task"]} / {cell["perturbation"]}: {cell["reason"]}')
    if summary.get('infra_failures'):
        lines.append(f'{summary["infra_failures"]} episode(s) ended in infrastructure failures '
                     'and are not scored (a re-run retries them)')
    retries = summary.get('retries') or {}
    if retries:
        lines.append(f'retried: {retries.get("worker_lost", 0)} cell(s) whose worker was lost, '
                     f'{retries.get("after_infra_failure", 0)} after an infrastructure failure '
                     f'of an earlier run; {retries.get("resumed", 0)} found done and skipped')
    return '\n'.join(lines).rstrip()


def _fmt(value: float | None) -> str:
    return 'n/a' if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f'{value:.3f}'
