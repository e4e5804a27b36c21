"""Shaping of what realm_ros sends to a real arm: jerk-limited trajectories and planned moves.

libfranka refuses (with a ``joint_motion_generator_*_discontinuity`` reflex) position commands
whose velocity, acceleration or jerk jump beyond its limits between two 1 kHz samples, and
franka_ros2 leaves libfranka's own rate limiter off (franka_hardware ``robot.hpp``). So the
bridge does not hand the JointTrajectoryController a bare 15 Hz target: :class:`JerkLimitedShaper`
turns each target into 1 kHz samples whose velocity, acceleration and jerk stay below the arm's
limits (:func:`rate_limits`: libfranka's constants for that arm, times a margin), continuous
across successive targets (the shaper's state carries over), and which never cross the joint
bounds given (the limits shrunk by the position margin). Each plan ends with a braking tail to
rest, so an arm whose next command does not come stops within the limits instead of at the last
point's velocity.

:func:`plan_move` is the time-scaled move used for homing and reset: a quintic blend whose
duration is the shortest that keeps every joint below the velocity, acceleration and jerk limits.

Units: rad, rad/s, rad/s^2, rad/s^3, s; arrays in ``robot.JOINT_NAMES`` order. Pure numpy.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from realm_ros.core import robot

#: libfranka ``include/franka/rate_limiting.h`` since 2022 (the FR3): every joint.
FR3_MAX_ACCELERATION = np.full(7, 10.0)
FR3_MAX_JERK = np.full(7, 5000.0)
#: libfranka <= 0.9 (the Panda, FER).
FER_MAX_ACCELERATION = np.array([15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0])
FER_MAX_JERK = np.array([7500.0, 3750.0, 5000.0, 6250.0, 7500.0, 10000.0, 10000.0])
#: Sample period of libfranka's control loop, s.
FRANKA_DT = 1e-3
#: Shaped goals stay this far inside the bounds given to the shaper, rad.
GOAL_BUFFER_RAD = 0.005
#: The braking tail is sampled every TAIL_STRIDE shaper periods.
TAIL_STRIDE = 5


@dataclasses.dataclass(frozen=True)
class RateLimits:
    """Per-joint velocity (rad/s), acceleration (rad/s^2) and jerk (rad/s^3) limits."""

    velocity: np.ndarray
    acceleration: np.ndarray
    jerk: np.ndarray


def rate_limits(arm: robot.ArmSpec, velocity_scale: float = 0.9,
                rate_scale: float = 0.8) -> RateLimits:
    """Return the limits the bridge shapes to: the arm's velocity limits times ``velocity_scale``
    (at most 1), libfranka's acceleration and jerk limits for that arm times ``rate_scale``."""
    velocity_scale = min(velocity_scale, 1.0)
    fr3 = arm.arm_id == 'fr3'
    acc = FR3_MAX_ACCELERATION if fr3 else FER_MAX_ACCELERATION
    jerk = FR3_MAX_JERK if fr3 else FER_MAX_JERK
    return RateLimits(velocity=np.asarray(arm.velocity, dtype=float) * velocity_scale,
                      acceleration=acc * rate_scale, jerk=jerk * rate_scale)


@dataclasses.dataclass
class Samples:
    """A shaped trajectory: ``t`` (n,) s from its start, ``q``/``v``/``a`` (n, 7)."""

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    a: np.ndarray


class JerkLimitedShaper:
    """Follow a stream of joint targets with bounded velocity, acceleration and jerk.

    Per joint, every ``dt`` (libfranka's 1 ms): a braking-aware velocity set point toward the
    goal (never faster than the speed from which the joint can still stop at the goal with half
    the acceleration limit), an acceleration set point toward it, and the jerk that moves the
    acceleration toward that set point, clipped to the jerk limit; acceleration and velocity are
    clipped to theirs. Integration is exact for the samples: the finite differences of the
    sampled positions are the sampled velocities (and so on), so the maxima a 1 kHz consumer sees
    are the clipped values.
    """

    def __init__(self, limits: RateLimits, lower: np.ndarray, upper: np.ndarray,
                 dt: float = FRANKA_DT) -> None:
        self.limits = limits
        self.lower = np.asarray(lower, dtype=float)
        self.upper = np.asarray(upper, dtype=float)
        self.dt = dt
        self._vmax = limits.velocity
        self._amax = limits.acceleration
        self._jmax = limits.jerk
        # Velocity set points stay this far below the limit: the overshoot of the velocity
        # while the acceleration is brought to zero at the jerk limit is a^2 / (2 j).
        self._vset = np.maximum(self._vmax - self._amax ** 2 / (2 * self._jmax) * 1.5, 0.0)
        self._abrake = 0.5 * self._amax
        self._tv = 4 * np.maximum(self._amax / self._jmax, dt)  # velocity loop time constant
        self.q = np.zeros(7)
        self.v = np.zeros(7)
        self.a = np.zeros(7)

    def reset(self, q: np.ndarray) -> None:
        """Start at rest at ``q`` (rad)."""
        self.q = np.asarray(q, dtype=float).copy()
        self.v = np.zeros(7)
        self.a = np.zeros(7)

    def _tick(self, goal: np.ndarray | None) -> None:
        dt = self.dt
        if goal is None:  # brake to rest
            v_des = np.zeros(7)
        else:
            # Position error left once the current velocity is braked away (a look-ahead that
            # keeps the joint from running past the goal while the acceleration turns).
            e = goal - self.q
            ramp = np.sqrt(2.0 * self._abrake * np.abs(e))
            v_des = np.sign(e) * np.minimum(np.minimum(self._vset, ramp),
                                            np.abs(e) / (2.0 * self._tv))
        a_des = np.clip((v_des - self.v) / self._tv, -self._amax, self._amax)
        jerk = np.clip((a_des - self.a) / dt, -self._jmax, self._jmax)
        a = np.clip(self.a + jerk * dt, -self._amax, self._amax)
        v = np.clip(self.v + a * dt, -self._vmax, self._vmax)
        q = self.q + v * dt
        # Hard guard on the bounds: never sample beyond them (the braking ramp keeps the joint
        # from getting here; this only catches a goal moved while at speed toward a bound).
        out = (q < self.lower) | (q > self.upper)
        if np.any(out):
            q = np.clip(q, self.lower, self.upper)
            v = np.where(out, (q - self.q) / dt, v)
        self.a = (v - self.v) / dt
        self.v, self.q = v, q

    def plan(self, goal: np.ndarray, duration: float, tail: bool = True) -> Samples:
        """Advance ``duration`` s toward ``goal`` (clipped to the bounds) and return the samples.

        With ``tail`` the samples go on (without advancing the shaper) with a braking tail to
        rest: the trajectory to hand over if nothing follows. The shaper's state after the call
        is the one at ``duration`` s, where the next plan continues.
        """
        # Goals stop a little inside the bounds: what the braking ramp's tracking lag may
        # overshoot, so the hard guard in the tick never has to act.
        goal = np.clip(np.asarray(goal, dtype=float), self.lower + GOAL_BUFFER_RAD,
                       self.upper - GOAL_BUFFER_RAD)
        n = max(int(round(duration / self.dt)), 1)
        qs, vs, accs = [], [], []
        for _ in range(n):
            self._tick(goal)
            qs.append(self.q.copy())
            vs.append(self.v.copy())
            accs.append(self.a.copy())
        if tail:
            saved = (self.q.copy(), self.v.copy(), self.a.copy(), self.dt)
            # The tail is sampled coarser (it is interpolated by the controller and usually
            # replaced by the next plan): TAIL_STRIDE samples of dt each.
            self.dt = dt_tail = self.dt * TAIL_STRIDE
            t_tail: list[float] = []
            for _ in range(int(1.0 / dt_tail)):
                if np.all(np.abs(self.v) < 1e-6) and np.all(np.abs(self.a) < 1e-6):
                    break
                self._tick(None)
                qs.append(self.q.copy())
                vs.append(self.v.copy())
                accs.append(self.a.copy())
                t_tail.append(n * saved[3] + dt_tail * (len(t_tail) + 1))
            self.q, self.v, self.a, self.dt = saved
        t = np.concatenate([self.dt * np.arange(1, n + 1), t_tail if tail else []])
        return Samples(t=t, q=np.array(qs), v=np.array(vs), a=np.array(accs))


def measured_maxima(q: np.ndarray, dt: float, q0: np.ndarray | None = None,
                    v0: np.ndarray | None = None, a0: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return per-joint max |velocity|, |acceleration|, |jerk| of positions ``q`` (n, 7) sampled
    every ``dt`` s, by finite differences (as libfranka judges commands); ``q0``/``v0``/``a0``:
    the state before the first sample (default: at rest at ``q[0]``)."""
    q = np.asarray(q, dtype=float)
    q0 = q[0] if q0 is None else q0
    v = np.diff(np.vstack([q0, q]), axis=0) / dt
    v = np.vstack([np.zeros(7) if v0 is None else v0, v])
    a = np.diff(v, axis=0) / dt
    a = np.vstack([np.zeros(7) if a0 is None else a0, a])
    j = np.diff(a, axis=0) / dt
    return np.abs(v).max(axis=0), np.abs(a).max(axis=0), np.abs(j).max(axis=0)


def move_duration(start: np.ndarray, goal: np.ndarray, limits: RateLimits) -> float:
    """Shortest duration (s) of a quintic blend from rest to rest that keeps every joint below
    ``limits`` (peak speed 15/8 d/T, acceleration 5.77 d/T^2, jerk 60 d/T^3)."""
    d = np.abs(np.asarray(goal, dtype=float) - np.asarray(start, dtype=float))
    t_v = 1.875 * d / limits.velocity
    t_a = np.sqrt(5.7735 * d / limits.acceleration)
    t_j = np.cbrt(60.0 * d / limits.jerk)
    return float(max(np.max(t_v), np.max(t_a), np.max(t_j), 0.0))


def plan_move(start: np.ndarray, goal: np.ndarray, limits: RateLimits, dt: float,
              speed_scale: float = 1.0) -> np.ndarray:
    """Return (n, 7) joint targets every ``dt`` s of a time-scaled quintic move, the last = goal.

    The duration is :func:`move_duration` divided by ``speed_scale`` (<= 1 slows it down), so
    every joint's velocity, acceleration and jerk stay within ``limits``.
    """
    start = np.asarray(start, dtype=float)
    goal = np.asarray(goal, dtype=float)
    duration = move_duration(start, goal, limits) / max(min(speed_scale, 1.0), 1e-3)
    n = max(int(np.ceil(duration / dt)), 1)
    s = np.arange(1, n + 1) / n
    blend = 10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5
    return start + blend[:, None] * (goal - start)


def thin(t: np.ndarray, spacing: float, period: float) -> list[int]:
    """Return indices of samples ``t`` (s) about every ``spacing`` s, always with the sample at
    the end of the control ``period`` (where the next command takes over) and the last one."""
    keep: list[int] = []
    next_t = spacing
    step = float(t[1] - t[0]) if len(t) > 1 else period
    end = int(np.searchsorted(t, period + 0.5 * step)) - 1  # the sample at the period's end
    for k, tk in enumerate(t):
        if tk >= next_t - 1e-9 or k == end or k == len(t) - 1:
            keep.append(k)
            next_t = tk + spacing
    return keep
