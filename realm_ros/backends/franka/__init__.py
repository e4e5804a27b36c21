"""The ``franka`` backend: bridge to franka_ros2 (FR3, Panda via agimus-franka-ros2).

Modules: :mod:`.bridge` (the world), :mod:`.hardware_state` (franka_hardware's states as the
digital real imitates them), :mod:`.grippers` (Franka Hand, Robotiq 2F-85 and the
digital real's width topic), :mod:`.reset_motion` (a real arm's move to the reset pose),
:mod:`.robot_state` (reflex detection), :mod:`.digital_real` (the variant for the
digital real).
"""

from __future__ import annotations

from typing import Any

from realm_ros.backends.franka.bridge import FrankaBridgeWorld
from realm_ros.backends.franka.digital_real import DigitalRealBridgeWorld
from realm_ros.core.config import FrankaBridgeConfig, SafetyConfig, WorldConfig
from realm_ros.ros.params import declare_config


class _BridgeFactory:
    """The ``franka`` backend's constructor (``core.backends.BACKENDS``): the bridge, or its
    digital-real variant when ``franka.digital_real`` is set, chosen here once."""

    #: make_world passes the hosting ROS node (world_node) as ``host``.
    uses_host_node = True

    def __call__(self, config: WorldConfig, host: Any = None,
                 bridge: FrankaBridgeConfig | None = None,
                 safety: SafetyConfig | None = None) -> FrankaBridgeWorld:
        if bridge is None and host is not None:
            bridge = declare_config(host, FrankaBridgeConfig, prefix='franka.')
        cls = DigitalRealBridgeWorld if bridge is not None and bridge.digital_real \
            else FrankaBridgeWorld
        return cls(config, host=host, bridge=bridge, safety=safety)


#: Build the bridge world a config names (``make_bridge_world(config, host=node)``).
make_bridge_world = _BridgeFactory()

__all__ = ['DigitalRealBridgeWorld', 'FrankaBridgeWorld', 'make_bridge_world']
