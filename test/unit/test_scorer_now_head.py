"""Issue 42, round 13: per-frame stage predicates as labels (``LabelledEpisode.now``) and a
network head that reads them (``learned.HEADS``' ``now``), decoded back into the rubric's sticky
count by the rubric's own order and stickiness (``learned.sticky_counts``)."""

from __future__ import annotations

import dataclasses
import json
import pathlib

import numpy as np
import pytest

torch = pytest.importorskip('torch')

from scorer_bars import TASK, bar_episode, bar_frame  # noqa: E402

from realm_ros.core.errors import ConfigError, DataError  # noqa: E402
from realm_ros.scorers import learned  # noqa: E402

TINY = learned.TrainConfig(epochs=8, batch=32, width=8, lr=5e-3, threads=1, diff=True,
                           pool='flat')
#: The shipped checkpoints' readings of ``synthetic_frames`` by the code before round 13
#: (commit c2398cf's learned.py; the command that wrote it is in its ``_made_by``).
OLD_READINGS = pathlib.Path(__file__).with_name('scorer_round13_old_readings.json')


def synthetic_frames(cameras: int, count: int = 8) -> list[np.ndarray]:
    """Deterministic 320x180 frames of ``cameras`` cameras stacked: a gradient with a block that
    moves across it (no file, no renderer)."""
    h, w = 180, 320
    ys, xs = np.mgrid[0:h, 0:w]
    out = []
    for k in range(count):
        views = []
        for c in range(cameras):
            image = np.stack([(xs * 255 // w), (ys * 255 // h), np.full_like(xs, 60 + 40 * c)],
                             axis=-1).astype(np.uint8)
            x0 = 20 + 30 * k
            image[70:120, x0:x0 + 40] = (200, 40 + 20 * c, 30)
            views.append(image)
        out.append(np.concatenate(views, axis=-1))
    return out


def _now_episode(final: int, seed: int) -> learned.LabelledEpisode:
    """A drawn bar episode whose frame shows its stage now: stage i holds while the bar is
    longer than i's (and, the bar falling back at the end, a stage seen stays met)."""
    e = bar_episode(final, seed, frames=15)
    shown = e.met.copy()
    if final >= 2:  # the last three frames show one stage less: the sticky count stays
        rng = np.random.default_rng(seed + 100)
        shown[-3:] = final - 1
        e.frames[-3:] = np.stack([bar_frame(final - 1, rng) for _ in range(3)])
    now = np.arange(e.n_stages)[None, :] < shown[:, None]
    return dataclasses.replace(e, now=now)


def test_a_twin_episodes_predicates_give_back_the_rubrics_sticky_count():
    """The identity the now-head's decode relies on, on real scripted episodes of the twin: the
    rubric's order and stickiness applied to each kept frame's window of stage predicates is
    the rubric's sticky count at every frame (push_switch and pick_spoon, the expert rung)."""
    from realm_ros.core.policy import make_policy, standard_chain
    from realm_ros.core.types import EpisodeSpec
    from realm_ros.core.world import make_world

    world = make_world(learned.world_config('mujoco'))
    inner = make_policy('scripted', common={'seed': 0}, skill=0)
    policy = standard_chain(inner, execute=inner.needs.horizon)
    try:
        for task in ('push_switch', 'pick_spoon'):
            spec = EpisodeSpec(task=task, seed=3, policy='scripted:0', max_steps=120)
            run = learned.labelled_run(world, policy, spec, ('exterior_1',))
            now = np.asarray(run.now)
            assert now.shape == (len(run.met), 3)
            assert max(run.met) == 3  # the expert finishes: every stage is crossed
            assert learned.sticky_counts(now).tolist() == run.met
            # Each stage's predicate is first seen where the sticky count first passes it.
            for i in range(3):
                assert int(np.argmax(now[:, i])) <= int(np.argmax(np.asarray(run.met) > i))
    finally:
        policy.close()
        world.close()


def test_sticky_counts_keep_order_and_stickiness():
    now = np.array([[0, 1, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0]], dtype=bool)
    # stage 2 seen before stage 1: not counted; a stage seen stays met.
    assert learned.sticky_counts(now).tolist() == [0, 1, 2, 3, 3]
    assert learned.sticky_counts(np.zeros((2, 3), bool)).tolist() == [0, 0]


def test_now_labels_survive_save_and_load_and_old_files_still_load(tmp_path):
    episodes = [_now_episode(3, 0), dataclasses.replace(_now_episode(1, 1), task='push_switch')]
    learned.save_episodes(tmp_path / 'now.npz', episodes)
    back = learned.load_episodes(tmp_path / 'now.npz')
    for a, b in zip(episodes, back):
        assert b.now is not None and np.array_equal(a.now, b.now) and b.now.shape == (15, 3)
        assert np.array_equal(a.met, b.met)
    # A file without ``now`` (every set before round 13) loads with now None.
    old = [dataclasses.replace(e, now=None) for e in episodes]
    learned.save_episodes(tmp_path / 'old.npz', old)
    with np.load(tmp_path / 'old.npz') as data:
        assert 'now' not in data.files
    assert all(e.now is None for e in learned.load_episodes(tmp_path / 'old.npz'))


def test_decode_now_smooths_each_stage_then_applies_the_rubrics_order():
    p = np.array([[0.1, 0.1, 0.1], [0.9, 0.1, 0.1], [0.1, 0.1, 0.1],  # a blip: filtered out
                  [0.1, 0.1, 0.1], [0.9, 0.1, 0.1], [0.9, 0.8, 0.1], [0.6, 0.9, 0.1],
                  [0.1, 0.1, 0.1], [0.1, 0.1, 0.1]])
    assert learned.decode_now(p).tolist() == [0, 0, 0, 0, 1, 2, 2, 2, 2]
    assert learned.decode_now(p, median_frames=1).tolist() == [0, 1, 1, 1, 1, 2, 2, 2, 2]
    # The per-frame count distribution (stages taken as independent) sums to one.
    q = learned.prefix_probabilities(p)
    assert q.shape == (9, 4) and np.allclose(q.sum(axis=1), 1.0)
    assert np.isclose(q[5, 2], 0.9 * 0.8 * 0.9)
    assert np.isclose(q[0, 0], 0.9) and np.isclose(q[0, 3], 0.1 ** 3)


@pytest.fixture(scope='module')
def now_nets(tmp_path_factory):
    folder = tmp_path_factory.mktemp('now')
    episodes = [_now_episode(final, seed) for final in range(4) for seed in range(4)]
    paths = []
    for seed in (0, 1):
        config = dataclasses.replace(TINY, seed=seed, head='now')
        path = folder / f'n{seed}.pt'
        learned.save_checkpoint(path, learned.train(episodes, config))
        paths.append(path)
    count = folder / 'count.pt'
    learned.save_checkpoint(count, learned.train([dataclasses.replace(e, now=None)
                                                  for e in episodes], TINY))
    return paths, count, episodes


def test_a_now_head_reads_what_the_frame_shows_and_its_count_stays(now_nets):
    paths, _, episodes = now_nets
    scorer = learned.LearnedScorer(paths[0])
    assert scorer.head == 'now'
    assert learned.load_checkpoint(paths[0])['config']['head'] == 'now'
    e = episodes[-1]  # final 3, the last three frames showing 2
    out = scorer.outputs(list(e.frames), TASK)
    assert out.shape == (15, 3) and ((out >= 0) & (out <= 1)).all()
    assert out[-1, 2] < 0.5  # the last frame does not show the third stage now...
    counts = learned.stage_counts(scorer, e)
    assert counts[-1] == 3  # ... and the decode keeps it met, as the rubric does
    assert np.mean(counts == e.met) >= 0.75
    assert scorer.probabilities(list(e.frames), TASK).shape == (15, 4)


def test_an_ensemble_of_now_networks_averages_their_stage_probabilities(now_nets):
    paths, count, episodes = now_nets
    ens = learned.ensemble([learned.load_checkpoint(p) for p in paths], ['a', 'b'])
    frames = list(episodes[5].frames)
    one, two = (learned.LearnedScorer(p).outputs(frames, TASK) for p in paths)
    both = learned.LearnedScorer(ens).outputs(frames, TASK)
    assert np.allclose(both, (one + two) / 2, atol=1e-6)
    with pytest.raises(DataError, match='a count-network with a now-network') as err:
        learned.ensemble([learned.load_checkpoint(paths[0]), learned.load_checkpoint(count)])
    assert '\n' not in str(err.value)


def test_a_now_head_needs_now_labels_and_refuses_what_it_cannot_do(now_nets):
    paths, _, episodes = now_nets
    with pytest.raises(DataError, match='stage predicates'):
        learned.train([dataclasses.replace(episodes[0], now=None)],
                      dataclasses.replace(TINY, head='now'))
    with pytest.raises(ConfigError, match='greedy only'):
        learned.LearnedScorer(paths[0], decoder=learned.Decoder(method='monotone'))
    with pytest.raises(ConfigError, match='calibrate'):
        learned.calibrate(learned.load_checkpoint(paths[0]), episodes[:2])


@pytest.mark.parametrize('key', sorted(json.loads(OLD_READINGS.read_text()))
                         if OLD_READINGS.is_file() else [])
def test_the_shipped_checkpoints_read_as_before_round_13(key):
    """A count checkpoint (no ``head`` in its config) reads the same probabilities and counts
    as the code before the now-head: the shipped ones on drawn frames, against the readings
    commit c2398cf's code wrote."""
    if key.startswith('_'):
        return
    expected = json.loads(OLD_READINGS.read_text())[key]
    constant, task = key.split()
    scorer = learned.LearnedScorer(getattr(learned, constant))
    assert scorer.head == 'count'
    frames = synthetic_frames(len(scorer.cameras))
    probs = scorer.probabilities(frames, task)
    assert np.allclose(probs, expected['probabilities'], rtol=0, atol=1e-6)
    _, counts = scorer.curves(frames, task)
    assert counts.tolist() == expected['counts']
