"""The Isaac Sim twin (RTX labs): Isaac Sim 6.x drives PhysX over the twin's USD scene.

Imported lazily by :func:`realm_ros.core.world.make_world`; nothing here imports Isaac Sim
until a world is built. See :mod:`realm_ros.backends.isaac.world`.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name in ('IsaacWorld', 'IsaacEngine'):
        from realm_ros.backends.isaac import world
        return getattr(world, name)
    raise AttributeError(name)
