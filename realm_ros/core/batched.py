"""The standard policy chain for W worlds at once, as array code.

:func:`~realm_ros.core.policy.standard_chain` wraps each world's policy in four objects
(``JointRateLimiter(ActionClipper(GripperBinarizer(ActionChunker(inner))))``); a batched sweep
(``backends/mujoco/batch.py``: W worlds in lockstep on MJX or MuJoCo Warp) called them world by
world, each allocating its own small arrays, so that the host's Python, not the GPU, set the
pace. :class:`BatchedChain` holds the same state for every world in arrays (the executed part
of each world's chunk, its read index, its mode, the rate limiter's last target) and turns one
control step of all worlds into one (W, 8) array with a handful of numpy calls.

It gives the per-world chain's actions bit for bit (``test/unit/test_batched.py`` runs both on
random chunks of both modes and lengths, with and without NaN): every operation is the same
element-wise float64 operation in the same order (a float32 chunk is widened once, exactly, as
``ActionClipper`` widens it), and ``max(1.0, x)`` is ``np.fmax`` (NaN-ignoring, like Python's
``max`` with the NaN second).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from realm_ros.core import robot
from realm_ros.core.errors import ConfigError
from realm_ros.core.types import Action, ActionChunk, ActionMode


class BatchedChain:
    """``standard_chain`` (chunker, gripper binariser, clipper, joint rate limiter) for ``n``
    worlds.

    Per control step: :meth:`queries` says which worlds' chains ask their policy now (the
    chunker's rule), the caller hands those worlds' new chunks to :meth:`set_chunks`, and
    :meth:`step` returns the action each listed world executes, given its measured joints.

    Args:
        n: worlds.
        execute: actions of each chunk executed open loop (``ActionChunker.execute``).
        threshold: the gripper's binarisation threshold (``GripperBinarizer``).
        scale, max_error, control_dt: ``JointRateLimiter``'s settings.
    """

    def __init__(self, n: int, execute: int = 8, threshold: float = 0.5, scale: float = 0.8,
                 max_error: float = 0.25, control_dt: float = 1.0 / robot.CONTROL_HZ) -> None:
        if execute < 1:
            raise ConfigError(f'ActionChunker.execute must be >= 1, got {execute}')
        if not 0.0 < scale <= 2.0 or max_error <= 0.0:
            raise ConfigError('JointRateLimiter: scale must be in (0, 2] and max_error > 0')
        self.n = n
        self.execute = execute
        self.threshold = threshold
        self.max_step = scale * robot.VELOCITY_LIMIT * control_dt
        self.max_error = max_error
        width = robot.NUM_ARM_JOINTS + 1
        #: The executed rows of each world's chunk (only the first ``execute`` ever run).
        self._rows = np.zeros((n, execute, width))
        self._len = np.zeros(n, dtype=int)  # rows to execute; 0: no chunk yet
        self._index = np.zeros(n, dtype=int)
        self._velocity = np.zeros(n, dtype=bool)
        self._last = np.zeros((n, robot.NUM_ARM_JOINTS))
        self._has_last = np.zeros(n, dtype=bool)

    def reset(self, worlds: Sequence[int] | None = None) -> None:
        """Forget the chunks and last targets of ``worlds`` (all by default): a new episode."""
        sel = slice(None) if worlds is None else np.asarray(worlds, dtype=int)
        self._len[sel] = 0
        self._index[sel] = 0
        self._has_last[sel] = False

    def queries(self) -> np.ndarray:
        """(n,) bool: whose chain asks its policy for a new chunk at the next :meth:`step`."""
        return self._index >= self._len

    def set_chunks(self, worlds: Sequence[int], chunks: Sequence[ActionChunk]) -> None:
        """Give ``worlds[k]`` the new chunk ``chunks[k]`` (read from its first row)."""
        for i, chunk in zip(worlds, chunks):
            h = min(self.execute, len(chunk))
            if h < 1:
                raise ConfigError('a policy returned an empty action chunk')
            self._rows[i, :h] = chunk.values[:h]
            self._len[i] = h
            self._index[i] = 0
            self._velocity[i] = chunk.mode is ActionMode.VELOCITY

    def step(self, worlds: Sequence[int], measured: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the actions of ``worlds`` this control step, (len, 8), and whether each is a
        velocity command, (len,) bool; ``measured``: their measured arm joints, (len, 7).

        Every listed world must hold a chunk with a row left (:meth:`queries` false after
        :meth:`set_chunks`)."""
        idx = np.asarray(worlds, dtype=int)
        if idx.size == 0:
            return np.zeros((0, robot.NUM_ARM_JOINTS + 1)), np.zeros(0, dtype=bool)
        if np.any(self._index[idx] >= self._len[idx]):
            raise ConfigError('BatchedChain.step: a world has no action left; give it a chunk')
        rows = self._rows[idx, self._index[idx]]  # a copy (fancy indexing)
        self._index[idx] += 1
        velocity = self._velocity[idx]
        # GripperBinarizer, then ActionClipper.
        rows[:, 7] = (rows[:, 7] > self.threshold).astype(float)
        arm = np.where(velocity[:, None], np.clip(rows[:, :7], -1.0, 1.0),
                       np.clip(rows[:, :7], robot.JOINT_LOWER, robot.JOINT_UPPER))
        rows[:, 7] = np.clip(rows[:, 7], 0.0, 1.0)
        # JointRateLimiter: position rows from the last target (or the measured joints)...
        meas = np.asarray(measured, dtype=float)
        previous = np.where(self._has_last[idx][:, None], self._last[idx], meas)
        target = np.clip(arm, previous - self.max_step, previous + self.max_step)
        position = np.clip(target, meas - self.max_error, meas + self.max_error)
        # ... velocity rows scaled down uniformly (DROID's max|v| <= 1 first).
        v = arm / np.fmax(1.0, np.max(np.abs(arm), axis=1))[:, None]
        ratio = np.max(np.abs(robot.MAX_JOINT_DELTA * v) / self.max_step, axis=1)
        scaled = v / np.fmax(1.0, ratio)[:, None]
        rows[:, :7] = np.where(velocity[:, None], scaled, position)
        pos = idx[~velocity]
        self._last[pos] = rows[~velocity, :7]
        self._has_last[pos] = True
        return rows, velocity


def actions(rows: np.ndarray, velocity: np.ndarray) -> list[Action]:
    """The :class:`Action` of each row of :meth:`BatchedChain.step` (as ``ActionChunk[0]``
    builds it from the per-world chain's one-row chunk)."""
    return [Action(arm=row[:7].copy(), gripper=float(row[7]),
                   mode=ActionMode.VELOCITY if vel else ActionMode.POSITION)
            for row, vel in zip(rows, velocity)]
