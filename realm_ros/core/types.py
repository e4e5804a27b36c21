"""Typed records shared by worlds, policies, the episode loop and the evaluator.

Arrays carry a documented shape and unit; joints are always in :data:`robot.JOINT_NAMES` order.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from typing import Any, Mapping

import numpy as np

from realm_ros.core import robot
from realm_ros.core.errors import CommandRejected, ConfigError


class ActionMode(str, enum.Enum):
    """How the seven arm numbers of an action are read (docs/interface.md)."""

    #: Absolute joint targets, rad (REALM, pi0 ``*_jointpos``, GR00T N1.7).
    POSITION = 'position'
    #: DROID joint velocity, unitless in [-1, 1]; target = q_measured + 0.2 v rad.
    VELOCITY = 'velocity'


class EpisodeOutcome(str, enum.Enum):
    """How an episode ended."""

    SUCCESS = 'success'            # progression reached 1.0
    TIMEOUT = 'timeout'            # ran out of steps without success
    INFRA_FAILURE = 'infra_failure'  # policy server down, world crashed: never scored
    ABORTED = 'aborted'            # stopped by the operator or a signal


@dataclasses.dataclass(frozen=True, slots=True)
class JointState:
    """Measured arm and gripper state.

    Attributes:
        position: (7,) rad. velocity: (7,) rad/s. effort: (7,) N m (measured torque, may be 0).
        gripper: g in [0, 1], 1 = closed (DROID ``gripper_position`` = 1 - width / max_width).
        stamp: seconds, world clock (sim time in lockstep).
    """

    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray
    gripper: float
    stamp: float = 0.0


@dataclasses.dataclass(frozen=True, slots=True)
class Observation:
    """What a policy sees at one control step.

    ``images`` maps camera name (``exterior_1``, ``exterior_2``, ``wrist``) to an (H, W, 3) uint8
    RGB array; it may be empty when cameras are off. ``privileged`` holds simulator-only state
    (object poses, articulation positions) for scripted policies and scoring; it is empty on the
    real arm.
    """

    joints: JointState
    images: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)
    instruction: str = ''
    step: int = 0
    privileged: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, slots=True)
class Action:
    """One control step's command.

    Attributes:
        arm: (7,) joint targets (rad) in POSITION mode or unitless velocities in VELOCITY mode.
        gripper: g in [0, 1], 1 = closed.
        mode: how ``arm`` is read.
    """

    arm: np.ndarray
    gripper: float
    mode: ActionMode = ActionMode.POSITION

    def as_array(self) -> np.ndarray:
        """Return the (8,) vector ``[arm..., gripper]``."""
        return np.concatenate([self.arm, [self.gripper]])

    @classmethod
    def from_array(cls, values: np.ndarray, mode: ActionMode = ActionMode.POSITION) -> 'Action':
        """Build from an (8,) vector ``[arm..., gripper]``."""
        values = np.asarray(values, dtype=float)
        if values.shape != (robot.NUM_ARM_JOINTS + 1,):
            raise CommandRejected(f'an action has 8 numbers (7 arm + gripper), got {values.shape}')
        return cls(arm=values[:7].copy(), gripper=float(values[7]), mode=mode)


@dataclasses.dataclass(frozen=True, slots=True)
class ActionChunk:
    """H consecutive actions predicted at once; ``values`` is (H, 8): 7 arm + gripper."""

    values: np.ndarray
    mode: ActionMode = ActionMode.POSITION

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def __getitem__(self, index: int) -> Action:
        return Action.from_array(self.values[index], self.mode)


@dataclasses.dataclass(frozen=True, slots=True)
class Progress:
    """Tiered progression of a running episode (REALM).

    ``stages`` are the skill's ordered stage names; ``met`` says which are met (sticky, a prefix:
    a later stage never counts before an earlier one); ``progression`` = met / N, and
    ``max_progression`` the maximum so far (the episode score).
    """

    task: str
    stages: tuple[str, ...]
    met: tuple[bool, ...]
    progression: float
    max_progression: float
    step: int = 0
    source: str = 'privileged'  # 'privileged' (sim, digital real) or 'operator' (real arm)

    @property
    def reached(self) -> tuple[str, ...]:
        """The stages met so far, in order."""
        return tuple(s for s, m in zip(self.stages, self.met) if m)


#: REALM's published protocol: 800 steps per rollout, 15 more steps after success.
DEFAULT_MAX_STEPS = 800
STEPS_AFTER_SUCCESS = 15
#: An episode succeeds when its progression reaches 1.0 (every stage met). Progressions are
#: met / N, so the tolerance only absorbs float rounding.
SUCCESS_PROGRESSION = 1.0 - 1e-9
#: Roles of the two worlds of a paired evaluation (``EpisodeResult.role``).
REAL, SIM = 'real', 'sim'


@dataclasses.dataclass(frozen=True, slots=True)
class EpisodeSpec:
    """Everything needed to run one episode identically in two worlds.

    ``initial_state`` is filled by the task sampler from ``seed`` (object poses, articulation
    positions, robot reset pose) so both worlds of a pair start from the very same state.
    """

    task: str = 'empty'
    seed: int = 0
    policy: str = ''
    perturbation: str = 'Default'
    intensity: float = 1.0
    max_steps: int = DEFAULT_MAX_STEPS
    pair_id: str = ''
    instruction: str = ''
    initial_state: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.task:
            raise ConfigError('episode spec field "task" must be a non-empty task name')
        if self.max_steps <= 0:
            raise ConfigError(f'episode spec field "max_steps" must be > 0, got {self.max_steps}')
        if not (0.0 <= self.intensity <= 1.0) or math.isnan(self.intensity):
            raise ConfigError(
                f'episode spec field "intensity" must be in [0, 1], got {self.intensity}')

    def to_json(self) -> str:
        """Serialise to JSON (numpy arrays in ``initial_state`` become lists)."""
        return json.dumps(dataclasses.asdict(self), default=json_default, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> 'EpisodeSpec':
        """Parse :meth:`to_json` output; unknown fields raise :class:`ConfigError` naming them."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ConfigError(f'episode spec is not valid JSON: {err}') from None
        if not isinstance(data, dict):
            raise ConfigError('episode spec must be a JSON object')
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> 'EpisodeSpec':
        """Build from a mapping; unknown fields raise :class:`ConfigError` naming them."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ConfigError(f'unknown episode spec field(s) {unknown}; valid: {sorted(names)}')
        return cls(**data)


@dataclasses.dataclass(frozen=True, slots=True)
class EpisodeResult:
    """What an episode produced: one record schema for every runner.

    ``role`` is the world's part in a paired evaluation (:data:`REAL` or :data:`SIM`; '' outside
    one) and ``backend`` the World backend that ran it (``mujoco``, ``digital_real``, ``franka``,
    ...).
    """

    spec: EpisodeSpec
    outcome: EpisodeOutcome
    progression: float
    role: str = ''
    backend: str = ''
    stages: tuple[str, ...] = ()
    stages_reached: tuple[str, ...] = ()
    steps: int = 0
    #: World clock time the episode took, s; None where the runner cannot see the world's clock.
    sim_time_s: float | None = 0.0
    wall_time_s: float = 0.0
    error: str = ''
    #: Who scored the stages: ``privileged`` (simulator state) or ``operator`` (a person).
    scored_by: str = ''
    #: Final tiered progression (stage flags); ``progression`` above is its maximum.
    progress: Progress | None = None

    @property
    def world(self) -> str:
        """The record's legacy ``world`` key: the role if there is one, else the backend."""
        return self.role or self.backend

    @property
    def success(self) -> bool:
        """REALM's binary success: progression reached 1.0 (infrastructure failures never)."""
        return (self.outcome is not EpisodeOutcome.INFRA_FAILURE
                and self.progression >= SUCCESS_PROGRESSION)

    def to_record(self) -> dict[str, Any]:
        """Return a flat JSON-ready dict (one line of ``episodes.jsonl``).

        ``world`` repeats ``role`` (or ``backend`` outside a paired evaluation) for readers of
        older records; read records through :func:`record_role`.
        """
        return {
            'pair_id': self.spec.pair_id,
            'role': self.role,
            'backend': self.backend,
            'world': self.world,
            'task': self.spec.task,
            'perturbation': self.spec.perturbation,
            'intensity': self.spec.intensity,
            'policy': self.spec.policy,
            'seed': self.spec.seed,
            'stages': list(self.stages),
            'stages_reached': list(self.stages_reached),
            'progression': self.progression,
            'success': self.success,
            'outcome': self.outcome.value,
            'steps': self.steps,
            'sim_time_s': self.sim_time_s,
            'wall_time_s': self.wall_time_s,
            'scored_by': self.scored_by,
            'error': self.error,
        }


def record_role(record: Mapping[str, Any]) -> str:
    """Return a record's role (real/sim); records written before ``role`` existed carry it as
    ``world``."""
    return str(record.get('role') or record.get('world', ''))


def json_default(value: Any) -> Any:
    """``json.dumps(default=...)`` for records: numpy arrays and scalars, enums."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        return value.item()
    if isinstance(value, enum.Enum):
        return value.value
    raise TypeError(f'cannot serialise {type(value).__name__}')
