"""Deprecated module name of the digital real's physics: :mod:`realm_ros.backends.digital_real`."""

from realm_ros.backends.digital_real import DEFAULT_DYNAMICS_FILE, DigitalRealWorld
from realm_ros.core.config import renamed

renamed(__name__, 'module')
__all__ = ['DEFAULT_DYNAMICS_FILE', 'DigitalRealWorld']
