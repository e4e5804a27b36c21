"""Excitation trajectories: safe joint-space multisines for system identification.

:func:`excitation_trajectory` returns absolute position targets at the control rate (15 Hz),
starting and ending at the reset pose, and keeps them to every rule the arm's bridge applies:

* inside the joint limits of the arm (``ExcitationSpec.arm_id``) with a margin, under a velocity
  cap;
* accelerations and jerks below ``rate_fraction`` (0.6) of libfranka's limits for that arm
  (:mod:`realm_ros.core.motion`: FR3 10 rad/s^2 and 5000 rad/s^3 on every joint, the Panda per
  joint). They are those of the 15 Hz target stream (finite differences at the control rate,
  from rest at the start pose): what the bridge's jerk-limited shaper
  (``safety.shape_trajectory``) has to follow; 0.6 stays below the shaper's own
  ``safety.rate_limit_scale`` (0.8), so the shaper does not clip the excitation;
* the flange and the fingertips inside a safe box (:class:`Workspace`);
* the bridge's own workspace rule (:mod:`realm_ros.core.safety`, rule 6, the same functions):
  every target's TCP inside the safety box, and so is its look-ahead point, with the arm
  predicted to lag its targets by ``lag_s``. The bridge then never holds an excitation target,
  which would leave a refused target in the bag (before this, ``make demo``'s trajectory 3 lost
  one and its fit's gap rose from 0.000 to 0.004).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from realm_ros.core import motion, robot, safety
from realm_ros.core.config import SafetyConfig
from realm_ros.core.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class Workspace:
    """Axis-aligned box (m, ``base_link``) that the flange and fingertips must stay inside."""

    low: tuple[float, float, float] = (0.15, -0.55, 0.12)
    high: tuple[float, float, float] = (0.85, 0.55, 1.00)

    def contains(self, point: np.ndarray) -> bool:
        return bool(np.all(point >= self.low) and np.all(point <= self.high))


def end_effector_points(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (flange position, fingertip position), m in ``base_link``, at joint config ``q``."""
    flange = robot.forward_kinematics(q)[-1]
    return flange[:3, 3], flange[:3, 3] + robot.TCP_OFFSET * flange[:3, 2]


@dataclasses.dataclass(frozen=True)
class ExcitationSpec:
    """Shape of an excitation trajectory.

    Attributes:
        duration_s: length of the trajectory, s (including the ramps).
        control_hz: rate of the position targets, Hz.
        amplitude: (7,) peak amplitude per joint before safety scaling, rad.
        freq_range_hz: the sine frequencies are drawn log-uniformly from this range, Hz.
        n_sines: sines per joint.
        ramp_s: raised-cosine fade-in and fade-out, s, so the run starts and ends at rest.
        limit_margin: distance kept from every joint limit, rad.
        velocity_fraction: target speed stays below this fraction of the arm's velocity limit.
        tracking_speed: (7,) and below this, rad/s: what the arm follows under DROID's
            impedance gains within the driver's 0.28 rad tracking watchdog. It does not grow
            with a faster arm's rated limits (FR3's wrist is rated twice the Panda's, and the
            digital real's joint 7 then lags 0.29 rad), so it is half the Panda's limits.
        workspace: the box the flange and fingertips stay inside.
        rate_fraction: target acceleration and jerk stay below this fraction of libfranka's
            limits for the arm (:func:`rate_caps`); None: no acceleration or jerk cap (then
            FR3 joint 7 reaches 9.2 rad/s^2, the Panda's joint 2 7.7 rad/s^2 > libfranka's 7.5).
        arm_id: whose joint position and velocity limits apply (:func:`robot.arm_spec`:
            ``fr3``; ``fer`` = ``panda``, the default), as the arm's safety monitor checks them.
        safety: the bridge's safety rules the targets must pass (the world's ``safety.*``):
            its TCP box and workspace look-ahead.
        lag_s: how far the arm is predicted to lag its targets for the look-ahead, s: the
            measured TCP is taken as the target's TCP ``lag_s`` earlier. 0.2 s (3 control
            steps) bounds the look-ahead excess of every trajectory recorded on the demo's
            heavy-friction digital real (``config/dynamics/sysid_demo.yaml``).
        lookahead_margin_m: the predicted look-ahead point stays this far inside the box, m
            (per step the delayed-target prediction can miss the true lag by a few cm).
    """

    duration_s: float = 10.0
    control_hz: float = robot.CONTROL_HZ
    amplitude: tuple[float, ...] = (0.5, 0.35, 0.5, 0.4, 0.6, 0.5, 0.8)
    freq_range_hz: tuple[float, float] = (0.1, 1.2)
    n_sines: int = 4
    ramp_s: float = 1.0
    limit_margin: float = 0.15
    velocity_fraction: float = 0.5
    tracking_speed: tuple[float, ...] = tuple(0.5 * robot.VELOCITY_LIMIT)
    workspace: Workspace = Workspace()
    rate_fraction: float | None = 0.6
    arm_id: str = 'fer'
    safety: SafetyConfig = SafetyConfig()
    lag_s: float = 0.2
    lookahead_margin_m: float = 0.02

    def __post_init__(self) -> None:
        robot.arm_spec(self.arm_id)  # ConfigError naming the unknown arm id
        if self.rate_fraction is not None and not 0.0 < self.rate_fraction <= 1.0:
            raise ConfigError(
                f'ExcitationSpec.rate_fraction must be in (0, 1], got {self.rate_fraction}')
        if not 2 * self.ramp_s < self.duration_s <= 600:
            raise ConfigError(
                f'ExcitationSpec.duration_s must be in (2 * ramp_s, 600], got {self.duration_s}')
        if not 0.0 <= self.lag_s <= 2.0:
            raise ConfigError(f'ExcitationSpec.lag_s must be in [0, 2] s, got {self.lag_s}')
        if not 0.0 <= self.lookahead_margin_m <= 0.2:
            raise ConfigError('ExcitationSpec.lookahead_margin_m must be in [0, 0.2] m, got '
                              f'{self.lookahead_margin_m}')
        if self.freq_range_hz[1] >= self.control_hz / 2:
            raise ConfigError('ExcitationSpec.freq_range_hz must stay below half the control rate')


def excitation_trajectory(spec: ExcitationSpec, seed: int,
                          start: np.ndarray | None = None) -> np.ndarray:
    """Return a (K, 7) array of absolute joint targets, rad, one row per control step.

    A multisine per joint (random frequencies, phases and weights drawn from ``seed``) around
    ``start`` (default: the DROID reset pose), faded in and out so the first and last rows equal
    ``start``. If the result leaves the joint limits (with margin), the velocity cap or the safe
    workspace or the bridge's workspace rule, the amplitude is shrunk by 5 % and checked again.

    Raises:
        ConfigError: no amplitude down to 5 % of the requested one is safe.
    """
    start = robot.RESET_Q.copy() if start is None else np.asarray(start, dtype=float)
    rng = np.random.default_rng(seed)
    n = int(round(spec.duration_s * spec.control_hz))
    t = np.arange(1, n + 1) / spec.control_hz
    lo, hi = np.log(spec.freq_range_hz[0]), np.log(spec.freq_range_hz[1])
    shape = np.zeros((n, robot.NUM_ARM_JOINTS))
    for j in range(robot.NUM_ARM_JOINTS):
        # One slow sine always (large excursions and velocity reversals for friction), the
        # rest spread over the band (accelerations near the closed loop's bandwidth, armature).
        freqs = np.exp(rng.uniform(lo, hi, spec.n_sines))
        freqs[0] = np.exp(rng.uniform(lo, lo + 0.3 * (hi - lo)))
        weights = rng.uniform(0.5, 1.0, spec.n_sines)
        phases = rng.uniform(0, 2 * np.pi, spec.n_sines)
        wave = np.sum(weights * np.sin(2 * np.pi * freqs * t[:, None] + phases), axis=1)
        shape[:, j] = wave / np.max(np.abs(wave))
    ramp_n = int(round(spec.ramp_s * spec.control_hz))
    envelope = np.ones(n)
    fade = 0.5 - 0.5 * np.cos(np.linspace(0.0, np.pi, ramp_n))
    envelope[:ramp_n] = fade
    envelope[-ramp_n:] = fade[::-1]
    envelope[-1] = 0.0
    # Per joint: the largest amplitude that keeps the margin to both limits, the speed cap and
    # the acceleration and jerk caps (so one fast joint does not shrink the others; all scale
    # linearly with the amplitude); then one common factor for the workspace.
    offsets = np.asarray(spec.amplitude) * shape * envelope[:, None]
    speed, acc, jerk = target_rates(start + offsets, spec.control_hz, start)
    arm = robot.arm_spec(spec.arm_id)
    room_hi = (arm.upper - spec.limit_margin - start) / np.maximum(offsets.max(0), 1e-9)
    room_lo = (start - arm.lower - spec.limit_margin) / np.maximum(-offsets.min(0), 1e-9)
    acc_cap, jerk_cap = rate_caps(spec)
    cap = speed_cap(spec) / np.maximum(speed.max(0), 1e-9)
    # Uncapped (rate_fraction None): the caps are infinite, the factors 1 / 0 -> inf.
    cap_acc = acc_cap / np.maximum(acc.max(0), 1e-9)
    cap_jerk = jerk_cap / np.maximum(jerk.max(0), 1e-9)
    per_joint = np.clip(np.minimum.reduce([room_hi, room_lo, cap, cap_acc, cap_jerk]) * 0.999,
                        0.0, 1.0)
    offsets = offsets * per_joint
    scale = 1.0
    while scale >= 0.05:
        q = start + scale * offsets
        if check_trajectory(q, spec, start) is None:
            return q
        scale *= 0.95
    raise ConfigError(f'no safe excitation for seed {seed}: {check_trajectory(q, spec, start)}')


def speed_cap(spec: ExcitationSpec) -> np.ndarray:
    """Return the (7,) largest target speed per joint, rad/s: ``velocity_fraction`` of the arm's
    velocity limit, and no more than ``tracking_speed``."""
    return np.minimum(spec.velocity_fraction * robot.arm_spec(spec.arm_id).velocity,
                      np.asarray(spec.tracking_speed, dtype=float))


def rate_caps(spec: ExcitationSpec) -> tuple[np.ndarray, np.ndarray]:
    """Return the (7,) largest target acceleration (rad/s^2) and jerk (rad/s^3) per joint:
    ``rate_fraction`` of libfranka's limits for ``spec.arm_id`` (FR3: 10 and 5000 on every
    joint; the Panda: per joint, :data:`realm_ros.core.motion.FER_MAX_ACCELERATION`)."""
    if spec.rate_fraction is None:
        return np.full(robot.NUM_ARM_JOINTS, np.inf), np.full(robot.NUM_ARM_JOINTS, np.inf)
    limits = motion.rate_limits(robot.arm_spec(spec.arm_id), rate_scale=spec.rate_fraction)
    return limits.acceleration, limits.jerk


def target_rates(q: np.ndarray, control_hz: float, start: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return |velocity|, |acceleration| and |jerk| (each (K, 7)) of the targets ``q`` (K, 7)
    sent every ``1 / control_hz`` s from rest at ``start`` (default: the reset pose), by finite
    differences at the control rate."""
    prev = robot.RESET_Q if start is None else np.asarray(start, dtype=float)
    full = np.vstack([prev, prev, prev, np.asarray(q, dtype=float)])
    v = np.diff(full, axis=0) * control_hz
    a = np.diff(v, axis=0) * control_hz
    j = np.diff(a, axis=0) * control_hz
    return np.abs(v[2:]), np.abs(a[1:]), np.abs(j)


def check_trajectory(q: np.ndarray, spec: ExcitationSpec,
                     start: np.ndarray | None = None) -> str | None:
    """Return why the (K, 7) targets ``q`` are unsafe, or ``None`` if they are safe."""
    arm = robot.arm_spec(spec.arm_id)
    low = arm.lower + spec.limit_margin
    high = arm.upper - spec.limit_margin
    if np.any(q < low) or np.any(q > high):
        return 'joint limit (with margin) exceeded'
    speed, acc, jerk = target_rates(q, spec.control_hz, start)
    if np.any(speed > speed_cap(spec)):
        return 'target velocity above the cap'
    acc_cap, jerk_cap = rate_caps(spec)
    if np.any(acc > acc_cap):
        return (f"target acceleration above rate_fraction {spec.rate_fraction} x libfranka's "
                f'limit for {spec.arm_id} on joint {int(np.argmax((acc / acc_cap).max(0))) + 1}')
    if np.any(jerk > jerk_cap):
        return (f"target jerk above rate_fraction {spec.rate_fraction} x libfranka's limit for "
                f'{spec.arm_id} on joint {int(np.argmax((jerk / jerk_cap).max(0))) + 1}')
    for row in q:
        flange, tip = end_effector_points(row)
        if not (spec.workspace.contains(flange) and spec.workspace.contains(tip)):
            return f'end effector leaves the safe box at flange {np.round(flange, 3).tolist()}'
    return workspace_verdict(q, spec, start)


def predicted_lookahead(q: np.ndarray, spec: ExcitationSpec,
                        start: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Return the targets' TCPs and their predicted look-ahead points (each (K, 3), m,
    ``base_link``): the arm taken to lag ``spec.lag_s`` behind, from rest at ``start``."""
    start = robot.RESET_Q if start is None else np.asarray(start, dtype=float)
    offset = spec.safety.tcp_offset_m
    tcp = np.array([safety.tcp_position(row, offset) for row in np.asarray(q, dtype=float)])
    lag = int(round(spec.lag_s * spec.control_hz))
    before = np.vstack([np.repeat(safety.tcp_position(start, offset)[None], lag, 0), tcp])
    return tcp, safety.lookahead_point(tcp, before[:len(tcp)], spec.safety)


def workspace_verdict(q: np.ndarray, spec: ExcitationSpec,
                      start: np.ndarray | None = None) -> str | None:
    """Why the targets ``q`` would meet the bridge's workspace rule, or None: a TCP outside the
    safety box, or a predicted look-ahead point less than ``lookahead_margin_m`` inside it."""
    tcp, ahead = predicted_lookahead(q, spec, start)
    out = safety.box_excess(tcp, spec.safety)
    if np.any(out > 0):
        k = int(np.argmax(out))
        return f'TCP leaves the safety box at step {k}: {np.round(tcp[k], 3).tolist()} m'
    if spec.safety.workspace_lookahead > 0:
        out = safety.box_excess(ahead, spec.safety) + spec.lookahead_margin_m
        if np.any(out > 0):
            k = int(np.argmax(out))
            return (f'the predicted look-ahead point at step {k} '
                    f'{np.round(ahead[k], 3).tolist()} m comes within lookahead_margin_m '
                    f'{spec.lookahead_margin_m} of the safety box')
    return None
