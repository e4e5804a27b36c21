"""The sweep's report: ``report.html`` and its figures beside ``summary.json``.

The same parts as ``paired-eval``'s report (:mod:`realm_ros.programs.report`), per world
instead of real vs sim: per-policy mean progression and success rate with 95% bootstrap
intervals, the Bradley-Terry ranking with its intervals, per task and per perturbation condition
tables, the perturbation deltas vs Default with REALM's RMSD, what was skipped and what was
retried.
"""

from __future__ import annotations

import html
import pathlib
from typing import Any, Mapping

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402 - the backend must be chosen first
import numpy as np  # noqa: E402

from realm_ros.core import metrics  # noqa: E402
from realm_ros.programs.report import html_table as _table  # noqa: E402 - one style for both reports
from realm_ros.programs.report import (  # noqa: E402
    policy_bars,
    predictions_html,
    ranking_plot,
)

COLORS = ('#2471a3', '#c0392b', '#1e8449', '#7d3c98')


def _bars(summary: Mapping[str, Any], path: pathlib.Path) -> None:
    policies = summary['policies']
    series = []
    for k, world in enumerate(summary['per_world']):
        rows = {e['policy']: e for e in summary['per_world'][world]['per_policy']}
        series.append((world, COLORS[k % len(COLORS)], {
            metric: ([rows[p][metric] if p in rows else np.nan for p in policies],
                     [rows[p][f'{metric}_ci'] if p in rows else [np.nan] * 2 for p in policies])
            for metric in ('progress', 'success')}))
    policy_bars(path, policies, series)


def _ranking(summary: Mapping[str, Any], path: pathlib.Path) -> bool:
    worlds = [w for w, v in summary['per_world'].items() if v['ranking']]
    if not worlds:
        return False
    order = [r['policy'] for r in summary['per_world'][worlds[0]]['ranking']]
    ranking_plot(path, order, [(world, COLORS[k % len(COLORS)],
                                summary['per_world'][world]['ranking'])
                               for k, world in enumerate(worlds)],
                 spacing=0.15, rows=len(order))
    return True


def _conditions(summary: Mapping[str, Any], path: pathlib.Path) -> None:
    worlds = list(summary['per_world'])
    conditions = summary['conditions']
    policies = summary['policies']
    fig, axes = plt.subplots(1, len(worlds), figsize=(1.5 + 1.3 * len(conditions) * len(worlds),
                                                       3.4), squeeze=False)
    x = np.arange(len(conditions))
    width = 0.8 / len(policies)
    for ax, world in zip(axes[0], worlds):
        table = summary['per_world'][world]['per_condition']
        for k, policy in enumerate(policies):
            values = [next((e['progress'] for e in table.get(c, []) if e['policy'] == policy),
                           np.nan) for c in conditions]
            ax.bar(x + (k - (len(policies) - 1) / 2) * width, values, width=width,
                   label=policy)
        ax.set_xticks(x, conditions, fontsize=8, rotation=20)
        ax.set_ylim(0, 1.1)
        ax.set_ylabel('mean progression')
        ax.set_title(f'{world}: per perturbation', fontsize=10)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def compare_cpu_html(section: Mapping[str, Any] | None) -> list[str]:
    """``--compare-cpu``'s part of the report: the GPU cells re-run on the CPU twin, with 95 %
    intervals (Wilson for the fractions of cells, bootstrap for the mean difference)."""
    if not section:
        return []
    tol = section['tolerance']
    verdict = 'within' if section['within_tolerance'] else 'OUTSIDE'
    return [
        '<h2>GPU against the CPU twin (--compare-cpu)</h2>',
        f'<p>The first {section["cells"]} GPU cells re-run on the CPU twin (run_episode): '
        f'{verdict} the tolerance (at least {tol["cells"]:.0%} of the cells with |progression '
        f'difference| &lt;= {tol["progression"]} and at least {tol["cells"]:.0%} with the same '
        'success). 95% intervals: Wilson for fractions of cells, bootstrap for the mean.</p>',
        _table(['figure', 'value', '95% CI'], [
            [f'cells within {tol["progression"]} progression', section['progression_within'],
             section['progression_within_ci']],
            ['cells with the same success', section['same_success'],
             section['same_success_ci']],
            ['mean |progression difference|', section['mean_abs_progression_diff'],
             section['mean_abs_progression_diff_ci']],
            ['GPU success rate', section['gpu_success_rate'], section['gpu_success_rate_ci']],
            ['CPU twin success rate', section['cpu_success_rate'],
             section['cpu_success_rate_ci']],
        ]),
    ]


def write_sweep_report(out_dir: str | pathlib.Path, summary: Mapping[str, Any],
                       meta: Mapping[str, Any] | None = None) -> pathlib.Path:
    """Write the figures and ``report.html`` into ``out_dir``; return the HTML path.

    ``meta`` may hold ``title`` and ``description`` (the grid, the executor).
    """
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    meta = dict(meta or {})
    title = meta.get('title', 'realm_ros sweep')
    _bars(summary, out / 'policy_bars.png')
    has_ranking = _ranking(summary, out / 'ranking.png')
    _conditions(summary, out / 'perturbations.png')
    parts = [
        '<!doctype html><html><head><meta charset="utf-8">',
        f'<title>{html.escape(title)}</title>',
        '<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}'
        'table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;'
        'padding:3px 8px;font-size:13px;text-align:right}th{background:#f3f3f3}'
        'img{max-width:100%}</style></head><body>',
        f'<h1>{html.escape(title)}</h1>',
        f'<p>{html.escape(str(meta.get("description", "")))}<br>'
        f'{summary["episodes"]} scored episodes in {", ".join(summary["worlds"])}; '
        f'{summary.get("infra_failures", 0)} infrastructure failures (not scored, retried by '
        'the next run).</p>',
    ]
    retries = summary.get('retries') or {}
    if retries:
        parts.append(f'<p>Retried: {retries.get("worker_lost", 0)} cell(s) whose worker was '
                     f'lost, {retries.get("after_infra_failure", 0)} after an infrastructure '
                     f'failure of an earlier run.</p>')
    if summary.get('agreement'):
        parts.append('<h2>Agreement between worlds</h2><p>Per-policy mean progression, the '
                     'first world as the reference (its magnitudes weigh MMRV).</p>')
        # The columns of core.metrics' registry, as paired-eval's report prints them.
        shown = [m for m in metrics.METRICS.values()
                 if all(m.name in a for a in summary['agreement'].values())]
        parts.append(_table(['worlds'] + [m.column or m.label for m in shown] + ['policies'],
                            [[k] + [m.with_interval(a) for m in shown] + [a['n_policies']]
                             for k, a in summary['agreement'].items()]))
    parts += compare_cpu_html(summary.get('compare_cpu'))
    for name, section in (summary.get('prediction') or {}).items():
        # The section paired-eval's report shows (one code path): leave-one-policy-out
        # coverage, and each policy run in the later world only, with what to do with it.
        world, _, reference = name.partition(' vs ')
        parts += predictions_html(section, heading=f'{reference} mean progression predicted '
                                                   f'from {world}', worlds=(world, reference))
    parts.append('<h2>Policies</h2>')
    for world, w in summary['per_world'].items():
        bt = {r['policy']: r for r in w['ranking']}
        parts.append(f'<h3>{html.escape(world)}</h3>')
        parts.append(_table(
            ['policy', 'episodes', 'progress', '95% CI', 'success', '95% CI', 'BT score',
             'BT 95% CI'],
            [[e['policy'], e['episodes'], e['progress'], e['progress_ci'], e['success'],
              e['success_ci'], bt[e['policy']]['score'] if e['policy'] in bt else '',
              [bt[e['policy']]['ci_low'], bt[e['policy']]['ci_high']] if e['policy'] in bt
              else ''] for e in w['per_policy']]))
    parts.append('<img src="policy_bars.png" alt="per-policy bars">')
    if has_ranking:
        parts.append('<h2>Bradley-Terry ranking</h2><img src="ranking.png" alt="ranking">')
    parts.append('<h2>Per task</h2>')
    for world, w in summary['per_world'].items():
        parts.append(_table(['world', 'task', 'policy', 'episodes', 'progress', '95% CI',
                             'success'],
                            [[world, t, e['policy'], e['episodes'], e['progress'],
                              e['progress_ci'], e['success']]
                             for t, entries in w['per_task'].items() for e in entries]))
    parts.append('<h2>Perturbations</h2>')
    parts.append('<img src="perturbations.png" alt="per perturbation">')
    for world, w in summary['per_world'].items():
        if w['perturbations']:
            parts.append(_table(['world', 'condition', 'delta vs Default', 'RMSD', 'cells'],
                                [[world, c, d['delta'], d['rmsd'], d['cells']]
                                 for c, d in w['perturbations'].items()]))
    if summary.get('skipped'):
        parts.append('<h2>Skipped (incompatible in REALM)</h2>')
        parts.append(_table(['task', 'perturbation', 'reason'],
                            [[c['task'], c['perturbation'], c['reason']]
                             for c in summary['skipped']]))
    parts.append('</body></html>')
    path = out / 'report.html'
    path.write_text('\n'.join(parts))
    return path
