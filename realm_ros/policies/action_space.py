"""DROID action-space names, as openpi configs and servers spell them, mapped to ActionMode."""

from __future__ import annotations

from realm_ros.core.errors import ConfigError
from realm_ros.core.types import ActionMode

#: action space name -> how realm_ros reads the seven arm numbers.
ACTION_SPACES: dict[str, ActionMode] = {
    'joint_velocity': ActionMode.VELOCITY,
    'joint_position': ActionMode.POSITION,
}


def parse_action_space(action_space: str) -> ActionMode:
    """Map ``joint_velocity`` / ``joint_position`` to an :class:`ActionMode`.

    Raises:
        ConfigError: any other name (the message lists the valid ones).
    """
    try:
        return ACTION_SPACES[action_space]
    except KeyError:
        raise ConfigError(f'action_space must be one of {sorted(ACTION_SPACES)}, '
                          f'got {action_space!r}') from None
