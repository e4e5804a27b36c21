"""Paired-evaluation core: plans, records and resume, summaries (no ROS, no physics)."""

import json

import pytest

from realm_ros.core import metrics
from realm_ros.core.errors import ConfigError, DataError
from realm_ros.core.evaluation import (
    EpisodeLog,
    EvalConfig,
    PolicyEntry,
    format_table,
    plan_pairs,
    summarize,
)


def test_policy_entry_parsing():
    assert PolicyEntry.parse('scripted:2') == PolicyEntry('scripted-2', 'scripted', {'skill': 2})
    entry = PolicyEntry.parse('pi05=openpi:host=gpu-box,port=8000')
    assert entry == PolicyEntry('pi05', 'openpi', {'host': 'gpu-box', 'port': 8000})
    assert PolicyEntry.parse('hold') == PolicyEntry('hold', 'hold', {})
    with pytest.raises(ConfigError, match='bad argument'):
        PolicyEntry.parse('x=openpi:host')
    # A skill by name, as in a config file's policies list (`--policies` and `episode --skill`
    # take the same names).
    assert PolicyEntry.parse('scripted:good') == PolicyEntry('scripted-good', 'scripted',
                                                             {'skill': 'good'})
    with pytest.raises(ConfigError, match="'scripted:goood'.*unknown"):
        PolicyEntry.parse('scripted:goood')


def test_config_validation_names_fields(tmp_path):
    with pytest.raises(ConfigError, match='EvalConfig.real'):
        EvalConfig(real='gazebo')
    with pytest.raises(ConfigError, match='duplicates'):
        EvalConfig(tasks=('pick_spoon', 'pick_spoon'))
    with pytest.raises(ConfigError, match="unknown task 'pick_spon'"):
        EvalConfig(tasks=('pick_spon',))
    with pytest.raises(ConfigError, match='unknown perturbation'):
        EvalConfig(perturbations=('V-FOG',))
    with pytest.raises(ConfigError, match='incompatible'):
        EvalConfig(tasks=('push_switch',), perturbations=('B-HOBJ',))
    path = tmp_path / 'eval.yaml'
    path.write_text('tasks: [pick_spoon]\nepisodes_per_cel: 3\n')
    with pytest.raises(ConfigError, match='unknown field.*episodes_per_cel'):
        EvalConfig.from_yaml(path)
    path.write_text('tasks: [pick_spoon]\n')
    assert EvalConfig.from_yaml(path, episodes_per_cell=7).episodes_per_cell == 7


def test_plan_gives_every_policy_the_same_initial_states():
    config = EvalConfig(tasks=('pick_spoon', 'open_drawer'),
                        policies=('scripted:0', 'scripted:1'),
                        perturbations=('Default', 'V-LIGHT'), episodes_per_cell=3)
    specs = plan_pairs(config, sampler=lambda task, seed: {'seed_echo': seed})
    assert len(specs) == 2 * 2 * 3 * 2
    assert len({s.pair_id for s in specs}) == len(specs)
    by_cell = {}
    for s in specs:
        by_cell.setdefault((s.task, s.perturbation, s.pair_id.split('/')[2]), set()).add(s.seed)
    assert all(len(seeds) == 1 for seeds in by_cell.values())
    assert len({s.seed for s in specs}) == 12
    assert plan_pairs(config)[5].seed == specs[5].seed  # stable across runs


def _record(pair, world, policy, task, progression, seed=0, perturbation='Default',
            outcome=None):
    return {'pair_id': pair, 'world': world, 'policy': policy, 'task': task, 'seed': seed,
            'perturbation': perturbation, 'progression': progression,
            'success': progression >= 1.0,
            'outcome': outcome or ('success' if progression >= 1 else 'timeout')}


def test_episode_log_resumes_and_survives_a_cut_line(tmp_path):
    path = tmp_path / 'episodes.jsonl'
    log = EpisodeLog(path)
    log.append(_record('p0', 'real', 'a', 't', 1.0))
    log.append(_record('p0', 'sim', 'a', 't', 0.5))
    with open(path, 'a') as handle:
        handle.write('{"pair_id": "p1", "wor')  # the process died mid-write
    again = EpisodeLog(path)
    assert again.done('p0', 'real') and again.done('p0', 'sim')
    assert not again.done('p1', 'real')
    assert again.skipped_lines == 1 and len(again.records) == 2
    again.append(_record('p1', 'real', 'a', 't', 1.0))  # starts on a fresh line
    assert EpisodeLog(path).done('p1', 'real')


def test_summary_matches_hand_computation():
    records = []
    table = {'good': [(1.0, 1.0), (1.0, 0.6)], 'bad': [(0.2, 0.4), (0.0, 0.2)]}
    for policy, pairs in table.items():
        for k, (real, sim) in enumerate(pairs):
            pair = f't/Default/{k}/{policy}'
            records += [_record(pair, 'real', policy, 't', real, seed=k),
                        _record(pair, 'sim', policy, 't', sim, seed=k)]
    records.append(_record('t/Default/9/bad', 'real', 'bad', 't', 0.0, outcome='infra_failure'))
    summary = summarize(records)
    assert summary['pairs'] == 4 and summary['infra_failures'] == 1
    per = {e['policy']: e for e in summary['per_policy']}
    assert per['good']['real_progress'] == 1.0 and per['good']['sim_progress'] == 0.8
    assert per['bad']['real_success'] == 0.0 and per['good']['sim_success'] == 0.5
    assert summary['agreement']['pearson_r'] == pytest.approx(
        metrics.pearson_r(sim=[0.3, 0.8], real=[0.1, 1.0]))
    assert summary['agreement']['mmrv'] == 0.0
    assert summary['agreement']['mean_abs_gap'] == pytest.approx((0.2 + 0.2) / 2)
    assert [r['policy'] for r in summary['ranking']['real']] == ['good', 'bad']
    assert 'agreement over 4 pairs' in format_table(summary)
    # Paired bootstrap over the 2 starts: a resample's gap is 0.1 (start 0 twice), 0.3 (start
    # 1 twice) or 0.2, so the 95 % interval is [0.1, 0.3].
    ci = summary['agreement']['ci95']
    assert ci['mean_abs_gap'] == pytest.approx([0.1, 0.3])
    assert 'mean |real - sim| = 0.200 [0.100, 0.300]' in format_table(summary)
    assert summary['agreement']['per_task']['t']['ci95'] == ci
    json.dumps(summary)  # JSON-ready


def test_summary_perturbation_deltas_and_empty_input():
    records = []
    for policy, (d, p) in {'a': (1.0, 0.5), 'b': (0.6, 0.6)}.items():
        for pert, value in (('Default', d), ('V-LIGHT', p)):
            pair = f't/{pert}/0/{policy}'
            records += [_record(pair, w, policy, 't', value, perturbation=pert)
                        for w in ('real', 'sim')]
    deltas = summarize(records)['perturbations']['V-LIGHT']
    assert deltas['real']['delta'] == pytest.approx(-0.25)
    assert deltas['real']['rmsd'] == pytest.approx((0.25 / 2) ** 0.5)
    with pytest.raises(DataError, match='no pair has finished'):
        summarize([_record('x', 'real', 'a', 't', 1.0)])


def test_report_writes_html_and_figures(tmp_path):
    from realm_ros.programs.report import write_report
    records = []
    for task in ('t1', 't2'):
        for policy, (real, sim) in {'a': (1.0, 0.8), 'b': (0.4, 0.5), 'c': (0.0, 0.2)}.items():
            for pert in ('Default', 'V-LIGHT'):
                pair = f'{task}/{pert}/0/{policy}'
                records += [_record(pair, 'real', policy, task, real, perturbation=pert),
                            _record(pair, 'sim', policy, task, sim, perturbation=pert)]
    summary = summarize(records)
    path = write_report(tmp_path, summary, {'sim_params': {'friction': [0.1] * 7}})
    text = path.read_text()
    for name in ('agreement_scatter.png', 'policy_bars.png', 'ranking.png', 'perturbations.png'):
        assert (tmp_path / name).stat().st_size > 5000
        assert name in text
    assert 'MMRV' in text and 'friction' in text


def test_import_world_copies_only_matching_real_records(tmp_path):
    before = EpisodeLog(tmp_path / 'before' / 'episodes.jsonl')
    before.append(_record('p0', 'real', 'a', 't', 1.0))
    before.append(_record('p0', 'sim', 'a', 't', 0.2))
    before.append(_record('p9', 'real', 'a', 't', 1.0))
    after = EpisodeLog(tmp_path / 'after' / 'episodes.jsonl')
    assert after.import_world(before.path, 'real', ['p0', 'p1']) == 1
    assert after.done('p0', 'real') and not after.done('p0', 'sim')
    assert after.import_world(before.path, 'real', ['p0']) == 0  # idempotent


def test_kruskal_per_policy_as_simplerenv_reports_it():
    from scipy.stats import kruskal
    sim, real = [1, 0, 1, 1, 0, 1], [0, 0, 1, 0, 0, 0]
    got = metrics.kruskal_sim_real(sim=sim, real=real)
    ref = kruskal(sim, real)
    assert got['statistic'] == pytest.approx(ref.statistic)
    assert got['pvalue'] == pytest.approx(ref.pvalue)
    # SimplerEnv: identical samples -> "all same, 1.0" (scipy raises when all numbers match).
    same = metrics.kruskal_sim_real(sim=[1, 1, 1], real=[1, 1, 1])
    assert same['pvalue'] == 1.0 and same['statistic'] == 0.0 and same['note'] == 'all same'
    assert metrics.kruskal_sim_real(sim=[0.5, 0.2], real=[0.5, 0.2])['pvalue'] == 1.0
    lengths = metrics.kruskal_sim_real(sim=[1, 1], real=[1, 1, 1])
    assert lengths['pvalue'] == 1.0 and lengths['note'] == 'all numbers identical'
    assert metrics.kruskal_sim_real(sim=[], real=[1])['note'] == 'empty sample'
    with pytest.raises(DataError, match='NaN'):
        metrics.kruskal_sim_real(sim=[float('nan')], real=[1])
    assert metrics.trials_from_rate(0.5, 4).tolist() == [1, 1, 0, 0]
    records = []
    for k, (r, s) in enumerate([(1.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 0.0)]):
        records += [_record(f't/Default/{k}/p', 'real', 'p', 't', r, seed=k),
                    _record(f't/Default/{k}/p', 'sim', 'p', 't', s, seed=k)]
    summary = summarize(records)
    k = summary['kruskal']['p']['progression']
    ref = kruskal([0.0, 0.0, 1.0, 0.0], [1.0, 1.0, 1.0, 0.0])
    assert k['pvalue'] == pytest.approx(ref.pvalue) and k['n_sim'] == 4
    assert 'Kruskal-Wallis' in format_table(summary)


def test_incompatible_cells_are_skipped_with_the_reason_never_run_as_default():
    from realm_ros.core.evaluation import skipped_cells
    config = EvalConfig(tasks=('push_switch', 'pick_spoon'), perturbations=('Default', 'V-SC'),
                        policies=('scripted:0', 'scripted:1'), episodes_per_cell=1)
    specs = plan_pairs(config)
    cells = {(s.task, s.perturbation) for s in specs}
    assert ('push_switch', 'V-SC') not in cells and ('pick_spoon', 'V-SC') in cells
    skipped = skipped_cells(config)
    assert [(c['task'], c['perturbation']) for c in skipped] == [('push_switch', 'V-SC')]
    assert 'incompatible with push' in skipped[0]['reason']
    with pytest.raises(ConfigError, match='every .task, perturbation. pair is incompatible'):
        EvalConfig(tasks=('push_switch',), perturbations=('V-SC',))
    records = []
    for s in specs:
        records += [_record(s.pair_id, w, s.policy, s.task, 0.5, perturbation=s.perturbation)
                    for w in ('real', 'sim')]
    summary = summarize(records, skipped=skipped)
    assert summary['skipped'] == skipped
    assert 'skipped push_switch / V-SC' in format_table(summary)
