"""Paired evaluation without ROS: the plan of paired episodes, the records, the summary.

A *pair* is one episode spec (task, perturbation, intensity, seed, policy, sampled initial
state) run once in the real world and once in the twin. Seeds depend on (task, perturbation,
episode index) but not on the policy, so every policy faces the same initial states: that is
what makes per-spec pairwise comparisons (Bradley-Terry) fair.

Records are one JSON line per finished episode in ``episodes.jsonl``, appended and flushed as
each episode ends, so an interrupted run keeps what it finished and a re-run resumes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import pathlib
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from realm_ros.core import backends, metrics, perturbations, prediction, tasks
from realm_ros.core.config import field, from_mapping, load_yaml, renamed, ros_parameters
from realm_ros.core.errors import ConfigError, DataError
from realm_ros.core.provenance import MADE_BY
from realm_ros.core.types import (
    DEFAULT_MAX_STEPS,
    REAL,
    SIM,
    EpisodeSpec,
    json_default,
    record_role,
)

WORLDS = (REAL, SIM)


@dataclasses.dataclass(frozen=True)
class PolicyEntry:
    """A policy under evaluation: a label for reports, a registry name and its arguments."""

    label: str
    policy: str
    args: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> 'PolicyEntry':
        """Parse ``policy[:skill]`` or ``label=policy[:k=v,k=v]``.

        ``scripted:2`` -> label ``scripted-2``, policy ``scripted``, ``{'skill': 2}``;
        ``scripted:good`` -> label ``scripted-good``, ``{'skill': 'good'}`` (a skill by name);
        ``pi05=openpi:host=gpu-box,port=8000`` -> label ``pi05`` with those arguments.
        """
        label, _, rest = text.partition('=') if '=' in text.split(':')[0] else ('', '', text)
        name, _, arg_text = rest.partition(':')
        if not name:
            raise ConfigError(f'policy entry {text!r}: expected policy[:skill] or '
                              'label=policy[:key=value,...]')
        args: dict[str, Any] = {}
        if arg_text and '=' not in arg_text:
            skill = _number(arg_text)
            if isinstance(skill, str):
                # A skill by name (``scripted:good``), as ``episode --skill good`` and the
                # command line's ``--policies`` take it: checked by building the policy.
                from realm_ros.core.policy import policy_class, policy_needs, policy_settings
                if 'skill' not in policy_settings(policy_class(name)):
                    raise ConfigError(f'policy entry {text!r}: bad argument {arg_text!r} (a '
                                      'skill number or name, or key=value pairs)')
                try:
                    policy_needs(name, skill=skill)
                except ConfigError as err:
                    raise ConfigError(f'policy entry {text!r}: {err}') from None
            args['skill'] = skill
            label = label or f'{name}-{arg_text}'
        elif arg_text:
            for item in arg_text.split(','):
                key, sep, value = item.partition('=')
                if not sep or not key:
                    raise ConfigError(f'policy entry {text!r}: bad argument {item!r}')
                args[key] = _number(value)
        return cls(label=label or name, policy=name, args=args)


def _number(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """What a paired evaluation runs (``config/paired_eval.yaml``; CLI flags override)."""

    tasks: tuple[str, ...] = field(('pick_spoon',), 'tasks to evaluate')
    policies: tuple[str, ...] = field(
        ('scripted:0', 'scripted:1', 'scripted:2', 'scripted:3'),
        'policies: policy[:skill] or label=policy[:key=value,...]')
    twin_only: tuple[str, ...] = field(
        (), 'policy labels run in the twin only (no real episode): their real mean progression '
            'is predicted from the policies run in both worlds (docs/evaluation.md)')
    perturbations: tuple[str, ...] = field(('Default',), 'perturbation codes (REALM)')
    intensity: float = field(1.0, 'perturbation intensity in [0, 1]')
    episodes_per_cell: int = field(5, 'episodes per (task, perturbation, policy) cell')
    max_steps: int = field(DEFAULT_MAX_STEPS, 'control steps per episode (REALM: 800)')
    seed: int = field(0, 'seed of the whole evaluation (initial states derive from it)')
    real: str = field('digital_real', 'real world: digital_real (the simulated stand-in) or '
                      'franka (the arm)', choices=backends.REAL)
    sim: str = field('mujoco', 'simulated twin', choices=backends.SIM)
    sim_params_file: str = field('', 'identified twin parameters (friction, armature) YAML')
    real_dynamics_file: str = field('', 'digital real: hidden dynamics YAML')
    real_appearance_file: str = field(
        '', "digital real: hidden appearance YAML ('' = the twin's look)")
    visual_match_dir: str = field(
        '', "the twin: a `realm-ros cameras match` folder ('' = no visual matching)")
    cameras: bool = field(False, 'render cameras (needed by vision policies; slower)')
    concurrent: bool = field(True, 'run the real and sim episode of a pair at the same time')
    until_decided: float = field(
        0.0, 'choose each next pair where it most reduces the uncertainty of the real ranking '
             'and stop when every adjacent pair of policies is ordered with this probability, '
             'in (0.5, 1); 0 = the fixed plan (episodes_per_cell of every cell)')
    budget: int = field(0, 'with until_decided: at most this many pairs (0 = four times the '
                           'fixed plan)')
    allocation: str = field('adaptive', 'with until_decided: adaptive, or uniform (round-robin '
                            'over policies, the fixed design stopped by the same rule)',
                            choices=('adaptive', 'uniform'))

    def __post_init__(self) -> None:
        for name in ('tasks', 'policies', 'perturbations'):
            values = tuple(getattr(self, name))
            if not values:
                raise ConfigError(f'EvalConfig.{name} must not be empty')
            if len(set(values)) != len(values):
                raise ConfigError(f'EvalConfig.{name} has duplicates: {list(values)}')
            object.__setattr__(self, name, values)
        if self.episodes_per_cell < 1:
            raise ConfigError('EvalConfig.episodes_per_cell must be >= 1')
        if self.max_steps < 1:
            raise ConfigError('EvalConfig.max_steps must be >= 1')
        if not 0.0 <= self.intensity <= 1.0:
            raise ConfigError('EvalConfig.intensity must be in [0, 1]')
        if self.until_decided and not 0.5 < self.until_decided < 1.0:
            raise ConfigError('EvalConfig.until_decided must be 0 (off) or a probability in '
                              f'(0.5, 1), got {self.until_decided}')
        if self.budget < 0:
            raise ConfigError(f'EvalConfig.budget must be >= 0, got {self.budget}')
        object.__setattr__(self, 'real', renamed(self.real, 'real'))
        for name in ('real', 'sim', 'allocation'):
            choices = next(f for f in dataclasses.fields(self) if f.name == name).metadata[
                'choices']
            if getattr(self, name) not in choices:
                raise ConfigError(f'EvalConfig.{name} = {getattr(self, name)!r} is not allowed; '
                                  f'choose one of {list(choices)}')
        runnable = 0
        for task in self.tasks:
            _named('tasks', tasks.get_task, task)  # unknown name: ConfigError listing the tasks
            for code in self.perturbations:
                # Unknown code: ConfigError. Incompatible pairs are skipped (skipped_cells).
                runnable += not _named('perturbations', perturbations.skip_reason, task, code)
        if not runnable:
            raise ConfigError(
                'EvalConfig.perturbations: every (task, perturbation) pair is incompatible in '
                'REALM: '
                + '; '.join(perturbations.skip_reason(t, c) for t in self.tasks
                            for c in self.perturbations))
        labels = [e.label for e in _named('policies', self.policy_entries)]
        if len(set(labels)) != len(labels):
            raise ConfigError(f'EvalConfig.policies: duplicate labels {labels}')
        object.__setattr__(self, 'twin_only', tuple(self.twin_only))
        if self.twin_only:
            unknown = [p for p in self.twin_only if p not in labels]
            if unknown:
                raise ConfigError(f'EvalConfig.twin_only: no policy labelled {unknown}; '
                                  f'labels: {labels}')
            if len(labels) - len(set(self.twin_only)) < 2:
                raise ConfigError('EvalConfig.twin_only: at least two policies must run in both '
                                  'worlds, to fit the map that predicts the others')
            if self.until_decided:
                raise ConfigError('EvalConfig.twin_only: until_decided ranks the real world, '
                                  'which twin-only policies do not run in; use one or the other')
        # A perturbation's delta needs its baseline: Default runs too (the commands say so).
        object.__setattr__(self, 'perturbations', perturbations.with_baseline(self.perturbations))

    def policy_entries(self) -> list[PolicyEntry]:
        """Return the parsed policy entries."""
        return [PolicyEntry.parse(p) for p in self.policies]

    @classmethod
    def from_yaml(cls, path: str | pathlib.Path, **overrides: Any) -> 'EvalConfig':
        """Load the YAML config and apply non-None ``overrides`` (CLI flags)."""
        # The same file serves as the evaluator node's ROS parameter file.
        data = ros_parameters(load_yaml(path))
        data.update({k: v for k, v in overrides.items() if v is not None})
        return from_mapping(cls, data, where=str(path))


def _named(name: str, check: Any, *args: Any) -> Any:
    """Run ``check(*args)``; a ConfigError it raises is prefixed with ``EvalConfig.<name>``."""
    try:
        return check(*args)
    except ConfigError as err:
        raise ConfigError(f'EvalConfig.{name}: {err}') from None


def derive_seed(*parts: Any) -> int:
    """Return a stable 31-bit seed from ``parts`` (independent of Python's hash salt)."""
    digest = hashlib.sha256('/'.join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:4], 'little') & 0x7FFFFFFF


def skipped_cells(config: EvalConfig) -> list[dict[str, str]]:
    """Return the (task, perturbation) cells REALM cannot run, each with the reason."""
    out = []
    for task in config.tasks:
        for code in config.perturbations:
            reason = perturbations.skip_reason(task, code)
            if reason:
                out.append({'task': task, 'perturbation': code, 'reason': reason})
    return out


def plan_pairs(config: EvalConfig, sampler: Any = None) -> list[EpisodeSpec]:
    """Return the paired episode specs of ``config`` in run order.

    Args:
        sampler: optional ``sampler(task, seed) -> dict`` filling ``initial_state`` (so the
            operator of a real arm knows what to set up); without it each world samples the
            same state from the same seed.
    """
    specs = []
    for task in config.tasks:
        for perturbation in config.perturbations:
            if perturbations.skip_reason(task, perturbation):
                continue  # reported by skipped_cells, never run as Default
            for k in range(config.episodes_per_cell):
                seed = derive_seed(config.seed, task, perturbation, k)
                initial = sampler(task, seed) if sampler is not None else {}
                for entry in config.policy_entries():
                    specs.append(EpisodeSpec(
                        task=task, seed=seed, policy=entry.label, perturbation=perturbation,
                        intensity=config.intensity, max_steps=config.max_steps,
                        pair_id=f'{task}/{perturbation}/{k}/{entry.label}',
                        initial_state=initial))
    return specs


class EpisodeLog:
    """Append-only ``episodes.jsonl``: one line per finished episode, flushed and fsynced.

    ``made_by``: ``record -> settings`` this run gives the record's episode; :meth:`append`
    writes them into each record that has none (:mod:`realm_ros.core.provenance`).
    """

    def __init__(self, path: str | pathlib.Path,
                 made_by: Callable[[Mapping[str, Any]], Any] | None = None) -> None:
        self.path = pathlib.Path(path)
        self.made_by = made_by
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.records: list[dict[str, Any]] = []
        self.skipped_lines = 0
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    self.skipped_lines += 1  # a line cut by a crash: that episode re-runs
                    continue
                if isinstance(record, dict) and 'pair_id' in record and record_role(record):
                    self.records.append(record)
        self._done = {(r['pair_id'], record_role(r)) for r in self.records
                      if r.get('outcome') != 'infra_failure'}

    def done(self, pair_id: str, world: str) -> bool:
        """Whether this episode has finished with a score (resume skips it).

        An infrastructure failure is kept in the log (never scored) but is not done: a re-run
        runs that episode again, so a fault costs a retry, never a pair.
        """
        return (pair_id, world) in self._done

    @staticmethod
    def key(record: Mapping[str, Any]) -> tuple[str, str]:
        """A record's episode: ``(pair_id, world)``."""
        return record['pair_id'], record_role(record)

    def forget(self, drop: Any) -> None:
        """Leave out the records ``drop(record)`` is true of (made with other settings:
        :func:`realm_ros.core.provenance.reconcile`); the file keeps them."""
        self.records = [r for r in self.records if not drop(r)]
        self._done = {self.key(r) for r in self.records if r.get('outcome') != 'infra_failure'}

    def import_world(self, other: str | pathlib.Path, world: str,
                     pair_ids: Iterable[str]) -> int:
        """Copy ``world``'s finished episodes of ``pair_ids`` from another run; return the count.

        A lab re-evaluating a re-identified twin re-runs only the sim side: the real episodes of
        the same specs are expensive and do not change.
        """
        wanted = set(pair_ids)
        source = EpisodeLog(other)
        count = 0
        for record in source.records:
            if (record_role(record) == world and record['pair_id'] in wanted
                    and not self.done(record['pair_id'], world)):
                self.append(record)
                count += 1
        return count

    def append(self, record: Mapping[str, Any]) -> None:
        """Write one finished episode and make it durable before returning."""
        if self.made_by is not None and MADE_BY not in record:
            record = {**record, MADE_BY: self.made_by(record)}
        line = json.dumps(record, sort_keys=True, default=json_default)
        # A line cut by a crash has no newline: start on a fresh line so the record is whole.
        cut = self.path.exists() and self.path.stat().st_size > 0 and not _ends_with_newline(
            self.path)
        with open(self.path, 'a') as handle:
            handle.write(('\n' if cut else '') + line + '\n')
            handle.flush()
            os.fsync(handle.fileno())
        self.records.append(dict(record))
        if record.get('outcome') != 'infra_failure':
            self._done.add((record['pair_id'], record_role(record)))


def _ends_with_newline(path: pathlib.Path) -> bool:
    with open(path, 'rb') as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b'\n'


def scored(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Return the records that count: infrastructure failures are never scored."""
    return [r for r in records if r.get('outcome') != 'infra_failure']


def _ci(values: Sequence[float], seed: int) -> list[float]:
    lo, hi = metrics.bootstrap_ci(values, seed=seed)
    return [lo, hi]


def summarize(records: Sequence[Mapping[str, Any]], seed: int = 0,
              skipped: Sequence[Mapping[str, str]] = ()) -> dict[str, Any]:
    """Return ``summary.json``'s content from episode records.

    Per policy: mean progression and success rate in each world with bootstrap 95% CIs over
    episodes. Agreement: Pearson r, MMRV(sim, real) and the mean absolute gap over per-policy
    mean progression, overall and per task. Bradley-Terry rankings per world from pairwise
    comparisons on the same (task, perturbation, seed). Perturbation deltas vs Default and
    REALM's RMSD per world. Kruskal-Wallis of sim vs real per policy, as SimplerEnv reports it,
    on episode progressions and on binary success. ``skipped`` (from :func:`skipped_cells`) is
    copied into the summary. Only pairs finished in both worlds are used, except by
    ``prediction`` (:mod:`realm_ros.core.prediction`): each policy's real mean progression
    predicted from its twin episodes with a map fitted on the other policies
    (leave-one-policy-out, with the intervals' coverage), and for a policy run in the twin only
    (sim episodes and no real one) from all the policies with pairs.

    Raises:
        DataError: no complete pair.
    """
    usable = scored(records)
    by_pair: dict[str, dict[str, Mapping[str, Any]]] = {}
    for r in usable:
        by_pair.setdefault(r['pair_id'], {})[record_role(r)] = r
    complete = {p: w for p, w in by_pair.items() if REAL in w and SIM in w}
    if not complete:
        raise DataError('no pair has finished in both worlds yet: nothing to summarise')
    rows = [(w[REAL], w[SIM]) for w in complete.values()]
    # In the order the plan ran them (the config's order, e.g. best rung first).
    policies = list(dict.fromkeys(real['policy'] for real, _ in rows))
    tasks = sorted({real['task'] for real, _ in rows})

    def per_policy(selected: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]):
        out = []
        for k, policy in enumerate(policies):
            mine = [(r, s) for r, s in selected if r['policy'] == policy]
            if not mine:
                continue
            entry: dict[str, Any] = {'policy': policy, 'episodes': len(mine)}
            for world, idx in ((REAL, 0), (SIM, 1)):
                prog = [float(pair[idx]['progression']) for pair in mine]
                succ = [1.0 if pair[idx]['success'] else 0.0 for pair in mine]
                entry[f'{world}_progress'] = float(np.mean(prog))
                entry[f'{world}_progress_ci'] = _ci(prog, seed + k)
                entry[f'{world}_success'] = float(np.mean(succ))
                entry[f'{world}_success_ci'] = _ci(succ, seed + k + 1000)
            out.append(entry)
        return out

    def agreement_of(entries: Sequence[Mapping[str, Any]],
                     selected: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]
                     ) -> dict[str, Any] | None:
        if len(entries) < 2:
            return None
        out: dict[str, Any] = metrics.agreement(
            sim=[e['sim_progress'] for e in entries],
            real=[e['real_progress'] for e in entries]).as_dict()
        out['ci95'] = _agreement_ci(selected, [e['policy'] for e in entries], seed)
        return out

    overall = per_policy(rows)
    summary: dict[str, Any] = {
        'pairs': len(complete),
        'episodes': len(usable),
        'infra_failures': len(records) - len(usable),
        'policies': policies,
        'tasks': tasks,
        'per_policy': overall,
        'agreement': agreement_of(overall, rows) or {},
    }
    summary['agreement']['per_task'] = {}
    summary['per_task'] = {}
    for task in tasks:
        selected = [(r, s) for r, s in rows if r['task'] == task]
        entries = per_policy(selected)
        summary['per_task'][task] = entries
        task_agreement = agreement_of(entries, selected)
        if task_agreement is not None:
            summary['agreement']['per_task'][task] = task_agreement
    summary['ranking'] = {}
    for world, idx in ((REAL, 0), (SIM, 1)):
        outcomes: dict[tuple, dict[str, float]] = {}
        for pair in rows:
            rec = pair[idx]
            key = (rec['task'], rec['perturbation'], rec['seed'])
            outcomes.setdefault(key, {})[rec['policy']] = float(rec['progression'])
        try:
            ranking = metrics.bradley_terry(outcomes, n_resamples=200, seed=seed)
            summary['ranking'][world] = [dataclasses.asdict(r) for r in ranking]
        except DataError:
            summary['ranking'][world] = []
    summary['perturbations'] = _perturbation_deltas(rows)
    summary['kruskal'] = {}
    for policy in policies:
        mine = [(r, s) for r, s in rows if r['policy'] == policy]
        summary['kruskal'][policy] = {
            'progression': metrics.kruskal_sim_real(
                sim=[float(s['progression']) for _, s in mine],
                real=[float(r['progression']) for r, _ in mine]),
            'success': metrics.kruskal_sim_real(
                sim=[1.0 if s['success'] else 0.0 for _, s in mine],
                real=[1.0 if r['success'] else 0.0 for r, _ in mine]),
        }
    summary['skipped'] = [dict(c) for c in skipped]
    summary['prediction'] = _prediction(usable, rows, policies)
    return summary


def _prediction(usable: Sequence[Mapping[str, Any]],
                rows: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
                policies: Sequence[str]) -> dict[str, Any]:
    """Each policy's real mean progression predicted from its twin episodes
    (:func:`prediction.report`): leave-one-policy-out over the finished pairs, and for a
    policy run in the twin only (sim episodes, no real one) from all the others."""
    scores: dict[str, tuple[list[float], list[float] | None]] = {
        p: ([float(s['progression']) for r, s in rows if r['policy'] == p],
            [float(r['progression']) for r, _ in rows if r['policy'] == p]) for p in policies}
    with_real = {r['policy'] for r in usable if record_role(r) == REAL}
    for r in usable:
        if record_role(r) == SIM and r['policy'] not in with_real:
            scores.setdefault(r['policy'], ([], None))[0].append(float(r['progression']))
    return prediction.report(scores)


def _agreement_ci(rows: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
                  policies: Sequence[str], seed: int) -> dict[str, Any] | None:
    """Paired-bootstrap 95 % intervals of r, MMRV and the mean gap over starts (task,
    perturbation, intensity, seed): :func:`metrics.agreement_intervals` on the (policies,
    starts) table of progressions; None with fewer than 2 starts (nothing to resample)."""
    def start(r: Mapping[str, Any]) -> tuple:
        return r['task'], r['perturbation'], r.get('intensity'), r['seed']

    starts = sorted({start(r) for r, _ in rows}, key=str)
    if len(starts) < 2:
        return None
    column = {key: k for k, key in enumerate(starts)}
    row = {policy: k for k, policy in enumerate(policies)}
    sim = np.full((len(policies), len(starts)), np.nan)
    real = np.full_like(sim, np.nan)
    for r, s in rows:
        at = (row[r['policy']], column[start(r)])
        real[at], sim[at] = float(r['progression']), float(s['progression'])
    try:
        return metrics.agreement_intervals(sim=sim, real=real, seed=seed, n_resamples=1000)
    except DataError:
        return None


def _perturbation_deltas(rows: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]
                         ) -> dict[str, Any]:
    """Mean progression change under each perturbation vs Default, and REALM's RMSD."""
    cells: dict[tuple[str, str, str, str], list[float]] = {}
    for pair in rows:
        for world, rec in zip(WORLDS, pair):
            key = (world, rec['perturbation'], rec['policy'], rec['task'])
            cells.setdefault(key, []).append(float(rec['progression']))
    means = {k: float(np.mean(v)) for k, v in cells.items()}
    out: dict[str, Any] = {}
    perturbations = sorted({k[1] for k in means} - {'Default'})
    for perturbation in perturbations:
        entry: dict[str, Any] = {}
        for world in WORLDS:
            pert, default = [], []
            for (w, p, policy, task), value in means.items():
                if w == world and p == perturbation and (w, 'Default', policy, task) in means:
                    pert.append(value)
                    default.append(means[(w, 'Default', policy, task)])
            if pert:
                entry[world] = {
                    'delta': float(np.mean(np.array(pert) - np.array(default))),
                    'rmsd': metrics.rmsd_vs_default(pert, default),
                    'cells': len(pert),
                }
        if entry:
            out[perturbation] = entry
    return out


def format_table(summary: Mapping[str, Any]) -> str:
    """Return the plain-text summary table printed at the end of a run."""
    lines = []
    header = (f'{"policy":<16} {"n":>4} {"real prog":>10} {"sim prog":>10} '
              f'{"real succ":>10} {"sim succ":>10}')
    lines.append(header)
    lines.append('-' * len(header))
    for e in summary['per_policy']:
        lines.append(
            f'{e["policy"]:<16} {e["episodes"]:>4} {e["real_progress"]:>10.3f} '
            f'{e["sim_progress"]:>10.3f} {e["real_success"]:>10.2f} {e["sim_success"]:>10.2f}')
    agreement = summary.get('agreement', {})
    shown = [m for m in metrics.METRICS.values() if m.name in agreement]
    if shown:
        lines.append('')
        lines.append(f'agreement over {summary["pairs"]} pairs (95 % paired-bootstrap '
                     'intervals over starts): '
                     + ', '.join(f'{m.label} = {m.with_interval(agreement)}' for m in shown))
        for task, a in agreement.get('per_task', {}).items():
            lines.append(f'  {task:<28} '
                         + '  '.join(f'{m.short} = {m.with_interval(a)}' for m in shown))
    if summary.get('kruskal'):
        lines.append('')
        lines.append('Kruskal-Wallis sim vs real per policy (progression; success):')
        for policy, k in summary['kruskal'].items():
            p, q = k['progression'], k['success']
            lines.append(f'  {policy:<16} H = {_fmt(p["statistic"])} p = {_fmt(p["pvalue"])}; '
                         f'H = {_fmt(q["statistic"])} p = {_fmt(q["pvalue"])}')
    if summary.get('perturbations'):
        lines.append('')
        lines.append('perturbation deltas vs Default (mean progression change; RMSD):')
        for code, d in summary['perturbations'].items():
            parts = [f'{w} {_fmt(d[w]["delta"])} ({_fmt(d[w]["rmsd"])})' for w in WORLDS
                     if w in d]
            lines.append(f'  {code:<10} ' + ', '.join(parts))
    if summary.get('prediction'):
        lines.append('')
        lines.append('real mean progression predicted from the twin (a map twin -> real fitted '
                     'on the other policies):')
        lines += prediction.format_lines(summary['prediction'])
    for cell in summary.get('skipped', ()):
        lines.append(f'skipped {cell["task"]} / {cell["perturbation"]}: {cell["reason"]}')
    if summary.get('infra_failures'):
        lines.append(f'{summary["infra_failures"]} episode(s) ended in infrastructure failures '
                     'and are not scored')
    decided = summary.get('until_decided')
    if decided:
        lines.append('')
        lines.append(f'until decided at P = {decided["target"]} ({decided["allocation"]}): '
                     f'{decided["stopped"]} after {decided["total_episodes"]} pair(s) of at most '
                     f'{decided["budget"]}; real ranking {" > ".join(decided["order"])}')
        for pair in decided['adjacent_pairs']:
            lines.append(f'  P({pair["above"]} > {pair["below"]}) = {pair["probability"]:.3f}')
        if decided.get('fixed_design_total'):
            lines.append(f'  a fixed design would need about {decided["fixed_design_total"]} '
                         'pairs for the same confidence (realm-ros metrics --power)')
    return '\n'.join(lines)


def _fmt(value: float) -> str:
    return 'n/a' if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f'{value:.3f}'
