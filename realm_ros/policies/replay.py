"""Replay a recorded action sequence: the open-loop baseline and a reproducibility check.

The file is either ``.npy`` holding an (N, 8) float array (7 arm values + gripper per control
step) or JSON: ``{"actions": [[...8 numbers], ...], "mode": "position" | "velocity"}`` (or a
bare list of rows). ``realm-ros episode --record-actions FILE`` writes such a file. After the
last row the policy keeps sending it (the arm holds).
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

from realm_ros.core.errors import ConfigError
from realm_ros.core.policy import Policy
from realm_ros.core.types import ActionChunk, ActionMode, EpisodeSpec, Observation


def load_actions(path: str | pathlib.Path) -> tuple[np.ndarray, ActionMode]:
    """Return ``(actions (N, 8), mode)`` from an ``.npy`` or JSON file.

    Raises:
        ConfigError: missing file, wrong shape, non-finite values or an unknown mode.
    """
    path = pathlib.Path(path)
    mode = ActionMode.POSITION
    try:
        if path.suffix == '.npy':
            values = np.load(path, allow_pickle=False)
        else:
            data = json.loads(path.read_text())
            if isinstance(data, dict):
                try:
                    mode = ActionMode(data.get('mode', 'position'))
                except ValueError:
                    raise ConfigError(f'{path}: "mode" must be "position" or "velocity", got '
                                      f'{data.get("mode")!r}') from None
                data = data.get('actions')
            values = np.asarray(data, dtype=float)
    except (OSError, ValueError) as err:
        if isinstance(err, ConfigError):
            raise
        raise ConfigError(f'cannot read recorded actions from {path}: {err}') from None
    if values.ndim != 2 or values.shape[1] != 8 or len(values) == 0:
        raise ConfigError(f'{path}: recorded actions must be an (N, 8) array with N >= 1 '
                          f'(7 arm values + gripper per step), got shape {values.shape}')
    if not np.all(np.isfinite(values)):
        raise ConfigError(f'{path}: recorded actions contain NaN or inf')
    return values.astype(float), mode


class ReplayPolicy(Policy):
    """Send the recorded actions in order, one per step, whatever the observation.

    Args:
        path: the ``.npy`` or JSON file (see the module docstring).
    """

    name = 'replay'

    def __init__(self, path: str = '') -> None:
        if not path:
            raise ConfigError('replay policy needs "path" (policy_args {"path": "FILE"})')
        self.actions, self.mode = load_actions(path)
        self._index = 0

    def reset(self, spec: EpisodeSpec) -> None:
        del spec
        self._index = 0

    def infer(self, obs: Observation) -> ActionChunk:
        del obs
        row = self.actions[min(self._index, len(self.actions) - 1)]
        self._index += 1
        return ActionChunk(row[None, :].copy(), self.mode)
