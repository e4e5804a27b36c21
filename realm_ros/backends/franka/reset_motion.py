"""Move a real arm to an episode's reset pose: a planned, time-scaled move through the bridge's
safety rules, with the arm's state checked before and after (pure logic over callables)."""

from __future__ import annotations

import dataclasses
import time
from typing import Callable

import numpy as np

from realm_ros.core import motion, robot
from realm_ros.core.errors import EpisodeError

#: Tolerance of the move to the reset pose, rad (per joint).
RESET_TOLERANCE = 0.02
#: The arm counts as at rest below this joint speed, rad/s.
REST_SPEED = 0.05
#: Wall seconds the arm may take to settle at the goal after the planned move.
SETTLE_S = 5.0


def check_arm(q: np.ndarray, dq: np.ndarray, arm: robot.ArmSpec, when: str,
              goal: np.ndarray | None = None) -> None:
    """Raise EpisodeError unless the arm is at rest, inside its joint limits (and at ``goal``).

    Args:
        q, dq: measured position (rad) and velocity (rad/s), canonical order.
        arm: the arm's limits.
        when: words for the message ("before the reset move").
        goal: when given, every joint must be within :data:`RESET_TOLERANCE` of it.
    """
    q, dq = np.asarray(q, dtype=float), np.asarray(dq, dtype=float)
    problems = []
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(dq))):
        problems.append('non-finite joint state')
    else:
        outside = np.flatnonzero((q < arm.lower) | (q > arm.upper))
        problems += [f'{arm.joint_names[i]}={q[i]:.4f} outside [{arm.lower[i]:.4f}, '
                     f'{arm.upper[i]:.4f}]' for i in outside]
        if dq.size == q.size and np.max(np.abs(dq)) > REST_SPEED:
            i = int(np.argmax(np.abs(dq)))
            problems.append(f'not at rest ({arm.joint_names[i]} moves {dq[i]:.3f} rad/s)')
        if goal is not None:
            off = np.abs(q - goal)
            problems += [f'{arm.joint_names[i]} {off[i]:.3f} rad from the goal'
                         for i in np.flatnonzero(off >= RESET_TOLERANCE)]
    if problems:
        raise EpisodeError(f'arm state {when}: ' + '; '.join(problems) + '; the arm is not '
                           'moved further (check it, then reset again)')


def planned_move(goal: np.ndarray, measured: Callable[[], np.ndarray],
                 command: Callable[[np.ndarray], None], limits: motion.RateLimits,
                 speed: float, dt: float, start_target: np.ndarray,
                 sleep: Callable[[float], None] = time.sleep,
                 velocity: Callable[[], np.ndarray] | None = None) -> np.ndarray:
    """Command a time-scaled quintic move from ``start_target`` to ``goal``, then hold the goal
    until the arm is within :data:`RESET_TOLERANCE` of it (and, given ``velocity``, which returns
    the measured joint velocity, at rest).

    Args:
        goal: (7,) reset pose, rad.
        measured: returns the newest measured position (7,), rad.
        command: checks (safety rules) and publishes one target; it may block while the joint
            state is late and raises when it is lost.
        limits: the arm's rate limits; the move's peak joint speed is at most ``speed`` rad/s.
        dt: control period, s.
        start_target: (7,) target in force when the move starts, rad.

    Returns:
        ``goal`` once every joint is within tolerance.

    Raises:
        EpisodeError: the arm did not get there (controller off, arm blocked).
    """
    goal = np.asarray(goal, dtype=float)
    slow = dataclasses.replace(limits, velocity=np.minimum(limits.velocity, speed))
    for target in motion.plan_move(start_target, goal, slow, dt):
        command(target)
        sleep(dt)
    limit = time.monotonic() + SETTLE_S
    while time.monotonic() < limit:
        if np.all(np.abs(measured() - goal) < RESET_TOLERANCE) and (
                velocity is None or np.max(np.abs(velocity())) < REST_SPEED):
            return goal
        command(goal)
        sleep(dt)
    raise EpisodeError(f'arm did not reach the reset pose {np.round(goal, 3).tolist()} within '
                       f'{RESET_TOLERANCE} rad; check that the controller is active and the arm '
                       'is free')
