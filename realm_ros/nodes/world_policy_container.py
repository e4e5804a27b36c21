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
from typing import TYPE_CHECKING, Any, Callable, cast

from rclpy.node import Node

from realm_ros.nodes.policy_node import PolicyNode
from realm_ros.nodes.world_node import WorldNode
from realm_ros.ros.intra import IntraProcess
from realm_ros.ros.runner import events_executor, spin_node

if TYPE_CHECKING:
    from rclpy.executors import Executor


def build(executor: IntraProcess | None = None, **kwargs: Any) -> list[Node]:
    """Return ``[world, policy]``, paired for in-process delivery by ``executor``.

    ``kwargs`` go to both node constructors (``context``, ``parameter_overrides``, ...). The
    world publishes its latched facts and first observation once the pairing is made, so that
    the policy receives each message once, in the order published (its episode message before
    the observations of that episode). Without ``executor``, or with the world's parameter
    ``intra_process`` false, nothing is paired.
    """
    world = WorldNode(start=False, **kwargs)
    try:
        policy = PolicyNode(**kwargs)
    except BaseException:
        world.world.close()
        world.destroy_node()
        raise
    intra = bool(world.declare_parameter('intra_process', True).value)
    if intra and executor is not None:
        paired = executor.connect([world, policy])
        world.get_logger().info(
            'intra-process delivery: ' + ', '.join(f'{t} ({p} -> {s})'
                                                   for t, (p, s) in sorted(paired.items())))
    world.start()
    return [world, policy]


def _close(node: Node) -> None:
    owned = getattr(node, 'world', None) or getattr(node, 'policy', None)
    if owned is not None:
        owned.close()


def main(args: list[str] | None = None) -> int:
    """Run both nodes until interrupted; exit 2 on a bad parameter."""
    made: list[IntraProcess] = []

    def executor() -> IntraProcess:  # after rclpy.init: the events executor takes the context
        made.append(IntraProcess(events_executor()))
        return made[0]
    # IntraProcess stands in for the executor it wraps (add_node, remove_node, spin_once,
    # shutdown): what spin_node calls on one.
    return spin_node('world_policy_container', lambda: build(made[0]), args, close=_close,
                     executor=cast('Callable[[], Executor]', executor))


if __name__ == '__main__':
    sys.exit(main())
