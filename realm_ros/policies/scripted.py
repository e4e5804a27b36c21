"""Scripted policies that solve REALM's tasks from privileged object state, as a skill ladder.

The policy plans Cartesian waypoints for the gripper's tool centre point (approach, descend,
close, lift, carry, release, ...) from the object poses in ``obs.privileged`` (the twin's
:meth:`Scene.privileged` dict, or the ``privileged_state`` topic over ROS), moves a setpoint
toward the current waypoint at a bounded speed, and converts it to absolute joint targets with
the damped least-squares IK of :mod:`realm_ros.core.kinematics`. It never imports MuJoCo.

``skill`` picks a rung of the ladder (0 = ``expert`` ... 3 = ``poor``). Lower rungs make the
errors real policies make, drawn once per episode from ``(spec.seed, skill)``: imprecise grasp
offsets and yaw, hesitation pauses, a wrong approach point, early release, short motions
(lifting, rotating or pulling too little) and stalling. Deterministic per seed and skill. A
level of :data:`NAMED_LEVELS` (``near_miss``) is the same error model with other figures,
chosen by name only, outside the ladder.

``horizon`` H picks how the policy acts. H = 1 (the default): each :meth:`infer` returns a
one-action chunk and the policy re-plans every step from the measured state (closed loop), so
its outcomes hardly depend on how the arm tracks. H > 1 emulates a chunking VLA such as pi0
DROID (chunks of 10-15 actions, 8 executed open loop by
:class:`~realm_ros.core.policy.ActionChunker`): each query rolls the same waypoint logic H steps
ahead through the policy's *internal model* of the arm, which assumes perfect tracking (the
measured joints of step k+1 are the command of step k, as in the demonstrations a VLA learns
from), and returns the (H, 8) chunk, gripper open/close events at their planned step. Only the
first step of a chunk sees the measured state; the policy's waypoint state is committed after
``execute`` steps (the chunker's k), which is where the next query starts. Arm lag, overshoot and
latency then can change where the gripper is when it closes. With absolute position targets the
effect is negligible here (the target pulls the arm onto the plan during the grasp dwell); with
joint velocities it is not (README "Open-loop chunks").

``action_space``: ``'joint_position'`` (absolute targets, the default) or ``'joint_velocity'``
(DROID's velocity head, what the released pi0 DROID checkpoints output): the world applies
``q_measured + MAX_JOINT_DELTA v``, so a velocity is a delta from wherever the arm *is*, and
any tracking shortfall within a chunk accumulates instead of being corrected by an absolute
target. The internal model expects the arm to cover :data:`NOMINAL_TRACKING` of each commanded
delta per step (the nominal controller's first-order response, from its public gains only), so
``v = (q_plan[k] - q_model[k]) / (MAX_JOINT_DELTA * NOMINAL_TRACKING)``, each step's delta
capped at :data:`MAX_VELOCITY_DELTA` (80 % of the joint velocity limits); an arm with more
friction or inertia than that falls behind and closes its gripper short of the object.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Generator, Iterator, Mapping, Sequence

import numpy as np

from realm_ros.core import kinematics, robot, skills, tasks
from realm_ros.core.errors import ConfigError, EpisodeError
from realm_ros.core.policy import Policy, PolicyNeeds
from realm_ros.core.types import ActionChunk, ActionMode, EpisodeSpec, Observation

ACTION_SPACES = ('joint_position', 'joint_velocity')
#: Fraction of a velocity command's joint delta (``MAX_JOINT_DELTA v``) the policy's internal
#: model expects the arm to cover in one control step: the first-order response of the nominal
#: DROID impedance law (stiffness over damping, ``KX / KXD`` = 10.8 1/s, no inertia, no friction)
#: to a target held for 1 / CONTROL_HZ s. It uses only the public controller gains, never the
#: arm's friction or armature.
NOMINAL_TRACKING = 1.0 - math.exp(-robot.KX[0] / robot.KXD[0] / robot.CONTROL_HZ)
#: Largest joint delta (rad) a velocity action asks for in one step: 80 % of the Panda's joint
#: velocity limits over one control period, below the franka bridge's safety bound (90 %).
MAX_VELOCITY_DELTA = 0.8 * robot.VELOCITY_LIMIT / robot.CONTROL_HZ
#: Attributes of the waypoint state machine that one planned step changes (saved and restored
#: around the look-ahead of a chunk).
_STEP_STATE = ('_q_cmd', '_set_pos', '_set_yaw', '_wp', '_wp_index', '_wp_steps', '_dwell',
               '_hold', '_done')

OPEN, CLOSED = 0.0, 1.0
#: ``ik`` option: (solve_ik, tcp_pose) of the fast path and of the simple reference path.
IK_PATHS = {'fast': (kinematics.solve_ik, kinematics.tcp_pose),
            'reference': (kinematics.solve_ik_reference, kinematics.tcp_pose_reference)}
#: TCP yaw (closing-axis direction, rad) at the DROID reset pose; grasp yaws are chosen within
#: +-pi/2 of it so the wrist never winds toward its joint limit.
RESET_YAW = -math.pi / 4
#: How far the policy expects a drawer to slide, m (the twin's drawer travel).
DRAWER_TRAVEL = 0.25


@dataclasses.dataclass(frozen=True)
class SkillLevel:
    """Error model of one rung of the ladder (probabilities per episode; m, rad, steps)."""

    name: str
    offset_std: float      # grasp/place position error, m (1 sigma, horizontal)
    yaw_std: float         # grasp yaw error, rad
    p_pause: float         # hesitate (hold still) at one random waypoint
    p_wrong: float         # approach a wrong point (wrong_range off, 6-10 cm) and commit to it
    p_early_release: float  # open the gripper while carrying
    p_short: float         # do only part (short_range, 40-70 %) of the final motion (lift,
    #                        rotate, pull, push)
    p_stall: float         # stop moving at a random waypoint for the rest of the episode
    wrong_range: tuple[float, float] = (0.06, 0.1)  # how far off a wrong approach point is, m
    short_range: tuple[float, float] = (0.4, 0.7)   # the fraction of a short final motion


SKILLS: tuple[SkillLevel, ...] = (
    SkillLevel('expert', 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    SkillLevel('good', 0.006, 0.08, 0.3, 0.05, 0.08, 0.1, 0.05),
    SkillLevel('sloppy', 0.012, 0.2, 0.5, 0.15, 0.2, 0.25, 0.12),
    SkillLevel('poor', 0.02, 0.35, 0.7, 0.3, 0.3, 0.4, 0.25),
)
SKILL_NAMES = tuple(s.name for s in SKILLS)
#: Error models usable by name only (``skill='near_miss'``, ``scripted:near_miss``), not rungs:
#: the ladder's 0..3, :func:`skill_level` and every sweep over the ladder are unchanged.
#: ``near_miss`` (issue 42, round 10: the learned scorer's boundary episodes) ends its
#: episodes at a stage's edge: a wrong approach point 13-20 cm off (outside REACH_DISTANCE,
#: 10 cm, of the object; the ladder's are 6-10 cm, inside it), often stalled or paused there,
#: and a final motion of 0-35 % (a press that touches the switch without toggling it, or
#: stops above it; a lift of a few cm).
NAMED_LEVELS: dict[str, SkillLevel] = {
    'near_miss': SkillLevel('near_miss', 0.006, 0.08, 0.5, 0.6, 0.0, 1.0, 0.3,
                            wrong_range=(0.13, 0.2), short_range=(0.0, 0.35)),
}


def skill_level(skill: Any) -> int:
    """Return the rung index for ``skill`` (0..3 or a name such as ``'expert'``)."""
    if isinstance(skill, str) and not skill.lstrip('-').isdigit():
        if skill not in SKILL_NAMES:
            raise ConfigError(f'scripted policy skill {skill!r} unknown; use 0..3 or one of '
                              f'{list(SKILL_NAMES)}')
        return SKILL_NAMES.index(skill)
    level = int(skill)
    if not 0 <= level < len(SKILLS):
        raise ConfigError(f'scripted policy skill must be 0..{len(SKILLS) - 1}, got {skill}')
    return level


def skill_model(skill: Any) -> tuple[int, SkillLevel]:
    """Return ``(key, error model)`` for a rung (0..3 or its name) or a level of
    :data:`NAMED_LEVELS` by name; the key (the rung, or ``len(SKILLS)`` + the named level's
    index) seeds the episode's draws."""
    if isinstance(skill, str) and skill in NAMED_LEVELS:
        return len(SKILLS) + list(NAMED_LEVELS).index(skill), NAMED_LEVELS[skill]
    try:
        level = skill_level(skill)
    except ConfigError:
        raise ConfigError(f'scripted policy skill {skill!r} unknown; use 0..{len(SKILLS) - 1} '
                          f'or one of {list(SKILL_NAMES) + list(NAMED_LEVELS)}') from None
    return level, SKILLS[level]


@dataclasses.dataclass
class Waypoint:
    """A TCP target: position (m, base frame), closing-axis yaw (rad), gripper (1 = closed).

    ``speed``: setpoint speed, m per control step; ``tol``: how close the measured TCP must be
    to count as arrived, m; ``dwell``: steps to hold after arriving; ``timeout``: steps after
    which the waypoint is given up and the next one taken.
    """

    pos: np.ndarray
    yaw: float
    grip: float
    speed: float = 0.012
    tol: float = 0.015
    dwell: int = 0
    timeout: int = 90


@dataclasses.dataclass(frozen=True)
class Grasp:
    """How the policy grasps an object whose long axis is its local x: the TCP height above the
    table (m), the closing-axis yaw relative to the object's yaw (rad), and whether it places
    the object aligned with the receiver's yaw (else with its own grasp yaw)."""

    height: float
    yaw: float
    align_to_receiver: bool = False


#: Grasp geometry per object (the policy's knowledge of the object set it is scripted for).
GRASP = {
    'green_block': Grasp(0.02, 0.0),
    'banana': Grasp(0.02, math.pi / 2, align_to_receiver=True),
    'marker': Grasp(0.012, math.pi / 2),
    'mug': Grasp(0.068, math.pi / 2),
    'spoon': Grasp(0.017, math.pi / 2),
    'water_bottle': Grasp(0.12, 0.0),
}
#: TCP height (m) at which an object is released over each receiver (its top plus clearance).
RELEASE_Z = {'bowl': 0.085, 'box': 0.1, 'yellow_block': 0.074}


def _yaw_of(quat: Any) -> float:
    w, x, y, z = (float(v) for v in quat)
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def _near_reset(yaw: float, period: float = math.pi) -> float:
    """Return ``yaw`` shifted by multiples of ``period`` to lie within period/2 of RESET_YAW."""
    return RESET_YAW + (yaw - RESET_YAW + period / 2) % period - period / 2


class ScriptedPolicy(Policy):
    """Privileged-state waypoint policy with a skill ladder (see module docstring).

    Args:
        skill: 0..3 or ``expert``/``good``/``sloppy``/``poor``.
        seed: extra seed mixed with ``spec.seed`` (default 0).
        horizon: actions per chunk H >= 1 (1 = closed loop every step; see module docstring).
        execute: actions of each chunk the caller executes before re-querying (the
            ActionChunker's / policy_node's ``execute_horizon``, DROID's 8); the look-ahead
            state is committed after ``min(execute, horizon)`` steps. Ignored when H = 1.
        action_space: ``joint_position`` or ``joint_velocity``.
        max_delta: joint_velocity only: largest joint delta (rad) one step asks for; < 0 (the
            default) = :data:`MAX_VELOCITY_DELTA` per joint; DROID's own bound is
            ``MAX_JOINT_DELTA`` = 0.2 rad.
        ik: ``fast`` (the default) or ``reference``: which implementation of the same IK and
            forward kinematics (:mod:`realm_ros.core.kinematics`) the policy runs; the
            reference is the simple path the fast one is tested and benchmarked against.
    """

    name = 'scripted'

    def __init__(self, skill: Any = 0, seed: int = 0, horizon: int = 1, execute: int = 8,
                 action_space: str = 'joint_position', max_delta: float = -1.0,
                 ik: str = 'fast') -> None:
        if ik not in IK_PATHS:
            raise ConfigError(f'scripted policy ik {ik!r} unknown; use one of {list(IK_PATHS)}')
        self.ik = ik
        self._solve_ik, self._tcp_pose = IK_PATHS[ik]
        self.level, self.skill = skill_model(skill)
        self.seed = int(seed)
        if int(horizon) != horizon or int(horizon) < 1:
            raise ConfigError(f'scripted policy horizon must be an integer >= 1, got {horizon!r}')
        if int(execute) != execute or int(execute) < 1:
            raise ConfigError(f'scripted policy execute must be an integer >= 1, got {execute!r}')
        if action_space not in ACTION_SPACES:
            raise ConfigError(f'scripted policy action_space {action_space!r} unknown; use one '
                              f'of {list(ACTION_SPACES)}')
        self.horizon = int(horizon)
        self.execute = int(execute)
        self.action_space = action_space
        self.max_delta = MAX_VELOCITY_DELTA if float(max_delta) < 0 else np.full(
            robot.NUM_ARM_JOINTS, min(float(max_delta), robot.MAX_JOINT_DELTA))
        self._spec: EpisodeSpec | None = None
        self._plan: Iterator[Waypoint] | None = None

    @property
    def needs(self) -> PolicyNeeds:
        """Privileged object state, no cameras; chunks in ``action_space``."""
        return PolicyNeeds(action_space=self.action_space, horizon=self.execute,
                           privileged=True)

    @property
    def label(self) -> str:
        if self.horizon == 1 and self.action_space == 'joint_position':
            return f'scripted-{self.skill.name}'
        space = '-vel' if self.action_space == 'joint_velocity' else ''
        return f'scripted-{self.skill.name}-h{self.horizon}{space}'

    # -- episode set-up ---------------------------------------------------------------------

    def reset(self, spec: EpisodeSpec) -> None:
        self.task = tasks.get_task(spec.task)
        self._spec = spec
        rng = np.random.default_rng([int(spec.seed), self.level, self.seed, 0x5EA1])
        s = self.skill
        self.offset = np.r_[rng.normal(0.0, s.offset_std, 2),
                            abs(rng.normal(0.0, s.offset_std / 2))]
        self.yaw_error = float(rng.normal(0.0, s.yaw_std))
        self.pause_at = int(rng.integers(0, 6)) if rng.random() < s.p_pause else -1
        self.pause_len = int(rng.integers(10, 40))
        angle = rng.uniform(-math.pi, math.pi)
        self.wrong = (rng.uniform(*s.wrong_range)
                      * np.array([math.cos(angle), math.sin(angle), 0.0])
                      if rng.random() < s.p_wrong else np.zeros(3))
        self.early_release = bool(rng.random() < s.p_early_release)
        self.short = float(rng.uniform(*s.short_range)) if rng.random() < s.p_short else 1.0
        self.stall_at = int(rng.integers(1, 7)) if rng.random() < s.p_stall else -1
        self._plan = None
        self._planned: list[Waypoint] = []
        self._q_cmd: np.ndarray | None = None
        self._set_pos = np.zeros(3)
        self._set_yaw = RESET_YAW
        self._wp: Waypoint | None = None
        self._wp_index = -1
        self._wp_steps = 0
        self._dwell = 0
        self._hold = 0
        self._done = False
        self._state: Mapping[str, Any] = {}

    # -- the loop -----------------------------------------------------------------------------

    def _begin(self, obs: Observation) -> np.ndarray:
        """Check ``obs``, take its privileged state, plan on the first call; return q_meas."""
        if self._spec is None:
            raise EpisodeError('scripted policy: reset(spec) must be called before infer')
        if not obs.privileged:
            raise EpisodeError(
                'scripted policy needs privileged object state (a simulated world or the '
                'digital real); this observation has none')
        self._state = obs.privileged
        q_meas = np.asarray(obs.joints.position, dtype=float)
        if self._q_cmd is None:
            self._q_cmd = q_meas.copy()
            tcp = self._tcp_pose(q_meas)
            self._set_pos = tcp[:3, 3].copy()
            self._set_yaw = math.atan2(tcp[1, 1], tcp[0, 1])
            self._plan = self._waypoints()
            self._next_waypoint()
        return q_meas

    @property
    def closed_loop(self) -> bool:
        """One absolute joint target per query (horizon 1, joint_position): what
        :func:`infer_batch` batches."""
        return self.horizon == 1 and self.action_space == 'joint_position'

    def infer(self, obs: Observation) -> ActionChunk:
        q_meas = self._begin(obs)
        if self.horizon == 1 and self.action_space == 'joint_position':
            return ActionChunk(self._step(q_meas)[None, :], ActionMode.POSITION)
        # Open-loop look-ahead through the internal model (perfect tracking): the "measured"
        # joints of step k > 0 are the command of step k - 1.
        rows = np.empty((self.horizon, 8))
        q_model = q_meas
        committed: dict[str, Any] | None = None
        for k in range(self.horizon):
            row = self._step(q_model)
            if self.action_space == 'joint_velocity':
                # The target change a step may ask for is capped below the arm's velocity
                # limits (the franka bridge's safety monitor refuses more); what is cut off
                # stays in the internal model's lag and is asked for in the next steps.
                delta = np.clip((row[:7] - q_model) / NOMINAL_TRACKING,
                                -self.max_delta, self.max_delta)
                rows[k, :7] = delta / robot.MAX_JOINT_DELTA
                rows[k, 7] = row[7]
                q_model = q_model + NOMINAL_TRACKING * delta
            else:
                rows[k] = row
                q_model = row[:7]
            if k + 1 == min(self.execute, self.horizon):
                committed = self._save()
        assert committed is not None
        self._restore(committed)
        mode = ActionMode.VELOCITY if self.action_space == 'joint_velocity' else \
            ActionMode.POSITION
        return ActionChunk(rows, mode)

    def _save(self) -> dict[str, Any]:
        return {name: (getattr(self, name).copy() if isinstance(getattr(self, name), np.ndarray)
                       else getattr(self, name)) for name in _STEP_STATE}

    def _restore(self, state: Mapping[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)

    def _step(self, q_meas: np.ndarray) -> np.ndarray:
        """Advance the waypoint state one control step; return ``[q_cmd (7), grip]``."""
        grip = self._setpoint_step(q_meas)
        assert self._q_cmd is not None
        self._q_cmd, _ = self._solve_ik(
            self._set_pos, kinematics.down_rotation(self._set_yaw), self._q_cmd,
            q_rest=self._spec_reset_q(), iterations=8)
        return np.append(self._q_cmd, grip)

    def _setpoint_step(self, q_meas: np.ndarray) -> float:
        """The part of :meth:`_step` before the IK: advance the waypoint and move the
        setpoint; return the gripper command."""
        assert self._spec is not None and self._q_cmd is not None
        self._advance(q_meas)
        wp = self._wp
        grip = wp.grip if wp is not None else CLOSED
        if wp is not None and self._hold == 0:
            delta = wp.pos - self._set_pos
            dist = float(np.linalg.norm(delta))
            self._set_pos = wp.pos.copy() if dist <= wp.speed else \
                self._set_pos + delta * (wp.speed / dist)
            dyaw = wp.yaw - self._set_yaw
            self._set_yaw += float(np.clip(dyaw, -0.08, 0.08))
        return grip

    def _spec_reset_q(self) -> np.ndarray:
        return np.asarray(self.task.reset_q, dtype=float)

    def _advance(self, q_meas: np.ndarray) -> None:
        """Move to the next waypoint when the current one is reached (or timed out)."""
        if self._hold > 0:
            self._hold -= 1
            return
        wp = self._wp
        if wp is None or self._done:
            return
        self._wp_steps += 1
        # np.allclose(set_pos, wp.pos) (rtol 1e-5, atol 1e-8) without its per-call overhead.
        arrived = (bool(np.all(np.abs(self._set_pos - wp.pos) <= 1e-8 + 1e-5 * np.abs(wp.pos)))
                   and abs(self._set_yaw - wp.yaw) < 0.02
                   and np.linalg.norm(self._tcp_pose(q_meas)[:3, 3] - wp.pos) < wp.tol)
        if arrived or self._wp_steps > wp.timeout:
            if self._dwell < wp.dwell:
                self._dwell += 1
                return
            self._next_waypoint()

    def _next_waypoint(self) -> None:
        assert self._plan is not None
        self._wp_index += 1
        self._wp_steps = 0
        self._dwell = 0
        if self._wp_index == self.stall_at:
            self._done = True  # stalls: keeps holding the current waypoint forever
            return
        if self._wp_index == self.pause_at:
            self._hold = self.pause_len
        # Waypoints are drawn from the plan once and kept, so a look-ahead that is rolled back
        # (chunks) sees the same waypoint again when it re-reaches this index.
        while len(self._planned) <= self._wp_index:
            try:
                self._planned.append(next(self._plan))
            except StopIteration:
                self._done = True
                return
        self._wp = self._planned[self._wp_index]

    # -- planning -----------------------------------------------------------------------------

    def _obj(self, name: str) -> tuple[np.ndarray, float]:
        pose = self._state['objects'][name]
        return np.asarray(pose['pos'], dtype=float), _yaw_of(pose['quat'])

    def _waypoints(self) -> Iterator[Waypoint]:
        """The plan of the task's skill (:attr:`Skill.plan <realm_ros.core.skills.Skill>`)."""
        plan = PLANS.get(skills.get(self.task.skill).plan)
        if plan is None:
            raise ConfigError(f'scripted policy has no plan for skill {self.task.skill!r}; '
                              f'plans: {sorted(PLANS)}')
        return plan(self)

    def _grasp_pose(self) -> tuple[np.ndarray, float]:
        pos, yaw = self._obj(self.task.obj)
        grasp = GRASP[self.task.obj]
        grasp_yaw = _near_reset(yaw + grasp.yaw) + self.yaw_error
        target = np.array([pos[0], pos[1], grasp.height]) + self.offset + self.wrong
        return target, grasp_yaw

    def _approach_and_close(self) -> Generator[Waypoint, None, tuple[np.ndarray, float]]:
        """Above the object, down to it, close: the start of every grasping plan. Returns (as
        the generator's value) the grasp position and yaw."""
        up = np.array([0.0, 0.0, 1.0])
        grasp, yaw = self._grasp_pose()
        yield Waypoint(grasp + 0.12 * up, yaw, OPEN, tol=0.02)
        yield Waypoint(grasp, yaw, OPEN, speed=0.008, tol=0.008)
        yield Waypoint(grasp, yaw, CLOSED, dwell=8, timeout=10)
        return grasp, yaw

    def _plan_lift(self) -> Iterator[Waypoint]:
        """pick: grasp and lift 0.2 m."""
        up = np.array([0.0, 0.0, 1.0])
        grasp, yaw = yield from self._approach_and_close()
        lift = grasp + 0.2 * self.short * up
        yield Waypoint(lift, yaw, CLOSED, speed=0.01, tol=0.02)
        yield Waypoint(lift, yaw, CLOSED, dwell=30, timeout=5)

    def _plan_turn(self) -> Iterator[Waypoint]:
        """rotate: grasp, lift 3 cm, turn 1.5 rad away from the wrist's limit, set down."""
        up = np.array([0.0, 0.0, 1.0])
        grasp, yaw = yield from self._approach_and_close()
        lift = grasp + 0.03 * up
        yield Waypoint(lift, yaw, CLOSED, speed=0.006, tol=0.01)
        turn = -1.5 * self.short if yaw > RESET_YAW else 1.5 * self.short
        yield Waypoint(lift, yaw + turn, CLOSED, tol=0.02, timeout=60)
        yield Waypoint(grasp + 0.005 * up, yaw + turn, CLOSED, speed=0.006, tol=0.01)
        yield Waypoint(grasp + 0.005 * up, yaw + turn, OPEN, dwell=6, timeout=8)
        yield Waypoint(grasp + 0.12 * up, yaw + turn, OPEN, tol=0.03)

    def _plan_place(self) -> Iterator[Waypoint]:
        """put / stack: grasp, lift, carry over the receiver, lower, release, retreat."""
        grasp, yaw = yield from self._approach_and_close()
        carry_z = 0.18 if self.short >= 1.0 else 0.02 + 0.1 * self.short
        lift = np.array([grasp[0], grasp[1], carry_z])
        yield Waypoint(lift, yaw, CLOSED, speed=0.01, tol=0.03)
        target, target_yaw = self._obj(self.task.target)
        held = GRASP[self.task.obj]
        place_yaw = _near_reset(target_yaw + held.yaw) if held.align_to_receiver else yaw
        over = np.array([target[0], target[1], carry_z]) + self.offset * np.array([1, 1, 0])
        if self.early_release:
            midway = 0.5 * (lift + over)
            yield Waypoint(midway, place_yaw, CLOSED, tol=0.03)
            yield Waypoint(midway, place_yaw, OPEN, dwell=5, timeout=6)
        yield Waypoint(over, place_yaw, CLOSED, tol=0.02)
        # Re-read the receiver: it may have been nudged.
        target, _ = self._obj(self.task.target)
        place = np.array([target[0], target[1], RELEASE_Z[self.task.target]]) + \
            self.offset * np.array([1, 1, 0])
        yield Waypoint(place, place_yaw, CLOSED, speed=0.006, tol=0.01)
        yield Waypoint(place, place_yaw, OPEN, dwell=8, timeout=10)
        yield Waypoint(place + np.array([0.0, 0.0, 0.1]), place_yaw, OPEN, tol=0.03)

    def _plan_press(self) -> Iterator[Waypoint]:
        """push: above the button, press it 1.8 cm down, retreat."""
        button = np.asarray(self._state['reach_point'][self.task.obj], dtype=float)
        target = button + self.offset * np.array([1, 1, 0]) + self.wrong
        top = 0.02  # button top above its body origin, m
        yaw = RESET_YAW + self.yaw_error
        yield Waypoint(target + np.array([0, 0, top + 0.1]), yaw, CLOSED, tol=0.02)
        depth = 0.018 * self.short
        press = target + np.array([0, 0, top + 0.01 - depth])
        yield Waypoint(press, yaw, CLOSED, speed=0.005, tol=0.004, timeout=40)
        yield Waypoint(press, yaw, CLOSED, dwell=5, timeout=5)
        yield Waypoint(target + np.array([0, 0, top + 0.1]), yaw, CLOSED, tol=0.03)

    def _drawer(self) -> tuple[np.ndarray, float, np.ndarray]:
        """Return the handle position, the drawer's yaw and its opening direction."""
        handle = np.asarray(self._state['reach_point'][self.task.obj], dtype=float)
        axis_yaw = _yaw_of(self._state['objects'][self.task.obj]['quat'])
        pull = np.array([-math.cos(axis_yaw), -math.sin(axis_yaw), 0.0])
        return handle, axis_yaw, pull

    def _plan_pull_open(self) -> Iterator[Waypoint]:
        """open_drawer: grasp the handle, pull the drawer's travel (+2 cm), release."""
        handle, axis_yaw, pull = self._drawer()
        up = np.array([0.0, 0.0, 1.0])
        yaw = _near_reset(axis_yaw) + self.yaw_error
        grasp = handle + self.offset * np.array([1, 1, 0.3]) + self.wrong
        yield Waypoint(grasp + 0.1 * up, yaw, OPEN, tol=0.02)
        yield Waypoint(grasp, yaw, OPEN, speed=0.006, tol=0.008)
        yield Waypoint(grasp, yaw, CLOSED, dwell=8, timeout=10)
        out = grasp + pull * (DRAWER_TRAVEL + 0.02) * self.short
        if self.early_release:
            yield Waypoint(grasp + pull * 0.1, yaw, CLOSED, speed=0.006, tol=0.02)
            yield Waypoint(grasp + pull * 0.1, yaw, OPEN, dwell=4, timeout=5)
        yield Waypoint(out, yaw, CLOSED, speed=0.006, tol=0.02, timeout=120)
        yield Waypoint(out, yaw, OPEN, dwell=6, timeout=8)
        yield Waypoint(out + 0.1 * up, yaw, OPEN, tol=0.03)

    def _plan_push_closed(self) -> Iterator[Waypoint]:
        """close_drawer: the closed gripper against the drawer's front, push it in."""
        handle, axis_yaw, pull = self._drawer()
        up = np.array([0.0, 0.0, 1.0])
        yaw = _near_reset(axis_yaw + math.pi / 2) + self.yaw_error
        start = handle + pull * 0.05 + self.offset * np.array([1, 1, 0.3]) + self.wrong
        yield Waypoint(start + 0.1 * up, yaw, CLOSED, tol=0.02)
        yield Waypoint(start, yaw, CLOSED, speed=0.006, tol=0.01)
        end = start - pull * (DRAWER_TRAVEL + 0.06) * self.short
        yield Waypoint(end, yaw, CLOSED, speed=0.006, tol=0.02, timeout=120)
        yield Waypoint(end + 0.1 * up, yaw, CLOSED, tol=0.03)


#: Plan name (:attr:`realm_ros.core.skills.Skill.plan`) -> the waypoint generator that runs it.
PLANS: dict[str, Callable[[ScriptedPolicy], Iterator[Waypoint]]] = {
    'lift': ScriptedPolicy._plan_lift,
    'turn': ScriptedPolicy._plan_turn,
    'place': ScriptedPolicy._plan_place,
    'press': ScriptedPolicy._plan_press,
    'pull_open': ScriptedPolicy._plan_pull_open,
    'push_closed': ScriptedPolicy._plan_push_closed,
}


def infer_batch(policies: Sequence[Policy],
                observations: Sequence[Observation]) -> list[ActionChunk]:
    """Return ``[p.infer(obs) for p, obs in zip(policies, observations)]`` with the IK of every
    closed-loop policy on the fast path solved in one :func:`kinematics.solve_ik_batch`.

    The same chunks as the loop (``test/unit/test_sweep.py``: within 1e-9 rad): the waypoint
    logic runs per policy as in :meth:`ScriptedPolicy.infer`, only the damped least-squares
    solves are stacked. Other policies (chunks, velocities, the reference IK) run their own
    :meth:`~ScriptedPolicy.infer`. Used by the batched sweeps (``mjx_sweep.py``).
    """
    out: list[ActionChunk | None] = [None] * len(policies)
    batch: list[int] = []
    chosen: list[ScriptedPolicy] = []
    grips: list[float] = []
    for i, (policy, obs) in enumerate(zip(policies, observations)):
        if not (isinstance(policy, ScriptedPolicy) and policy.closed_loop
                and policy.ik == 'fast'):
            out[i] = policy.infer(obs)
            continue
        grips.append(policy._setpoint_step(policy._begin(obs)))
        batch.append(i)
        chosen.append(policy)
    if batch:
        q, _ = kinematics.solve_ik_batch(
            np.array([p._set_pos for p in chosen]),
            np.array([kinematics.down_rotation(p._set_yaw) for p in chosen]),
            np.array([p._q_cmd for p in chosen]),
            np.array([p._spec_reset_q() for p in chosen]), iterations=8)
        for k, (i, p) in enumerate(zip(batch, chosen)):
            p._q_cmd = q[k].copy()
            out[i] = ActionChunk(np.append(q[k], grips[k])[None, :], ActionMode.POSITION)
    return [chunk for chunk in out if chunk is not None]
