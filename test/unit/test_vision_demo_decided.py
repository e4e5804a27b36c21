"""``demo --vision --until-decided P``: the digital real's episodes chosen by paired-eval's rule
(``vision_demo.allocate``), the twin columns run on the same starts, the table stating the real
episodes spent against the fixed design's; resumed with the same command, nothing runs twice.

Episodes here are a table of numbers (what ``vision_demo.run`` would record), not physics:
the allocation, the resume and the summary are what is tested (the e2e test runs worlds)."""

from __future__ import annotations

import numpy as np
import pytest

from realm_ros.core import allocation, metrics
from realm_ros.core.errors import ConfigError
from realm_ros.programs import vision_demo

TASKS = ('push_switch', 'pick_spoon')
LEVELS = {'a': 0.1, 'b': 0.5, 'c': 0.9}


def _config(**kw):
    return vision_demo.VisionDemoConfig(
        tasks=TASKS, policies=tuple(f'{p}=scripted:{k}' for k, p in enumerate(LEVELS)),
        episodes=10, max_steps=10, width=32, height=18, columns=('raw',), **kw)


def _value(column, task, policy, seed):
    noise = ((seed * 7 + len(task) + ord(policy)) % 5 - 2) * 0.04
    return float(np.clip(LEVELS[policy] + noise + (0.05 if column == 'raw' else 0.0), 0, 1))


def _row(column, task, policy, seed):
    v = _value(column, task, policy, seed)
    return {'column': column, 'task': task, 'policy': policy, 'seed': seed, 'variant': 0,
            'progression': v, 'success': v >= 1.0, 'outcome': 'timeout', 'image_mae': {}}


class FakeRun:
    """What ``_Starts.run`` does to the store: the real and the twin episode of a start,
    each only if missing."""

    def __init__(self, records):
        self.records = records
        self.ran = []

    def __call__(self, task, seed, policy):
        for column in ('real', 'raw'):
            key = (column, task, policy, seed, 0)
            if key not in self.records:
                self.records[key] = _row(column, task, policy, seed)
                self.ran.append(key)


def test_until_decided_spends_fewer_real_episodes_and_runs_the_twin_on_the_same_starts():
    config = _config(until_decided=0.95)
    records = {}
    run = FakeRun(records)
    got = vision_demo.allocate(config, records, run)
    assert got['decided'] and got['stopped'] == 'decided'
    assert got['fixed'] == 60 and got['budget'] == 60 and 0 < got['spent'] < 60
    starts = {tuple(s) for s in got['starts']}
    assert len(starts) == got['spent']
    real = {(t, p, k) for (c, t, p, k, _) in records if c == 'real'}
    twin = {(t, p, k) for (c, t, p, k, _) in records if c == 'raw'}
    assert real == twin == starts  # the twin ran on exactly the real side's starts
    # The same rule as driving AdaptiveRanking by hand, and as the fixed design's replay.
    ranking = allocation.AdaptiveRanking(list(LEVELS), TASKS, 0.95, budget=60)
    state = allocation.run_until_decided(
        ranking, lambda r: _value('real', r.task, r.policy, r.index))
    assert got['spent'] == ranking.spent and got['state'] == state.as_dict()
    full = [_row('real', t, p, k) for t in TASKS for p in LEVELS for k in range(10)]
    assert vision_demo.decided_replay(full, _config(), 0.95)['spent'] == got['spent']

    # Killed part-way (the last starts lost, one twin episode lost): the same call runs the
    # missing episodes only and ends with the same starts.
    kept = dict(list(records.items())[:-7])
    resumed = FakeRun(kept)
    again = vision_demo.allocate(config, kept, resumed)
    assert sorted(resumed.ran) == sorted(set(records) - set(list(records)[:-7]))
    assert again == got and kept == records
    assert vision_demo.allocate(config, records) == got  # a replay runs nothing

    summary = vision_demo.summarize(list(records.values()), config, vision_demo.Inputs())
    assert 'until_decided' not in summary and summary['allocated'] == got
    block = summary['columns']['raw']['all']
    spent = got['state']['episodes']
    assert {r['policy']: r['episodes'] for r in block['per_policy']} == spent
    # The agreement over the seeds each policy ran (per task, then over tasks).
    real_mean = [np.mean([np.mean([_value('real', t, p, k) for (t2, q, k) in starts
                                   if t2 == t and q == p]) for t in TASKS]) for p in LEVELS]
    twin_mean = [np.mean([np.mean([_value('raw', t, p, k) for (t2, q, k) in starts
                                   if t2 == t and q == p]) for t in TASKS]) for p in LEVELS]
    expected = metrics.agreement(sim=twin_mean, real=real_mean).as_dict()
    assert block['agreement'] == pytest.approx(expected)
    for name, (low, high) in block['agreement_ci'].items():
        assert low <= block['agreement'][name] + 1e-9 and high >= block['agreement'][name] - 1e-9
    text = vision_demo.format_allocated(summary['allocated'])
    assert text.startswith("Real episodes allocated until the digital real's ranking is "
                           'decided at P = 0.95 (adaptive')
    assert (f'decided after {got["spent"]} real episodes, against the fixed design\'s 60 '
            f'({60 - got["spent"]} saved)') in text
    assert f'every twin column ran on the same {got["spent"]} starts' in text
    assert '- order c > b > a' in text
    assert vision_demo.format_allocated(None) == ''


def test_until_decided_missing_episodes_and_bad_settings():
    config = _config(until_decided=0.95)
    got = vision_demo.allocate(config, {})  # nothing run yet: stops at the first request
    assert got['spent'] == 0 and 'has no real episode yet: run again' in got['stopped']
    summary = vision_demo.summarize([], config, vision_demo.Inputs())
    assert summary['columns']['raw']['available'] is False
    with pytest.raises(ConfigError,
                       match=r'--until-decided: until_decided must be a probability in \(0.5'):
        _config(until_decided=1.5)
    with pytest.raises(ConfigError, match='--until-decided: budget 4 is below'):
        _config(until_decided=0.9, budget=4)
    with pytest.raises(ConfigError, match='--until-decided: allocation must be one of'):
        _config(until_decided=0.9, allocation='greedy')
    with pytest.raises(ConfigError, match='--budget must be 0'):
        _config(budget=-1)
