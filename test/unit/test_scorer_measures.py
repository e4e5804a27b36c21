"""Issue 42, round 16: each stage's measure (the distance its predicate thresholds,
``skills.STAGE_MEASURES``), recorded per frame (``LabelledEpisode.measures``) and regressed by
an auxiliary output beside a now-head's binary cross-entropy (``TrainConfig.measure_weight``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip('torch')

from scorer_bars import TASK, bar_episode  # noqa: E402

from realm_ros.core import skills, tasks  # noqa: E402
from realm_ros.core.errors import DataError  # noqa: E402
from realm_ros.scorers import learned  # noqa: E402

TINY = learned.TrainConfig(epochs=6, batch=32, width=8, lr=5e-3, threads=1, diff=True,
                           pool='flat', head='now')


def _states_and_run(task: str, seed: int, steps: int) -> tuple[list, learned.LabelledRun]:
    """A scripted expert's twin episode: every step's privileged state, and the same episode
    as ``labelled_run`` keeps it (the twin and the policy are deterministic)."""
    from realm_ros.core.episode import run_episode
    from realm_ros.core.policy import make_policy, standard_chain
    from realm_ros.core.types import EpisodeSpec
    from realm_ros.core.world import make_world

    world = make_world(learned.world_config('mujoco'))
    states: list = []
    try:
        runs = []
        for keep in (True, False):
            inner = make_policy('scripted', common={'seed': 0}, skill=0)
            policy = standard_chain(inner, execute=inner.needs.horizon)
            spec = EpisodeSpec(task=task, seed=seed, policy='scripted:0', max_steps=steps)
            try:
                if keep:
                    run_episode(world, policy, spec,
                                on_step=lambda step, obs, action, progress:
                                states.append(obs.privileged))
                else:
                    runs.append(learned.labelled_run(world, policy, spec, ('exterior_1',)))
            finally:
                policy.close()
    finally:
        world.close()
    return states, runs[0]


@pytest.mark.parametrize('task, stage, threshold', [
    ('pick_spoon', 'REACH', skills.REACH_DISTANCE),
    ('put_green_block_in_bowl', 'MOVE_CLOSE', skills.MOVE_CLOSE_DISTANCE)])
def test_a_stage_measure_below_its_threshold_is_its_predicate_on_a_twin_run(task, stage,
                                                                            threshold):
    """On every control step of a real MuJoCo episode the predicate is "the measure is below
    the threshold" (REACH: or touching), both sides seen; each kept frame's measure is the
    least over its window, so below the threshold exactly where the window's predicate held
    through the distance."""
    states, run = _states_and_run(task, 3, 200 if stage == 'MOVE_CLOSE' else 80)
    task_def = tasks.get_task(task)
    below = []
    for state in states:
        check = skills.StageCheck(task_def, state)
        measure = check.measure(stage)
        touching = stage == 'REACH' and check.touching()
        assert check.predicate(stage) == (measure < threshold or touching)
        below.append(measure < threshold)
    assert any(below) and not all(below)  # the run crosses the threshold
    index = task_def.stages.index(stage)
    measures = np.asarray(run.measures)
    now = np.asarray(run.now)
    assert measures.shape == now.shape
    assert ((measures[:, index] < threshold) <= now[:, index]).all()
    assert (measures[:, index] < threshold).any() and not (measures[:, index] < threshold).all()
    # A stage without a measure is NaN on every frame.
    others = [k for k, s in enumerate(task_def.stages) if s not in skills.STAGE_MEASURES]
    assert np.isnan(measures[:, others]).all()


def _measured(e: learned.LabelledEpisode) -> learned.LabelledEpisode:
    """A drawn episode with its REACH measure: 0.05 m once the bar shows a stage, 0.25 m
    before; the other stages none."""
    values = np.full((len(e.met), e.n_stages), np.nan, dtype=np.float32)
    values[:, 0] = np.where(e.met > 0, 0.05, 0.25)
    now = np.arange(e.n_stages)[None, :] < e.met[:, None]
    return dataclasses.replace(e, now=now, measures=values)


def test_measures_survive_save_and_load_and_files_without_them_still_load(tmp_path):
    episodes = [_measured(bar_episode(3, 0)), _measured(bar_episode(1, 1))]
    learned.save_episodes(tmp_path / 'm.npz', episodes)
    back = learned.load_episodes(tmp_path / 'm.npz')
    for a, b in zip(episodes, back):
        assert b.measures is not None and b.measures.shape == (12, 3)
        assert np.array_equal(a.measures, b.measures, equal_nan=True)
    old = [dataclasses.replace(e, measures=None) for e in episodes]
    learned.save_episodes(tmp_path / 'old.npz', old)
    with np.load(tmp_path / 'old.npz') as data:
        assert 'measures' not in data.files and 'now' in data.files
    assert all(e.measures is None for e in learned.load_episodes(tmp_path / 'old.npz'))


def test_the_auxiliary_loss_is_huber_on_the_clipped_scaled_measures_that_exist():
    targets = torch.from_numpy(learned.measure_targets(np.array(
        [[0.05, np.nan, 0.5, 0.0, 0.0], [0.2, 0.1, np.nan, 0.0, 0.0]])))
    assert np.allclose(targets.numpy()[0, [0, 2]], [0.5, 3.0])  # 0.5 m clipped to 0.30 m
    predicted = torch.tensor([[0.0, 9.0, 3.0, 9.0, 9.0], [4.5, 1.0, 9.0, 9.0, 9.0]])
    n = torch.tensor([3, 2])  # the first row's task has 3 stages, the second's 2
    # Kept: (0.0 vs 0.5) -> 0.125, (3.0 vs 3.0) -> 0, (4.5 vs 2.0) -> 2.0, (1.0 vs 1.0) -> 0.
    value = learned._measure_loss(torch, predicted, targets, n)
    assert float(value) == pytest.approx((0.125 + 0.0 + 2.0 + 0.0) / 4)


def test_weight_zero_trains_as_before_and_ignores_the_measures():
    episodes = [_measured(bar_episode(final, seed)) for final in range(4) for seed in range(2)]
    bare = [dataclasses.replace(e, measures=None) for e in episodes]
    a = learned.train(episodes, TINY)
    b = learned.train(bare, TINY)
    assert 'measure_weight' not in a['config'] and a['config'] == b['config']
    assert not any(k.startswith('measure.') for k in a['state_dict'])
    assert all(torch.equal(a['state_dict'][k], b['state_dict'][k]) for k in a['state_dict'])
    assert a['meta']['loss'] == b['meta']['loss']
    with pytest.raises(DataError, match='measure_weight') as err:
        learned.train(bare, dataclasses.replace(TINY, measure_weight=1.0))
    assert '\n' not in str(err.value)


def test_a_checkpoint_with_the_measure_output_reads_as_a_now_head(tmp_path):
    """Fine-tuned from a now-head without the output (as round 16 fine-tunes n_now's), the
    added output learns the measure, and the checkpoint reads and decodes as a now-head whose
    readings do not depend on the added output."""
    episodes = [_measured(bar_episode(final, seed)) for final in range(4) for seed in range(4)]
    init = learned.train(episodes, TINY)
    config = dataclasses.replace(TINY, measure_weight=1.0, epochs=8)
    tuned = learned.train(episodes, config, init=init)
    assert tuned['config']['measure_weight'] == 1.0
    assert any(k.startswith('measure.') for k in tuned['state_dict'])
    path = tmp_path / 'q.pt'
    learned.save_checkpoint(path, tuned)
    scorer = learned.LearnedScorer(path)
    assert scorer.head == 'now'
    e = episodes[-1]
    out = scorer.outputs(list(e.frames), TASK)
    assert out.shape == (12, 3)
    assert learned.stage_counts(scorer, e).shape == (12,)
    # The same weights without the added output read the same probabilities.
    stripped = dict(tuned, state_dict={k: v for k, v in tuned['state_dict'].items()
                                       if not k.startswith('measure.')})
    assert np.allclose(learned.LearnedScorer(stripped).outputs(list(e.frames), TASK), out,
                       atol=1e-6)
    # The added output reads the REACH measure (m): near 0.05 after, 0.25 before.
    reach = scorer.measures(list(e.frames), TASK)[:, 0]
    assert reach.shape == (12,)
    assert reach[e.met > 0].mean() < skills.REACH_DISTANCE < reach[e.met == 0].mean()
    with pytest.raises(DataError, match='no measure output'):
        learned.LearnedScorer(stripped).measures(list(e.frames), TASK)
