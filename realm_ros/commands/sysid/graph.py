"""The digital real as ``realm-ros sysid record --backend digital_real`` brings it up, in this
process."""

from __future__ import annotations

import contextlib
import pathlib
from typing import Any, Iterator

#: Namespace of the digital real's franka_ros2-shaped side, below the world's namespace.
ROBOT_SUBNAMESPACE = 'franka'


def digital_real_specs(namespace: str, dynamics_file: str, arm_id: str = 'fr3') -> list:
    """Return the digital real as the embedded default runs it: two :class:`NodeSpec`.

    ``digital_real`` (the franka_ros2-shaped arm, ``<namespace>/franka``, lockstep, hidden
    dynamics ``dynamics_file``) behind ``world_node backend:=franka`` (``<namespace>``, the
    shared world interface that is driven and recorded, ``fr3_`` joints, digital-real resets),
    both with ``/clock`` remapped to ``<namespace>/clock``. The bridge's safety monitor checks
    every excitation target exactly as it would on the lab's arm.
    """
    from realm_ros.graph import (
        NodeSpec,
        bridge_parameters,
        clock_remapping,
        digital_real_parameters,
    )

    robot_ns = f'{namespace}/{ROBOT_SUBNAMESPACE}'
    clock = clock_remapping(namespace)
    robot: dict[str, Any] = {'lockstep': True, **digital_real_parameters(arm_id)}
    if dynamics_file:
        robot['dynamics_file'] = str(pathlib.Path(dynamics_file).expanduser().resolve())
    return [
        NodeSpec('digital_real', 'digital_real', robot_ns, robot, clock),
        NodeSpec('world_node', 'world', namespace, {
            'backend': 'franka', 'lockstep': True, 'lockstep_timeout_s': 0.0,
            'camera_rate_hz': 0.0, 'franka.namespace': robot_ns, 'franka.digital_real': True,
            **bridge_parameters(arm_id, 'franka_hand', digital_real=True)}, clock),
    ]


@contextlib.contextmanager
def digital_real_graph(context: Any, namespace: str, dynamics_file: str,
                       arm_id: str = 'fr3') -> Iterator[None]:
    """Bring up :func:`digital_real_specs` in this process (``context``) and spin it.

    Each node spins in its own executor thread, as two processes would: ``world_node``'s
    constructor and reset service wait inside a callback for the digital real's joint state
    and services, so it must spin independently. The driver and the recorder only use the
    world's topics and services.
    """
    from realm_ros.ros.runner import NodeRunner

    with NodeRunner(context) as runner:
        for spec in digital_real_specs(namespace, dynamics_file, arm_id):
            runner.start(spec.node_class(), spec.name, spec.namespace, spec.parameters,
                         spec.remappings)
        yield None
