"""One small error hierarchy for realm_ros.

Nodes catch :class:`RealmError` at callback boundaries, log it and answer with
``success=False``; anything else is a bug and propagates.
"""

from __future__ import annotations


class RealmError(Exception):
    """Base class of every error realm_ros raises on purpose."""


class ConfigError(RealmError, ValueError):
    """A configuration value is missing, malformed or out of range; the message names the field."""


class CommandRejected(RealmError, ValueError):
    """A command (action) was refused: NaN, wrong shape or names, beyond limits, stale, unsafe."""


class BackendUnavailable(RealmError, ImportError):
    """A world or policy backend cannot be loaded here (missing SDK, no robot, no GPU)."""


class EpisodeError(RealmError):
    """An episode could not be run as specified (bad spec, world not reset, ...)."""


class InfrastructureError(RealmError):
    """A failure outside the policy's control (server down, timeout, malformed response).

    Episodes that end with this error are recorded as infrastructure failures and are never
    scored as policy failures.
    """


class DataError(RealmError, ValueError):
    """Recorded data (a bag, a CSV, a JSONL record) is empty, malformed or inconsistent."""
