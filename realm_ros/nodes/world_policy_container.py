"""``world_policy_container``: ``world_node`` and ``policy_node`` composed in one process.

The same two nodes as the two executables (same names ``world`` and ``policy``, topics,
services, parameters and QoS; docs/interface.md), built in one process on one executor, as an
rclcpp component container with ``use_intra_process_comms`` would run them: messages from one
to the other (joint_states, privileged_state, command) are handed over in process
(:mod:`realm_ros.ros.intra`) and go on DDS too whenever another process subscribes (recorder,
evaluator, RViz, ``ros2 topic echo``). A lockstep episode then costs little more than the same
episode through core alone (docs/performance.md, "ROS overhead").

Parameters: ``--ros-args -p name:=value`` reaches both nodes, and each takes the ones it declares
(``lockstep``, ``control_hz``, ``seed`` and ``cameras`` are declared by both); a node-specific
value goes in a ``--params-file`` under the node's name (``world:`` / ``policy:``). Remappings
apply to both. ``intra_process:=false`` (container only) keeps every message on DDS.

Run: ``world_policy_container --ros-args -r __ns:=/sim -p lockstep:=true -p task:=push_switch
-p policy:=scripted -p use_privileged:=true`` (or ``python -m
realm_ros.nodes.world_policy_container ...``).
"""

from __future__ import annotations

import sys
from typing import Any

from rclpy.node import Node

from realm_ros.nodes.policy_node import PolicyNode
from realm_ros.nodes.world_node import WorldNode
from realm_ros.ros.intra import IntraProcess
from realm_ros.ros.runner import events_executor, spin_node


def build(**kwargs: Any) -> list[Node]:
    """Return ``[world, policy]`` with intra-process delivery connected between them.

    ``kwargs`` go to both node constructors (``context``, ``parameter_overrides``, ...). The
    world is built first (it publishes its first observation and the latched episode while the
    policy is built: the episode reaches the policy over DDS, as in two processes).
    """
    world = WorldNode(**kwargs)
    try:
        policy = PolicyNode(**kwargs)
    except BaseException:
        world.world.close()
        world.destroy_node()
        raise
    intra = world.declare_parameter('intra_process', True).value
    if intra:
        world.intra_process = IntraProcess(world)
        paired = world.intra_process.connect([world, policy])
        world.get_logger().info(
            'intra-process delivery: ' + ', '.join(f'{t} ({p} -> {s})'
                                                   for t, (p, s) in sorted(paired.items())))
    return [world, policy]


def _close(node: Node) -> None:
    owned = getattr(node, 'world', None) or getattr(node, 'policy', None)
    if owned is not None:
        owned.close()


def main(args: list[str] | None = None) -> int:
    """Run both nodes until interrupted; exit 2 on a bad parameter."""
    return spin_node('world_policy_container', build, args, close=_close,
                     executor=events_executor)


if __name__ == '__main__':
    sys.exit(main())
