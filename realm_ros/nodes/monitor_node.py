"""``monitor_node``: live view of a running pair for RViz and plot tools.

Subscribes (per world, under ``real_namespace`` and ``sim_namespace``):
    joint_states       sensor_msgs/JointState       divergence, matched by nearest stamp
    progress           diagnostic_msgs/DiagnosticStatus (convert.progress_from_msg)
    privileged_state   std_msgs/String JSON         live object poses (simulated worlds)
    instruction        std_msgs/String (latched)    for the "place ... here" label
Publishes (relative to the monitor's own namespace):
    monitor/markers          visualization_msgs/MarkerArray, at ``rate_hz``: the episode's
                             initial object poses (translucent, from ``episode_spec``), live
                             object poses of each world, each world's stage and progression
                             and the divergence as TEXT_VIEW_FACING panels
    monitor/divergence       std_msgs/Float64MultiArray: 7 values |q_real - q_sim| rad in
                             panda_joint1..7 order (the layout's label names them), one per
                             newly matched pair of samples
    monitor/divergence_norm  std_msgs/Float64: their Euclidean norm, rad
Parameters: :class:`realm_ros.core.monitor.MonitorConfig` fields and ``episode_spec`` (JSON).
All computation lives in :mod:`realm_ros.core.monitor`; this node only translates.
"""

from __future__ import annotations

import sys
from typing import Any

from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64, Float64MultiArray, String
from visualization_msgs.msg import MarkerArray

from realm_ros.core import monitor
from realm_ros.core.errors import ConfigError, RealmError
from realm_ros.core.types import EpisodeSpec, Progress
from realm_ros.ros import convert, markers, qos, topics
from realm_ros.ros.params import declare_config, declare_episode_spec, episode_spec_text
from realm_ros.ros.runner import spin_node

WORLDS = ('real', 'sim')


class MonitorNode(Node):
    """Subscribe to both worlds, publish markers and the real-vs-sim divergence."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__('monitor', **kwargs)
        self.config = declare_config(self, monitor.MonitorConfig)
        declare_episode_spec(self, 'of the running pair; its initial_state object poses are '
                             'drawn as translucent targets')
        self.tracker = monitor.DivergenceTracker(self.config.max_gap_s, self.config.history_s)
        self.progress: dict[str, Progress | None] = {w: None for w in WORLDS}
        self.objects: dict[str, list[monitor.ObjectPose]] = {w: [] for w in WORLDS}
        self.instruction: dict[str, str] = {w: '' for w in WORLDS}
        self._spec_text: str | None = None
        self._initial: list[monitor.ObjectPose] = []
        self._spec_instruction = ''
        namespaces = {'real': self.config.real_namespace, 'sim': self.config.sim_namespace}
        for world, ns in namespaces.items():
            base = ns.rstrip('/')
            self.create_subscription(
                JointState, f'{base}/{topics.JOINT_STATES}',
                lambda m, w=world: self._on_joint_state(w, m), qos.ANY_PUBLISHER)
            self.create_subscription(
                DiagnosticStatus, f'{base}/{topics.PROGRESS}',
                lambda m, w=world: self._on_progress(w, m), qos.ANY_PUBLISHER)
            self.create_subscription(
                String, f'{base}/{topics.PRIVILEGED_STATE}',
                lambda m, w=world: self._on_privileged(w, m), qos.ANY_PUBLISHER)
            self.create_subscription(
                String, f'{base}/{topics.INSTRUCTION}',
                lambda m, w=world: self.instruction.__setitem__(w, m.data), qos.LATCHED)
        self._markers_pub = self.create_publisher(MarkerArray, 'monitor/markers', 10)
        self._div_pub = self.create_publisher(Float64MultiArray, 'monitor/divergence', 50)
        self._norm_pub = self.create_publisher(Float64, 'monitor/divergence_norm', 50)
        self.create_timer(1.0 / self.config.rate_hz, self.publish_markers)
        self.get_logger().info(f'monitoring real={namespaces["real"]} sim={namespaces["sim"]} '
                               f'(match by {self.config.match_by})')

    # -- callbacks --------------------------------------------------------------------------

    def _on_joint_state(self, world: str, msg: JointState) -> None:
        try:
            state = convert.joint_state_from_msg(msg)
        except RealmError as err:
            self.get_logger().warning(f'{world} joint state ignored: {err}',
                                      throttle_duration_sec=5.0)
            return
        stamp = (state.stamp if self.config.match_by == 'stamp'
                 else self.get_clock().now().nanoseconds * 1e-9)
        getattr(self.tracker, world).add(stamp, state.position)
        div = self.tracker.new_divergence()
        if div is not None:
            self._div_pub.publish(markers.divergence_to_msg(div))
            self._norm_pub.publish(Float64(data=div.norm))

    def _on_progress(self, world: str, msg: DiagnosticStatus) -> None:
        self.progress[world] = convert.progress_from_msg(msg)

    def _on_privileged(self, world: str, msg: String) -> None:
        try:
            _, state = convert.privileged_from_json(msg.data)
        except (ValueError, KeyError, TypeError) as err:
            self.get_logger().warning(f'{world} privileged state ignored: {err}',
                                      throttle_duration_sec=5.0)
            return
        self.objects[world] = monitor.extract_object_poses(state)

    # -- output -----------------------------------------------------------------------------

    def _read_spec(self) -> None:
        text = episode_spec_text(self)
        if text == self._spec_text:
            return
        self._spec_text = text
        self._initial, self._spec_instruction = [], ''
        if text:
            try:
                spec = EpisodeSpec.from_json(text)
            except ConfigError as err:
                self.get_logger().error(f'episode_spec ignored: {err}')
                return
            self._initial = monitor.extract_object_poses(spec.initial_state)
            self._spec_instruction = spec.instruction

    def marker_specs(self) -> list[monitor.MarkerSpec]:
        """Return everything the markers topic shows now (see the module docstring)."""
        self._read_spec()
        instruction = (self._spec_instruction or self.instruction['real']
                       or self.instruction['sim'])
        specs = monitor.object_markers(self._initial, 'initial', alpha=0.35,
                                       instruction=instruction)
        specs += monitor.object_markers(self.objects['real'], 'real/objects', alpha=0.9,
                                        instruction=instruction, labels=not self._initial)
        specs += monitor.object_markers(self.objects['sim'], 'sim/objects', alpha=0.5,
                                        instruction=instruction,
                                        labels=not self._initial and not self.objects['real'])
        running = len(self.tracker.real) > 0 and len(self.tracker.sim) > 0
        specs += monitor.status_markers(self.progress, self.tracker.latest(), running)
        return specs

    def publish_markers(self) -> None:
        """Publish ``monitor/markers``."""
        self._markers_pub.publish(markers.marker_array(
            self.marker_specs(), self.config.frame_id, self.get_clock().now().to_msg()))


def main(args: list[str] | None = None) -> int:
    """Run ``monitor_node`` until interrupted; exit 2 on a bad parameter."""
    return spin_node('monitor_node', MonitorNode, args)


if __name__ == '__main__':
    sys.exit(main())
