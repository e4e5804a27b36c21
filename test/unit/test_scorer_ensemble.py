"""An ensemble checkpoint (``learned.ensemble``, issue 42 round 4): several networks of one
input spec in one ``.pt``, read by the loader every command uses (their stage probabilities
averaged), refused in one line where one network is trained from a checkpoint."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

torch = pytest.importorskip('torch')

from scorer_bars import TASK, bar_episode, bar_frame  # noqa: E402

from realm_ros.core import scoring  # noqa: E402
from realm_ros.core.errors import ConfigError, DataError  # noqa: E402
from realm_ros.scorers import learned  # noqa: E402

TINY = learned.TrainConfig(epochs=6, batch=32, width=8, lr=5e-3, threads=1, diff=True,
                           pool='flat')


@pytest.fixture(scope='module')
def members(tmp_path_factory):
    """Two tiny scorers of different training seeds on the drawn bar episodes, and their
    ensemble, saved."""
    folder = tmp_path_factory.mktemp('ensemble')
    episodes = [bar_episode(final, seed) for final in range(4) for seed in range(4)]
    paths = []
    for seed in (0, 1):
        path = folder / f'm{seed}.pt'
        learned.save_checkpoint(path, learned.train(episodes, dataclasses.replace(TINY,
                                                                                  seed=seed)))
        paths.append(path)
    both = learned.ensemble([learned.load_checkpoint(p) for p in paths],
                            [learned.LearnedScorer(p).name for p in paths])
    learned.save_checkpoint(folder / 'ens.pt', both)
    return paths, folder / 'ens.pt'


def _frames(stages, seed=5):
    rng = np.random.default_rng(seed)
    return [bar_frame(s, rng) for s in stages]


def test_an_ensemble_averages_its_members_stage_probabilities(members):
    paths, ens = members
    scorer = learned.LearnedScorer(ens)
    one, two = (learned.LearnedScorer(p) for p in paths)
    assert len(scorer.nets) == 2 and len(one.nets) == 1
    assert scorer.name.startswith('learned:ens@')
    assert scorer.meta['ensemble'] == [one.name, two.name]
    frames = _frames([0, 0, 1, 1, 2, 2, 3, 3])
    # Frames neither network was trained on (noise after the first) make them disagree.
    rng = np.random.default_rng(1)
    odd = frames[:1] + [rng.integers(0, 255, (36, 64, 3), dtype=np.uint8) for _ in range(6)]
    for shown in (frames, odd):
        p1, p2 = one.probabilities(shown, TASK), two.probabilities(shown, TASK)
        np.testing.assert_allclose(scorer.probabilities(shown, TASK), (p1 + p2) / 2,
                                   rtol=1e-5, atol=1e-9)
    assert np.abs(p1 - p2).max() > 0.05  # two seeds, two different networks
    # Decoded as one network's: the drawn bar reaches stage 3, so every stage is proposed.
    episode = scoring.EpisodeFrames(frames=frames, times_s=np.arange(8) / learned.SAMPLE_FPS,
                                    instruction='', task=TASK)
    assert scorer.score(episode).score == 1.0
    assert [p.stage for p in scorer.propose_stages(episode)] == scorer.stage_names[TASK]
    # The look check reads its first network.
    assert scorer.look_check(frames[0]) == one.look_check(frames[0])


def test_score_video_reads_an_ensemble_through_the_same_loader(members, tmp_path, capsys):
    import imageio.v2 as imageio

    from realm_ros.cli import main

    _, ens = members
    video = tmp_path / 'bar.mp4'
    imageio.mimwrite(str(video), _frames([min(3, k // 3) for k in range(12)]), fps=15,
                     codec='libx264', macro_block_size=1)
    assert main(['score', '--checkpoint', str(ens), '--video', str(video), '--task', TASK]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out['scorer'].startswith('learned:ens@') and out['scorer_progression'] == 1.0


def test_train_init_and_calibrate_refuse_an_ensemble_in_one_line(members, tmp_path, capsys):
    from realm_ros.cli import main

    _, ens = members
    data = tmp_path / 'never'
    for argv, message in [
            (['train', '--init', str(ens), '--out', str(tmp_path / 'x.pt'), '--data-dir',
              str(data)], f'--init {ens}: an ensemble of 2 networks'),
            (['calibrate', '--checkpoint', str(ens), '--labels', str(tmp_path / 'l.jsonl'),
              '--out', str(tmp_path / 'y.pt')], f'--checkpoint {ens}: an ensemble of 2 networks')]:
        assert main(['score', *argv]) == 2, argv
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and message in err, err
    assert not data.exists() and not (tmp_path / 'y.pt').exists()
    with pytest.raises(ConfigError, match='an ensemble of 2 networks'):
        learned.calibrate(learned.load_checkpoint(ens), [bar_episode(3, 0)])


def test_an_ensemble_is_refused_of_members_that_read_differently(members):
    paths, ens = members
    a, b = (learned.load_checkpoint(p) for p in paths)
    with pytest.raises(DataError, match='at least two checkpoints'):
        learned.ensemble([a])
    with pytest.raises(DataError, match='member 1: already an ensemble'):
        learned.ensemble([a, learned.load_checkpoint(ens)])
    with pytest.raises(DataError, match='member 1: config normalise True, not the first'):
        learned.ensemble([a, {**b, 'config': {**b['config'], 'normalise': True}}])
    with pytest.raises(DataError, match='member 1: tasks'):
        learned.ensemble([a, {**b, 'tasks': ['push_switch']}])


def test_ensembles_networks_become_one_ensemble_averaging_every_network(members):
    """Round 12: ``learned.members`` splits an ensemble into its networks, so ensembles (and
    single networks) become one ensemble of all of them; its per-frame probabilities are the
    mean over every network, not over the ensembles."""
    paths, ens = members
    pair, single = learned.load_checkpoint(ens), learned.load_checkpoint(paths[0])
    split = learned.members(pair)
    assert len(split) == 2 and [len(learned.networks(c)) for c in split] == [1, 1]
    assert learned.members(single)[0]['state_dict'] is single['state_dict']
    assert 'look_stats' in split[0] and 'look_stats' not in split[1]
    three = learned.LearnedScorer(learned.ensemble(split + learned.members(single)))
    assert len(three.nets) == 3
    one, two = (learned.LearnedScorer(p) for p in paths)
    rng = np.random.default_rng(2)
    frames = _frames([0, 1, 2, 3])
    odd = frames[:1] + [rng.integers(0, 255, (36, 64, 3), dtype=np.uint8) for _ in range(5)]
    p1, p2 = one.probabilities(odd, TASK), two.probabilities(odd, TASK)
    mean = three.probabilities(odd, TASK)
    np.testing.assert_allclose(mean, (2 * p1 + p2) / 3, rtol=1e-5, atol=1e-9)
    # Not the mean of the two checkpoints (the pair's mean and the single's): p1 counts twice.
    assert np.abs(mean - ((p1 + p2) / 2 + p1) / 2).max() > 1e-3
    # The look check still reads the first network.
    assert three.look_check(frames[0]) == one.look_check(frames[0])


def test_the_shipped_families_hjk_holds_families_demo3s_networks_first():
    """Round 12's shipped checkpoint: nine networks, the first three families_demo3's exactly
    (so its look check is families_demo3's), each member named."""
    hjk = learned.load_checkpoint(learned.FAMILIES_HJK_CHECKPOINT)
    demo3 = learned.load_checkpoint(learned.FAMILIES_DEMO3_CHECKPOINT)
    nets, first = learned.networks(hjk), learned.networks(demo3)
    assert len(nets) == 9 and len(first) == 3
    for mine, theirs in zip(nets[:3], first):
        assert all(torch.equal(mine[k], theirs[k]) for k in theirs)
    assert not all(torch.equal(nets[3][k], first[0][k]) for k in first[0])
    assert [n.split(': ')[0] for n in hjk['meta']['ensemble']] == (
        ['h_ensemble'] * 3 + ['j_ensemble'] * 3 + ['k_ensemble'] * 3)
    assert hjk['meta']['ensemble'][:3] == [f'h_ensemble: {n}' for n in demo3['meta']['ensemble']]
    assert hjk['look_stats'] == demo3['look_stats']
