"""The paired-evaluation report: PNG figures and ``report.html`` beside ``summary.json``.

Figures: real-vs-sim scatter per task (Pearson r and MMRV in each title), per-policy progress
and success bars with 95% intervals in both worlds, the Bradley-Terry ranking in both worlds,
per-perturbation deltas, and the twin parameters used.
"""

from __future__ import annotations

import html
import pathlib
from typing import Any, Mapping, Sequence

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402 - the backend must be chosen first
import numpy as np  # noqa: E402

from realm_ros.core import metrics  # noqa: E402

REAL_COLOR, SIM_COLOR = '#c0392b', '#2471a3'


def _scatter(summary: Mapping[str, Any], path: pathlib.Path) -> None:
    tasks = list(summary['per_task']) + ['all tasks']
    cols = min(4, len(tasks))
    rows = int(np.ceil(len(tasks) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 3.4 * rows), squeeze=False)
    for ax, task in zip(axes.flat, tasks):
        entries = summary['per_policy'] if task == 'all tasks' else summary['per_task'][task]
        agreement = (summary['agreement'] if task == 'all tasks'
                     else summary['agreement']['per_task'].get(task))
        real = [e['real_progress'] for e in entries]
        sim = [e['sim_progress'] for e in entries]
        ax.plot([0, 1], [0, 1], color='0.7', lw=1, ls='--')
        ax.scatter(real, sim, color='#7d3c98', zorder=3)
        for e in entries:
            ax.annotate(e['policy'], (e['real_progress'], e['sim_progress']), fontsize=7,
                        xytext=(3, 3), textcoords='offset points')
        title = task
        if agreement and 'pearson_r' in agreement:
            title += f'\nr = {agreement["pearson_r"]:.2f}, MMRV = {agreement["mmrv"]:.3f}'
        ax.set_title(title, fontsize=9)
        ax.set_xlim(-0.05, 1.05)
        ax.set_ylim(-0.05, 1.05)
        ax.set_xlabel('real: mean progression', fontsize=8)
        ax.set_ylabel('sim: mean progression', fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(tasks):]:
        ax.axis('off')
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def policy_bars(path: pathlib.Path, policies: Sequence[str],
                series: Sequence[tuple[str, str, Mapping[str, Any]]]) -> None:
    """Draw mean progression and success rate per policy, one bar per series, with CIs.

    ``series``: ``(label, colour, {metric: (values, cis)})`` for the metrics ``progress`` and
    ``success``; a missing value is NaN (no bar, no error bar). Shared by the paired
    evaluation's report (real, sim) and the sweep's (one series per world).
    """
    x = np.arange(len(policies))
    width = 0.8 / len(series)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, metric, label in ((axes[0], 'progress', 'mean progression'),
                              (axes[1], 'success', 'success rate')):
        for k, (name, color, data) in enumerate(series):
            values = np.asarray(data[metric][0], dtype=float)
            ci = np.asarray(data[metric][1], dtype=float).reshape(-1, 2)
            err = np.nan_to_num(np.vstack([values - ci[:, 0], ci[:, 1] - values])).clip(min=0)
            ax.bar(x + (k - (len(series) - 1) / 2) * width, values, width=width, color=color,
                   label=name, yerr=err, capsize=3, error_kw={'lw': 1})
        ax.set_xticks(x, list(policies), rotation=20, fontsize=8)
        ax.set_ylim(0, 1.1)
        ax.set_ylabel(label)
        ax.legend(fontsize=8)
        ax.set_title(f'{label} per policy (95% bootstrap CI)', fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _bars(summary: Mapping[str, Any], path: pathlib.Path) -> None:
    entries = summary['per_policy']
    series = [(world, color, {metric: ([e[f'{world}_{metric}'] for e in entries],
                                       [e[f'{world}_{metric}_ci'] for e in entries])
                              for metric in ('progress', 'success')})
              for world, color in (('real', REAL_COLOR), ('sim', SIM_COLOR))]
    policy_bars(path, [e['policy'] for e in entries], series)


def ranking_plot(path: pathlib.Path, order: Sequence[str],
                 series: Sequence[tuple[str, str, Sequence[Mapping[str, Any]]]],
                 spacing: float, rows: int) -> None:
    """Draw each series' Bradley-Terry strength of the policies in ``order`` with its CI.

    ``series``: ``(label, colour, ranking rows)`` per world, placed ``spacing`` apart around each
    policy's line; a world without rows keeps its place and draws nothing. ``rows`` sets the
    figure's height. Shared by the paired evaluation's report and the sweep's.
    """
    y = np.arange(len(order))
    fig, ax = plt.subplots(figsize=(6.5, 0.5 + 0.45 * max(2, rows)))
    for k, (label, color, ranking) in enumerate(series):
        by_policy = {r['policy']: r for r in ranking}
        if not by_policy:
            continue
        score = np.array([by_policy[p]['score'] for p in order])
        low = np.array([by_policy[p]['ci_low'] for p in order])
        high = np.array([by_policy[p]['ci_high'] for p in order])
        ax.errorbar(score, y + spacing * (k - (len(series) - 1) / 2),
                    xerr=[score - low, high - score], fmt='o', color=color, label=label,
                    capsize=3)
    ax.set_yticks(y, order, fontsize=8)
    ax.invert_yaxis()
    ax.axvline(0, color='0.8', lw=1)
    ax.set_xlabel('Bradley-Terry log-strength (95% bootstrap CI)')
    if ax.get_legend_handles_labels()[0]:  # no ranked world: nothing to name
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _ranking(summary: Mapping[str, Any], path: pathlib.Path) -> None:
    ranking = summary['ranking']
    ranking_plot(path, [r['policy'] for r in ranking.get('real') or ranking['sim']],
                 [(world, color, ranking.get(world, []))
                  for world, color in (('real', REAL_COLOR), ('sim', SIM_COLOR))],
                 spacing=0.3, rows=len(summary['policies']))


def _perturbations(summary: Mapping[str, Any], path: pathlib.Path) -> bool:
    deltas = summary.get('perturbations') or {}
    if not deltas:
        return False
    names = list(deltas)
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(1.2 + 1.1 * len(names), 3.4))
    for offset, world, color in ((-0.2, 'real', REAL_COLOR), (0.2, 'sim', SIM_COLOR)):
        values = [deltas[n].get(world, {}).get('delta', np.nan) for n in names]
        ax.bar(x + offset, values, width=0.4, color=color, label=world)
    ax.axhline(0, color='0.5', lw=1)
    ax.set_xticks(x, names, fontsize=8)
    ax.set_ylabel('progression change vs Default')
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = ''.join(f'<th>{html.escape(h)}</th>' for h in headers)
    body = ''.join(
        '<tr>' + ''.join(f'<td>{html.escape(_cell(c))}</td>' for c in row) + '</tr>'
        for row in rows)
    return f'<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _with_interval(agreement: Mapping[str, Any], name: str) -> str:
    """``agreement[name]`` and its ``ci95`` interval if it has one: ``0.912 [0.800, 0.990]``."""
    interval = (agreement.get('ci95') or {}).get(name)
    text = _cell(float(agreement[name]))
    return f'{text} [{_cell(float(interval[0]))}, {_cell(float(interval[1]))}]' if interval \
        else text


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f'{value:.3f}'
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], float):
        return '[' + ', '.join(f'{v:.3f}' for v in value) + ']'
    return str(value)


def _preferences(section: Mapping[str, Any] | None) -> list[str]:
    """The preference ranking of the arena's blind judgments beside the rubric ranking."""
    if not section:
        return []
    parts = ['<h2>Preference ranking (blind pairwise judgments)</h2>']
    if 'error' in section and 'worlds' not in section:
        return parts + [f'<p>not ranked: {html.escape(str(section["error"]))}</p>']
    parts.append(
        f'<p>{section["judgments"]} judgments ({section["skips"]} skipped) by '
        f'{section["judges"]} judge(s) in <code>realm-ros arena</code>; Bradley-Terry, ties: '
        f'{html.escape(str(section["ties"]))}; robust (sandwich) and bootstrap 95% intervals '
        '(docs/arena.md).</p>')
    for role, world in section.get('worlds', {}).items():
        parts.append(f'<h3>{html.escape(role)}: {world["judgments"]} comparisons</h3>')
        if 'error' in world:
            parts.append(f'<p>not ranked: {html.escape(str(world["error"]))}</p>')
            continue
        ranking = world['ranking']
        rubric = {r['policy']: r['score'] for r in world['rubric']['ranking']}
        progression = world['rubric']['mean_progression']
        parts.append(_table(
            ['policy', 'strength', 'sandwich CI', 'bootstrap CI', 'wins', 'losses', 'ties',
             'rubric BT score', 'mean progression'],
            [[r['policy'], r['score'], [r['ci_low'], r['ci_high']],
              [r['boot_low'], r['boot_high']] if r['boot_low'] is not None else 'n/a',
              r['wins'], r['losses'], r['ties'], rubric.get(r['policy'], float('nan')),
              progression.get(r['policy'], float('nan'))]
             for r in ranking['rows']]))
        if ranking.get('note'):
            parts.append(f'<p><b>flagged</b>: {html.escape(ranking["note"])}</p>')
        agreement = world.get('agreement')
        if agreement:
            def ci(name: str, found: Mapping[str, Any] = agreement) -> str:
                value = found.get(f'{name}_ci')
                return f' [{value[0]:.2f}, {value[1]:.2f}]' if value else ''
            parts.append(
                f'<p>Agreement with the rubric ranking over {agreement["policies"]} policies: '
                f'Kendall tau = {agreement["kendall_tau"]:.2f}{ci("kendall_tau")}, Spearman '
                f'rho = {agreement["spearman_rho"]:.2f}{ci("spearman_rho")}, MMRV(preference, '
                f'rubric progression) = {agreement["mmrv"]:.3f}{ci("mmrv")}.</p>')
    return parts
def _scorers(section: Mapping[str, Any] | None) -> list[str]:
    """Each progress scorer's column beside the rubric's (``realm-ros score RUN_DIR``): its mean
    over the same episodes, never averaged into the rubric's (docs/scoring.md)."""
    if not section:
        return []
    parts = ['<h2>Progress scorers (beside the rubric, never mixed)</h2>']
    for name, part in section.items():
        rows = []
        for policy, roles in part.get('per_policy', {}).items():
            for role, cell in roles.items():
                rows.append([policy, role, cell['episodes'], cell['rubric'], cell['scorer']])
        parts.append(f'<h3>{html.escape(str(name))}: {part.get("episodes", 0)} episodes</h3>')
        parts.append(_table(['policy', 'world', 'episodes', 'rubric progression',
                             f'scorer {name}'], rows))
        agreement = part.get('agreement')
        if agreement:
            parts.append(
                f'<p>Per episode against the rubric: Pearson r = {agreement["pearson_r"]:.3f}, '
                f'mean |scorer - rubric| = {agreement["mean_abs_error"]:.3f}, success accuracy '
                f'= {agreement["success_accuracy"]:.3f}.</p>')
    return parts


def predictions_html(section: Mapping[str, Any] | None,
                     heading: str = 'Real scores predicted from the twin',
                     worlds: tuple[str, str] = ('twin', 'real')) -> list[str]:
    """``summary.json``'s ``prediction`` section (:func:`realm_ros.core.prediction.report`) as
    HTML, the figures the console table prints (``prediction.format_lines``): per policy its
    twin mean, the predicted real mean with its prediction interval, the measured real mean
    and whether it lies inside; the leave-one-out coverage with its binomial interval and the
    mean width; each twin-only policy's prediction and what a lab does with it. ``[]``
    without a section (a summary written before predictions existed). ``worlds``: the
    predicting world and the predicted one, as the text names them (a sweep's later world
    and its first, the reference)."""
    if not section:
        return []
    level = round(100 * float(section.get('level', 0.9)))
    twin, real = (html.escape(w) for w in worlds)
    parts = [f'<h2>{html.escape(heading)}</h2>',
             f"<p>Each policy's {real} mean progression predicted from its {twin} episodes with "
             f'a calibration map {twin} &rarr; {real} fitted on the <em>other</em> policies '
             f'(leave-one-policy-out), with a {level} % prediction interval '
             '(docs/evaluation.md, &ldquo;Predicting real scores from the twin&rdquo;).</p>']
    cov = section.get('coverage') or {}
    if cov.get('policies'):
        ci = cov.get('coverage_ci95')
        rate = (f' (coverage {cov["coverage"]:.2f}, exact binomial 95 % CI '
                f'[{ci[0]:.2f}, {ci[1]:.2f}])') if ci else ''
        parts.append(f'<p class="coverage"><b>{cov["covered"]} of {cov["policies"]}</b> '
                     f'{level} % intervals hold the measured {real} mean{rate}; mean width '
                     f'<b>{cov["mean_width"]:.3f}</b>.</p>')
    elif section.get('note'):
        parts.append('<p class="coverage">no leave-one-out prediction: '
                     f'{html.escape(str(section["note"]))}</p>')

    def interval(p: Mapping[str, Any]) -> str:
        return f'[{p["low"]:.3f}, {p["high"]:.3f}]'

    def fit(p: Mapping[str, Any]) -> str:
        return f'{p["model"]}, {p["dof"]} dof, on {", ".join(p["fitted_on"])}'

    rows: list[list[Any]] = [
        [p['policy'], p['twin'], p['predicted'], interval(p), p['real'],
         'yes' if p['covered'] else 'NO', fit(p)] for p in section.get('leave_one_out', ())]
    rows += [[p['policy'], p['twin'], p['predicted'], interval(p), f'{worlds[0]} only', 'n/a',
              fit(p)] for p in section.get('twin_only', ())]
    if rows:
        parts.append(_table(['policy', f'{worlds[0]} mean', f'predicted {worlds[1]}',
                             f'{level} % PI', f'measured {worlds[1]}', 'inside', 'map'], rows))
    actions = [(p['policy'], p['action']) for p in section.get('twin_only', ())
               if p.get('action')]
    if actions:
        parts.append('<ul class="actions">' + ''.join(
            f'<li><b>{html.escape(str(name))}</b>: {html.escape(str(text))}</li>'
            for name, text in actions) + '</ul>')
    return parts


#: The report's table style, shared with the sweep's report (``realm_ros/sweep/report.py``).
html_table = _table


def _variant_aggregation(summary: Mapping[str, Any]) -> list[str]:
    """The variant aggregation section (``paired-eval --variant-aggregation N``), beside the
    twin's (plain or visually matched) scores."""
    va = summary.get('variant_aggregation')
    if not va:
        return []
    twin = 'visually matched twin' if va.get('visual_match_dir') else 'twin'
    sim = {e['policy']: e for e in summary.get('per_policy', [])}
    axes = html.escape(', '.join(a or 'own' for a in va['axes']))
    parts = [f"<h2>Variant aggregation</h2><p>SIMPLER's VA: the sim side of the same plan on "
             f"{va['count']} looks of the twin ({axes}), each variant's mean progression "
             f'averaged; beside the {twin} the pairs ran on.</p>']
    parts.append(_table(
        ['policy', 'real progress', f'{twin} progress', 'VA progress', 'spread over variants',
         'VA success'],
        [[r['policy'], sim.get(r['policy'], {}).get('real_progress', float('nan')),
          sim.get(r['policy'], {}).get('sim_progress', float('nan')), r['progress'],
          r['progress_spread'], r['success']] for r in va['per_policy']]))
    a = va.get('agreement') or {}
    if 'pearson_r' in a:
        parts.append(f'<p>VA vs real: Pearson r = {a["pearson_r"]:.3f}, MMRV = '
                     f'{a["mmrv"]:.3f}, mean |gap| = {a["mean_abs_gap"]:.3f}.</p>')
    return parts


def add_variant_aggregation(out_dir: str | pathlib.Path, summary: Mapping[str, Any]) -> None:
    """Put ``summary``'s variant aggregation section into an existing ``report.html`` (after
    the policies' table; replacing one an earlier run put there)."""
    path = pathlib.Path(out_dir) / 'report.html'
    if not path.is_file():
        return
    text = path.read_text()
    start = text.find('<h2>Variant aggregation</h2>')
    if start >= 0:
        end = text.find('<h2>', start + 1)
        text = text[:start] + (text[end:] if end >= 0 else '</body></html>')
    section = '\n'.join(_variant_aggregation(summary))
    anchor = '<h2>Bradley-Terry ranking</h2>'
    at = text.find(anchor)
    at = at if at >= 0 else text.rfind('</body>')
    path.write_text(text[:at] + section + '\n' + text[at:])


def write_report(out_dir: str | pathlib.Path, summary: Mapping[str, Any],
                 meta: Mapping[str, Any] | None = None) -> pathlib.Path:
    """Write the figures and ``report.html`` into ``out_dir``; return the HTML path.

    ``meta`` may hold ``title``, ``real`` / ``sim`` descriptions and ``sim_params`` (the twin's
    friction and armature used), shown in the report.
    """
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    meta = dict(meta or {})
    _scatter(summary, out / 'agreement_scatter.png')
    _bars(summary, out / 'policy_bars.png')
    _ranking(summary, out / 'ranking.png')
    has_perturbations = _perturbations(summary, out / 'perturbations.png')

    a = summary.get('agreement', {})
    parts = [
        '<!doctype html><html><head><meta charset="utf-8">',
        f'<title>{html.escape(meta.get("title", "realm_ros paired evaluation"))}</title>',
        '<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}'
        'table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;'
        'padding:3px 8px;font-size:13px;text-align:right}th{background:#f3f3f3}'
        'img{max-width:100%}</style></head><body>',
        f'<h1>{html.escape(meta.get("title", "realm_ros paired evaluation"))}</h1>',
        f'<p>real: {html.escape(str(meta.get("real", "")))}<br>'
        f'sim: {html.escape(str(meta.get("sim", "")))}<br>'
        f'{summary["pairs"]} complete pairs, {summary.get("infra_failures", 0)} '
        'infrastructure failures (not scored).</p>',
    ]
    shown = [m for m in metrics.METRICS.values() if m.name in a]
    if shown:
        # summary.json's ``ci95`` (paired bootstrap over starts, core/evaluation.py) beside
        # each figure, as the console table prints them: one core.metrics.Metric each.
        parts.append(
            '<h2>Agreement</h2><p>Over per-policy mean progression, with paired-bootstrap 95 % '
            'intervals over starts: '
            + ', '.join(f'{html.escape(m.title or m.label, quote=False)} = '
                        f'{m.with_interval(a)}' for m in shown) + '.</p>')
        parts.append(_table(
            ['task'] + [f'{m.column or m.label} [95% CI]' for m in shown] + ['policies'],
            [[t] + [m.with_interval(v) for m in shown]
             + [v['n_policies']] for t, v in a.get('per_task', {}).items()]))
    parts.append('<img src="agreement_scatter.png" alt="real vs sim per task">')
    parts.append('<h2>Policies</h2>')
    parts.append(_table(
        ['policy', 'episodes', 'real progress', '95% CI', 'sim progress', '95% CI',
         'real success', 'sim success'],
        [[e['policy'], e['episodes'], e['real_progress'], e['real_progress_ci'],
          e['sim_progress'], e['sim_progress_ci'], e['real_success'], e['sim_success']]
         for e in summary['per_policy']]))
    parts.append('<img src="policy_bars.png" alt="per-policy bars">')
    parts += _variant_aggregation(summary)
    parts += _scorers(summary.get('scorers'))
    parts += predictions_html(summary.get('prediction'))
    parts.append('<h2>Bradley-Terry ranking</h2><img src="ranking.png" alt="ranking">')
    parts += _preferences(summary.get('preferences'))
    if summary.get('kruskal'):
        parts.append("<h2>Kruskal-Wallis, sim vs real per policy</h2><p>SimplerEnv's test "
                     '(scipy.stats.kruskal) on episode outcomes; identical samples give '
                     'p = 1.</p>')
        parts.append(_table(
            ['policy', 'progression H', 'p', 'success H', 'p', 'note'],
            [[p, k['progression']['statistic'], k['progression']['pvalue'],
              k['success']['statistic'], k['success']['pvalue'],
              k['success']['note'] or k['progression']['note']]
             for p, k in summary['kruskal'].items()]))
    if has_perturbations:
        parts.append('<h2>Perturbations</h2>')
        parts.append(_table(
            ['perturbation', 'real delta', 'real RMSD', 'sim delta', 'sim RMSD'],
            [[n, d.get('real', {}).get('delta', float('nan')),
              d.get('real', {}).get('rmsd', float('nan')),
              d.get('sim', {}).get('delta', float('nan')),
              d.get('sim', {}).get('rmsd', float('nan'))]
             for n, d in summary['perturbations'].items()]))
        parts.append('<img src="perturbations.png" alt="perturbation deltas">')
    if summary.get('skipped'):
        parts.append('<h2>Skipped (incompatible in REALM)</h2>')
        parts.append(_table(['task', 'perturbation', 'reason'],
                            [[c['task'], c['perturbation'], c['reason']]
                             for c in summary['skipped']]))
    params = meta.get('sim_params')
    parts.append('<h2>Twin parameters</h2>')
    if params:
        parts.append(_table(['joint'] + [f'{i}' for i in range(1, 8)],
                            [[k] + list(v) for k, v in params.items()]))
    else:
        parts.append('<p>twin defaults (no identified parameters)</p>')
    parts.append('</body></html>')
    path = out / 'report.html'
    path.write_text('\n'.join(parts))
    return path
