"""Issue 42, round 18 (docs/scoring.md "Round 18"): a now-head decoder that reads every stage
from its head but lets the distance output veto a measured stage where it is far above its
predicate's threshold (``learned.Decoder.veto``); the default decoder reads as before, a
checkpoint without the distance output refuses it in one line, and so does a decoder that is
also ``measured``."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip('torch')

from test_scorer_now_head import synthetic_frames  # noqa: E402

from realm_ros.core import skills  # noqa: E402
from realm_ros.core.errors import ConfigError  # noqa: E402
from realm_ros.scorers import learned  # noqa: E402

NAN = float('nan')


def test_a_vetoed_frame_is_not_held_and_one_under_the_veto_reads_as_the_head():
    # REACH's head holds from frame 0; its distance is far (3x) until frame 2, then 1.5x (above
    # the threshold, under a 2x veto), then near; GRASP's head holds from frame 6.
    probs = np.array([[0.9, 0.1, 0.1]] * 6 + [[0.9, 0.9, 0.1]] * 2)
    ratio = np.full((8, 3), NAN)
    ratio[:, 0] = [3.0, 3.0, 1.5, 1.5, 0.5, 0.5, 0.5, 0.5]
    head = learned.decode_now(probs, 1)
    assert head.tolist() == [1, 1, 1, 1, 1, 1, 2, 2]
    assert learned.decode_now(probs, 1, measured=ratio, veto=2.0).tolist() == [
        0, 0, 1, 1, 1, 1, 2, 2]
    # At the veto exactly is not above it; a looser veto leaves the head's reading.
    at = ratio.copy()
    at[:2, 0] = 2.0
    assert learned.decode_now(probs, 1, measured=at, veto=2.0).tolist() == head.tolist()
    assert learned.decode_now(probs, 1, measured=ratio, veto=3.5).tolist() == head.tolist()
    # The veto only takes away: a near distance does not hold a stage its head does not.
    low = probs.copy()
    low[:, 0] = 0.1
    assert learned.decode_now(low, 1, measured=ratio, veto=2.0).tolist() == [0] * 8
    # Round 17's measured reading of the same frames differs (it reads the distance alone).
    assert learned.decode_now(low, 1, measured=ratio).tolist() == [0, 0, 0, 0, 1, 1, 2, 2]


def test_the_next_stage_held_keeps_a_far_measured_stage_and_the_median_smooths_the_veto():
    probs = np.array([[0.9, 0.1, 0.1]] * 4 + [[0.9, 0.9, 0.1]] * 4)
    ratio = np.full((8, 3), NAN)
    ratio[:, 0] = 3.0  # always far: a touch away from the reach point
    assert learned.decode_now(probs, 1, measured=ratio, veto=2.0).tolist() == [
        0, 0, 0, 0, 2, 2, 2, 2]
    # REACH's head holds from frame 1; one far frame there among near ones: vetoed with no
    # median, not with a median of 3.
    late = probs.copy()
    late[0, 0] = 0.1
    blip = np.full((8, 3), NAN)
    blip[:, 0] = [0.5, 3.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    assert learned.decode_now(late, 1, measured=blip, veto=2.0).tolist()[:4] == [0, 0, 1, 1]
    assert learned.decode_now(late, 3, measured=blip, veto=2.0).tolist()[:4] == [0, 1, 1, 1]
    with pytest.raises(ConfigError, match='decoder veto: no distances'):
        learned.decode_now(probs, 1, veto=2.0)


def test_the_default_decoder_writes_and_reads_as_before_and_the_veto_survives_its_entry():
    assert learned.Decoder().as_dict() == {'method': 'greedy', 'median_frames': 3,
                                           'step_cost': 0.0}
    assert learned.Decoder().veto is None and not learned.Decoder().distances
    vetoed = learned.Decoder(veto=1.5)
    assert vetoed.as_dict() == {'method': 'greedy', 'median_frames': 3, 'step_cost': 0.0,
                                'veto': 1.5}
    assert learned.Decoder.of(vetoed.as_dict()) == vetoed and vetoed.distances
    assert vetoed.label == 'greedy(veto)'
    for bad in ({'veto': 'far'}, {'veto': 0.0}, {'veto': float('inf')}, {'veto': True},
                {'veto': 2.0, 'method': 'monotone'}, {'veto': 2.0, 'measured': True}):
        with pytest.raises(ConfigError, match='decoder veto') as err:
            learned.Decoder.of(bad)
        assert '\n' not in str(err.value)


def test_the_shipped_distance_checkpoint_with_the_veto_reads_its_heads_and_distances_once():
    """families_dist3 carrying the veto: the same probabilities and distances as the plain
    scorer's (from one pass), its reading ``decode_now`` of them with the veto."""
    shipped = learned.load_checkpoint(learned.FAMILIES_DIST3_CHECKPOINT)
    frames = synthetic_frames(2)
    task = 'pick_spoon'
    plain = learned.LearnedScorer(learned.FAMILIES_DIST3_CHECKPOINT)
    read = learned.LearnedScorer(learned.with_decoder(shipped, learned.Decoder(veto=1.5)))
    assert read.decoder == learned.Decoder(veto=1.5)
    out = read.outputs(frames, task)
    probs = plain.outputs(frames, task)
    assert out.shape == (8, 6) and np.allclose(out[:, :3], probs)
    assert np.allclose(out[:, 3], plain.measures(frames, task)[:, 0] / skills.REACH_DISTANCE)
    _, counts = read.curves(frames, task)
    assert counts.tolist() == learned.decode_now(probs, 3, measured=out[:, 3:],
                                                 veto=1.5).tolist()
    assert read.read(out, learned.Decoder()).tolist() == plain.read(probs).tolist()
    with pytest.raises(ConfigError, match='decoder veto: the outputs hold no distances'):
        plain.read(probs, learned.Decoder(veto=1.5))


def test_a_checkpoint_without_the_distance_output_refuses_the_veto_in_one_line():
    with pytest.raises(ConfigError, match='decoder veto: .* no distance output') as err:
        learned.LearnedScorer(learned.FAMILIES_NOW3_CHECKPOINT,
                              decoder=learned.Decoder(veto=1.5))
    assert '\n' not in str(err.value)
