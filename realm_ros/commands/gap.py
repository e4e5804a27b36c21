"""``realm-ros gap``: how far the twin's joint tracking is from the digital real's.

Drives one joint trajectory (a sum of per-joint sines about the reset pose, 15 Hz position
targets, checked against the default safety rules so it could go to a real arm) through, in this
process and without ROS:

* the twin with default dynamics (or ``--sim-params FILE``, e.g. an identified file),
* the twin with the digital real's own per-joint friction/armature/damping (the best system
  identification can do: what is left is latency, sensor noise and object scales, which the twin
  does not model),
* the digital real (``--dynamics FILE``, default realm_ros/data/digital_real_dynamics.yaml),

and prints, per joint, the RMS difference of the measured positions (mrad) between each twin and
the digital real. The gap that system identification must close is the first column; the second
column is what remains when it has.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import sys

import numpy as np

from realm_ros.commands import non_negative_int, positive_float
from realm_ros.core import backends, robot, sysid
from realm_ros.core.config import (
    DigitalRealDynamics,
    DynamicsParams,
    SafetyConfig,
    WorldConfig,
    sim_params_latency,
)
from realm_ros.core.safety import SafetyMonitor
from realm_ros.core.types import Action, EpisodeSpec

#: Per-joint sine amplitude (rad) and frequency (Hz): every joint moves, each at its own pace,
#: peak speeds 0.5 to 1.8 rad/s (inside 0.9 x the Panda's velocity limits).
AMPLITUDE = np.array([0.25, 0.2, 0.25, 0.25, 0.3, 0.3, 0.4])
FREQUENCY = np.array([0.3, 0.4, 0.35, 0.5, 0.6, 0.55, 0.7])
RAMP_S = 1.0  # amplitude ramps in over this long so the first target is the reset pose


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: dynamics file, duration, twin parameters, seed, JSON output."""
    parser.add_argument('--dynamics', default='', metavar='FILE',
                        help='digital real hidden dynamics YAML (default: the packaged file)')
    parser.add_argument('--sim-params', default='', metavar='FILE',
                        help='twin friction/armature YAML (e.g. sysid output); default: '
                             "the twin's defaults")
    parser.add_argument('--duration', type=positive_float, default=10.0, metavar='S',
                        help='trajectory length, s (default 10)')
    parser.add_argument('--seed', type=non_negative_int, default=0,
                        help='episode seed (sensor noise)')
    parser.add_argument('--json', default='', metavar='FILE',
                        help='also write the per-joint numbers as JSON')
    parser.add_argument('--plot', default='', metavar='PNG',
                        help="also draw the residual of the best twin (C, or --sim-params's) "
                             'against the digital real: RMSE with intervals, vs velocity and '
                             'acceleration, autocorrelation')


def trajectory(duration_s: float, control_hz: float = robot.CONTROL_HZ) -> np.ndarray:
    """Return the (N, 7) joint targets, rad, one row per control step."""
    t = np.arange(1, int(round(duration_s * control_hz)) + 1)[:, None] / control_hz
    ramp = np.clip(t / RAMP_S, 0.0, 1.0)
    return robot.RESET_Q + ramp * AMPLITUDE * np.sin(2 * math.pi * FREQUENCY * t)


def check_safe(targets: np.ndarray, control_hz: float = robot.CONTROL_HZ) -> None:
    """Raise CommandRejected if the trajectory breaks the default safety rules."""
    monitor = SafetyMonitor(SafetyConfig(), 1.0 / control_hz)
    previous = robot.RESET_Q
    for q in targets:
        # Ideal tracking assumed (measured = previous target); the bridge checks the real one.
        monitor.check(q, previous, previous, 0.0)
        previous = q


def rollout(world, targets: np.ndarray, seed: int,
            velocity: np.ndarray | None = None) -> np.ndarray:
    """Return the (N, 7) measured positions after each control step of ``targets`` (and fill
    ``velocity``, (N, 7) rad/s, if given)."""
    world.reset(EpisodeSpec(task='empty', seed=seed))
    out = np.empty_like(targets)
    for k, q in enumerate(targets):
        world.apply(Action(arm=q, gripper=0.0))
        joints = world.step().joints
        out[k] = joints.position
        if velocity is not None:
            velocity[k] = joints.velocity
    return out


_BEST = {'twin_latency': "C (the digital real's parameters and latency)",
         'twin_fitted': 'E (--sim-params with its latency)'}


def measure(dynamics_file: str = '', sim_params_file: str = '', duration_s: float = 10.0,
            seed: int = 0, plot: str = '') -> dict:
    """Run the three worlds and return per-joint RMS differences (rad) and tracking errors."""
    from realm_ros.backends.digital_real import DEFAULT_DYNAMICS_FILE, DigitalRealWorld
    from realm_ros.backends.mujoco.world import MujocoWorld

    hidden = DigitalRealDynamics.from_yaml(dynamics_file or DEFAULT_DYNAMICS_FILE)
    config = WorldConfig(cameras=(), camera_rate_hz=0.0)
    twin_params = DynamicsParams.from_yaml(sim_params_file) if sim_params_file else None
    targets = trajectory(duration_s, config.control_hz)
    check_safe(targets, config.control_hz)
    worlds = {
        'twin': MujocoWorld(config, dynamics=twin_params),
        'twin_identified': MujocoWorld(config, dynamics=hidden.joint_params()),
        'twin_latency': MujocoWorld(config, dynamics=hidden.joint_params(),
                                    latency_s=hidden.latency_s),
        'digital_real': DigitalRealWorld(config, hidden=hidden),
    }
    # The best twin at hand: --sim-params with the latency it carries (as every twin replays
    # it), else C. Its residual's structure says what lies outside the twin's model.
    best = 'twin_latency'
    if sim_params_file:
        best = 'twin_fitted'
        worlds[best] = MujocoWorld(config, dynamics=twin_params,
                                   latency_s=sim_params_latency(sim_params_file))
    q = {}
    velocity = np.empty_like(targets)
    for name, world in worlds.items():
        is_real = backends.get(world.name).real  # the digital real's velocities are recorded
        q[name] = rollout(world, targets, seed, velocity if is_real else None)
        world.close()

    def rms(a: np.ndarray) -> list[float]:
        return np.sqrt(np.mean(a ** 2, axis=0)).tolist()

    real = q['digital_real']
    recorded = sysid.Trajectory('gap', robot.RESET_Q.copy(), np.zeros(7), 0.0, targets,
                                np.zeros(len(targets)), real, velocity, 1.0 / config.control_hz)
    sims = [np.stack([q['twin'], q[best]])]
    residual = sysid.analyse_residual(sims, [recorded], seed=seed,
                                      noise_std=hidden.joint_noise_std or None)
    if plot:
        from realm_ros.commands.sysid.report import plot_residual
        plot_residual(pathlib.Path(plot), residual, [recorded], sims, 'gap trajectory',
                      ('A (default)' if not sim_params_file else 'A', _BEST[best]))
    return {
        'best_twin': best,
        'gap_best': rms(q[best] - real),
        'residual': residual.as_dict(),
        'steps': len(targets),
        'duration_s': duration_s,
        'dynamics_file': str(dynamics_file or DEFAULT_DYNAMICS_FILE),
        'sim_params_file': sim_params_file,
        'gap_default': rms(q['twin'] - real),
        'gap_identified': rms(q['twin_identified'] - real),
        'gap_identified_latency': rms(q['twin_latency'] - real),
        'noise_std': hidden.joint_noise_std,
        'tracking_real': rms(real - targets),
        'tracking_twin': rms(q['twin'] - targets),
    }


def run(args: argparse.Namespace) -> int:
    """Print the per-joint gap table; exit 0."""
    result = measure(args.dynamics, args.sim_params, args.duration, args.seed, args.plot)
    twin = 'twin (--sim-params)' if args.sim_params else 'twin (default)'
    print(f'joint tracking gap, twin vs digital real: {result["steps"]} steps at '
          f'{robot.CONTROL_HZ:g} Hz ({args.duration:g} s), RMS of measured joint positions, mrad')
    print('columns: A = ' + twin + ", B = twin with the digital real's friction/armature "
          '(what sysid can fit), C = B plus its latency, D = digital real vs its targets')
    print(f'{"joint":<14}{"A vs real":>12}{"B vs real":>12}{"C vs real":>12}'
          f'{"D tracking":>12}')
    keys = ('gap_default', 'gap_identified', 'gap_identified_latency', 'tracking_real')
    for i, name in enumerate(robot.JOINT_NAMES):
        print(f'{name:<14}' + ''.join(f'{result[k][i] * 1e3:>12.2f}' for k in keys))
    print(f'{"mean":<14}' + ''.join(f'{np.mean(result[k]) * 1e3:>12.2f}' for k in keys))
    before = float(np.mean(result['gap_default']))
    after = float(np.mean(result['gap_identified']))
    print(f'identifying friction/armature closes {100 * (1 - after / before):.0f} % of the gap; '
          f'the rest is the {result["dynamics_file"].rsplit("/", 1)[-1]} latency, which the '
          "twin's parameters leave out (C), and joint-sensor noise "
          f'({result["noise_std"] * 1e3:g} mrad, 1 sigma)')
    if args.sim_params:
        print(f'{"E: --sim-params with its latency vs real":<44}'
              + ' '.join(f'{1e3 * v:.2f}' for v in result['gap_best'])
              + f'  mean {1e3 * np.mean(result["gap_best"]):.2f} mrad')
    from realm_ros.commands.sysid.report import print_residual
    print_residual(sysid.ResidualAnalysis(**result['residual']), _BEST[result['best_twin']])
    if args.plot:
        print(f'wrote {args.plot}')
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(result, f, indent=2)
    sys.stdout.flush()
    return 0
