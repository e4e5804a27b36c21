"""The preference ranking of an arena's judgments, beside the rubric ranking, and their agreement.

Per world (real, sim): Bradley-Terry from the judgments (:func:`rank_preferences`: MLE on the
non-tie judgments by default, sandwich and bootstrap intervals; where a policy never wins or
never loses, the documented prior, flagged), the rubric ranking of the same run folders
(:func:`realm_ros.core.metrics.bradley_terry` on episode progression, as ``summary.json``'s
``ranking``) and their agreement over the policies both rank: Kendall's tau and Spearman's rho
between the two rankings' scores, and MMRV(sim=preference strengths, real=rubric mean
progression), i.e. magnitudes in progression units from the rubric. The intervals of the
agreement are percentile bootstrap intervals over the judgments (the rubric ranking held fixed).
"""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from realm_ros.arena.catalog import Catalog
from realm_ros.arena.selection import OUTCOME
from realm_ros.arena.store import Store
from realm_ros.core import metrics
from realm_ros.core.errors import DataError
from realm_ros.core.preferences import Comparison, PreferenceRanking, rank_preferences

DB_NAME = 'arena.sqlite'


def comparisons(judgments: Iterable[Mapping[str, Any]], role: str) -> list[Comparison]:
    """The judgments of ``role`` that compare (skips left out): A is the left policy."""
    return [Comparison(j['a_policy'], j['b_policy'], OUTCOME[j['choice']])
            for j in judgments if j['role'] == role and j['choice'] in OUTCOME]


def rubric(records: Sequence[Mapping[str, Any]], role: str) -> dict[str, Any]:
    """Rubric Bradley-Terry scores and mean progression per policy of ``role``'s episodes."""
    mine = [r for r in records if r.get('_role', r.get('role')) == role]
    outcomes: dict[tuple, dict[str, float]] = {}
    progress: dict[str, list[float]] = {}
    for r in mine:
        key = (r['_world'], r['task'], r.get('perturbation'), r.get('intensity'), r['seed'])
        outcomes.setdefault(key, {})[r['policy']] = float(r['progression'])
        progress.setdefault(r['policy'], []).append(float(r['progression']))
    try:
        # Only the scores are compared; 50 resamples keep the (reported) CIs cheap.
        ranking = metrics.bradley_terry(outcomes, n_resamples=50)
    except DataError:
        ranking = []
    return {'ranking': [dataclasses.asdict(r) for r in ranking],
            'mean_progression': {p: float(np.mean(v)) for p, v in progress.items()}}


def _agreement(pref: Mapping[str, float], rubric_scores: Mapping[str, float],
               progression: Mapping[str, float]) -> dict[str, Any] | None:
    common = sorted(set(pref) & set(rubric_scores) & set(progression))
    if len(common) < 2:
        return None
    p = [pref[k] for k in common]
    return {'kendall_tau': metrics.kendall_tau(p, [rubric_scores[k] for k in common]),
            'spearman_rho': metrics.spearman_rho(p, [rubric_scores[k] for k in common]),
            'mmrv': metrics.mmrv(sim=p, real=[progression[k] for k in common]),
            'policies': len(common)}


def world_section(judgments: Sequence[Mapping[str, Any]], records: Sequence[Mapping[str, Any]],
                  role: str, ties: str = 'drop', n_bootstrap: int = 1000, seed: int = 0,
                  confidence: float = 0.95) -> dict[str, Any]:
    """Return one world's preference ranking, rubric ranking and agreement (JSON-ready)."""
    data = comparisons(judgments, role)
    out: dict[str, Any] = {'judgments': len(data),
                           'skips': sum(1 for j in judgments
                                        if j['role'] == role and j['choice'] == 'skip')}
    base = rubric(records, role)
    out['rubric'] = base
    try:
        fit = rank_preferences(data, ties=ties, n_bootstrap=n_bootstrap, seed=seed,
                               confidence=confidence)
    except DataError as err:
        out['error'] = str(err)
        return out
    out['ranking'] = fit.as_dict()
    rubric_scores = {r['policy']: r['score'] for r in base['ranking']}
    agreement: dict[str, Any] | None = _agreement(fit.scores(), rubric_scores,
                                                  base['mean_progression'])
    if agreement is not None and n_bootstrap > 0:
        draws = _agreement_bootstrap(data, fit, rubric_scores, base['mean_progression'],
                                     n_bootstrap, seed)
        alpha = (1.0 - confidence) / 2.0
        for name in ('kendall_tau', 'spearman_rho', 'mmrv'):
            values = [d[name] for d in draws]
            agreement[f'{name}_ci'] = ([float(v) for v in np.quantile(values, [alpha,
                                                                              1 - alpha])]
                                       if values else None)
        agreement['bootstrap'] = len(draws)
    out['agreement'] = agreement
    return out


def _agreement_bootstrap(data: Sequence[Comparison], fit: PreferenceRanking,
                         rubric_scores: Mapping[str, float], progression: Mapping[str, float],
                         n: int, seed: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed + 1)
    draws = []
    for _ in range(n):
        sample = [data[k] for k in rng.integers(0, len(data), size=len(data))]
        try:
            scores = rank_preferences(sample, ties=fit.ties, prior=max(fit.prior, 1.0)
                                      ).scores()
        except DataError:
            continue
        agreement = _agreement(scores, rubric_scores, progression)
        if agreement is not None and len(scores) == len(fit.policies):
            draws.append(agreement)
    return draws


def preferences(catalog: Catalog, store: Store, ties: str = 'drop', n_bootstrap: int = 1000,
                seed: int = 0) -> dict[str, Any]:
    """Return ``summary.json``'s ``preferences`` section for ``store``'s judgments."""
    judgments = store.active_judgments()
    records = [{**r, '_role': r.get('role') or r.get('world')} for r in catalog.records]
    roles = sorted({j['role'] for j in judgments})
    return {
        'db': str(store.path), 'ties': ties, 'judges': len({j['judge'] for j in judgments}),
        'judgments': sum(1 for j in judgments if j['choice'] in OUTCOME),
        'skips': sum(1 for j in judgments if j['choice'] == 'skip'),
        'worlds': {role: world_section(judgments, records, role, ties, n_bootstrap, seed)
                   for role in roles},
    }


def attach(summary: dict[str, Any], run_dir: str | pathlib.Path, n_bootstrap: int = 200
           ) -> bool:
    """Add ``preferences`` to ``summary`` from ``run_dir``'s arena database, if it has one."""
    db = pathlib.Path(run_dir) / DB_NAME
    if not db.is_file():
        return False
    try:
        section = preferences(Catalog([run_dir]), Store(db), n_bootstrap=n_bootstrap)
    except DataError as err:
        section = {'error': str(err)}
    except Exception as err:  # noqa: BLE001 - the run's own summary must still be written
        section = {'error': f'{type(err).__name__}: {err}'}
    summary['preferences'] = section
    return True


def format_section(section: Mapping[str, Any]) -> str:
    """Return the plain-text ranking ``realm-ros arena rank`` prints."""
    lines = [f'{section["judgments"]} judgments ({section["skips"]} skips) by '
             f'{section["judges"]} judge(s); ties: {section["ties"]}']
    for role, world in section['worlds'].items():
        lines.append('')
        lines.append(f'{role}: {world["judgments"]} comparisons')
        if 'error' in world:
            lines.append(f'  not ranked: {world["error"]}')
            continue
        ranking = world['ranking']
        rubric_score = {r['policy']: r['score'] for r in world['rubric']['ranking']}
        progression = world['rubric']['mean_progression']
        conf = int(round(100 * ranking['confidence']))
        lines.append(f'  {"policy":<14} {"strength":>8}  {conf}% sandwich CI  {conf}% bootstrap'
                     f'     W/L/T   rubric BT  mean progression')
        for row in ranking['rows']:
            lines.append(
                f'  {row["policy"]:<14} {row["score"]:>8.2f}  [{_f(row["ci_low"])}, '
                f'{_f(row["ci_high"])}]  [{_f(row["boot_low"])}, {_f(row["boot_high"])}]  '
                f'{row["wins"]:>3}/{row["losses"]}/{row["ties"]:<3}  '
                f'{_f(rubric_score.get(row["policy"])):>9}  '
                f'{_f(progression.get(row["policy"])):>9}')
        if ranking.get('note'):
            lines.append(f'  flagged: {ranking["note"]}')
        agreement = world.get('agreement')
        if agreement:
            lines.append(
                f'  agreement with the rubric ranking over {agreement["policies"]} policies: '
                f'Kendall tau = {agreement["kendall_tau"]:.2f} {_ci(agreement, "kendall_tau")}, '
                f'Spearman rho = {agreement["spearman_rho"]:.2f} '
                f'{_ci(agreement, "spearman_rho")}, MMRV = {agreement["mmrv"]:.3f} '
                f'{_ci(agreement, "mmrv", 3)}')
    return '\n'.join(lines)


def _f(value: Any) -> str:
    return '  n/a' if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f'{value:5.2f}'


def _ci(agreement: Mapping[str, Any], name: str, digits: int = 2) -> str:
    ci = agreement.get(f'{name}_ci')
    return f'[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]' if ci else ''


def write_summary(run_dir: str | pathlib.Path, section: Mapping[str, Any]) -> pathlib.Path | None:
    """Put ``section`` into ``run_dir``'s summary.json and re-write its report; None if the
    folder has no summary.json."""
    path = pathlib.Path(run_dir) / 'summary.json'
    if not path.is_file():
        return None
    summary = json.loads(path.read_text())
    summary['preferences'] = dict(section)
    path.write_text(json.dumps(summary, indent=2))
    from realm_ros.programs.report import write_report
    config = summary.get('config') or {}
    write_report(run_dir, summary, {
        'real': config.get('real', ''),
        'sim': f'{config.get("sim", "")} twin, '
               + (f'identified parameters {config["sim_params_file"]}'
                  if config.get('sim_params_file') else 'default parameters')})
    return path
