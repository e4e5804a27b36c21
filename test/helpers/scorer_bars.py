"""Drawn episodes for the learned scorer's tests: a bar whose length says the stage, and a tiny
scorer trained on them in a few seconds on CPU (test_learned_scorer, test_operator_node)."""

from __future__ import annotations

import pathlib

import numpy as np

from realm_ros.scorers import learned

TASK = 'pick_spoon'  # 3 stages


def bar_frame(stage: int, rng: np.random.Generator, size=(36, 64)) -> np.ndarray:
    """A dark frame with a bar whose length says the stage (0..3), with pixel noise."""
    h, w = size
    image = rng.integers(20, 45, size=(h, w, 3), dtype=np.uint8)
    length = int(w * (0.15 + 0.25 * stage))
    image[h // 3:2 * h // 3, :length] = (230, 190, 40)
    return image


def bar_episode(final: int, seed: int, frames: int = 12) -> learned.LabelledEpisode:
    """An episode reaching ``final`` stages: one stage every 3 frames, then holding."""
    rng = np.random.default_rng(seed)
    met = np.minimum(final, np.arange(frames) // 3)
    return learned.LabelledEpisode(
        task=TASK, world='drawn', policy=f'final-{final}', seed=seed,
        frames=np.stack([bar_frame(int(m), rng) for m in met]),
        times_s=np.arange(frames) / learned.SAMPLE_FPS, met=met.astype(np.int64), n_stages=3)


def train_tiny(path: pathlib.Path) -> pathlib.Path:
    """Train a tiny scorer on drawn episodes of every final stage and save it to ``path``."""
    episodes = [bar_episode(final, seed) for final in range(4) for seed in range(6)]
    # The shipped scorer's inputs and pooling (the difference image, the flattened map).
    checkpoint = learned.train(episodes, learned.TrainConfig(epochs=10, batch=32, width=8,
                                                             lr=5e-3, threads=1, diff=True,
                                                             pool='flat'))
    learned.save_checkpoint(path, checkpoint)
    return path
