"""Move a real arm to an episode's reset pose through the bridge's safety rules."""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from realm_ros.core.errors import EpisodeError

#: Tolerance of the move to the reset pose, rad (per joint).
RESET_TOLERANCE = 0.02


def move_to(goal: np.ndarray, measured: Callable[[], np.ndarray],
            command: Callable[[np.ndarray], None], speed: float, dt: float,
            start_target: np.ndarray, sleep: Callable[[float], None] = time.sleep) -> np.ndarray:
    """Ramp the joint target from ``start_target`` to ``goal`` at ``speed`` rad/s.

    Args:
        goal: (7,) reset pose, rad.
        measured: returns the newest measured position (7,), rad.
        command: checks (safety rules) and publishes one target; raises CommandRejected.
        speed: joint speed of the ramp, rad/s.
        dt: control period, s.
        start_target: (7,) target in force when the move starts, rad.

    Returns:
        ``goal`` once every joint is within :data:`RESET_TOLERANCE`.

    Raises:
        EpisodeError: the arm did not get there in time (controller off, arm blocked).
    """
    step = speed * dt
    target = np.asarray(start_target, dtype=float).copy()
    limit = time.monotonic() + 5.0 + float(np.max(np.abs(goal - target))) / step * dt
    while time.monotonic() < limit:
        if np.all(np.abs(measured() - goal) < RESET_TOLERANCE):
            return goal
        target = target + np.clip(goal - target, -step, step)
        command(target)
        sleep(dt)
    raise EpisodeError(f'arm did not reach the reset pose {np.round(goal, 3).tolist()} within '
                       f'{RESET_TOLERANCE} rad; check that the controller is active and the arm '
                       'is free')
