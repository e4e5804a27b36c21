"""Subcommands of ``realm-ros`` (see ``realm_ros/cli.py``), and their shared argument checks."""

from __future__ import annotations

import pathlib

from realm_ros.core.errors import ConfigError


def require_positive(option: str, value: float) -> None:
    """Raise ConfigError naming ``option`` (``--episodes``) unless ``value`` > 0."""
    if value <= 0:
        raise ConfigError(f'{option} must be > 0, got {value}')


def require_non_negative(option: str, value: float, unit: str = '') -> None:
    """Raise ConfigError naming ``option`` (and ``unit``, ``rad``) unless ``value`` >= 0."""
    if value < 0:
        raise ConfigError(f'{option} must be >= 0{" " + unit if unit else ""}, got {value}')


def out_folder(path: pathlib.Path, option: str = '--out') -> pathlib.Path:
    """Return ``path`` resolved as an output folder; ConfigError if it names a file."""
    resolved = path.expanduser().resolve()
    if resolved.exists() and not resolved.is_dir():
        raise ConfigError(f'{option}: {path} is a file, not a folder; name a new or existing '
                          'output folder')
    return resolved
