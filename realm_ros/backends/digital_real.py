"""Physics of the digital real (backend ``digital_real``): the MuJoCo twin with hidden dynamics
the twin cannot see.

The digital real stands in for the physical arm on machines without one. Its dynamics differ
from the twin's defaults: per-joint friction and armature (what system identification fits),
plus actuation latency, joint-sensor noise and object mass/friction scales (which it cannot fit).
Every output names it as the digital real; it is never presented as hardware. The node
``digital_real`` (``nodes/digital_real_node.py``) serves it behind franka_ros2's interface;
``backends/franka/digital_real.py`` is the bridge's side of that link.
"""

from __future__ import annotations

import pathlib

from realm_ros.backends.mujoco.world import MujocoWorld
from realm_ros.core.config import DigitalRealDynamics, WorldConfig

#: The hidden dynamics used when no file is given (REALM's identified values as the prior).
DEFAULT_DYNAMICS_FILE = (pathlib.Path(__file__).resolve().parents[1] / 'data'
                         / 'digital_real_dynamics.yaml')


class DigitalRealWorld(MujocoWorld):
    """A :class:`MujocoWorld` built with :class:`DigitalRealDynamics` from a YAML file, and its
    hidden appearance (``config.appearance_file``, :mod:`realm_ros.core.appearance`) if given."""

    name = 'digital_real'

    def __init__(self, config: WorldConfig, hidden: DigitalRealDynamics | None = None) -> None:
        if hidden is None:
            path = config.dynamics_file or DEFAULT_DYNAMICS_FILE
            hidden = DigitalRealDynamics.from_yaml(path)
        self.hidden = hidden
        look = None
        if config.appearance_file:
            from realm_ros.backends.mujoco.looks import look_for
            look = look_for(appearance_file=config.appearance_file)
        super().__init__(
            config,
            look=look,
            visual_match_dir='',
            dynamics=hidden.joint_params(),
            latency_s=hidden.latency_s,
            joint_noise_std=hidden.joint_noise_std,
            object_mass_scale=hidden.object_mass_scale,
            object_friction_scale=hidden.object_friction_scale)
