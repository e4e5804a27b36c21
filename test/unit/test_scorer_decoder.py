"""The learned scorer's decoders (issue 42, round 11): the greedy decode (argmax, median, running
maximum) and the most likely monotone path (``learned.monotone_path``), pure numpy, and a
checkpoint that carries its decoder read so by every scorer that loads it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from realm_ros.core.errors import ConfigError
from realm_ros.scorers import learned

MONOTONE = learned.Decoder(method='monotone')


def onehot(counts, n=3, confidence=0.97):
    rest = (1.0 - confidence) / n
    probs = np.full((len(counts), n + 1), rest)
    probs[np.arange(len(counts)), counts] = confidence
    return probs


def log_likelihood(probs, path, step_cost):
    logp = np.log(np.maximum(probs, learned.PROB_FLOOR))
    return float(logp[np.arange(len(path)), path].sum() - step_cost * path[-1])


@pytest.mark.parametrize('seed', range(6))
def test_the_monotone_path_is_non_decreasing_and_the_most_likely_one(seed):
    """Brute force over every non-decreasing path of 7 frames over counts 0..3."""
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(4, 0.7), size=7)
    for step_cost in (0.0, 0.7, 3.0):
        path = learned.monotone_path(probs, step_cost)
        assert np.all(np.diff(path) >= 0) and path.min() >= 0 and path.max() <= 3
        best = max(log_likelihood(probs, np.asarray(p), step_cost)
                   for p in itertools.combinations_with_replacement(range(4), 7))
        assert log_likelihood(probs, path, step_cost) == pytest.approx(best, abs=1e-9)


def test_it_equals_greedy_on_clean_probabilities():
    for counts in ([0, 0, 0, 1, 1, 2, 2, 2, 3, 3], [0, 0, 1, 1, 1, 1], [0] * 8,
                   [0, 0, 2, 2, 2, 3, 3]):
        probs = onehot(counts)
        for step_cost in (0.0, 1.0):
            assert learned.decode(probs, decoder=learned.Decoder(
                method='monotone', step_cost=step_cost)).tolist() \
                == learned.decode(probs).tolist() == counts


def test_it_drops_a_short_confident_blip_that_greedy_keeps():
    """Two frames read 2 in a failure that stays at 1: the median of 3 keeps them, the running
    maximum then keeps 2 to the end; the monotone path needs the later frames to agree."""
    counts = [0, 0, 1, 1, 2, 2, 1, 1, 1, 1, 1, 1]
    probs = onehot(counts, confidence=0.9)
    greedy = learned.decode(probs)
    assert greedy[-1] == 2
    monotone = learned.decode(probs, decoder=MONOTONE)
    assert monotone.tolist() == [0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]


def test_a_step_cost_asks_more_of_the_later_frames():
    """The last three frames favour 1 over 0 by log(0.6 / 0.4) each (1.2 nats in all): taken
    at no cost, left at a cost of 1.5 nats."""
    probs = np.asarray([[0.9, 0.1]] * 5 + [[0.4, 0.6]] * 3)
    assert learned.monotone_path(probs, 0.0).tolist() == [0] * 5 + [1] * 3
    assert learned.monotone_path(probs, 1.5).tolist() == [0] * 8


def test_bad_decoder_settings_name_the_setting():
    with pytest.raises(ConfigError, match='decoder method'):
        learned.Decoder(method='viterbi')
    with pytest.raises(ConfigError, match='step_cost'):
        learned.Decoder(method='monotone', step_cost=-1.0)
    with pytest.raises(ConfigError, match='median_frames'):
        learned.Decoder(median_frames=2)
    with pytest.raises(ConfigError, match='unknown setting'):
        learned.Decoder.of({'method': 'monotone', 'cost': 1.0})
    assert learned.Decoder.of(None) == learned.Decoder()
    assert learned.Decoder.of(MONOTONE.as_dict()) == MONOTONE
    assert learned.with_decoder({'format': 'x', 'decoder': {}}, learned.Decoder()) \
        == {'format': 'x'}


def test_a_checkpoint_carries_its_decoder_to_every_scorer_that_loads_it(tmp_path):
    pytest.importorskip('torch')
    from scorer_bars import bar_episode, train_tiny

    from realm_ros.core import scoring
    path = train_tiny(tmp_path / 'tiny.pt')
    decoder = learned.Decoder(method='monotone', step_cost=0.5)
    learned.save_checkpoint(tmp_path / 'tiny_monotone.pt',
                            learned.with_decoder(learned.load_checkpoint(path), decoder))
    greedy = learned.LearnedScorer(path)
    carried = learned.LearnedScorer(tmp_path / 'tiny_monotone.pt')
    given = learned.LearnedScorer(path, decoder=decoder)
    assert greedy.decoder == learned.Decoder() and carried.decoder == given.decoder == decoder
    # The file's digest names a carried decoder; a decoder given is named after the digest.
    assert carried.name.startswith('learned:tiny_monotone@') and '+' not in carried.name
    assert given.name == f'{greedy.name}+monotone(0.5)'
    episode = bar_episode(2, 123)
    probs = greedy.probabilities(list(episode.frames), episode.task)
    expected = learned.monotone_path(probs, 0.5)
    assert learned.stage_counts(carried, episode).tolist() == expected.tolist()
    # What ``realm-ros score`` and the operator's proposals read: score() and propose_stages().
    frames = scoring.EpisodeFrames(frames=list(episode.frames), times_s=episode.times_s,
                                   instruction='', task=episode.task)
    indices = scoring.sample_indices(frames.times_s, carried.fps)
    path = learned.monotone_path(carried.probabilities(
        [frames.frames[i] for i in indices], episode.task), 0.5)
    assert carried.score(frames).curve == pytest.approx(tuple(path / 3))
    assert len(carried.propose_stages(frames)) == int(path[-1])
