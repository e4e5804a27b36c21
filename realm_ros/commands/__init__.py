"""Subcommands of ``realm-ros`` (see ``realm_ros/cli.py``), and their shared argument checks."""

from __future__ import annotations

import argparse
import pathlib
from typing import Any, Sequence

from realm_ros.core.errors import ConfigError


def require_positive(option: str, value: float) -> None:
    """Raise ConfigError naming ``option`` (``--episodes``) unless ``value`` > 0."""
    if value <= 0:
        raise ConfigError(f'{option} must be > 0, got {value}')


def require_non_negative(option: str, value: float, unit: str = '') -> None:
    """Raise ConfigError naming ``option`` (and ``unit``, ``rad``) unless ``value`` >= 0."""
    if value < 0:
        raise ConfigError(f'{option} must be >= 0{" " + unit if unit else ""}, got {value}')


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
