"""The ``franka`` backend: bridge to franka_ros2 (FR3, Panda via agimus-franka-ros2).

Modules: :mod:`.bridge` (the world), :mod:`.hardware_state` (franka_hardware's states as the
digital real imitates them), :mod:`.grippers` (Franka Hand, Robotiq 2F-85 and the
digital real's width topic), :mod:`.reset_motion` (a real arm's move to the reset pose),
:mod:`.robot_state` (reflex detection), :mod:`.digital_real` (the variant for the
digital real).
"""

from realm_ros.backends.franka.bridge import FrankaBridgeWorld

# Registers the digital-real variant with FrankaBridgeWorld (no import from bridge.py: no cycle).
from realm_ros.backends.franka.digital_real import DigitalRealBridgeWorld

__all__ = ['DigitalRealBridgeWorld', 'FrankaBridgeWorld']
