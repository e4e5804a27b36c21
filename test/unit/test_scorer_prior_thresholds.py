"""A now-head's per-stage thresholds (issue 42, round 15; docs/scoring.md "Round 15"): the
prior correction follows from the weight the loss gives a stage's positives, a checkpoint
carries its thresholds and decodes with them, and thresholds of 0.5 read as before."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip('torch')

from test_scorer_now_head import synthetic_frames  # noqa: E402

from realm_ros.core.errors import ConfigError  # noqa: E402
from realm_ros.scorers import learned  # noqa: E402


def test_the_weights_count_each_stages_positives_over_its_tasks_frames():
    # Frames of a 2-stage task (stages 2.. masked out) and of a 3-stage one.
    labels = np.zeros((8, learned.MAX_STAGES))
    labels[:2, 0] = 1  # stage 0: 2 positives of 8 frames
    labels[6:, 1] = 1  # stage 1: 2 of 8
    labels[7, 2] = 1  # stage 2: 1 of the 4 frames whose task has it
    n_stages = np.array([2, 2, 2, 2, 3, 3, 3, 3])
    w = learned.now_pos_weights(labels, n_stages, 0.5)
    assert np.allclose(w[:3], [np.sqrt(6 / 2), np.sqrt(6 / 2), np.sqrt(3 / 1)])
    assert np.allclose(w[3:], 1.0)  # never present: no weight
    assert np.allclose(learned.now_pos_weights(labels, n_stages, 1.0)[:3], [3, 3, 3])


def test_the_threshold_is_where_the_weighted_loss_puts_a_probability_of_one_half():
    """A logit a + b x fitted by the now-head's own loss: on frames where the stage holds half
    the time (x = 1) its output settles at w / (1 + w), not 0.5, w the weight the loss gave
    the stage's positives (the stage rare overall: w > 1)."""
    torch.manual_seed(0)
    x = torch.cat([torch.ones(200), torch.zeros(800)])
    labels = torch.zeros(1000, learned.MAX_STAGES)
    labels[:100, 0] = 1  # half of the x = 1 frames
    labels[200:240, 0] = 1  # 5 % of the others
    n_stages = torch.ones(1000, dtype=torch.int64)
    loss = learned._now_loss(torch, labels, n_stages, 0.5, torch.device('cpu'))
    (w,) = learned.now_pos_weights(labels.numpy(), n_stages.numpy(), 0.5)[:1]
    assert w > 1.5
    ab = torch.zeros(2, requires_grad=True)
    optimiser = torch.optim.LBFGS([ab], max_iter=200, line_search_fn='strong_wolfe')

    def closure():
        optimiser.zero_grad()
        logits = torch.zeros(1000, learned.MAX_STAGES)
        logits[:, 0] = ab[0] + ab[1] * x
        value = loss(logits, labels, n_stages)
        value.backward()
        return value

    optimiser.step(closure)
    fitted = float(torch.sigmoid(ab[0] + ab[1]).detach())
    (threshold,) = learned.prior_thresholds([w])
    assert fitted == pytest.approx(threshold, abs=1e-3)
    assert abs(fitted - 0.5) > 0.1
    assert learned.prior_thresholds([1.0, 3.0]) == (0.5, 0.75)


def test_decode_now_holds_a_stage_above_its_threshold_and_half_reads_as_before():
    p = np.array([[0.1, 0.1, 0.1], [0.6, 0.1, 0.1], [0.65, 0.1, 0.1], [0.7, 0.1, 0.1],
                  [0.9, 0.6, 0.1], [0.9, 0.8, 0.1], [0.9, 0.9, 0.7], [0.9, 0.9, 0.9]])
    for median in (1, 3):
        assert (learned.decode_now(p, median, (0.5,) * learned.MAX_STAGES).tolist()
                == learned.decode_now(p, median).tolist())
    assert learned.decode_now(p, 1).tolist() == [0, 1, 1, 1, 2, 2, 3, 3]
    assert learned.decode_now(p, 1, (0.62, 0.7, 0.8, 0.5, 0.5)).tolist() == \
        [0, 0, 1, 1, 1, 2, 2, 3]
    with pytest.raises(ConfigError, match='thresholds: 2 for 3 stages'):
        learned.decode_now(p, 1, (0.5, 0.5))


def test_a_checkpoint_carries_its_thresholds_and_decodes_with_them():
    """The shipped families_now3 on drawn frames: it reads pick_spoon's second frame as REACH
    at 0.57; with its stages' thresholds raised the frame reads 0, as the thresholds say."""
    shipped = learned.load_checkpoint(learned.FAMILIES_NOW3_CHECKPOINT)
    frames = synthetic_frames(2)
    task = 'pick_spoon'
    plain = learned.LearnedScorer(learned.FAMILIES_NOW3_CHECKPOINT)
    out = plain.outputs(frames, task)
    _, before = plain.curves(frames, task)
    assert before.tolist() == [0, 1, 1, 1, 1, 1, 1, 1]
    # Thresholds of 0.5 read as the shipped checkpoint does.
    half = learned.with_decoder(shipped, learned.Decoder(thresholds=(0.5,) * 5))
    assert learned.LearnedScorer(half).curves(frames, task)[1].tolist() == before.tolist()
    for cut, expected in ((0.6, [0, 0, 1, 1, 1, 1, 1, 1]), (0.98, [0, 0, 0, 1, 1, 1, 1, 1])):
        decoder = learned.Decoder(thresholds=(cut,) * 5)
        checkpoint = learned.with_decoder(shipped, decoder)
        assert checkpoint['decoder']['thresholds'] == [cut] * 5
        assert learned.Decoder.of(checkpoint['decoder']) == decoder
        scorer = learned.LearnedScorer(checkpoint)
        assert scorer.decoder.label == 'greedy(thresholds)'
        _, counts = scorer.curves(frames, task)
        assert counts.tolist() == expected
        assert counts.tolist() == learned.decode_now(out, 3, decoder.thresholds).tolist()


def test_a_decoder_without_thresholds_writes_what_it_wrote_and_bad_ones_are_refused():
    assert learned.Decoder(median_frames=1).as_dict() == {
        'method': 'greedy', 'median_frames': 1, 'step_cost': 0.0}
    assert learned.Decoder.of({'median_frames': 1}).thresholds is None
    for bad in ([0.5, 1.0], [], ['x']):
        with pytest.raises(ConfigError, match='decoder thresholds') as err:
            learned.Decoder.of({'thresholds': bad})
        assert '\n' not in str(err.value)
    with pytest.raises(ConfigError, match='decoder thresholds: a monotone'):
        learned.Decoder(method='monotone', thresholds=(0.5,))
    with pytest.raises(ConfigError, match="per-stage thresholds are a now-head's") as err:
        learned.LearnedScorer(learned.FAMILIES_HJK_CHECKPOINT,
                              decoder=learned.Decoder(thresholds=(0.6,) * 5))
    assert '\n' not in str(err.value)
