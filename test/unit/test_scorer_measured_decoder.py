"""Issue 42, round 17 (docs/scoring.md "Round 17"): a now-head decoder that reads each stage
with a measure from the network's distance output against its predicate's own threshold
(``learned.Decoder.measured``); the default decoder reads as before, and a checkpoint without
the distance output refuses it in one line."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip('torch')

from test_scorer_now_head import synthetic_frames  # noqa: E402

from realm_ros.core import skills  # noqa: E402
from realm_ros.core.errors import ConfigError  # noqa: E402
from realm_ros.scorers import learned  # noqa: E402

NAN = float('nan')


def test_the_thresholds_are_the_predicates_own_for_every_measured_stage():
    assert set(skills.MEASURE_THRESHOLDS) == set(skills.STAGE_MEASURES)
    assert skills.MEASURE_THRESHOLDS == {'REACH': skills.REACH_DISTANCE,
                                         'MOVE_CLOSE': skills.MOVE_CLOSE_DISTANCE}


def test_a_measured_stage_follows_its_threshold_not_its_head():
    # REACH's head says held from the first frame; its distance crosses the threshold at frame
    # 3; GRASP's head holds from frame 5; TOUCH-like stage 2 never.
    probs = np.array([[0.9, 0.1, 0.1]] * 5 + [[0.9, 0.9, 0.1]] * 3)
    ratio = np.full((8, 3), NAN)
    ratio[:, 0] = [3.0, 2.5, 1.2, 0.8, 0.6, 0.5, 0.5, 0.5]
    assert learned.decode_now(probs, 1).tolist() == [1, 1, 1, 1, 1, 2, 2, 2]
    assert learned.decode_now(probs, 1, measured=ratio).tolist() == [0, 0, 0, 1, 1, 2, 2, 2]
    # Exactly at the threshold is not below it (the predicate's strict <).
    at = ratio.copy()
    at[3, 0] = 1.0
    assert learned.decode_now(probs, 1, measured=at).tolist() == [0, 0, 0, 0, 1, 2, 2, 2]
    # The head's probability does not matter to a measured stage: the same reading at 0.1.
    low = probs.copy()
    low[:, 0] = 0.1
    assert learned.decode_now(low, 1, measured=ratio).tolist() == [0, 0, 0, 1, 1, 2, 2, 2]
    # A one-frame dip below the threshold: called with no median, not with a median of 3.
    dip = ratio.copy()
    dip[:, 0] = [3.0, 0.5, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0]
    assert learned.decode_now(low, 1, measured=dip).tolist()[:5] == [0, 1, 1, 1, 1]
    assert learned.decode_now(low, 3, measured=dip).tolist()[:5] == [0, 0, 0, 0, 0]


def test_a_measured_stage_is_held_where_the_next_stage_is_its_touch():
    """REACH's "or touching": a far distance, but the next stage (which needs a touch) held."""
    probs = np.array([[0.1, 0.1, 0.1]] * 4 + [[0.1, 0.9, 0.1]] * 4)
    ratio = np.full((8, 3), NAN)
    ratio[:, 0] = 2.0  # never within the threshold
    assert learned.decode_now(probs, 1, measured=ratio).tolist() == [0, 0, 0, 0, 2, 2, 2, 2]
    with pytest.raises(ConfigError, match='decoder measured: measures of shape'):
        learned.decode_now(probs, 1, measured=ratio[:, :2])


def test_the_default_decoder_writes_and_reads_as_before():
    assert learned.Decoder().as_dict() == {'method': 'greedy', 'median_frames': 3,
                                           'step_cost': 0.0}
    assert learned.Decoder.of(None) == learned.Decoder() and not learned.Decoder().measured
    measured = learned.Decoder(measured=True)
    assert measured.as_dict()['measured'] is True
    assert learned.Decoder.of(measured.as_dict()) == measured
    assert measured.label == 'greedy(measured)'
    for bad in ({'measured': 'yes'}, {'measured': True, 'method': 'monotone'}):
        with pytest.raises(ConfigError, match='decoder measured') as err:
            learned.Decoder.of(bad)
        assert '\n' not in str(err.value)


def test_the_shipped_distance_checkpoint_reads_its_measured_stages_from_the_distances():
    """families_dist3 as shipped, and carrying the measured decoder: the same probabilities;
    the measured reading is ``decode_now`` of them and of the distances over the predicates'
    thresholds; the decoder survives the checkpoint."""
    shipped = learned.load_checkpoint(learned.FAMILIES_DIST3_CHECKPOINT)
    frames = synthetic_frames(2)
    task = 'pick_spoon'
    plain = learned.LearnedScorer(learned.FAMILIES_DIST3_CHECKPOINT)
    checkpoint = learned.with_decoder(shipped, learned.Decoder(measured=True))
    assert checkpoint['decoder']['measured'] is True
    read = learned.LearnedScorer(checkpoint)
    assert read.decoder == learned.Decoder(measured=True)
    out = read.outputs(frames, task)
    probs = plain.outputs(frames, task)
    assert out.shape == (8, 6) and np.allclose(out[:, :3], probs)
    metres = plain.measures(frames, task)
    assert np.allclose(out[:, 3], metres[:, 0] / skills.REACH_DISTANCE)
    assert np.isnan(out[:, 4:]).all()  # GRASP, LIFT_LARGE: no measure
    _, counts = read.curves(frames, task)
    assert counts.tolist() == learned.decode_now(probs, 3, measured=out[:, 3:]).tolist()
    # Its probabilities (the expected progress, stage proposals) are the plain scorer's.
    assert np.allclose(read.probabilities(frames, task), plain.probabilities(frames, task))
    # The plain reading is unchanged, and the measured scorer reads it back given the default.
    assert read.read(out, learned.Decoder()).tolist() == plain.read(probs).tolist()
    with pytest.raises(ConfigError, match='decoder measured: the outputs hold no distances'):
        plain.read(probs, learned.Decoder(measured=True))


def test_a_checkpoint_without_the_distance_output_refuses_it_in_one_line(tmp_path, capsys):
    from realm_ros.cli import main

    shipped = learned.load_checkpoint(learned.FAMILIES_NOW3_CHECKPOINT)
    with pytest.raises(ConfigError, match='decoder measured: .* no distance output') as err:
        learned.LearnedScorer(learned.FAMILIES_NOW3_CHECKPOINT,
                              decoder=learned.Decoder(measured=True))
    assert '\n' not in str(err.value)
    path = tmp_path / 'now3_measured.pt'
    learned.save_checkpoint(path, learned.with_decoder(shipped, learned.Decoder(measured=True)))
    video = tmp_path / 'v.mp4'
    import imageio.v2 as imageio
    imageio.mimwrite(str(video), [f[..., :3] for f in synthetic_frames(1, 4)], fps=15,
                     codec='libx264', macro_block_size=1)
    assert main(['score', '--checkpoint', str(path), '--video', str(video), '--task',
                 'pick_spoon', '--camera-video', f'wrist={video}']) == 2
    err_text = capsys.readouterr().err
    assert len(err_text.strip().splitlines()) == 1 and 'decoder measured' in err_text
