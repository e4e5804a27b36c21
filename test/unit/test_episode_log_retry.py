"""Infrastructure failures are kept in episodes.jsonl but re-run on resume (issue 15)."""

from realm_ros.core.evaluation import EpisodeLog, summarize


def _record(pair, world, outcome, progression=1.0):
    return {'pair_id': pair, 'world': world, 'outcome': outcome, 'task': 't', 'seed': 0,
            'intensity': 1.0, 'steps': 10, 'stages': ['A'], 'stages_reached': ['A'],
            'perturbation': 'Default', 'policy': 'p', 'progression': progression,
            'success': outcome == 'success', 'error': 'x' if outcome == 'infra_failure' else ''}


def test_infra_failures_are_retried_and_never_scored(tmp_path):
    path = tmp_path / 'episodes.jsonl'
    log = EpisodeLog(path)
    log.append(_record('a', 'real', 'success'))
    log.append(_record('a', 'sim', 'infra_failure'))
    assert log.done('a', 'real') and not log.done('a', 'sim')
    again = EpisodeLog(path)  # a resumed run reads the same
    assert again.done('a', 'real') and not again.done('a', 'sim')
    again.append(_record('a', 'sim', 'timeout', 0.5))
    assert EpisodeLog(path).done('a', 'sim')
    summary = summarize(EpisodeLog(path).records)
    assert summary['pairs'] == 1  # the failure is kept in the log, never counted
