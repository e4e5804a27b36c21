"""The ``World`` interface every backend implements, and the factory that builds one by name
(from its record in :mod:`realm_ros.core.backends`).

A world is the arm plus its scene: the MuJoCo twin, the digital real's physics, Isaac Sim, or the
real arm through franka_ros2. The episode loop, the nodes and the evaluator only see this
interface, so a policy cannot tell the worlds apart.
"""

from __future__ import annotations

import abc
import importlib
import os
from typing import Any, Callable, Mapping

from realm_ros.core import backends
from realm_ros.core.config import DynamicsParams, WorldConfig, configured_latency
from realm_ros.core.errors import BackendUnavailable, ConfigError
from realm_ros.core.types import Action, EpisodeSpec, Observation

#: Environment variable listing not-run backends (``Backend.not_run``) to build anyway
#: (comma-separated).
TRY_NOT_RUN = 'REALM_ROS_TRY_NOT_RUN'


class World(abc.ABC):
    """One robot world driven at the control rate.

    Contract:
        * Units are rad, rad/s, N m, m, s; poses are in ``base_link``; joints are in
          ``robot.JOINT_NAMES`` order.
        * :meth:`reset` must be called once before each episode; it puts the arm in the spec's
          reset pose and the scene in ``spec.initial_state`` and returns the first observation.
        * :meth:`apply` validates an action and sets the target held until the next call; a
          rejected action raises ``CommandRejected`` and leaves the previous target in force
          (the arm holds). It returns the action as it will be executed (after clipping).
        * :meth:`step` advances one control period (1 / control_hz) and returns the new
          observation. Simulated worlds advance their clock; real ones wait for wall time.
    """

    #: Backend name, as in :data:`BACKENDS`.
    name: str = ''

    @property
    @abc.abstractmethod
    def control_dt(self) -> float:
        """Control period, s."""

    @property
    @abc.abstractmethod
    def time(self) -> float:
        """World clock, s (sim time for simulated worlds)."""

    @abc.abstractmethod
    def reset(self, spec: EpisodeSpec) -> Observation:
        """Reset the arm and scene to ``spec`` and return the first observation."""

    @abc.abstractmethod
    def apply(self, action: Action) -> Action:
        """Validate ``action`` and make it the current target; return it as executed."""

    @abc.abstractmethod
    def step(self) -> Observation:
        """Advance one control period holding the current target; return the observation."""

    @abc.abstractmethod
    def observe(self, render: bool = True) -> Observation:
        """Return the current observation without advancing (images only if ``render``)."""

    def set_dynamics(self, params: DynamicsParams) -> None:
        """Set per-joint friction, armature and damping (simulated worlds only)."""
        raise ConfigError(f'world {self.name!r} has no settable dynamics')

    def camera_fovy(self, name: str) -> float:
        """Return camera ``name``'s vertical field of view in degrees (for ``camera_info``)."""
        raise ConfigError(f'world {self.name!r} has no camera {name!r}')

    def privileged_state(self) -> Mapping[str, Any]:
        """Return simulator-only scene state (object poses, ...); empty on a real arm."""
        return {}

    def close(self) -> None:  # noqa: B027 - optional hook, most worlds hold nothing
        """Release resources (renderers, connections); the world is unusable afterwards."""


def twin_arguments(config: WorldConfig, dynamics: DynamicsParams | None,
                   latency_s: float | None,
                   joint_noise_std: float) -> tuple[DynamicsParams | None, float]:
    """Resolve a simulated twin's (MuJoCo, PhysX) constructor arguments against ``config``.

    Returns ``(dynamics, latency_s)``: ``dynamics`` as given, else ``config.sim_params_file``'s
    (None without one); ``latency_s`` as given, else :func:`configured_latency`, as a float.

    Raises:
        ConfigError: a negative ``latency_s`` or ``joint_noise_std``.
    """
    if latency_s is None:
        latency_s = configured_latency(config.sim_params_file)
    if latency_s < 0 or joint_noise_std < 0:
        raise ConfigError('latency_s and joint_noise_std must be >= 0')
    if dynamics is None and config.sim_params_file:
        dynamics = DynamicsParams.from_yaml(config.sim_params_file)
    return dynamics, float(latency_s)


def make_world(config: WorldConfig, host: Any = None, **kwargs: Any) -> World:
    """Build the world named by ``config.backend``, importing its module only now.

    ``host`` is the ROS node hosting the world (``world_node``); it is passed on only to
    backends that set ``uses_host_node = True`` (bridges with their own ROS traffic).

    Raises:
        ConfigError: unknown backend name.
        BackendUnavailable: the backend's dependencies are not installed here.
    """
    backend = backends.get(config.backend)
    if backend.not_run and config.backend not in os.environ.get(TRY_NOT_RUN, '').split(','):
        raise BackendUnavailable(f'world backend {config.backend!r}: {backend.not_run}')
    try:
        cls = _import_target(backend.target)
    except ImportError as err:
        raise BackendUnavailable(
            f'world backend {config.backend!r} cannot be loaded here: {err}') from err
    if host is not None and getattr(cls, 'uses_host_node', False):
        kwargs['host'] = host
    return cls(config, **kwargs)


def _scene_function(kind: str, backend: str) -> Callable[..., dict] | None:
    """Import ``backend``'s ``kind`` target (``module:function``, a :class:`Backend` field);
    None if the backend is not installed."""
    target = getattr(backends.BACKENDS.get(backend), kind, '')
    if not target:
        having = sorted(n for n, b in backends.BACKENDS.items() if getattr(b, kind))
        raise ConfigError(
            f'no scene function for backend {backend!r}; choose one of {having}')
    try:
        return _import_target(target)
    except ImportError:
        return None


def _import_target(target: str) -> Any:
    """Import ``target`` (``module:attribute``) and return the attribute; ImportError if the
    module cannot be loaded here (its optional dependencies are missing)."""
    module_name, attribute = target.split(':')
    return getattr(importlib.import_module(module_name), attribute)


def initial_state_sampler(backend: str = 'mujoco') -> Callable[[str, int], dict] | None:
    """Return ``backend``'s ``sample(task, seed) -> initial_state``, or None if not installed.

    The paired evaluation draws each episode's initial state once, from the twin's scenes, and
    gives the same explicit state to the real and the simulated world.
    """
    return _scene_function('scene_sampler', backend)


def perturbed_state_function(backend: str = 'mujoco') -> Callable[..., dict] | None:
    """Return ``backend``'s ``perturbed(spec, params) -> initial_state``, or None (see
    ``Backend.perturbed_state``)."""
    return _scene_function('perturbed_state', backend)
