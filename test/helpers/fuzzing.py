"""Deterministic generators of malformed, extreme and random world commands (issue 15).

Each generated command is a ``trajectory_msgs/JointTrajectory`` plus its *kind*: ``invalid``
(``ros.convert.trajectory_to_actions`` must reject it: wrong names or counts, NaN, inf, huge,
empty, gripper out of range), ``stale`` (stamped for another lockstep observation) or
``random`` (well-formed, within the joint limits, possibly far from the arm: the world may
execute it, a real arm's safety monitor may refuse it). Seeded, so every run throws the same
commands.
"""

from __future__ import annotations

from builtin_interfaces.msg import Time
import numpy as np
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from realm_ros.core import robot

NAMES = list(robot.JOINT_NAMES)
GRIPPER = robot.GRIPPER_JOINT
EXTREME = (float('nan'), float('inf'), -float('inf'), 1e308, -1e308, 1e9, 7.0, -7.0)


def _msg(names, points, stamp=None):
    msg = JointTrajectory()
    msg.joint_names = list(names)
    for p in points:
        point = JointTrajectoryPoint()
        if p is not None:
            point.positions = [float(v) for v in p]
        msg.points.append(point)
    if stamp is not None:
        msg.header.stamp = stamp
    return msg


def random_target(rng: np.random.Generator, margin: float = 0.05) -> np.ndarray:
    """Return a position target uniformly inside the joint limits shrunk by ``margin`` rad."""
    return rng.uniform(robot.JOINT_LOWER + margin, robot.JOINT_UPPER - margin)


def commands(n: int, seed: int = 0, near: np.ndarray | None = None):
    """Yield ``n`` pairs ``(kind, JointTrajectory)`` (see the module docstring)."""
    rng = np.random.default_rng(seed)
    near = robot.RESET_Q if near is None else near
    for _ in range(n):
        q = random_target(rng)
        case = int(rng.integers(14))
        if case == 0:  # NaN / inf / huge in one joint
            q[rng.integers(7)] = EXTREME[rng.integers(len(EXTREME))]
            yield 'invalid', _msg(NAMES + [GRIPPER], [np.r_[q, 0.0]])
        elif case == 1:  # beyond a joint limit
            j = rng.integers(7)
            q[j] = robot.JOINT_UPPER[j] + rng.uniform(0.01, 10.0) if rng.random() < 0.5 \
                else robot.JOINT_LOWER[j] - rng.uniform(0.01, 10.0)
            yield 'invalid', _msg(NAMES, [q])
        elif case == 2:  # wrong count: too few or too many values
            k = int(rng.choice([0, 1, 6, 9, 20]))
            yield 'invalid', _msg(NAMES, [rng.uniform(-1, 1, k)])
        elif case == 3:  # wrong names (franka_ros2's prefix, typos, duplicates)
            names = rng.choice([robot.prefixed_joint_names('fr3_'), NAMES[:6] + ['joint7'],
                                NAMES[:6] + [NAMES[0]], ['', *NAMES[1:]]])
            yield 'invalid', _msg(list(names), [q])
        elif case == 4:  # empty message, or a point with neither positions nor velocities
            yield 'invalid', _msg(NAMES, [] if rng.random() < 0.5 else [None])
        elif case == 5:  # gripper out of range or not finite
            g = float(rng.choice([-0.5, 1.5, 100.0, float('nan'), -float('inf')]))
            yield 'invalid', _msg(NAMES + [GRIPPER], [np.r_[near, g]])
        elif case == 6:  # a chunk whose later point is bad: the whole message is rejected
            bad = near.copy()
            bad[rng.integers(7)] = float('nan')
            yield 'invalid', _msg(NAMES, [near, near, bad])
        elif case == 7:  # names out of order (legal: core maps them by name)
            perm = rng.permutation(7)
            small = near + rng.uniform(-0.02, 0.02, 7)
            yield 'random', _msg([NAMES[i] for i in perm], [small[perm]])
        elif case == 8:  # out-of-order / overlapping chunk of small valid steps
            pts = [near + rng.uniform(-0.02, 0.02, 7) for _ in range(int(rng.integers(2, 5)))]
            yield 'random', _msg(NAMES, pts[::-1])
        elif case == 9:  # stale stamp: an observation long gone (lockstep drops it)
            yield 'stale', _msg(NAMES, [near], Time(sec=int(rng.integers(1000, 10**6)), nanosec=0))
        elif case == 10:  # a large random jump anywhere inside the limits
            yield 'random', _msg(NAMES + [GRIPPER], [np.r_[q, rng.uniform(0, 1)]])
        elif case == 11:  # velocity point with extreme (but finite) magnitude
            msg = _msg(NAMES + [GRIPPER], [])
            point = JointTrajectoryPoint()
            point.velocities = [float(v) for v in rng.uniform(-1e6, 1e6, 7)] + [0.5]
            msg.points.append(point)
            yield 'random', msg
        elif case == 12:  # velocity point with NaN
            msg = _msg(NAMES, [])
            point = JointTrajectoryPoint()
            point.velocities = [float('nan')] * 7
            msg.points.append(point)
            yield 'invalid', msg
        else:  # length mismatch between names and values
            yield 'invalid', _msg(NAMES + [GRIPPER], [q])
