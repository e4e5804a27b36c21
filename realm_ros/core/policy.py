"""The ``Policy`` interface, composable wrappers, and the factory that picks a policy by name.

A policy maps an :class:`Observation` to an :class:`ActionChunk` of H >= 1 actions. Wrappers are
policies that wrap policies: ``ActionClipper(GripperBinarizer(ActionChunker(
WebsocketPolicy(...), execute=8)))`` rather than flags on one class.
"""

from __future__ import annotations

import abc
import dataclasses
import importlib
import inspect
from typing import Any, Mapping, cast

import numpy as np

from realm_ros.core import robot
from realm_ros.core.errors import BackendUnavailable, ConfigError
from realm_ros.core.registry import Registry
from realm_ros.core.types import ActionChunk, ActionMode, EpisodeSpec, Observation

#: Policy name -> ``module:Class``, imported only when chosen (a torch policy never loads on a
#: machine that runs the scripted ladder). Constructors take keyword arguments only.
POLICIES: Registry[str] = Registry('policy', {
    'hold': 'realm_ros.core.policy:HoldPolicy',
    'scripted': 'realm_ros.policies.scripted:ScriptedPolicy',
    'replay': 'realm_ros.policies.replay:ReplayPolicy',
    'openpi': 'realm_ros.policies.openpi:OpenPIPolicy',
    'gr00t': 'realm_ros.policies.gr00t:Gr00tPolicy',
    'torch': 'realm_ros.policies.torch_policy:TorchPolicy',
    'learned': 'realm_ros.policies.learned:LearnedPolicy',
    'lerobot': 'realm_ros.policies.lerobot_policy:LeRobotPolicy',
})


@dataclasses.dataclass(frozen=True)
class PolicyNeeds:
    """What a policy needs from the world and the runner; runners wire it up from this.

    Attributes:
        cameras: realm_ros camera names whose images every observation must carry.
        image_size: (height, width) px the policy sends its model (it resizes with padding
            from whatever the world renders); None when it takes no images.
        action_space: ``joint_velocity`` or ``joint_position`` (DROID's names) the chunks are
            in; '' when the policy's chunks say it themselves (scripted, hold).
        horizon: actions of each chunk executed open loop before re-querying (the default
            ``execute_horizon``; openpi's DROID client: 8).
        privileged: the policy reads simulator-only state (scripted ladder).
    """

    cameras: tuple[str, ...] = ()
    image_size: tuple[int, int] | None = None
    action_space: str = ''
    horizon: int = 8
    privileged: bool = False


class Policy(abc.ABC):
    """Maps observations to action chunks.

    Contract:
        * :meth:`reset` is called once before each episode with that episode's spec.
        * :meth:`infer` returns a chunk of H >= 1 actions in one :class:`ActionMode`; the caller
          executes them in order, one per control step, unless a wrapper says otherwise.
        * A policy that cannot answer for reasons outside its control (server down, timeout,
          malformed response) raises ``InfrastructureError``; the episode is then recorded as an
          infrastructure failure, never as a policy failure.
    """

    #: Registry name of the policy (``scripted``, ``openpi``, ...).
    name: str = ''

    @property
    def needs(self) -> PolicyNeeds:
        """What this policy needs: cameras, image size, action space, horizon."""
        return PolicyNeeds()

    def reset(self, spec: EpisodeSpec) -> None:  # noqa: B027 - stateless policies need nothing
        """Prepare for a new episode."""

    def observe(self, obs: Observation) -> None:  # noqa: B027 - most policies keep no history
        """See the observation of a control step on which :meth:`infer` is not called.

        :class:`ActionChunker` calls it on every step it answers from a stored chunk, so a
        policy with a frame history (GR00T's ``delta_indices``) sees every control step.
        """

    @abc.abstractmethod
    def infer(self, obs: Observation) -> ActionChunk:
        """Return the next action chunk for ``obs``."""

    def close(self) -> None:  # noqa: B027 - most policies hold no resources
        """Release connections, models, ..."""

    @property
    def label(self) -> str:
        """A short human-readable identity used in records and reports."""
        return self.name


class PolicyWrapper(Policy):
    """A policy that delegates to an inner policy; subclasses change one thing."""

    def __init__(self, inner: Policy) -> None:
        self.inner = inner
        self.name = inner.name

    @property
    def needs(self) -> PolicyNeeds:
        return self.inner.needs

    def reset(self, spec: EpisodeSpec) -> None:
        self.inner.reset(spec)

    def observe(self, obs: Observation) -> None:
        self.inner.observe(obs)

    def infer(self, obs: Observation) -> ActionChunk:
        return self.inner.infer(obs)

    def close(self) -> None:
        self.inner.close()

    @property
    def label(self) -> str:
        return self.inner.label


class ActionChunker(PolicyWrapper):
    """Execute the first ``execute`` actions of each predicted chunk open loop, then re-query.

    openpi's DROID client and REALM use ``execute=8``. Each :meth:`infer` returns one action.
    """

    def __init__(self, inner: Policy, execute: int = 8) -> None:
        super().__init__(inner)
        if execute < 1:
            raise ConfigError(f'ActionChunker.execute must be >= 1, got {execute}')
        self.execute = execute
        self._chunk: ActionChunk | None = None
        self._index = 0

    def reset(self, spec: EpisodeSpec) -> None:
        super().reset(spec)
        self._chunk = None
        self._index = 0

    @property
    def queries_next(self) -> bool:
        """Whether the next :meth:`infer` asks the inner policy for a new chunk."""
        return self._chunk is None or self._index >= min(self.execute, len(self._chunk))

    def infer(self, obs: Observation) -> ActionChunk:
        if self.queries_next:
            self._chunk = self.inner.infer(obs)
            self._index = 0
        else:
            self.inner.observe(obs)
        chunk = cast(ActionChunk, self._chunk)  # queries_next is true while there is none
        row = chunk.values[self._index:self._index + 1]
        self._index += 1
        return ActionChunk(row.copy(), chunk.mode)


class GripperBinarizer(PolicyWrapper):
    """Binarise the gripper output at ``threshold`` (1 = closed), as openpi and REALM do."""

    def __init__(self, inner: Policy, threshold: float = 0.5) -> None:
        super().__init__(inner)
        self.threshold = threshold

    def infer(self, obs: Observation) -> ActionChunk:
        chunk = self.inner.infer(obs)
        values = chunk.values.copy()
        values[:, 7] = (values[:, 7] > self.threshold).astype(float)
        return ActionChunk(values, chunk.mode)


class ActionClipper(PolicyWrapper):
    """Clip actions into the valid range: joint limits (position) or [-1, 1] (velocity)."""

    def infer(self, obs: Observation) -> ActionChunk:
        chunk = self.inner.infer(obs)
        values = np.array(chunk.values, dtype=float, copy=True)
        if chunk.mode is ActionMode.POSITION:
            values[:, :7] = np.clip(values[:, :7], robot.JOINT_LOWER, robot.JOINT_UPPER)
        else:
            values[:, :7] = np.clip(values[:, :7], -1.0, 1.0)
        values[:, 7] = np.clip(values[:, 7], 0.0, 1.0)
        return ActionChunk(values, chunk.mode)


class JointRateLimiter(PolicyWrapper):
    """Keep each command within what the arm can follow in one control period.

    Position targets move at most ``scale * velocity limit * dt`` per joint and step from the
    previous target (the measured position at the start of an episode) and stay within
    ``max_error`` rad of the measured position; velocity commands are scaled down uniformly
    (direction kept) to the same per-step bound. The franka bridge's safety rules refuse
    commands beyond ``0.9 * velocity limit * dt`` and 0.3 rad: a policy behind this wrapper
    (default ``scale=0.8``, ``max_error=0.25``) is never refused, and the twin, which has no
    such rules, sees the same commands as the real arm.
    """

    def __init__(self, inner: Policy, scale: float = 0.8, max_error: float = 0.25,
                 control_dt: float = 1.0 / robot.CONTROL_HZ) -> None:
        super().__init__(inner)
        if not 0.0 < scale <= 2.0 or max_error <= 0.0:
            raise ConfigError('JointRateLimiter: scale must be in (0, 2] and max_error > 0')
        self.max_step = scale * robot.VELOCITY_LIMIT * control_dt
        self.max_error = max_error
        self._last: np.ndarray | None = None

    def reset(self, spec: EpisodeSpec) -> None:
        super().reset(spec)
        self._last = None

    def infer(self, obs: Observation) -> ActionChunk:
        chunk = self.inner.infer(obs)
        values = np.array(chunk.values, dtype=float, copy=True)
        measured = np.asarray(obs.joints.position, dtype=float)
        if chunk.mode is ActionMode.VELOCITY:
            for row in values:
                # DROID: target = q + 0.2 v (after its own rescaling of max|v| to 1).
                v = row[:7] / max(1.0, float(np.max(np.abs(row[:7]))))
                ratio = float(np.max(np.abs(robot.MAX_JOINT_DELTA * v) / self.max_step))
                row[:7] = v / max(1.0, ratio)
            return ActionChunk(values, chunk.mode)
        previous = measured if self._last is None else self._last
        for row in values:
            target = np.clip(row[:7], previous - self.max_step, previous + self.max_step)
            row[:7] = np.clip(target, measured - self.max_error, measured + self.max_error)
            previous = row[:7]
        self._last = values[0, :7].copy()  # the row executed now
        return ActionChunk(values, chunk.mode)


def standard_chain(inner: Policy, execute: int = 8) -> Policy:
    """Return the wrapper chain every runner uses (policy_node, episode, ladder, benchmarks).

    ``JointRateLimiter(ActionClipper(GripperBinarizer(ActionChunker(inner, execute))))``:
    execute ``execute`` actions of each chunk open loop, binarise the gripper at 0.5, clip to
    the limits, and keep each step within what the arm can follow.
    """
    return JointRateLimiter(ActionClipper(GripperBinarizer(ActionChunker(inner, execute))))


class HoldPolicy(Policy):
    """Hold the arm where it is and keep the gripper open: the do-nothing baseline."""

    name = 'hold'

    def infer(self, obs: Observation) -> ActionChunk:
        values = np.r_[obs.joints.position, 0.0][None, :]
        return ActionChunk(values, ActionMode.POSITION)


class Prompt:
    """The instruction a language-conditioned client sends (openpi, GR00T): the observation's,
    else the episode's (remembered at :meth:`reset`), else the configured ``default``."""

    def __init__(self, default: str = '') -> None:
        self.default = default
        self.episode = ''

    def reset(self, spec: EpisodeSpec) -> None:
        """Remember the episode's instruction."""
        self.episode = spec.instruction

    def for_observation(self, obs: Observation) -> str:
        """Return the instruction to send with ``obs``."""
        return obs.instruction or self.episode or self.default


#: Settings a runner offers every policy (policy_node's ``skill``, ``seed``, ``host``, ``port``,
#: ``execute_horizon``; the CLIs' flags). Each policy receives those its constructor declares and
#: no other: ``hold`` gets none of them, ``openpi`` ``host`` and ``port``, ``scripted`` ``skill``,
#: ``seed`` and ``execute``.
COMMON_SETTINGS = ('skill', 'seed', 'host', 'port', 'execute')


def policy_class(name: str) -> type[Policy]:
    """Import and return the class registered as ``name`` in :data:`POLICIES`.

    Raises:
        ConfigError: unknown name (the message lists the valid ones).
        BackendUnavailable: the policy's dependencies are missing here.
    """
    target = POLICIES.lookup(name)
    module_name, class_name = target.split(':')
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise BackendUnavailable(f'policy {name!r} cannot be loaded here: {err}') from err
    cls: type[Policy] = getattr(module, class_name)
    return cls


def policy_settings(cls: type[Policy]) -> tuple[str, ...]:
    """Return the keyword arguments ``cls``'s constructor declares, in order (``**`` not counted:
    a catch-all accepts nothing in particular)."""
    parameters = inspect.signature(cls.__init__).parameters.values()
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return tuple(p.name for p in parameters if p.kind in kinds and p.name != 'self')


def make_policy(name: str, /, common: Mapping[str, Any] | None = None,
                **kwargs: Any) -> Policy:
    """Build the policy registered as ``name``.

    Args:
        name: a key of :data:`POLICIES`.
        common: settings offered to every policy (:data:`COMMON_SETTINGS`); the policy receives
            those its constructor declares, the rest are dropped.
        **kwargs: the policy's own settings (``policy_args``, ``--policy-args``); they override
            ``common``, and each must be one the constructor declares.

    Raises:
        ConfigError: unknown name, or a key in ``kwargs`` the policy does not declare (the
            message names it and lists the accepted ones).
        BackendUnavailable: the policy's dependencies are missing here.
    """
    cls = policy_class(name)
    accepted = policy_settings(cls)
    unknown = [key for key in kwargs if key not in accepted]
    if unknown:
        listed = ', '.join(accepted) if accepted else 'none'
        raise ConfigError(f'policy {name!r} has no setting {", ".join(map(repr, unknown))}; '
                          f'it accepts: {listed}')
    given = {key: value for key, value in (common or {}).items() if key in accepted}
    given.update(kwargs)
    return cls(**given)


def policy_needs(name: str, **kwargs: Any) -> PolicyNeeds:
    """Return the needs of the policy registered as ``name`` built with ``kwargs``.

    Builds the policy (constructors connect to nothing) and closes it again.
    """
    policy = make_policy(name, **kwargs)
    try:
        return policy.needs
    finally:
        policy.close()


def policy_spec(text: str) -> str:
    """Return a policy entry with a skill given by name spelled as every runner reads it.

    Entries are ``policy[:skill]`` or ``label=policy[:key=value,...]``
    (:class:`realm_ros.core.evaluation.PolicyEntry`). A skill is a rung number or a name, here
    as in ``realm-ros episode --skill good``: ``scripted:good`` becomes
    ``scripted-good=scripted:skill=good`` and ``good=scripted:good`` ``good=scripted:skill=good``;
    numbers and ``key=value`` entries are returned unchanged. The name is checked by building
    the policy (constructors connect to nothing).

    Raises:
        ConfigError: the policy does not take that skill (the message names it).
    """
    head, colon, skill = text.partition(':')
    label, _, name = head.rpartition('=')
    if not colon or not skill or '=' in skill or skill.lstrip('-').replace('.', '', 1).isdigit():
        return text
    try:
        policy_needs(name, skill=skill)
    except ConfigError as err:
        raise ConfigError(f'{text!r}: {err}') from None
    return f'{label or f"{name}-{skill}"}={name}:skill={skill}'


__all__ = ['COMMON_SETTINGS', 'POLICIES', 'ActionChunker', 'ActionClipper', 'GripperBinarizer',
           'HoldPolicy', 'JointRateLimiter', 'Policy', 'PolicyNeeds', 'PolicyWrapper', 'Prompt',
           'make_policy', 'policy_class', 'policy_needs', 'policy_settings', 'policy_spec',
           'standard_chain']
