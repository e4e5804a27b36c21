"""Subcommands of ``realm-ros`` (see ``realm_ros/cli.py``), and their shared argument checks."""

from __future__ import annotations

import argparse
import math
import pathlib
from typing import Any, Callable, Sequence

from realm_ros.core.errors import ConfigError


def number(kind: type, low: float, high: float = math.inf, low_open: bool = False,
           high_open: bool = False, allowed: str = '',
           also: tuple[float, ...] = ()) -> Callable[[str], Any]:
    """Return an argparse ``type=`` that reads a finite ``kind`` (int or float) in ``low`` ..
    ``high`` (``low_open``/``high_open``: excluding that end; ``also``: values allowed
    besides, such as 0 = off). Any other text is refused when the arguments are parsed,
    before anything runs, in argparse's one line naming the flag (``argument --batch: must be
    an integer >= 1, got '0'``). ``allowed`` words the range where the default would not."""
    noun = 'an integer' if kind is int else 'a number'
    if not allowed:
        allowed = (f'{noun} {">" if low_open else ">="} {low:g}' if high == math.inf else
                   f'{noun} in {"(" if low_open else "["}{low:g}, '
                   f'{high:g}{")" if high_open else "]"}')

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except (TypeError, ValueError):
            value = None
        ok = value is not None and math.isfinite(value) and (
            value in also or ((low < value if low_open else low <= value)
                              and (value < high if high_open else value <= high)))
        if not ok:
            raise argparse.ArgumentTypeError(f'must be {allowed}, got {text!r}')
        return value

    parse.__name__ = allowed
    parse.allowed = allowed  # type: ignore[attr-defined]  # marks a checked number (tests)
    return parse


#: The argparse types of the numeric flags (:func:`number`): counts, seeds, sizes, durations.
positive_int = number(int, 1)
non_negative_int = number(int, 0)
positive_float = number(float, 0.0, low_open=True)
non_negative_float = number(float, 0.0)
unit_interval = number(float, 0.0, 1.0)
port = number(int, 0, 65535, allowed='a port in [0, 65535] (0 = any free port)')
#: ``--until-decided P`` (and ``metrics --power P``): a probability in (0.5, 1).
decided_probability = number(float, 0.5, 1.0, low_open=True, high_open=True,
                             allowed='a probability in (0.5, 1)')
#: ``demo --vision --until-decided P``: 0 is its default, the fixed design.
decided_probability_or_off = number(float, 0.5, 1.0, low_open=True, high_open=True,
                                    also=(0.0,), allowed='0 (off) or a probability in (0.5, 1)')


def appearance_flag(path: str, world: str, world_flag: str = '--backend',
                    flag: str = '--appearance') -> str:
    """Return ``flag``'s hidden-appearance file resolved and read, where world ``world`` (the
    backend ``world_flag`` chose) reads it; not given ('') stays ''.

    Raises:
        ConfigError: one line naming ``flag``: the world does not read an appearance (the
            flag would have no effect: only the digital real has a hidden look), the file is
            missing or a folder, or it is not an appearance file (bad YAML, unknown keys).
    """
    if not path:
        return path
    from realm_ros.core import backends
    from realm_ros.core.appearance import Appearance
    from realm_ros.core.config import given_path
    readers = list(backends.names(lambda b: b.hidden))
    if world not in readers:
        raise ConfigError(f"{flag} is the digital real's hidden look; {world_flag} {world} "
                          f'never reads it (only {", ".join(readers)}): drop the flag')
    resolved = given_path(path, flag)
    try:
        Appearance.from_yaml(resolved)
    except ConfigError as err:
        raise ConfigError(f'{flag}: {err}') from None
    return resolved


def rig_flag(path: str, flag: str = '--rig') -> str:
    """Return ``flag``'s camera rig file resolved and read ('' = DROID's rig stays '').

    Raises:
        ConfigError: one line naming ``flag`` (not the ``camera_rig_file`` field the backend
            knows it by): missing, a folder, bad YAML or a malformed rig.
    """
    if not path:
        return path
    from realm_ros.core.config import WorldConfig, flags_named, given_path
    resolved = given_path(path, flag)
    try:
        from realm_ros.backends.mujoco import camera_rig
    except ImportError:  # no MuJoCo: the world that reads the rig will say what is missing
        return resolved
    with flags_named(WorldConfig, {'camera_rig_file': flag}):
        camera_rig.load_rig(resolved)
    return resolved


def path_arg(text: str) -> pathlib.Path:
    """The argparse ``type=`` of a path flag: '' is refused (``pathlib`` reads it as ``.``, so
    an ``--out ""`` would write a run's files into the current folder)."""
    if not str(text).strip():  # str(): a caller in process may pass a Path
        raise argparse.ArgumentTypeError('an empty path; name a file or folder')
    return pathlib.Path(text)


def camera_files(texts: Sequence[str] | None, flag: str = '--camera-video'
                 ) -> list[tuple[str, str]]:
    """Return the (camera, file) pairs of a repeated ``CAMERA=FILE`` flag, in order.

    Raises:
        ConfigError: one line naming ``flag``: an entry without a camera, ``=`` or a file.
    """
    pairs = []
    for text in texts or []:
        camera, sep, file = text.partition('=')
        if not sep or not camera or not file:
            raise ConfigError(f'{flag}: expected CAMERA=FILE, got {text!r}')
        pairs.append((camera, file))
    return pairs


def out_file(path: str, option: str) -> pathlib.Path | None:
    """Return output file ``path`` (None when not given, ''); ConfigError naming ``option``
    if it is a folder, before anything runs (the file would be written at the end)."""
    if not path:
        return None
    resolved = pathlib.Path(path).expanduser()
    if resolved.is_dir():
        raise ConfigError(f'{option}: {path} is a folder; name the file to write')
    return resolved


def sim_params_flag(path: str, flag: str = '--sim-params') -> str:
    """Return ``flag``'s identified-parameters file resolved and read, as the twin reads it
    (friction, armature, damping, ``latency_s``); not given ('') stays ''.

    Raises:
        ConfigError: one line naming ``flag`` and the file (missing, bad YAML, a bad field).
    """
    from realm_ros.core.config import DynamicsParams, configured_latency
    return _read_file_flag(path, flag, lambda p: (DynamicsParams.from_yaml(p),
                                                  configured_latency(p)))


def dynamics_flag(path: str, flag: str = '--dynamics') -> str:
    """Return ``flag``'s digital-real hidden dynamics file resolved and read; not given ('')
    stays ''. ConfigError naming ``flag`` and the file otherwise."""
    from realm_ros.core.config import DigitalRealDynamics
    return _read_file_flag(path, flag, DigitalRealDynamics.from_yaml)


def _read_file_flag(path: str, flag: str, read: Callable[[str], Any]) -> str:
    if not path:
        return path
    from realm_ros.core.config import given_path
    resolved = given_path(path, flag)
    try:
        read(resolved)
    except ConfigError as err:
        text = str(err)
        where = '' if resolved in text or path in text else f'{path}: '
        raise ConfigError(f'{flag}: {where}{text}') from None
    return resolved


class _Names(argparse.Action):
    """Collect names given as separate arguments, split at commas, over repeated flags."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        names = list(getattr(namespace, self.dest, None) or [])
        names += [n.strip() for value in values for n in str(value).split(',') if n.strip()]
        setattr(namespace, self.dest, names)


def add_list_argument(parser: argparse.ArgumentParser, flag: str, help_text: str,
                      metavar: str = 'NAME') -> None:
    """Declare a list flag the one way every command takes lists: ``--tasks a b`` (separate
    arguments); commas separate too (``--tasks a,b``, ``--tasks a,b c``), so the other habit is
    no surprise. The value is None when the flag is not given: the command applies its default.
    """
    parser.add_argument(flag, nargs='+', action=_Names, default=None,
                        metavar=metavar, help=f'{help_text} (space- or comma-separated)')


def add_run_flags(parser: argparse.ArgumentParser, unit: str) -> None:
    """Declare the flags every resumable run command (paired-eval, sweep) takes alike:
    ``--rerun-changed`` (``unit``: what a record is, e.g. ``episodes``) and ``--quiet``."""
    from realm_ros.core.provenance import RERUN_FLAG
    parser.add_argument(RERUN_FLAG, action='store_true',
                        help=f'{unit} in --out made with other settings (their records name '
                             'what made them) run again into it; without it such a re-run is '
                             'refused, naming the setting')
    add_quiet_flag(parser)


def add_quiet_flag(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Declare ``--quiet`` as every command means it (docs/cli.md): the progress bar and the
    final table with the files written stay, every other line goes (``console.set_quiet``)."""
    parser.add_argument('--quiet', action='store_true',
                        help='only the progress bar and the final table (with the files written)')


def task_names(names: Sequence[str] | None, default: Sequence[str]) -> list[str]:
    """Return ``--tasks`` (or ``default``), each checked; ConfigError naming ``--tasks``."""
    from realm_ros.core import tasks
    chosen = list(names) if names else list(default)
    if not chosen:
        raise ConfigError('--tasks names no task')
    for name in chosen:
        try:
            tasks.get_task(name)
        except ConfigError as err:
            raise ConfigError(f'--tasks: {err}') from None
    return chosen


def policy_specs(specs: Sequence[str]) -> list[str]:
    """``--policies``, each through :func:`realm_ros.core.policy.policy_spec` (a skill by name
    or number); ConfigError naming ``--policies``."""
    from realm_ros.core.policy import policy_spec
    try:
        return [policy_spec(spec) for spec in specs]
    except ConfigError as err:
        raise ConfigError(f'--policies {err}') from None


def out_folder(path: pathlib.Path, option: str = '--out') -> pathlib.Path:
    """Return ``path`` resolved as an output folder; ConfigError if it names a file."""
    resolved = path.expanduser().resolve()
    if resolved.exists() and not resolved.is_dir():
        raise ConfigError(f'{option}: {path} is a file, not a folder; name a new or existing '
                          'output folder')
    return resolved
