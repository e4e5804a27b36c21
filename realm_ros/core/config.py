"""Configuration schema: frozen dataclasses with validation, loaded from YAML or ROS parameters.

Each field's ``metadata['help']`` is its description; ``ros/params.py`` declares every field as
a ROS parameter with that text, so a field is written once. A bad value raises
:class:`ConfigError` that names the field and what is allowed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import pathlib
import re
import sys
import typing
from typing import Any, Iterator, Mapping, Sequence, TypeVar, overload

import numpy as np
import yaml

from realm_ros.core import backends, robot
from realm_ros.core.errors import ConfigError

T = TypeVar('T')

CAMERA_NAMES = ('exterior_1', 'exterior_2', 'wrist')


def parse_cameras(cameras: str | Sequence[str], where: str) -> tuple[str, ...]:
    """Return DROID cameras from a comma list (``'exterior_1,wrist'``; '' = none) or a
    sequence of names, in their order.

    Raises:
        ConfigError: one line naming ``where``: an unknown or repeated camera.
    """
    names = (str(cameras).split(',') if isinstance(cameras, str)
             else [str(c) for c in cameras])
    found = tuple(c.strip() for c in names if c.strip())
    for camera in found:
        if camera not in CAMERA_NAMES:
            raise ConfigError(f'{where}: unknown camera {camera!r}; choose from '
                              f'{", ".join(CAMERA_NAMES)} (a comma list names several)')
    if len(set(found)) != len(found):
        raise ConfigError(f'{where}: a camera is named twice in {cameras!r}')
    return found


def field(default: Any, help: str, **kwargs: Any) -> Any:  # noqa: A002 - mirrors argparse
    """Return a dataclass field carrying its description (and ``choices`` if given)."""
    metadata: dict[str, Any] = {'help': help}
    if 'choices' in kwargs:
        choices = kwargs.pop('choices')
        # A live view of a registry (core.backends.names) stays live: a backend registered
        # later is a choice all the same.
        metadata['choices'] = choices if isinstance(choices, backends.Names) else tuple(choices)
    if isinstance(default, (list, tuple)):
        value = tuple(default)
        return dataclasses.field(default_factory=lambda: value, metadata=metadata, **kwargs)
    return dataclasses.field(default=default, metadata=metadata, **kwargs)


def _check_choice(obj: Any, name: str) -> None:
    choices = next(f for f in dataclasses.fields(obj) if f.name == name).metadata.get('choices')
    if choices and getattr(obj, name) not in choices:
        raise ConfigError(
            f'{type(obj).__name__}.{name} = {getattr(obj, name)!r} is not allowed; '
            f'choose one of {list(choices)}')


def _check_vector(obj: Any, name: str, size: int, low: float = -math.inf,
                  high: float = math.inf) -> None:
    values = getattr(obj, name)
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ConfigError(f'{type(obj).__name__}.{name} must be {size} numbers') from None
    if arr.shape != (size,):
        raise ConfigError(
            f'{type(obj).__name__}.{name} must have {size} values, got {arr.size}')
    if not np.all(np.isfinite(arr)) or np.any(arr < low) or np.any(arr > high):
        raise ConfigError(
            f'{type(obj).__name__}.{name} values must be finite and in [{low}, {high}], '
            f'got {arr.tolist()}')


def _check_optional(obj: Any, name: str, sizes: tuple[int, ...],
                    limits: Sequence[tuple[float, float]], unit: str) -> None:
    """Check an optional vector field: empty (off) or ``sizes`` numbers, each in its
    ``limits`` entry (inclusive); store it as a tuple of floats. The error names the unit."""
    values = getattr(obj, name)
    where = f'{type(obj).__name__}.{name}'
    try:
        arr = np.asarray(values if values is not None else (), dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise ConfigError(f'{where} must be [] or {sizes[0]} numbers ({unit})') from None
    if arr.size == 0:
        object.__setattr__(obj, name, ())
        return
    if arr.size not in sizes:
        raise ConfigError(f'{where} must be [] or {sizes[0]} values ({unit}), got {arr.size}')
    bad = [k for k, v in enumerate(arr) if not (math.isfinite(v)
                                               and limits[k][0] <= v <= limits[k][1])]
    if bad:
        k = bad[0]
        raise ConfigError(f'{where}[{k}] must be in [{limits[k][0]}, {limits[k][1]}] ({unit}), '
                          f'got {arr[k]!r}')
    object.__setattr__(obj, name, tuple(float(v) for v in arr))


def _check_ranges(obj: Any, limits: Mapping[str, tuple[float, float]], *,
                  low_open: bool = False, unit: str = '') -> None:
    """Check that each named field is a finite number in its range; store it as a float.

    ``limits`` maps a field to ``(low, high)``, both included (``low`` excluded when
    ``low_open``). The error names the class, the field, the range and the value given.
    """
    for name, (low, high) in limits.items():
        value = getattr(obj, name)
        ok = isinstance(value, (int, float)) and math.isfinite(value) and value <= high \
            and (low < value if low_open else low <= value)
        if not ok:
            allowed = (f'a finite number >= {low}' if high == math.inf else
                       f'a number in {"(" if low_open else "["}{low}, {high}]{unit}')
            raise ConfigError(f'{type(obj).__name__}.{name} must be {allowed}, got {value!r}')
        object.__setattr__(obj, name, float(value))


def check_minimums(obj: Any, minimums: Mapping[str, int]) -> None:
    """Check that each named count is at least its minimum; the error names class and field."""
    for name, low in minimums.items():
        value = getattr(obj, name)
        if not isinstance(value, (int, float)) or value < low:
            raise ConfigError(f'{type(obj).__name__}.{name} must be >= {low}, got {value!r}')


def check_step_size(obj: Any, name: str = 'sigma0') -> None:
    """Check an optimiser's initial step size in unit-cube units: in (0, 1]."""
    value = getattr(obj, name)
    if not isinstance(value, (int, float)) or not 0.0 < value <= 1.0:
        raise ConfigError(f'{type(obj).__name__}.{name} must be in (0, 1], got {value!r}')


#: Names users typed before issue 14 gave each concept one name -> the name now. They are still
#: accepted (backend and ``real`` values, executable, launch arguments, file names) with one
#: deprecation line naming the new spelling (:func:`renamed`).
RENAMED = {'fake': 'digital_real', 'fake_franka': 'digital_real',
           'fake_franka.yaml': 'digital_real.yaml',
           'fake_franka_params_file': 'digital_real_params_file',
           'FakeFrankaConfig': 'DigitalRealConfig'}
_WARNED: set[tuple[str, str]] = set()


def renamed(value: Any, where: str) -> Any:
    """Return the current spelling of ``value`` (``fake`` -> ``digital_real``), else ``value``.

    The first use of an old spelling in ``where`` (``--backend``, ``WorldConfig.backend`` ...)
    prints one line on stderr naming the new one; any other value is returned unchanged.
    """
    new = RENAMED.get(value) if isinstance(value, str) else None
    if new is None:
        return value
    if (where, value) not in _WARNED:
        _WARNED.add((where, value))
        print(f'realm_ros: {where} {value!r} is deprecated; use {new!r}', file=sys.stderr)
    return new


def renamed_file(path: str, where: str) -> str:
    """Return ``path``, or the renamed file beside it when only that exists.

    ``.../config/fake_franka.yaml`` (gone) -> ``.../config/digital_real.yaml``, with one
    deprecation line; any other path, existing or not, is returned unchanged.
    """
    old = pathlib.Path(path)
    new = RENAMED.get(old.name)
    if not path or new is None or old.exists() or not (old.parent / new).exists():
        return path
    renamed(old.name, where)
    return str(old.parent / new)


@overload
def given_path(path: str, flag: str, folder: bool = False) -> str: ...
@overload
def given_path(path: None, flag: str, folder: bool = False) -> None: ...
def given_path(path: str | None, flag: str, folder: bool = False) -> str | None:
    """Return the file (a ``folder`` with ``folder``) that option ``flag`` names, resolved;
    not given ('' or None) stays as it is.

    Raises:
        ConfigError: it does not exist, one line naming ``flag`` (``--rig: file not found: X``).
    """
    if not path:
        return path
    resolved = pathlib.Path(path).expanduser().resolve()
    if not (resolved.is_dir() if folder else resolved.is_file()):
        raise ConfigError(f'{flag}: {"folder" if folder else "file"} not found: {path}')
    return str(resolved)


@dataclasses.dataclass(frozen=True)
class DynamicsParams:
    """Per-joint dynamics the twin exposes for system identification (MuJoCo units).

    ``friction``: dry (Coulomb) joint friction, N m (MuJoCo ``frictionloss``).
    ``armature``: reflected rotor inertia added to each joint, kg m^2.
    ``damping``: viscous joint damping, N m s/rad.
    """

    friction: tuple[float, ...] = field((0.0,) * 7, 'per-joint dry friction, N m (7 values)')
    armature: tuple[float, ...] = field((0.1,) * 7, 'per-joint armature, kg m^2 (7 values)')
    damping: tuple[float, ...] = field((0.0,) * 7, 'per-joint viscous damping, N m s/rad')

    def __post_init__(self) -> None:
        for name in ('friction', 'armature', 'damping'):
            _check_vector(self, name, robot.NUM_ARM_JOINTS, 0.0, 100.0)
            object.__setattr__(self, name, tuple(float(v) for v in getattr(self, name)))

    @classmethod
    def from_yaml(cls, path: str | pathlib.Path) -> 'DynamicsParams':
        """Load ``friction``/``armature`` (and optional ``damping``) from a YAML file.

        Other keys (a digital-real dynamics file's ``latency_s`` ...) are ignored here.
        """
        data = load_yaml(path)
        keys = {f.name for f in dataclasses.fields(cls)}
        if not keys & set(data):
            raise ConfigError(f'{path}: expected keys "friction" and "armature" (7 floats each)')
        return cls(**{k: v for k, v in data.items() if k in keys})

    def to_dict(self) -> dict[str, Any]:
        """Return a YAML-ready dict (vectors as lists; a subclass's scalars as they are)."""
        return {k: list(v) if isinstance(v, tuple) else v
                for k, v in dataclasses.asdict(self).items()}


def sim_params_latency(path: str | pathlib.Path) -> float:
    """Return the optional ``latency_s`` (actuation delay, s) of a twin parameters file.

    ``realm-ros sysid fit`` writes it next to ``friction`` and ``armature``; the twin replays it
    (``MujocoWorld``). A file without the key means no delay (0.0).

    Raises:
        ConfigError: the value is not a number in [0, 0.5] s.
    """
    value = load_yaml(path).get('latency_s', 0.0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not 0.0 <= value <= 0.5:
        raise ConfigError(f'{path}: latency_s must be a number in [0, 0.5] s, got {value!r}')
    return float(value)


def configured_latency(sim_params_file: str) -> float:
    """Return the actuation delay a twin built from config replays, s: ``latency_s`` of its
    ``sim_params_file`` (the identified delay travels with friction and armature), or 0.0
    without one. Every twin (world_node, realm-ros episode, the evaluator's sim world) uses it."""
    return sim_params_latency(sim_params_file) if sim_params_file else 0.0


@dataclasses.dataclass(frozen=True)
class DigitalRealDynamics(DynamicsParams):
    """Hidden dynamics of the digital real, read from its dynamics YAML file.

    ``friction``/``armature``/``damping`` are the twin's own (:class:`DynamicsParams`, same
    units); the rest is what the twin does not model at all.
    """

    latency_s: float = field(0.0, 'actuation latency, s')
    joint_noise_std: float = field(0.0, 'joint position sensor noise (1 sigma), rad')
    object_mass_scale: float = field(1.0, 'multiplier on every object mass')
    object_friction_scale: float = field(1.0, 'multiplier on every object sliding friction')
    # Structural effects (issue 38): the twin has no parameter that reproduces them. Each is off
    # when absent (empty vector or 0), so older files behave as before. docs/digital-real.md.
    friction_sigmoid_phi1: tuple[float, ...] = field(
        (), 'Gaz et al. sigmoid joint friction, amplitude phi1 per joint, N m (7 values; [] = '
            'off); tau_f = phi1/(1+exp(-phi2 (qd+phi3))) - phi1/(1+exp(-phi2 phi3))')
    friction_sigmoid_phi2: tuple[float, ...] = field(
        (), 'Gaz et al. sigmoid joint friction, slope phi2 per joint, s/rad (7 values)')
    friction_sigmoid_phi3: tuple[float, ...] = field(
        (), 'Gaz et al. sigmoid joint friction, velocity offset phi3 per joint, rad/s (7 values)')
    joint_stiffness: tuple[float, ...] = field(
        (), 'motor-link torsional stiffness per joint, N m/rad (7 values; [] = rigid): the '
            'inner loop servoes the motor, the link lags it by the transmitted torque / stiffness')
    torque_filter_hz: float = field(
        0.0, 'inner loop: first-order low-pass cutoff on the commanded joint torque, Hz (0 = '
             "none; libfranka's default 100)")
    torque_rate_limit: float = field(
        0.0, 'inner loop: commanded joint torque rate limit, N m/s (0 = none; libfranka 1000)')
    encoder_resolution: float = field(
        0.0, 'joint position encoder quantum, rad (0 = continuous)')
    latency_jitter_s: float = field(
        0.0, 'extra actuation delay per command, uniform in [0, latency_jitter_s], s')
    contact_solref: tuple[float, ...] = field(
        (), "object geoms: MuJoCo solref (time constant s, damping ratio; [] = the twin's)")
    contact_solimp: tuple[float, ...] = field(
        (), "object geoms: MuJoCo solimp (dmin, dmax, width m, midpoint, power; [] = the twin's)")

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_ranges(self, {'latency_s': (0.0, 0.5), 'joint_noise_std': (0.0, 0.1),
                             'object_mass_scale': (0.05, 20.0),
                             'object_friction_scale': (0.05, 20.0)})
        _check_ranges(self, {'torque_filter_hz': (0.0, 1000.0)}, unit=' Hz')
        _check_ranges(self, {'torque_rate_limit': (0.0, 1e5)}, unit=' N m/s')
        _check_ranges(self, {'encoder_resolution': (0.0, 0.01)}, unit=' rad')
        _check_ranges(self, {'latency_jitter_s': (0.0, 0.1)}, unit=' s')
        n = robot.NUM_ARM_JOINTS
        for name, low, high, unit in (('friction_sigmoid_phi1', 0.0, 20.0, 'N m'),
                                      ('friction_sigmoid_phi2', 0.1, 100.0, 's/rad'),
                                      ('friction_sigmoid_phi3', -1.0, 1.0, 'rad/s'),
                                      ('joint_stiffness', 100.0, 1e6, 'N m/rad')):
            _check_optional(self, name, (n,), [(low, high)] * n, unit)
        phis = [bool(getattr(self, f'friction_sigmoid_phi{k}')) for k in (1, 2, 3)]
        if any(phis) and not all(phis):
            raise ConfigError(f'{type(self).__name__}.friction_sigmoid_phi1/2/3 must be given '
                              'together (7 values each, N m, s/rad, rad/s)')
        _check_optional(self, 'contact_solref', (2,), [(0.001, 0.5), (0.1, 10.0)], 's, -')
        _check_optional(self, 'contact_solimp', (5,), [(0.0, 0.9999), (0.0, 0.9999),
                                                       (0.0, 0.1), (0.0, 1.0), (1.0, 10.0)],
                        '-, -, m, -, -')

    #: The structural fields: effects no twin parameter reproduces (docs/digital-real.md).
    STRUCTURAL = ('friction_sigmoid_phi1', 'joint_stiffness', 'torque_filter_hz',
                  'torque_rate_limit', 'encoder_resolution', 'latency_jitter_s',
                  'contact_solref', 'contact_solimp')

    def structural_effects(self) -> list[str]:
        """Return the structural effects that are on (``friction_sigmoid`` for phi1..3)."""
        return [n.replace('_phi1', '') for n in self.STRUCTURAL if getattr(self, n)]

    @property
    def structural(self) -> bool:
        """Whether any structural effect (one the twin cannot express) is on."""
        return bool(self.structural_effects())

    def joint_params(self) -> DynamicsParams:
        """Return the per-joint part, the parameters system identification can recover."""
        return DynamicsParams(friction=self.friction, armature=self.armature,
                              damping=self.damping)

    @classmethod
    def from_yaml(cls, path: str | pathlib.Path) -> 'DigitalRealDynamics':
        """Load a dynamics file; unknown keys raise :class:`ConfigError` naming them."""
        return from_mapping(cls, load_yaml(path), where=str(path))


@dataclasses.dataclass(frozen=True)
class SimulationConfig:
    """Fields of every physics simulated here, declared once: ``world_node``'s
    (:class:`WorldConfig`) and the digital real's (:class:`DigitalRealConfig`)."""

    lockstep: bool = field(
        False, 'true: advance one control step per command (the digital real: per received '
               'joint_trajectory message) and publish /clock; false: run in real time')
    control_hz: float = field(
        robot.CONTROL_HZ, 'control (policy) rate, Hz; in lockstep a control step lasts '
                          '1 / control_hz of sim time')
    physics_hz: float = field(robot.PHYSICS_HZ, 'physics rate of simulated worlds, Hz; a '
                                                'multiple of control_hz')
    task: str = field('', 'task loaded at start-up ("" = empty table; the episode spec can '
                          'change it)')
    seed: int = field(0, 'seed of the initial episode')
    cameras: tuple[str, ...] = field(CAMERA_NAMES, 'cameras to render (subset of '
                                                   'exterior_1, exterior_2, wrist)')
    camera_width: int = field(320, 'rendered image width, px')
    camera_height: int = field(180, 'rendered image height, px')
    camera_rate_hz: float = field(
        15.0, 'image publishing rate, Hz (0 = no images; the digital real: real time only, '
              'in lockstep every step)')
    dynamics_file: str = field(
        '', 'digital real only: YAML with its hidden dynamics ("" = '
            'realm_ros/data/digital_real_dynamics.yaml)')
    appearance_file: str = field(
        '', 'digital real only: YAML with its hidden appearance (true camera poses, materials, '
            'light, clutter, camera sensor; format in config/appearance/lab_demo.yaml; "" = '
            "the twin's look)")

    def __post_init__(self) -> None:
        name = type(self).__name__
        _check_ranges(self, {'control_hz': (0.0, 1000.0)}, low_open=True)
        ratio = self.physics_hz / self.control_hz
        if not math.isfinite(ratio) or self.physics_hz <= 0 or abs(ratio - round(ratio)) > 1e-6 \
                or round(ratio) < 1:
            raise ConfigError(
                f'{name}.physics_hz must be a positive multiple of control_hz '
                f'({self.control_hz}), got {self.physics_hz}')
        object.__setattr__(self, 'cameras', parse_cameras(self.cameras, f'{name}.cameras'))
        for size in ('camera_width', 'camera_height'):
            if not 16 <= getattr(self, size) <= 4096:
                raise ConfigError(f'{name}.{size} must be in [16, 4096] px')
        _check_ranges(self, {'camera_rate_hz': (0.0, math.inf)})

    @property
    def substeps(self) -> int:
        """Physics steps per control step."""
        return int(round(self.physics_hz / self.control_hz))


@dataclasses.dataclass(frozen=True)
class WorldConfig(SimulationConfig):
    """Parameters of a world (``world_node`` declares each field as a ROS parameter)."""

    backend: str = field('mujoco', 'world backend', choices=backends.names())
    lockstep_timeout_s: float = field(
        2.0, 'lockstep: wall seconds to wait for a command before stepping with the held target')
    camera_rig_file: str = field(
        '', 'simulated worlds: YAML of the camera rig (extrinsics, intrinsics; format in '
            'config/cameras/droid.yaml); "" = DROID\'s rig')
    sim_params_file: str = field(
        '', 'YAML with identified friction/armature (and optional latency_s, s) for the twin')
    visual_match_dir: str = field(
        '', 'the twin: folder written by `realm-ros cameras match` (calibrated rig, clean '
            'plates, colour transforms); exterior cameras draw robot and objects from '
            'simulation over the plate ("" = no visual matching)')
    joint_margin_rad: float = field(
        0.1, 'simulated worlds: position targets are kept this far inside each joint limit, rad '
             "(as the franka bridge's safety.position_margin_rad; Polymetis: 0.1)")
    shape_targets: bool = field(
        True, 'simulated worlds: shape position targets so the arm does not swing past a joint '
              'limit (target speed <= 0.9 x velocity limit, braking distance kept; '
              'core.control.shape_target)')

    def __post_init__(self) -> None:
        object.__setattr__(self, 'backend', renamed(self.backend, 'backend'))
        _check_choice(self, 'backend')
        super().__post_init__()
        _check_ranges(self, {'lockstep_timeout_s': (0.0, math.inf),
                             'joint_margin_rad': (0.0, 0.5)})


def yaml_problem(err: yaml.YAMLError) -> str:
    """``err`` in one line, where it is first (``line 2, column 1: expected ',' or ']'...``):
    PyYAML's own text spans several lines, with the source quoted."""
    problem = getattr(err, 'problem', None)
    mark = getattr(err, 'problem_mark', None)
    if problem is None:
        return ' '.join(str(err).split())
    where = f'line {mark.line + 1}, column {mark.column + 1}: ' if mark is not None else ''
    context = getattr(err, 'context', None)
    return where + ' '.join(problem.split()) + (f' ({" ".join(context.split())})'
                                                  if context else '')


def load_yaml(path: str | pathlib.Path) -> dict[str, Any]:
    """Load a YAML mapping, raising :class:`ConfigError` with the path on any problem."""
    path = pathlib.Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise ConfigError(f'cannot read {path}: {err.strerror}') from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f'{path} is not valid YAML: {yaml_problem(err)}') from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f'{path} must hold a YAML mapping, got {type(data).__name__}')
    return data


def ros_parameters(data: Mapping[str, Any]) -> dict[str, Any]:
    """Return the parameters of a ROS parameter file's one node entry (``/**:`` or a node
    name, holding ``ros__parameters``), or ``data`` itself when it is a plain mapping."""
    if len(data) == 1:
        (body,) = data.values()
        if isinstance(body, dict) and set(body) == {'ros__parameters'}:
            return dict(body['ros__parameters'] or {})
    return dict(data)


def safety_from_params_file(path: str | pathlib.Path) -> 'SafetyConfig':
    """Return the ``safety.*`` section of a world_node parameter file (e.g.
    ``config/franka_bridge.yaml``) as a :class:`SafetyConfig`; absent: the defaults."""
    section = ros_parameters(load_yaml(path)).get('safety', {})
    if not isinstance(section, dict):
        raise ConfigError(f'{path}: safety must be a mapping of SafetyConfig fields')
    return from_mapping(SafetyConfig, section, where=f'{path}: safety')


def from_mapping(cls: type[T], data: Mapping[str, Any], where: str = '') -> T:
    """Build config ``cls`` from a mapping; unknown keys raise :class:`ConfigError` naming them."""
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(
            f'{where or cls.__name__}: unknown field(s) {unknown}; valid fields: {sorted(names)}')
    hints = typing.get_type_hints(cls)
    data = {k: _coerce(v, hints.get(k), f'{where or cls.__name__}: field {k!r}')
            for k, v in data.items()}
    try:
        return cls(**data)
    except (TypeError, ValueError, ArithmeticError) as err:
        raise ConfigError(f'{where or cls.__name__}: {err}') from None


@contextlib.contextmanager
def flags_named(cls: type, flags: Mapping[str, str]) -> Iterator[None]:
    """Blame a command-line flag, not the config file, for a field the flag set.

    ``flags`` maps the fields a command overrode to their flags (``{'tasks': '--tasks'}``). A
    :class:`ConfigError` raised inside about one of them (``<file>: EvalConfig.tasks: unknown
    task ...``, ``<file>: field 'seed' must be ...``, or one that starts with the bare field, as
    a backend reading the file names it: ``camera_rig_file: X is not valid YAML``) is raised
    again as ``--tasks: unknown task ...``; any other passes unchanged.
    """
    try:
        yield
    except ConfigError as err:
        text = str(err)
        for name, flag in flags.items():
            found = re.search(rf"(?:\b{cls.__name__}\.{name}|field '{name}'|^{name}(?=:))\b:?\s*",
                              text)
            if found:  # '--x: must be ...', '--x: unknown ...'; '--x is not valid JSON'
                sep = ' ' if text[found.end():].startswith('is ') else ': '
                raise ConfigError(f'{flag}{sep}{text[found.end():]}') from None
        raise


def field_default(f: dataclasses.Field) -> Any:
    """Return a dataclass field's default value (calling its ``default_factory`` if it has one)."""
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    raise ConfigError(f'field {f.name!r} has no default')


_SCALARS = {bool: 'true or false', int: 'an integer', float: 'a number', str: 'a string'}


def _coerce(value: Any, hint: Any, where: str) -> Any:
    """Return ``value`` as type ``hint`` (int -> float, list -> tuple), or raise ConfigError.

    YAML and ROS parameters give bool, int, float, str and lists of them; anything else, or a
    value of the wrong kind, is refused here, naming the field and the expected type, so that
    no mistyped value reaches a node (``seed: abc`` would otherwise fail deep inside a run).
    """
    if hint in _SCALARS:
        ok = isinstance(value, hint) and not (hint is not bool and isinstance(value, bool))
        if hint is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if hint is float and ok and math.isnan(value):
            raise ConfigError(f'{where} must be a number, got NaN')
        if not ok:
            raise ConfigError(f'{where} must be {_SCALARS[hint]}, got {value!r}')
        return value
    if typing.get_origin(hint) is tuple:
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise ConfigError(f'{where} must be a list, got {value!r}')
        (item, *_rest) = typing.get_args(hint) or (Any,)
        if item in _SCALARS:
            return tuple(_coerce(v, item, f'{where}[{i}]') for i, v in enumerate(value))
        return tuple(value)
    return value


def describe(cls: type) -> Sequence[tuple[str, Any, str]]:
    """Return ``(name, default, help)`` for each field of config ``cls`` (README tables)."""
    out = []
    for f in dataclasses.fields(cls):
        out.append((f.name, field_default(f), f.metadata.get('help', '')))
    return out


@dataclasses.dataclass(frozen=True)
class SafetyConfig:
    """Limits on every command that can reach a real arm (``core/safety.py`` enforces them).

    Units: rad, rad/s, m, s. Frame of the workspace box: ``base_link`` (z up, x forward); the
    point checked is the tool-centre point ``tcp_offset_m`` along the flange's z axis.
    ``world_node`` declares these as parameters prefixed ``safety.``: the franka bridge applies
    them to every command; another backend with ``filter_commands`` does too (issue 37).
    """

    position_margin_rad: float = field(
        0.1, 'targets are kept this far inside each joint limit, rad (Polymetis: 0.1); a target '
             'between the margin and the limit is moved to the margin, one beyond the limit '
             'refused')
    velocity_scale: float = field(
        0.9, 'a target may change by at most velocity_scale * velocity limit * control period '
             'per control step (per joint)')
    max_target_error_rad: float = field(
        0.3, 'maximum per-joint distance between a target and the measured position, rad '
             '(bounds the impedance torque of one step)')
    workspace_min: tuple[float, ...] = field(
        (0.1, -0.4, -0.05), 'workspace box lower corner (x, y, z) of the TCP in base_link, m '
                            "(Polymetis's default box)")
    workspace_max: tuple[float, ...] = field(
        (1.0, 0.4, 1.0), 'workspace box upper corner (x, y, z) of the TCP in base_link, m')
    tcp_offset_m: float = field(
        robot.TCP_OFFSET, 'TCP distance from the flange along its z axis, m (0.165 = Robotiq '
                          '2F-85 fingertips, 0.1034 = Franka Hand)')
    workspace_lookahead: float = field(
        1.0, 'the arm overshoots a target it lags behind: a target is refused when its TCP plus '
             'this many times the TCP lag (target TCP - measured TCP) leaves the workspace box '
             'further than the target in force does (0 = check the target TCP only)')
    watchdog_s: float = field(
        0.5, 'hold the measured position if no valid command arrives for this long, s')
    state_timeout_s: float = field(
        0.25, 'refuse to command when the newest joint state is older than this, s (the arm '
              'holds its last trajectory, which ends at rest)')
    state_loss_s: float = field(
        1.0, 'a joint state older than this ends the episode (or the reset move) as an '
             'infrastructure failure, s; younger late states hold the arm and wait')
    shape_trajectory: str = field(
        'auto', 'always: send each target as a jerk-limited 1 kHz-sampled trajectory (velocity, '
                "acceleration, jerk below libfranka's limits for the arm x rate_limit_scale); "
                'never: one point per control step; auto: always for a real arm, never for the '
                "digital real (whose twin and sysid excitation do not model the shaper's lag)",
        choices=('auto', 'always', 'never'))
    rate_limit_scale: float = field(
        0.8, "fraction of libfranka's acceleration and jerk limits the shaped trajectory may "
             'use (FR3: 10 rad/s^2, 5000 rad/s^3; Panda: per joint)')
    trajectory_sample_s: float = field(
        0.01, 'spacing of the shaped trajectory points sent to the controller, s (each carries '
              'position, velocity and acceleration: the controller interpolates quintically)')
    filter_commands: bool = field(
        False, 'a simulated world (the twin) passes its commands through these rules too, '
               'refusing and holding as the franka bridge does (a paired evaluation sets it, '
               'so both worlds execute the same command stream); the bridge always does')
    arm_id: str = field(
        'fer', "with filter_commands: the arm whose joint and velocity limits apply (a paired "
               "evaluation gives the real arm's); the bridge uses franka.arm_id",
        choices=tuple(robot.ARMS))

    def __post_init__(self) -> None:
        _check_choice(self, 'shape_trajectory')
        _check_choice(self, 'arm_id')
        _check_ranges(self, {'position_margin_rad': (0.0, 0.5), 'velocity_scale': (0.01, 3.0),
                             'state_loss_s': (0.01, 600.0), 'rate_limit_scale': (0.01, 1.0),
                             'trajectory_sample_s': (0.001, 0.1),
                             'max_target_error_rad': (0.001, 1.0), 'tcp_offset_m': (0.0, 0.5),
                             'workspace_lookahead': (0.0, 5.0),
                             'watchdog_s': (0.01, 60.0), 'state_timeout_s': (0.001, 60.0)})
        for name in ('workspace_min', 'workspace_max'):
            _check_vector(self, name, 3, -3.0, 3.0)
            object.__setattr__(self, name, tuple(float(v) for v in getattr(self, name)))
        if any(lo >= hi for lo, hi in zip(self.workspace_min, self.workspace_max)):
            raise ConfigError(
                f'SafetyConfig.workspace_min {list(self.workspace_min)} must be below '
                f'workspace_max {list(self.workspace_max)} on every axis')


#: Gripper adapters of the franka bridge: the hands a lab mounts (:data:`robot.HANDS`, the
#: ``gripper`` launch argument's choices, ``graph.GRIPPERS``), plus the digital real's stand-in
#: for where neither franka_msgs nor control_msgs is installed (pip-only machines) and none.
BRIDGE_GRIPPERS = (*robot.HANDS, 'width_topic', 'none')


@dataclasses.dataclass(frozen=True)
class FrankaBridgeConfig:
    """The robot side of the ``franka`` bridge (declared by ``world_node`` as ``franka.*``)."""

    arm_id: str = field(
        'fr3', 'arm: fr3 (franka_ros2, joints fr3_jointN) or fer (Panda via agimus-franka-ros2, '
               'fer_jointN; "panda" is accepted for fer). Sets joint names and limits',
        choices=robot.ARM_IDS)
    gripper: str = field(
        'franka_hand', 'franka_hand: franka_gripper actions <gripper_namespace>/{homing,move,'
                       'grasp} (franka_msgs); robotiq_2f_85: control_msgs GripperCommand on '
                       '<gripper_namespace>/gripper_action; width_topic: std_msgs/Float64 on '
                       '<gripper_namespace>/width_command (digital real only); none',
        choices=BRIDGE_GRIPPERS)
    namespace: str = field(
        '/', 'ROS namespace of the franka_ros2 graph (or the digital real), e.g. "/" or '
             '"/fr3"')
    joint_states_topic: str = field(
        'joint_states', 'arm joint states topic, relative to namespace (franka_ros2 merges '
                        'arm and gripper on /joint_states; franka/joint_states is the '
                        'controller-rate one)')
    robot_state_topic: str = field(
        'franka_robot_state_broadcaster/robot_state',
        'franka_msgs/FrankaRobotState topic (robot_mode, current_errors), relative to namespace; '
        '"" = do not watch (digital real, or franka_msgs not installed)')
    controller_name: str = field(
        'joint_trajectory_controller', 'JointTrajectoryController name; commands go to '
                                       '<controller_name>/joint_trajectory')
    gripper_namespace: str = field(
        'franka_gripper', 'franka_hand: franka_gripper node name, relative to namespace (its '
                          'actions and joint_states live under it)')
    gripper_command_action: str = field(
        'robotiq_gripper_controller/gripper_cmd',
        'robotiq_2f_85: GripperCommand action name, relative to namespace')
    gripper_open_position: float = field(
        0.0, 'robotiq_2f_85: GripperCommand command.position that opens (driver joint units)')
    gripper_closed_position: float = field(
        0.8, 'robotiq_2f_85: GripperCommand command.position that closes (driver joint units)')
    gripper_speed: float = field(0.1, 'gripper move/grasp speed, m/s (franka_hand)')
    gripper_force: float = field(20.0, 'grasp force, N (franka_hand Grasp, robotiq '
                                       'GripperCommand max_effort)')
    gripper_min_interval_s: float = field(
        0.5, 'at most one gripper goal per this many seconds (goals go out only when the '
             'binarised command changes)')
    digital_real: bool = field(
        False, 'true only when the robot side is the digital real: re-publish its '
               "digital_real/privileged_state as this world's privileged state and reset it "
               'through its reset service. Never set on a real arm')
    digital_real_reflexes: bool = field(
        False, 'digital real only: watch its FrankaRobotState for injected reflexes and clear '
               'them with the real recovery sequence (needs franka_msgs); default: no reflexes')
    reset_speed: float = field(
        0.3, 'real arm: peak joint speed of the planned move to the reset pose, rad/s')
    confirm_motion: bool = field(
        True, "real arm: every move to the reset pose (homing) waits for the operator's "
              'confirmation on <world namespace>/franka_bridge/confirm_motion (std_srvs/SetBool)')
    confirm_timeout_s: float = field(
        60.0, 'real arm: wall seconds a reset waits for that confirmation (and how long a '
              'confirmation given beforehand stays valid) before it fails')
    step_timeout_s: float = field(
        5.0, "lockstep: wall seconds to wait for the robot side's next joint state")

    def __post_init__(self) -> None:
        _check_choice(self, 'arm_id')
        _check_choice(self, 'gripper')
        if not self.namespace.startswith('/'):
            raise ConfigError(
                f'FrankaBridgeConfig.namespace must be absolute (start with "/"), '
                f'got {self.namespace!r}')
        _check_ranges(self, {'gripper_speed': (0.001, 0.5), 'gripper_force': (0.0, 140.0),
                             'gripper_min_interval_s': (0.0, 10.0),
                             'gripper_open_position': (-10.0, 10.0),
                             'gripper_closed_position': (-10.0, 10.0),
                             'reset_speed': (0.01, 1.0), 'step_timeout_s': (0.01, 600.0),
                             'confirm_timeout_s': (0.0, 86400.0)})
        if not self.controller_name or not self.joint_states_topic:
            raise ConfigError('FrankaBridgeConfig.controller_name and joint_states_topic must '
                              'not be empty')

    @property
    def arm(self) -> robot.ArmSpec:
        """The arm's names and limits."""
        return robot.arm_spec(self.arm_id)

    @property
    def gripper_max_width(self) -> float:
        """Opening at g = 0, m: the hand's real maximum (Franka Hand 0.08, Robotiq 0.085)."""
        return robot.GRIPPER_WIDTHS.get(self.gripper, robot.GRIPPER_MAX_WIDTH)


@dataclasses.dataclass(frozen=True)
class DigitalRealConfig(SimulationConfig):
    """Parameters of ``digital_real``, the simulated arm serving a franka_ros2-shaped interface.

    Its physics fields (rates, scene, cameras, ``dynamics_file``) are :class:`SimulationConfig`'s,
    as ``world_node``'s; the rest is the franka_ros2 interface it imitates.
    """

    # Redeclared for its default only: the digital real renders no camera unless asked.
    cameras: tuple[str, ...] = field(
        (), "cameras to render and publish on cameras/<name>/image, as a lab's camera drivers "
            'would (subset of exterior_1, exterior_2, wrist; empty = none)')
    arm_id: str = field(
        'fr3', 'imitated arm: fr3 (joints fr3_jointN, FR3 limits) or fer (Panda via '
               'agimus-franka-ros2, fer_jointN; "panda" = fer)', choices=robot.ARM_IDS)
    controller_name: str = field(
        'joint_trajectory_controller', 'name of the imitated JointTrajectoryController; '
                                       'commands on <controller_name>/joint_trajectory')
    gripper: str = field(
        'robotiq_2f_85', 'imitated hand: robotiq_2f_85 (0.085 m, as the twin and DROID; '
                         'GripperCommand on gripper_command_action when control_msgs is '
                         'installed) or franka_hand (0.08 m; Move/Grasp/Homing actions under '
                         'gripper_namespace when franka_msgs is installed). '
                         '<gripper_namespace>/width_command is always served',
        choices=robot.HANDS)
    gripper_namespace: str = field('franka_gripper', 'gripper node name (topic prefix)')
    gripper_command_action: str = field(
        'robotiq_gripper_controller/gripper_cmd', 'robotiq_2f_85: GripperCommand action name')
    gripper_closed_position: float = field(
        0.8, 'robotiq_2f_85: GripperCommand position that closes (as the bridge)')
    robot_state_rate_hz: float = field(
        100.0, 'real time: franka_robot_state_broadcaster/robot_state rate, Hz (franka_msgs '
               'installed only)')
    joint_state_rate_hz: float = field(100.0, 'real time: joint_states rate, Hz')
    gripper_state_rate_hz: float = field(30.0, 'real time: gripper joint_states rate, Hz')
    privileged_rate_hz: float = field(
        15.0, 'real time: digital_real/privileged_state rate, Hz')

    def __post_init__(self) -> None:
        _check_choice(self, 'arm_id')
        _check_choice(self, 'gripper')
        super().__post_init__()
        rates = ['joint_state_rate_hz', 'gripper_state_rate_hz', 'privileged_rate_hz',
                 'robot_state_rate_hz'] + (['camera_rate_hz'] if self.cameras else [])
        _check_ranges(self, {name: (0.0, 1000.0) for name in rates}, low_open=True, unit=' Hz')
        if not self.controller_name or not self.gripper_namespace:
            raise ConfigError('DigitalRealConfig.controller_name and gripper_namespace must not '
                              'be empty')

    def world_config(self) -> WorldConfig:
        """Return the :class:`WorldConfig` of the digital real's physics."""
        shared = {f.name: getattr(self, f.name) for f in dataclasses.fields(SimulationConfig)}
        shared['camera_rate_hz'] = self.camera_rate_hz if self.cameras else 0.0
        # The digital real imitates the arm: it follows any target inside the joint limits (its
        # hard stops); margin and shaping are the bridge's (safety.*).
        return WorldConfig(backend='digital_real', joint_margin_rad=0.0, shape_targets=False,
                           **shared)


def __getattr__(name: str) -> Any:
    """Old class names, still importable with one deprecation line (``FakeFrankaConfig``)."""
    if name == 'FakeFrankaConfig':
        renamed(name, 'realm_ros.core.config')
        return DigitalRealConfig
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


@dataclasses.dataclass(frozen=True)
class PolicyNodeConfig:
    """Parameters of ``policy_node`` (each declared as a ROS parameter)."""

    policy: str = field('hold', 'registered policy name (scripted, replay, openpi, gr00t, ...)')
    skill: str = field('0', 'scripted policy ladder rung: 0..3 or expert/good/sloppy/poor '
                       '(or near_miss, not a rung)')
    seed: int = field(0, 'extra policy seed, mixed with each episode seed')
    host: str = field('localhost', 'policy server host (remote policies)')
    port: int = field(8000, 'policy server port (remote policies)')
    execute_horizon: int = field(
        0, 'actions executed open loop from each predicted chunk (ActionChunker k); 0 = the '
           "policy's own (openpi DROID 8, GR00T N1.6/N1.7 15, scripted 8)")
    policy_args: str = field('', 'JSON object of extra policy constructor keyword arguments')
    lockstep: bool = field(
        True, 'true: answer each new joint_states with exactly one command point; false: '
              'publish at control_hz from the latest observation')
    control_hz: float = field(robot.CONTROL_HZ, 'command rate when not in lockstep, Hz')
    cameras: str = field(
        '', 'comma-separated cameras to wait for in addition to those the policy declares '
            '(Policy.needs); an observation waits for their images with the same stamp '
            '(exterior_1, exterior_2, wrist; "" = only the policy\'s)')
    use_privileged: bool = field(
        False, 'wait for privileged_state with the same stamp as joint_states (scripted '
               'policies; simulated worlds and the digital real only)')
    start_active: bool = field(
        True, 'answer observations from the start; false: wait for ~/set_active (the '
              'evaluator starts the policies of both worlds at once)')

    def __post_init__(self) -> None:
        if not self.policy:
            raise ConfigError('PolicyNodeConfig.policy must name a registered policy')
        if not 0 <= self.execute_horizon <= 1000:
            raise ConfigError(
                f"PolicyNodeConfig.execute_horizon must be in [0, 1000] (0 = the policy's), got "
                f'{self.execute_horizon}')
        if not 0 < self.port < 65536:
            raise ConfigError(f'PolicyNodeConfig.port must be in 1..65535, got {self.port}')
        if not 0.0 < self.control_hz <= 1000.0:
            raise ConfigError(
                f'PolicyNodeConfig.control_hz must be in (0, 1000], got {self.control_hz}')
        parse_cameras(self.cameras, 'PolicyNodeConfig.cameras')
        self.extra_kwargs()

    @property
    def camera_names(self) -> tuple[str, ...]:
        """The ``cameras`` parameter as a tuple of names."""
        return parse_cameras(self.cameras, 'PolicyNodeConfig.cameras')

    def extra_kwargs(self) -> dict[str, Any]:
        """Return ``policy_args`` parsed as a JSON object."""
        import json
        if not self.policy_args:
            return {}
        try:
            value = json.loads(self.policy_args)
        except json.JSONDecodeError as err:
            raise ConfigError(f'PolicyNodeConfig.policy_args is not valid JSON: {err}') from None
        if not isinstance(value, dict):
            raise ConfigError('PolicyNodeConfig.policy_args must be a JSON object')
        return value
