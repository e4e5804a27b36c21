"""The ``Policy`` interface, composable wrappers, and the factory that picks a policy by name.

A policy maps an :class:`Observation` to an :class:`ActionChunk` of H >= 1 actions. Wrappers are
policies that wrap policies (STYLE habit 3): ``ActionClipper(GripperBinarizer(ActionChunker(
WebsocketPolicy(...), execute=8)))`` rather than flags on one class.
"""

from __future__ import annotations

import abc
import importlib
from typing import Any

import numpy as np

from realm_ros.core import robot
from realm_ros.core.errors import BackendUnavailable, ConfigError
from realm_ros.core.types import ActionChunk, ActionMode, EpisodeSpec, Observation

#: Policy name -> ``module:Class``, imported only when chosen (a torch policy never loads on a
#: machine that runs the scripted ladder). Constructors take keyword arguments only.
POLICIES: dict[str, str] = {
    'hold': 'realm_ros.core.policy:HoldPolicy',
    'scripted': 'realm_ros.policies.scripted:ScriptedPolicy',
    'replay': 'realm_ros.policies.replay:ReplayPolicy',
    'openpi': 'realm_ros.policies.openpi:OpenPIPolicy',
    'gr00t': 'realm_ros.policies.gr00t:Gr00tPolicy',
    'torch': 'realm_ros.policies.torch_policy:TorchPolicy',
}


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

    def reset(self, spec: EpisodeSpec) -> None:  # noqa: B027 - stateless policies need nothing
        """Prepare for a new episode."""

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

    def reset(self, spec: EpisodeSpec) -> None:
        self.inner.reset(spec)

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

    def infer(self, obs: Observation) -> ActionChunk:
        if self._chunk is None or self._index >= min(self.execute, len(self._chunk)):
            self._chunk = self.inner.infer(obs)
            self._index = 0
        row = self._chunk.values[self._index:self._index + 1]
        self._index += 1
        return ActionChunk(row.copy(), self._chunk.mode)


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


class HoldPolicy(Policy):
    """Hold the arm where it is and keep the gripper open: the do-nothing baseline."""

    name = 'hold'

    def __init__(self, **kwargs: Any) -> None:
        del kwargs

    def infer(self, obs: Observation) -> ActionChunk:
        values = np.r_[obs.joints.position, 0.0][None, :]
        return ActionChunk(values, ActionMode.POSITION)


def make_policy(name: str, **kwargs: Any) -> Policy:
    """Build the policy registered as ``name`` with keyword arguments ``kwargs``.

    Raises:
        ConfigError: unknown name (the message lists the valid ones).
        BackendUnavailable: the policy's dependencies are missing here.
    """
    target = POLICIES.get(name)
    if target is None:
        raise ConfigError(f'unknown policy {name!r}; choose one of {sorted(POLICIES)}')
    module_name, class_name = target.split(':')
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise BackendUnavailable(f'policy {name!r} cannot be loaded here: {err}') from err
    return getattr(module, class_name)(**kwargs)


__all__ = ['POLICIES', 'ActionChunker', 'ActionClipper', 'GripperBinarizer', 'HoldPolicy',
           'Policy', 'PolicyWrapper', 'make_policy']
