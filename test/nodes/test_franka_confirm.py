"""Two franka bridges on one graph: each arm's homing is confirmed under its own world.

Both bridges reach franka_ros2 at ``franka.namespace`` ``/`` (a lab's two arms often share it);
their hosts, world nodes in ``/left`` and ``/right``, put the confirmation services apart.
"""

import pytest
import rclpy
from rostest import call_service, ros_node
from std_srvs.srv import SetBool

from realm_ros.backends.franka import make_bridge_world
from realm_ros.core.config import FrankaBridgeConfig, WorldConfig

pytestmark = pytest.mark.ros


def test_two_bridges_on_one_graph_are_confirmed_apart():
    config = WorldConfig(backend='franka', cameras=(), camera_rate_hz=0.0)
    bridge = FrankaBridgeConfig(arm_id='fr3', gripper='width_topic', namespace='/',
                                digital_real=True)
    with ros_node('operator') as (node, executor):
        hosts = [rclpy.create_node('world', namespace=ns, context=node.context)
                 for ns in ('/left', '/right')]
        worlds = [make_bridge_world(config, host=host, bridge=bridge) for host in hosts]
        try:
            assert [w.confirm_service for w in worlds] == [
                '/left/franka_bridge/confirm_motion', '/right/franka_bridge/confirm_motion']
            for k, world in enumerate(worlds):
                client = node.create_client(SetBool, world.confirm_service)
                assert call_service(executor, client, SetBool.Request(data=True),
                                    timeout=20).success
                # This arm may move; the other one is untouched (withdrawn for the next round).
                assert [w._confirmed.is_set() for w in worlds] == [j == k for j in range(2)]
                world._confirmed.clear()
        finally:
            for world in worlds:
                world.close()
            for host in hosts:
                host.destroy_node()
