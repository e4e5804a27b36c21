"""System identification of the twin's per-joint friction and armature (docs/sysid.md).

ROS-free and simulator-free. The pieces:

* :func:`excitation_trajectory`: a joint-space multisine of absolute position targets at the
  control rate (15 Hz), starting and ending at the reset pose, inside the joint limits with a
  margin, under a velocity cap, and with the flange and the fingertips inside a safe box.
* :class:`ParamSpace`: the 14-vector (friction 1..7, armature 1..7) <-> :class:`DynamicsParams`
  mapping, searched in a log-scaled unit cube so that 0.01 and 1.0 are equally easy to reach.
* :class:`Trajectory`: one recorded run (initial state, targets, measured positions), and
  :func:`windows` that cuts runs into short windows starting from recorded states.
* :func:`loss`: sum over trajectories and steps of ||q_real - q_sim||^2 (rad^2).
* :func:`fit`: CMA-ES (package ``cma``, REALM) or simulated annealing (SIMPLER's baseline), both
  driving a :class:`BatchEvaluator` that simulates a whole population at once.
"""

from __future__ import annotations

import abc
import dataclasses
import math
import time
from typing import Callable, Sequence

import numpy as np

from realm_ros.core import robot
from realm_ros.core.config import DynamicsParams
from realm_ros.core.errors import ConfigError, DataError

#: Flange to fingertip centre along the flange z axis, m (the twin's gripper; model.py).
TCP_OFFSET = 0.165


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
    return flange[:3, 3], flange[:3, 3] + TCP_OFFSET * flange[:3, 2]


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
        velocity_fraction: target speed stays below this fraction of the velocity limit.
    """

    duration_s: float = 10.0
    control_hz: float = robot.CONTROL_HZ
    amplitude: tuple[float, ...] = (0.5, 0.35, 0.5, 0.4, 0.6, 0.5, 0.8)
    freq_range_hz: tuple[float, float] = (0.1, 1.2)
    n_sines: int = 4
    ramp_s: float = 1.0
    limit_margin: float = 0.15
    velocity_fraction: float = 0.5
    workspace: Workspace = Workspace()

    def __post_init__(self) -> None:
        if not 2 * self.ramp_s < self.duration_s <= 600:
            raise ConfigError(
                f'ExcitationSpec.duration_s must be in (2 * ramp_s, 600], got {self.duration_s}')
        if self.freq_range_hz[1] >= self.control_hz / 2:
            raise ConfigError('ExcitationSpec.freq_range_hz must stay below half the control rate')


def excitation_trajectory(spec: ExcitationSpec, seed: int,
                          start: np.ndarray | None = None) -> np.ndarray:
    """Return a (K, 7) array of absolute joint targets, rad, one row per control step.

    A multisine per joint (random frequencies, phases and weights drawn from ``seed``) around
    ``start`` (default: the DROID reset pose), faded in and out so the first and last rows equal
    ``start``. If the result leaves the joint limits (with margin), the velocity cap or the safe
    workspace, the amplitude is shrunk by 15 % and checked again.

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
    # Per joint: the largest amplitude that keeps the margin to both limits and the speed cap
    # (so one fast joint does not shrink the others); then one common factor for the workspace.
    offsets = np.asarray(spec.amplitude) * shape * envelope[:, None]
    prev = np.vstack([np.zeros(robot.NUM_ARM_JOINTS), offsets])
    speed = np.max(np.abs(np.diff(prev, axis=0)), axis=0) * spec.control_hz
    room_hi = (robot.JOINT_UPPER - spec.limit_margin - start) / np.maximum(offsets.max(0), 1e-9)
    room_lo = (start - robot.JOINT_LOWER - spec.limit_margin) / np.maximum(-offsets.min(0), 1e-9)
    cap = spec.velocity_fraction * robot.VELOCITY_LIMIT / np.maximum(speed, 1e-9)
    per_joint = np.clip(np.minimum.reduce([room_hi, room_lo, cap]) * 0.999, 0.0, 1.0)
    offsets = offsets * per_joint
    scale = 1.0
    while scale >= 0.05:
        q = start + scale * offsets
        if check_trajectory(q, spec, start) is None:
            return q
        scale *= 0.85
    raise ConfigError(f'no safe excitation for seed {seed}: {check_trajectory(q, spec, start)}')


def check_trajectory(q: np.ndarray, spec: ExcitationSpec,
                     start: np.ndarray | None = None) -> str | None:
    """Return why the (K, 7) targets ``q`` are unsafe, or ``None`` if they are safe."""
    low = robot.JOINT_LOWER + spec.limit_margin
    high = robot.JOINT_UPPER - spec.limit_margin
    if np.any(q < low) or np.any(q > high):
        return 'joint limit (with margin) exceeded'
    prev = robot.RESET_Q if start is None else start
    speed = np.abs(np.diff(np.vstack([prev, q]), axis=0)) * spec.control_hz
    if np.any(speed > spec.velocity_fraction * robot.VELOCITY_LIMIT):
        return 'target velocity above the cap'
    for row in q:
        flange, tip = end_effector_points(row)
        if not (spec.workspace.contains(flange) and spec.workspace.contains(tip)):
            return f'end effector leaves the safe box at flange {np.round(flange, 3).tolist()}'
    return None


@dataclasses.dataclass(frozen=True)
class ParamSpace:
    """Bounds of the 14 searched parameters and their log-scaled unit-cube coordinates.

    Vector layout: ``[friction_1..7 (N m), armature_1..7 (kg m^2)]``. Coordinate ``u`` in
    [0, 1] maps to ``p = low * (high / low) ** u``.
    """

    friction_bounds: tuple[float, float] = (0.005, 3.0)
    armature_bounds: tuple[float, float] = (0.005, 1.5)

    @property
    def low(self) -> np.ndarray:
        return np.repeat([self.friction_bounds[0], self.armature_bounds[0]], 7)

    @property
    def high(self) -> np.ndarray:
        return np.repeat([self.friction_bounds[1], self.armature_bounds[1]], 7)

    def to_unit(self, params: DynamicsParams) -> np.ndarray:
        """Return the (14,) unit-cube coordinates of ``params`` (clipped into the bounds)."""
        p = np.clip(np.r_[params.friction, params.armature], self.low, self.high)
        return np.log(p / self.low) / np.log(self.high / self.low)

    def from_unit(self, u: np.ndarray, damping: Sequence[float] = (0.0,) * 7) -> DynamicsParams:
        """Return the :class:`DynamicsParams` at unit-cube coordinates ``u`` (14,)."""
        u = np.clip(np.asarray(u, dtype=float), 0.0, 1.0)
        p = self.low * (self.high / self.low) ** u
        return DynamicsParams(friction=tuple(p[:7]), armature=tuple(p[7:]),
                              damping=tuple(damping))


@dataclasses.dataclass(frozen=True)
class Trajectory:
    """One recorded run, aligned to control steps.

    Attributes:
        name: where it came from (bag name, window index).
        q0, dq0: (7,) measured joint position (rad) and velocity (rad/s) when the first target
            was applied.
        gripper0: measured gripper g in [0, 1] at that time.
        targets: (K, 7) absolute joint targets, rad, one per control step.
        gripper: (K,) gripper commands g in [0, 1].
        measured: (K, 7) measured joint positions one control period after each target, rad.
        measured_dq: (K, 7) measured joint velocities at the same times, rad/s (for windows).
        dt: control period, s.
        target0: (7,) the joint target in force before the first step, rad (what an actuation
            delay holds at the start); None = ``q0``.
    """

    name: str
    q0: np.ndarray
    dq0: np.ndarray
    gripper0: float
    targets: np.ndarray
    gripper: np.ndarray
    measured: np.ndarray
    measured_dq: np.ndarray
    dt: float
    target0: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.target0 is None:
            object.__setattr__(self, 'target0', np.asarray(self.q0, dtype=float))
        k = len(self.targets)
        if k == 0:
            raise DataError(f'trajectory {self.name}: no control steps')
        for name, shape in (('q0', (7,)), ('dq0', (7,)), ('target0', (7,)), ('targets', (k, 7)),
                            ('gripper', (k,)), ('measured', (k, 7)), ('measured_dq', (k, 7))):
            value = np.asarray(getattr(self, name), dtype=float)
            if value.shape != shape:
                raise DataError(f'trajectory {self.name}: {name} has shape {value.shape}, '
                                f'expected {shape}')
            if not np.all(np.isfinite(value)):
                raise DataError(f'trajectory {self.name}: {name} contains NaN or inf')

    @property
    def steps(self) -> int:
        return len(self.targets)


def windows(trajectories: Sequence[Trajectory], length: int) -> list[Trajectory]:
    """Cut each trajectory into consecutive windows of ``length`` steps (remainder dropped).

    Each window starts from the measured state at its start, so windows can be simulated
    independently (short rollouts, random minibatches per generation).
    """
    out = []
    for traj in trajectories:
        for start in range(0, traj.steps - length + 1, length):
            if start == 0:
                q0, dq0, target0 = traj.q0, traj.dq0, traj.target0
                g0 = traj.gripper0
            else:
                q0, dq0 = traj.measured[start - 1], traj.measured_dq[start - 1]
                target0 = traj.targets[start - 1]
                g0 = float(traj.gripper[start - 1])
            sl = slice(start, start + length)
            out.append(Trajectory(
                name=f'{traj.name}@{start}', q0=q0, dq0=dq0, gripper0=g0,
                targets=traj.targets[sl], gripper=traj.gripper[sl], measured=traj.measured[sl],
                measured_dq=traj.measured_dq[sl], dt=traj.dt, target0=target0))
    return out


class BatchEvaluator(abc.ABC):
    """Simulates many (parameters, trajectory) pairs at once; implemented by a backend."""

    #: Seconds spent in the simulator and in precomputing controls (for the timing report).
    timing: dict[str, float]

    @abc.abstractmethod
    def simulate(self, params: Sequence[DynamicsParams],
                 trajectories: Sequence[Trajectory]) -> list[np.ndarray]:
        """Return, per trajectory, a (P, K, 7) array of simulated joint positions, rad.

        Row ``[p, k]`` is the position one control period after target ``k`` was applied with
        ``params[p]``, starting from the trajectory's recorded initial state.
        """


def loss(simulated: Sequence[np.ndarray], trajectories: Sequence[Trajectory]) -> np.ndarray:
    """Return the (P,) loss sum_traj sum_k ||q_real - q_sim||^2, rad^2, per candidate."""
    total = np.zeros(len(simulated[0]))
    for sim, traj in zip(simulated, trajectories):
        total += np.sum((sim - traj.measured[None]) ** 2, axis=(1, 2))
    return total


def joint_rmse(simulated: Sequence[np.ndarray], trajectories: Sequence[Trajectory],
               candidate: int = 0) -> np.ndarray:
    """Return the (7,) per-joint RMSE, rad, of one candidate over all steps of all trajectories."""
    sq = np.zeros(7)
    n = 0
    for sim, traj in zip(simulated, trajectories):
        sq += np.sum((sim[candidate] - traj.measured) ** 2, axis=0)
        n += traj.steps
    return np.sqrt(sq / max(n, 1))


@dataclasses.dataclass
class FitResult:
    """Outcome of :func:`fit`.

    ``history`` has one row per generation: (generation, evaluations, best minibatch loss,
    median minibatch loss, loss of the current estimate on the minibatch, elapsed s). Losses
    are per window and step (rad^2), so minibatch sizes compare.
    """

    params: DynamicsParams
    history: list[tuple[int, int, float, float, float, float]]
    stop_reason: str
    timing: dict[str, float]


def fit(
    evaluator: BatchEvaluator,
    trajectories: Sequence[Trajectory],
    space: ParamSpace = ParamSpace(),
    method: str = 'cmaes',
    seed: int = 0,
    generations: int = 60,
    popsize: int = 12,
    minibatch: int = 12,
    window: int = 15,
    sigma0: float = 0.2,
    initial: DynamicsParams | None = None,
    diagonal: bool = True,
    tolx: float = 2e-3,
    plateau: int = 10,
    progress: bool = True,
    on_generation: Callable[[int, DynamicsParams], None] | None = None,
) -> FitResult:
    """Minimise :func:`loss` over friction and armature.

    Each generation evaluates the whole population on the same random minibatch of
    ``minibatch`` windows of ``window`` control steps (``window`` <= 0: whole trajectories),
    so one simulator call per generation. CMA-ES runs in the log-scaled unit cube (separable
    ``CMA_diagonal`` by default: the parameters are nearly separable per joint and the diagonal
    model learns faster with few generations); its distribution mean is the estimate, which
    averages out minibatch noise. Stops after ``generations`` or when the step size falls
    below ``tolx`` (unit-cube units; 2e-3 is about 1.6 % in parameter value), or on a plateau:
    the median loss of the estimate over the last ``plateau`` generations is less than 1 %
    below the median of the ``plateau`` before (minibatch noise makes single values useless
    for this; ``plateau`` = 0 turns it off; checked from generation 3 * ``plateau`` on).

    Args:
        method: ``'cmaes'`` or ``'anneal'`` (simulated annealing, SIMPLER's baseline, with
            ``popsize`` proposals per iteration around the current point).
        initial: starting estimate (default: the centre of the log-scaled box, friction
            0.055 N m and armature 0.087 kg m^2; the twin's default friction 0 sits on the
            lower bound, a poor start for CMA-ES).

    Raises:
        ConfigError: unknown method or bad sizes.
    """
    if method not in ('cmaes', 'anneal'):
        raise ConfigError(f'unknown sysid method {method!r}; choose cmaes or anneal')
    if popsize < 2 or generations < 1 or minibatch < 1:
        raise ConfigError('popsize >= 2, generations >= 1 and minibatch >= 1 are required')
    import cma  # here, not at module level: it takes seconds to import and only fit needs it

    pool = list(windows(trajectories, window)) if window > 0 else list(trajectories)
    if not pool:
        raise DataError(f'no window of {window} steps fits in the trajectories')
    steps_per = np.mean([w.steps for w in pool])
    rng = np.random.default_rng(seed)
    x0 = space.to_unit(initial) if initial is not None else np.full(14, 0.5)
    timing = {'total': 0.0, 'simulate': 0.0}
    history: list[tuple[int, int, float, float, float, float]] = []
    t_start = time.perf_counter()

    def evaluate(points: list[np.ndarray]) -> tuple[np.ndarray, list[Trajectory]]:
        batch = ([pool[i] for i in rng.choice(len(pool), minibatch, replace=False)]
                 if minibatch < len(pool) else pool)
        t = time.perf_counter()
        sims = evaluator.simulate([space.from_unit(x) for x in points], batch)
        timing['simulate'] += time.perf_counter() - t
        return loss(sims, batch) / (len(batch) * steps_per), batch

    bar = _progress_bar(generations, progress, method)
    stop_reason = f'{generations} generations'
    if method == 'cmaes':
        es = cma.CMAEvolutionStrategy(x0, sigma0, {
            'bounds': [0.0, 1.0], 'popsize': popsize, 'seed': seed + 1, 'verbose': -9,
            'CMA_diagonal': diagonal, 'tolx': tolx, 'tolfun': 0.0, 'tolflatfitness': 1000,
            'maxiter': generations})
        for gen in range(generations):
            points = es.ask()
            values, _ = evaluate(list(points) + [np.asarray(es.mean)])
            es.tell(points, values[:-1].tolist())
            history.append((gen, (gen + 1) * popsize, float(values[:-1].min()),
                            float(np.median(values[:-1])), float(values[-1]),
                            time.perf_counter() - t_start))
            bar.update(1)
            bar.set_postfix(loss=f'{values[-1]:.3g}', sigma=f'{es.sigma:.3g}')
            if on_generation is not None:
                on_generation(gen, space.from_unit(es.mean))
            stop = es.stop()
            if stop and 'maxiter' not in stop:
                stop_reason = ', '.join(f'{k}={v}' for k, v in stop.items())
                break
            if _on_plateau(history, plateau):
                stop_reason = f'plateau (< 1 % better over {plateau} generations)'
                break
        best = np.asarray(es.mean)
    else:
        current = x0.copy()
        temp0 = None
        step = sigma0
        for gen in range(generations):
            proposals = [np.clip(current + rng.normal(0, step, current.shape), 0, 1)
                         for _ in range(popsize)]
            values, _ = evaluate(proposals + [current])
            current_value = values[-1]
            k = int(np.argmin(values[:-1]))
            if temp0 is None:
                temp0 = max(float(np.std(values[:-1])), 1e-12)
            temp = temp0 * (0.02 ** (gen / max(generations - 1, 1)))
            delta = values[k] - current_value
            if delta < 0 or rng.random() < math.exp(-delta / temp):
                current = proposals[k]
            step = max(sigma0 * (0.1 ** (gen / max(generations - 1, 1))), 1e-3)
            history.append((gen, (gen + 1) * popsize, float(values[:-1].min()),
                            float(np.median(values[:-1])), float(current_value),
                            time.perf_counter() - t_start))
            bar.update(1)
            bar.set_postfix(loss=f'{current_value:.3g}', step=f'{step:.3g}')
            if on_generation is not None:
                on_generation(gen, space.from_unit(current))
        best = current
    bar.close()
    timing['total'] = time.perf_counter() - t_start
    timing['bookkeeping'] = timing['total'] - timing['simulate']
    for key, value in getattr(evaluator, 'timing', {}).items():
        timing[f'simulate.{key}'] = value
    return FitResult(params=space.from_unit(best), history=history, stop_reason=stop_reason,
                     timing=timing)


def _on_plateau(history: Sequence[tuple], n: int) -> bool:
    """Return whether the estimate's loss stopped improving (see :func:`fit`)."""
    if n <= 0 or len(history) < 3 * n:
        return False
    recent = np.median([row[4] for row in history[-n:]])
    before = np.median([row[4] for row in history[-2 * n:-n]])
    return bool(recent > 0.99 * before)


def _progress_bar(total: int, enabled: bool, label: str):
    """Return a tqdm bar (or a silent stand-in when disabled)."""
    from tqdm import tqdm
    return tqdm(total=total, desc=f'sysid {label}', disable=not enabled, unit='gen',
                leave=False)


# -- actuation latency ---------------------------------------------------------------------

def latency_candidates(physics_hz: float, max_latency_s: float) -> list[float]:
    """Return the distinct actuation latencies (s) a twin at ``physics_hz`` can replay.

    ``MujocoWorld`` (and ``TwinRollout``) release a target ``round(latency_s * physics_hz) - 1``
    physics steps into its control period, so 0 and one physics step are the same twin; the
    candidates are 0 and ``k / physics_hz`` for k = 2 .. round(max_latency_s * physics_hz) + 1.
    """
    top = int(round(max_latency_s * physics_hz)) + 1
    return [0.0] + [k / physics_hz for k in range(2, max(top, 1) + 1)]


@dataclasses.dataclass
class LatencyEstimate:
    """Outcome of :func:`estimate_latency`: the best candidate and the loss of every one.

    ``losses`` are per window step (rad^2), in the order of ``candidates_s``.
    """

    latency_s: float
    candidates_s: list[float]
    losses: list[float]
    params: DynamicsParams
    seconds: float

    @property
    def delay_steps(self) -> int:
        """Index of the best candidate (0 = no delay)."""
        return self.candidates_s.index(self.latency_s)


def estimate_latency(
    make_evaluator: Callable[[float], BatchEvaluator],
    trajectories: Sequence[Trajectory],
    params: DynamicsParams,
    physics_hz: float = 240.0,
    max_latency_s: float = 0.05,
    window: int = 15,
    max_windows: int = 64,
    seed: int = 0,
) -> LatencyEstimate:
    """Estimate the command-to-motion delay: a 1-D search over whole physics steps.

    Every candidate of :func:`latency_candidates` is replayed with the same ``params`` on the
    same windows (at most ``max_windows`` of ``window`` control steps, drawn with ``seed``,
    each starting from its recorded state); the candidate with the smallest :func:`loss` wins.
    A whole-step grid, not CMA-ES: the twin can only delay by whole physics steps, so the loss
    is a step function of the latency.

    Args:
        make_evaluator: returns a :class:`BatchEvaluator` that replays a given latency, s.
    """
    t0 = time.perf_counter()
    pool = windows(trajectories, window) if window > 0 else list(trajectories)
    if not pool:
        raise DataError(f'no window of {window} steps fits in the trajectories')
    if len(pool) > max_windows:
        rng = np.random.default_rng(seed)
        pool = [pool[i] for i in sorted(rng.choice(len(pool), max_windows, replace=False))]
    steps = sum(w.steps for w in pool)
    candidates = latency_candidates(physics_hz, max_latency_s)
    losses = [float(loss(make_evaluator(lat).simulate([params], pool), pool)[0] / steps)
              for lat in candidates]
    best = candidates[int(np.argmin(losses))]
    return LatencyEstimate(latency_s=best, candidates_s=candidates, losses=losses,
                           params=params, seconds=time.perf_counter() - t0)


@dataclasses.dataclass
class IdentifyResult:
    """Outcome of :func:`identify`.

    ``fit`` is the best fit, at ``latency_s``. ``profile`` maps every latency that got a fit
    (s) to that fit's loss per window step (rad^2) on one fixed set of windows; ``searches``
    holds the latency search at each fit, in the order the fits ran.
    """

    fit: FitResult
    latency_s: float
    searches: list[LatencyEstimate]
    profile: dict[float, float]

    @property
    def fits(self) -> int:
        return len(self.profile)


def identify(
    make_evaluator: Callable[[float], BatchEvaluator],
    trajectories: Sequence[Trajectory],
    physics_hz: float = 240.0,
    max_latency_s: float = 0.05,
    max_fits: int = 4,
    seed: int = 0,
    **fit_kwargs,
) -> IdentifyResult:
    """Estimate the actuation latency and fit friction and armature with it replayed.

    A delay and dry friction both make the arm lag, so they trade off, and a whole-step search
    (:func:`estimate_latency`) is only as good as the friction/armature it runs at: at the
    twin's defaults (no friction) it errs long, at a latency-free fit (which explains the lag
    with extra friction) it errs short (measured: 20.8 ms and 0 or 8.3 ms for a true 8 ms).
    Alternating search and fit stalls in that trade-off. So this profiles the loss over the
    latency with full fits: fit without latency; then fit (from scratch, same seed) at the
    latency the search at that fit suggests, at least one physics step more than 0, and walk to
    longer latencies while the fitted loss keeps falling; then try one step shorter than the
    best if that was skipped; at most ``max_fits`` fits. Every fit is scored by the loss of its
    parameters at its own latency on the same windows (the search's), so the profile compares
    like with like; the best fit wins.
    """
    candidates = latency_candidates(physics_hz, max_latency_s)
    fits: dict[int, tuple[FitResult, float]] = {}
    searches: list[LatencyEstimate] = []

    def run(k: int) -> float:
        result = fit(make_evaluator(candidates[k]), trajectories, seed=seed, **fit_kwargs)
        searches.append(estimate_latency(make_evaluator, trajectories, result.params,
                                         physics_hz, max_latency_s, seed=seed))
        fits[k] = (result, searches[-1].losses[k])
        return fits[k][1]

    run(0)
    k = max(searches[0].delay_steps, 1)
    while k < len(candidates) and len(fits) < max_fits:
        previous = min(v for _, v in fits.values())
        if run(k) >= previous:
            break
        k += 1
    best = min(fits, key=lambda i: fits[i][1])
    if best - 1 > 0 and best - 1 not in fits and len(fits) < max_fits:
        run(best - 1)
        best = min(fits, key=lambda i: fits[i][1])
    return IdentifyResult(fit=fits[best][0], latency_s=candidates[best], searches=searches,
                          profile={candidates[i]: v for i, (_, v) in sorted(fits.items())})
