"""The twin -> real prediction: hand cases, edge cases, and its coverage by simulation."""

import math
import pathlib

import numpy as np
import pytest
from scipy.stats import norm
from scipy.stats import t as student_t

from realm_ros.core import prediction
from realm_ros.core.errors import DataError


def _var(episodes):
    padded = np.concatenate([episodes, [0.0, 1.0]])
    return padded.var(ddof=1) / padded.size


def test_mean_and_variance_plus_two():
    mean, var = prediction.mean_and_variance([0.0, 0.0, 0.0])
    # {0, 0, 0, 0, 1}: variance 0.2 over 5
    assert mean == 0.0 and var == pytest.approx(0.2 / 5)
    with pytest.raises(DataError, match='no episodes'):
        prediction.mean_and_variance([])


def test_linear_map_hand_computed():
    # Four policies, real = 0.1 + 0.5 twin + residuals (+0.05, -0.05, -0.05, +0.05).
    twin_means = np.array([0.2, 0.4, 0.6, 0.8])
    real_means = 0.1 + 0.5 * twin_means + np.array([0.05, -0.05, -0.05, 0.05])
    fit_twin = [np.full(50, m) for m in twin_means]
    fit_real = [np.full(50, m) for m in real_means]
    centre, low, high, model, dof = prediction.predict(fit_twin, fit_real, np.full(50, 0.5))
    assert (model, dof) == ('linear', 2)
    x, y = twin_means, real_means
    b = np.sum((x - x.mean()) * (y - y.mean())) / np.sum((x - x.mean()) ** 2)
    a = y.mean() - b * x.mean()
    assert centre == pytest.approx(a + b * 0.5)
    resid = y - a - b * x
    spread = 1 + 1 / 4 + (0.5 - x.mean()) ** 2 / np.sum((x - x.mean()) ** 2)
    t_half = student_t.ppf(0.95, 2) * math.sqrt(np.sum(resid ** 2) / 2 * spread)
    floor = np.mean([_var(r) + b * b * _var(t) for t, r in zip(fit_twin, fit_real)])
    z_half = norm.ppf(0.95) * math.sqrt(floor * spread)
    assert t_half > z_half  # here the residual spread decides
    assert (low, high) == pytest.approx((centre - t_half, centre + t_half))


def test_three_policies_on_a_line_keep_a_sampling_width_and_use_the_shift():
    # Three policies exactly on real = twin - 0.1: the residual is 0, the interval is not.
    fit_twin = [np.full(10, m) for m in (0.3, 0.5, 0.7)]
    fit_real = [np.full(10, m - 0.1) for m in (0.3, 0.5, 0.7)]
    centre, low, high, model, dof = prediction.predict(fit_twin, fit_real, np.full(10, 0.6))
    assert (model, dof) == ('shift', 2)
    assert centre == pytest.approx(0.5)
    assert high - low > 0.2  # 10 episodes a policy cannot pin a mean to +-0.1
    assert low < 0.5 < high


def test_clipped_to_progression_range_and_errors():
    fit_twin = [[0.0, 0.1], [0.5, 0.4], [0.9, 1.0]]
    fit_real = [[0.0, 0.0], [0.5, 0.6], [1.0, 1.0]]
    centre, low, high, _, _ = prediction.predict(fit_twin, fit_real, [1.0, 1.0])
    assert 0.0 <= low <= centre <= high <= 1.0
    with pytest.raises(DataError, match='at least 2 policies'):
        prediction.predict([[0.5]], [[0.5]], [0.5])
    with pytest.raises(DataError, match='linear map needs at least 3'):
        prediction.predict([[0.1], [0.5]], [[0.1], [0.5]], [0.5], model='linear')
    with pytest.raises(DataError, match='level'):
        prediction.predict(fit_twin, fit_real, [0.5], level=1.0)
    with pytest.raises(DataError, match='NaN'):
        prediction.predict(fit_twin, fit_real, [float('nan')])


@pytest.mark.parametrize('policies,episodes,tau', [(4, 10, 0.05), (6, 10, 0.15), (8, 20, 0.1)])
def test_leave_one_out_coverage_by_simulation(policies, episodes, tau):
    found = prediction.simulated_coverage(policies, episodes, tau, ladders=120, seed=policies)
    # Nominal 0.90; conservative by design, but not an interval that covers everything.
    assert 0.88 <= found['coverage'] <= 0.995
    assert found['mean_width'] < 0.8
    # A 50 % interval from the same code covers far less: the check can fail.
    half = prediction.simulated_coverage(policies, episodes, tau, ladders=60, level=0.5)
    assert half['coverage'] < 0.8


def test_more_policies_and_episodes_narrow_the_interval():
    small = prediction.simulated_coverage(4, 5, 0.05, ladders=30)['mean_width']
    large = prediction.simulated_coverage(10, 40, 0.05, ladders=30)['mean_width']
    assert large < 0.6 * small


def test_a_policy_outside_the_map_is_missed():
    # The twin over-predicts one policy as it did twin_final (0.9 in the twin, 0 real).
    rng = np.random.default_rng(3)
    rep = prediction.report(prediction.synthetic_ladder(rng, 8, 20, 0.02, outlier=0))
    by = {p['policy']: p for p in rep['leave_one_out']}
    assert by['p0']['covered'] is False and by['p0']['predicted'] > 0.5
    assert rep['coverage']['covered'] < rep['coverage']['policies']


def test_report_predicts_twin_only_policies_from_all_the_others():
    rng = np.random.default_rng(5)
    scores = prediction.synthetic_ladder(rng, 5, 10, 0.05)
    scores['new'] = (scores['p1'][0], None)
    rep = prediction.report(scores)
    assert [p['policy'] for p in rep['leave_one_out']] == ['p0', 'p1', 'p2', 'p3', 'p4']
    (new,) = rep['twin_only']
    assert new['fitted_on'] == ['p0', 'p1', 'p2', 'p3', 'p4'] and new['real'] is None
    assert new['covered'] is None and new['model'] == 'linear' and new['dof'] == 3
    # Fitted on one policy more than p1's own leave-one-out, from the same twin episodes.
    assert new['low'] <= new['predicted'] <= new['high']
    lines = prediction.format_lines(rep)
    assert any(line.strip().startswith('twin only: new') for line in lines)
    assert 'leave-one-policy-out' in lines[0]


def test_report_with_too_few_policies_says_why():
    rep = prediction.report({'a': ([0.5], [0.4]), 'b': ([0.2], None)})
    assert rep['leave_one_out'] == [] and rep['twin_only'] == []
    assert 'at least 2 policies' in rep['note']
    assert rep['coverage']['coverage'] is None
    assert prediction.format_lines(rep) == [
        '  leave-one-policy-out: none (a calibration map needs at least 2 policies with both '
        'worlds, got 1)']


def _record(policy, world, k, progression):
    return {'pair_id': f't/Default/{k}/{policy}', 'world': world, 'policy': policy, 'task': 't',
            'seed': k, 'perturbation': 'Default', 'progression': progression,
            'success': progression >= 1.0, 'outcome': 'timeout'}


def test_paired_eval_summary_predicts_a_policy_run_in_the_twin_only():
    from realm_ros.core.evaluation import format_table, summarize

    twin = {'a': [0.2, 0.3, 0.1], 'b': [0.5, 0.6, 0.4], 'c': [0.9, 0.8, 1.0],
            'new': [0.7, 0.6, 0.8]}
    real = {'a': [0.1, 0.2, 0.0], 'b': [0.4, 0.5, 0.4], 'c': [0.7, 0.8, 0.9]}
    records = [_record(p, 'sim', k, v) for p, vs in twin.items() for k, v in enumerate(vs)]
    records += [_record(p, 'real', k, v) for p, vs in real.items() for k, v in enumerate(vs)]
    summary = summarize(records)
    assert summary['policies'] == ['a', 'b', 'c']  # the pairs' figures are the pairs' alone
    section = summary['prediction']
    (new,) = section['twin_only']
    expected = prediction.predict([twin[p] for p in 'abc'], [real[p] for p in 'abc'],
                                  twin['new'])
    assert (new['predicted'], new['low'], new['high'], new['model'], new['dof']) == \
        pytest.approx(expected)
    assert new['fitted_on'] == ['a', 'b', 'c']
    assert [p['policy'] for p in section['leave_one_out']] == ['a', 'b', 'c']
    assert section['coverage']['policies'] == 3
    table = format_table(summary)
    assert 'twin only: new' in table and 'leave-one-policy-out:' in table


def test_sweep_predicts_a_twin_only_policy_in_process(tmp_path, capsys):
    """``realm-ros sweep`` on two worlds: the first (MuJoCo) is the reference, ``--twin-only``
    runs scripted-2 on PhysX alone, and the summary predicts its MuJoCo mean from the map
    fitted on the two policies run in both."""
    import json

    pytest.importorskip('ovphysx')
    from realm_ros.cli import main

    out = tmp_path / 'sweep'
    args = ['sweep', '--out', str(out), '--tasks', 'push_switch', '--episodes-per-cell', '1',
            '--max-steps', '40', '--worlds', 'mujoco', 'physx', '--quiet',
            '--policies', 'scripted:0', 'scripted:3', 'scripted:2']
    assert main([*args[:-4], '--policies', 'scripted:0', '--twin-only', 'scripted-0']) == 2
    assert 'at least two policies must run in every world' in capsys.readouterr().err
    assert main([*args, '--twin-only', 'scripted-2']) == 0
    printed = capsys.readouterr().out
    records = [json.loads(line) for line in (out / 'episodes.jsonl').read_text().splitlines()]
    worlds = {(r['backend'], r['policy']) for r in records}
    assert ('mujoco', 'scripted-2') not in worlds and ('physx', 'scripted-2') in worlds
    assert len(records) == 5
    section = json.loads((out / 'summary.json').read_text())['prediction']['physx vs mujoco']
    (only,) = section['twin_only']
    by = {(r['backend'], r['policy']): [r['progression']] for r in records}
    expected = prediction.predict([by[('physx', p)] for p in ('scripted-0', 'scripted-3')],
                                  [by[('mujoco', p)] for p in ('scripted-0', 'scripted-3')],
                                  by[('physx', 'scripted-2')])
    assert only['policy'] == 'scripted-2' and only['fitted_on'] == ['scripted-0', 'scripted-3']
    assert (only['predicted'], only['low'], only['high']) == pytest.approx(expected[:3])
    assert 'twin only: scripted-2' in printed


def test_vision_demo_table_has_the_predictions_per_column():
    """vision_demo's summary and table from records made as its run writes them."""
    from realm_ros.programs import vision_demo

    config = vision_demo.VisionDemoConfig(
        tasks=('push_switch',), policies=('a=scripted:0', 'b=scripted:1', 'c=scripted:2',
                                          'd=scripted:3'),
        episodes=3, max_steps=10, width=32, height=18, columns=('raw', 'calibrated'))
    twin = {'a': [0.9, 1.0, 0.8], 'b': [0.6, 0.5, 0.7], 'c': [0.3, 0.2, 0.4], 'd': [0.9, 0.9, 1.0]}
    real = {'a': [0.8, 0.9, 0.9], 'b': [0.5, 0.5, 0.6], 'c': [0.2, 0.3, 0.2], 'd': [0.0, 0.0, 0.0]}
    records = []
    for column, scores in (('real', real), ('raw', twin)):
        for policy, values in scores.items():
            records += [{'column': column, 'task': 'push_switch', 'policy': policy, 'seed': k,
                         'variant': 0, 'progression': v, 'success': v >= 1.0,
                         'outcome': 'timeout', 'image_mae': {}} for k, v in enumerate(values)]
    summary = vision_demo.summarize(records, config, vision_demo.Inputs())
    section = summary['columns']['raw']['all']['prediction']
    by = {p['policy']: p for p in section['leave_one_out']}
    expected = prediction.predict([twin[p] for p in 'abc'], [real[p] for p in 'abc'], twin['d'])
    assert (by['d']['predicted'], by['d']['low'], by['d']['high']) == pytest.approx(expected[:3])
    # d looks good in the twin and scores nothing on the real arm: outside its interval.
    assert by['d']['covered'] is False
    assert section['coverage']['covered'] == sum(p['covered'] for p in by.values())
    table = vision_demo.format_table(summary)
    row = next(line for line in table.splitlines() if line.startswith('| d: real predicted'))
    assert row.split(' | ')[1] == '0.00' and row.split(' | ')[2].endswith(' *')
    assert 'not available (no calibrated rig)' in row
    cover = next(line for line in table.splitlines() if line.startswith('| 90 % PI coverage'))
    assert f'{section["coverage"]["covered"]} of 4 / ' in cover


def test_paired_eval_runs_twin_only_policies_in_the_twin_and_predicts_them(tmp_path):
    """paired-eval's ROS-free half with ``twin_only``: the pairs of scripted-3 run in the twin
    alone (the evaluator node runs :meth:`PairedEvaluation.worlds` of each spec), and the
    summary predicts its real score from the three policies run in both worlds."""
    import argparse
    import json

    from realm_ros.commands import paired_eval
    from realm_ros.core.errors import ConfigError
    from realm_ros.core.evaluation import EvalConfig
    from realm_ros.programs.paired import EvaluatorConfig, PairedEvaluation

    policies = ('scripted:0', 'scripted:1', 'scripted:2', 'scripted:3')
    with pytest.raises(ConfigError, match='no policy labelled'):
        EvalConfig(policies=policies, twin_only=('nobody',))
    with pytest.raises(ConfigError, match='at least two policies must run in both'):
        EvalConfig(policies=policies[:2], twin_only=('scripted-1',))
    with pytest.raises(ConfigError, match='until_decided ranks the real world'):
        EvalConfig(policies=policies, twin_only=('scripted-3',), until_decided=0.9)
    parser = argparse.ArgumentParser()
    paired_eval.add_arguments(parser)
    config = paired_eval.load_config(parser.parse_args(
        ['--out', str(tmp_path), '--tasks', 'push_switch', '--episodes-per-cell', '3',
         '--policies', *policies, '--twin-only', 'scripted-3']))
    assert config.twin_only == ('scripted-3',)
    score = {'sim': {'scripted-0': 0.9, 'scripted-1': 0.6, 'scripted-2': 0.3, 'scripted-3': 0.5},
             'real': {'scripted-0': 0.8, 'scripted-1': 0.5, 'scripted-2': 0.3}}
    ran = []

    def run_pair(spec, log):  # what evaluator_node.run_pair does, without ROS or physics
        for world in evaluation.worlds(spec):
            if not log.done(spec.pair_id, world):
                ran.append((spec.policy, world))
                value = score[world][spec.policy] + 0.05 * (spec.seed % 3 - 1)
                log.append({'pair_id': spec.pair_id, 'role': world, 'policy': spec.policy,
                            'task': spec.task, 'seed': spec.seed, 'perturbation': 'Default',
                            'intensity': 1.0, 'progression': value, 'success': False,
                            'outcome': 'timeout'})

    class Quiet:
        def info(self, message):
            pass

        def warning(self, message):
            pass

    evaluation = PairedEvaluation(config, EvaluatorConfig(out_dir=str(tmp_path), quiet=True),
                                  run_pair, Quiet())
    summary = evaluation.run()
    assert ('scripted-3', 'real') not in ran and ran.count(('scripted-3', 'sim')) == 3
    assert len(ran) == 3 * 3 * 2 + 3
    (only,) = summary['prediction']['twin_only']
    assert only['policy'] == 'scripted-3' and only['fitted_on'] == [
        'scripted-0', 'scripted-1', 'scripted-2']
    assert only['low'] <= only['predicted'] <= only['high']
    assert json.loads((tmp_path / 'summary.json').read_text())['prediction'] == \
        summary['prediction']
    ran.clear()
    evaluation.run()  # resumed: every pair is done in its worlds
    assert ran == []


def test_fewer_twin_episodes_of_the_new_policy_widen_its_interval():
    rng = np.random.default_rng(7)
    ladder = prediction.synthetic_ladder(rng, 6, 20, 0.05)
    fit_twin = [t for t, _ in ladder.values()]
    fit_real = [r for _, r in ladder.values()]
    many = prediction.predict(fit_twin, fit_real, [0.25, 0.75] * 10)
    few = prediction.predict(fit_twin, fit_real, [0.25, 0.75])
    assert many[0] == pytest.approx(few[0])  # the same twin mean, the same prediction
    assert few[2] - few[1] > many[2] - many[1] + 0.05


def _vision_records(real, twin=None):
    records = []
    for column, scores in (('real', real), ('raw', twin or real)):
        for (task, policy), values in scores.items():
            records += [{'column': column, 'task': task, 'policy': policy, 'seed': k,
                         'variant': 0, 'progression': v, 'success': v >= 1.0,
                         'outcome': 'timeout', 'image_mae': {}} for k, v in enumerate(values)]
    return records


def test_vision_demo_replays_until_decided_on_its_real_episodes():
    """The real episodes --until-decided would have spent: AdaptiveRanking replayed on the
    fixed design's digital-real episodes, stated against the fixed design's count."""
    from realm_ros.core import allocation
    from realm_ros.programs import vision_demo

    config = vision_demo.VisionDemoConfig(
        tasks=('push_switch', 'pick_spoon'), policies=('a=scripted:0', 'b=scripted:1',
                                                       'c=scripted:2'),
        episodes=10, max_steps=10, width=32, height=18, columns=('raw',))
    # Far apart: decided long before the fixed design's 60 real episodes.
    apart = {(t, p): [v] * 10 for t in config.tasks
             for p, v in (('a', 0.0), ('b', 0.5), ('c', 1.0))}
    records = _vision_records(apart)
    d = vision_demo.decided_replay(records, config, 0.95, 'adaptive')
    assert d['decided'] and d['spent'] < d['fixed'] == 60 and not d['exhausted']
    assert d['state']['order'] == ['c', 'b', 'a'] and d['fixed_state']['decided']
    # The same as driving AdaptiveRanking by hand with those episodes.
    ranking = allocation.AdaptiveRanking(['a', 'b', 'c'], config.tasks, 0.95, budget=60)
    state = allocation.run_until_decided(
        ranking, lambda r: apart[(r.task, r.policy)][r.index])
    assert d['spent'] == ranking.spent and d['state'] == state.as_dict()
    # Two policies alike: the replay runs out of the fixed design's seeds, and says so.
    alike = {(t, p): [v] * 10 for t in config.tasks
             for p, v in (('a', 0.0), ('b', 0.5), ('c', 0.5))}
    d = vision_demo.decided_replay(_vision_records(alike), config, 0.95, 'adaptive')
    assert not d['decided'] and "beyond the fixed design's 10" in d['exhausted']
    summary = vision_demo.summarize(_vision_records(alike), config, vision_demo.Inputs())
    assert set(summary['until_decided']) == {'adaptive', 'uniform'}
    text = vision_demo.format_decided(summary['until_decided'])
    assert text.startswith("Real episodes until the digital real's ranking is decided at "
                           'P = 0.95')
    assert '- adaptive: not decided after' in text and 'least certain pair' in text
    assert '- the fixed design, all 60 real episodes: not decided' in text
    assert vision_demo.format_decided(None) == ''
    # The coverage row carries the rate's exact binomial interval.
    table = vision_demo.format_table(summary)
    cover = next(line for line in table.splitlines() if line.startswith('| 90 % PI coverage'))
    cov = summary['columns']['raw']['all']['prediction']['coverage']
    low, high = cov['coverage_ci95']
    assert f'(95 % CI [{low:.2f}, {high:.2f}])' in cover


def test_vision_demo_prediction_figure(tmp_path):
    from realm_ros.programs import vision_demo

    config = vision_demo.VisionDemoConfig(
        tasks=('push_switch',), policies=('a=scripted:0', 'b=scripted:1', 'c=scripted:2'),
        episodes=4, max_steps=10, width=32, height=18, columns=('raw', 'calibrated'))
    scores = {('push_switch', p): v for p, v in (('a', [0.0, 0.25, 0.0, 0.25]),
                                                  ('b', [0.5, 0.5, 0.75, 0.5]),
                                                  ('c', [1.0, 1.0, 0.75, 1.0]))}
    summary = vision_demo.summarize(_vision_records(scores), config, vision_demo.Inputs())
    path = vision_demo.prediction_figure(summary, tmp_path / 'prediction.png')
    assert path is not None and path.stat().st_size > 5000
    summary['columns']['raw']['all']['prediction']['leave_one_out'] = []
    assert vision_demo.prediction_figure(summary, tmp_path / 'none.png') is None


def test_vision_demo_too_few_episodes_to_replay_says_so():
    """One seed of one task: below the rule's two episodes per policy; the table says why
    and the demo does not fail (as its smoke test runs it)."""
    from realm_ros.programs import vision_demo

    config = vision_demo.VisionDemoConfig(
        tasks=('push_switch',), policies=('a=scripted:0', 'b=scripted:1'), episodes=1,
        max_steps=10, width=32, height=18, columns=('raw',))
    records = _vision_records({('push_switch', 'a'): [0.0], ('push_switch', 'b'): [1.0]})
    summary = vision_demo.summarize(records, config, vision_demo.Inputs())
    assert 'below the 2 episodes per policy' in summary['until_decided']['adaptive']['note']
    assert vision_demo.format_decided(summary['until_decided']).startswith(
        'Real episodes until decided at P = 0.95: not replayed (budget 2 is below')


def test_vision_demo_appearance_lab_seed_draws_a_look(tmp_path):
    """``demo --vision --appearance lab:SEED``: the look core.appearance.lab_look draws for
    SEED, written beside the run (the same file for the same seed: a resume matches)."""
    import yaml

    from realm_ros.core.appearance import lab_look
    from realm_ros.core.errors import ConfigError
    from realm_ros.programs import vision_demo

    path = vision_demo.look_file('lab:7001', tmp_path)
    assert path == str(tmp_path / 'look_7001.yaml')
    rig = yaml.safe_load((pathlib.Path(__file__).resolve().parents[2] / 'config' / 'cameras'
                          / 'droid.yaml').read_text())['cameras']
    assert yaml.safe_load(open(path).read()) == yaml.safe_load(
        yaml.safe_dump(lab_look(7001, rig)))
    first = open(path).read()
    assert open(vision_demo.look_file('lab:7001', tmp_path)).read() == first
    assert open(vision_demo.look_file('lab:7002', tmp_path)).read() != first
    assert vision_demo.look_file('some/file.yaml', tmp_path) == 'some/file.yaml'
    with pytest.raises(ConfigError, match='integer seed'):
        vision_demo.look_file('lab:x', tmp_path)
