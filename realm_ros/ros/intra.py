"""Intra-process delivery between the nodes of one process (rclcpp's ``use_intra_process_comms``).

rclpy has no intra-process communication: a message from one node to another in the same
process is converted to C, serialised, handed to DDS, deserialised and converted back, which
costs more than a lockstep control step itself (docs/performance.md, "ROS overhead").
:class:`IntraProcess` pairs, in one process, each publisher with the subscriptions of the same
topic (same type, compatible QoS, volatile durability, no content filter) and delivers the
message object itself to those subscriptions:

* **through the executor**, never as a nested call: ``publish`` queues the message and hands
  the executor one task (``Executor.create_task``; rclpy's events executor has no guard
  conditions); the executor runs :meth:`IntraProcess._deliver`, which delivers what was queued
  then (a callback that publishes again queues for the next turn, so a lockstep
  world/policy pair never recurses, and timers, services and DDS messages are served between
  turns);
* **in order, every message**: one FIFO across topics (a step's ``privileged_state`` reaches the
  policy before its ``joint_states``, as published); each subscription keeps at most its QoS
  ``depth`` undelivered messages (``KEEP_LAST``), as a DDS reader's history would;
* **on DDS too when someone else listens**: the publisher still publishes on DDS when it has
  more matched subscriptions than its paired local ones (a recorder, the evaluator, RViz, a
  ``ros2 topic echo`` from another process), so they see every message; the paired local
  subscriptions drop the DDS copy of a message their local publisher already delivered (the
  rmw's ``ignore_local_publications``, which rclpy does not expose, by publisher GID);
* messages from publishers outside the pairing (another process, or an entity created after
  :meth:`IntraProcess.connect`) arrive over DDS as before.

As in rclcpp with several subscriptions, the message object is shared: a subscription callback
must not modify the message it is given. Transient-local (latched) topics stay on DDS: their
late-joiner semantics are DDS's.
"""

from __future__ import annotations

import collections
import time
from typing import Any, Callable, Iterable

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSCompatibility, qos_check_compatible
from rclpy.subscription import Subscription

Callback = Callable[[Any], None]


class _LocalSubscription:
    """A paired subscription: its undelivered messages and the callback they go to."""

    __slots__ = ('subscription', 'callback', 'queue', 'with_info', 'dds_dropped')

    def __init__(self, subscription: Subscription) -> None:
        self.subscription = subscription
        qos = subscription.qos_profile
        depth = qos.depth if qos.history is not HistoryPolicy.KEEP_ALL else None
        self.queue: collections.deque[Any] = collections.deque(maxlen=depth or None)
        self.callback: Callable[..., None] = subscription.callback
        self.with_info = (subscription._callback_type
                          is Subscription.CallbackType.WithMessageInfo)
        #: DDS copies of locally delivered messages dropped (for tests and diagnostics).
        self.dds_dropped = 0


class _Topic:
    """The publishers and subscriptions of one topic that are paired in this process."""

    __slots__ = ('name', 'publishers', 'subscriptions', 'local_nodes', 'local_gids',
                 'remote_gids')

    def __init__(self, name: str) -> None:
        self.name = name
        self.publishers: list[Any] = []
        self.subscriptions: list[_LocalSubscription] = []
        #: (namespace, name) of the nodes whose publishers are paired on this topic.
        self.local_nodes: set[tuple[str, str]] = set()
        self.local_gids: set[bytes] = set()
        self.remote_gids: set[bytes] = set()


def _gid(value: Any) -> bytes:
    """Return a publisher GID (MessageInfo's dict or list, TopicEndpointInfo's list) as bytes."""
    if isinstance(value, dict):
        value = value.get('data', value.get('gid', b''))
    return bytes(value or b'')


def _pairable(pub_qos: Any, sub_qos: Any) -> bool:
    if DurabilityPolicy.TRANSIENT_LOCAL in (pub_qos.durability, sub_qos.durability):
        return False  # latched: a late joiner's copy is DDS's business
    compatibility, _reason = qos_check_compatible(pub_qos, sub_qos)
    return compatibility is not QoSCompatibility.ERROR  # WARNING: system-default liveliness


class IntraProcess:
    """Deliver messages between the nodes of one process without DDS (see the module text).

    ``host``: a node of the pairing; deliveries run as tasks of its executor (every node of the
    pairing must be spun by that one executor). Call :meth:`connect` once every node is built.
    Messages published before ``host`` is added to an executor wait for the next publish.
    """

    def __init__(self, host: Node) -> None:
        self._host = host
        self._ready: collections.deque[_LocalSubscription] = collections.deque()
        self._triggered = False
        self.topics: dict[str, _Topic] = {}
        #: DDS source timestamps (ns) from here on are the pairing's: earlier messages (what a
        #: node published while it was being built) are delivered from DDS as usual.
        self._since_ns = 0
        #: Messages delivered in process, and published on DDS as well (external listeners).
        self.delivered = 0
        self.published_dds = 0

    def connect(self, nodes: Iterable[Node]) -> dict[str, tuple[int, int]]:
        """Pair the publishers and subscriptions of ``nodes``; return {topic: (pubs, subs)}."""
        nodes = list(nodes)
        self._since_ns = time.time_ns()
        publishers = [(node, pub) for node in nodes for pub in node.publishers]
        subscriptions = [sub for node in nodes for sub in node.subscriptions]
        for node, pub in publishers:
            name = pub.topic_name
            subs = [s for s in subscriptions if s.topic_name == name
                    and s.msg_type is pub.msg_type and not s.raw
                    and not s.is_cft_enabled and _pairable(pub.qos_profile, s.qos_profile)]
            if not subs:
                continue
            topic = self.topics.setdefault(name, _Topic(name))
            topic.publishers.append(pub)
            topic.local_nodes.add((node.get_namespace(), node.get_name()))
            for sub in subs:
                if all(local.subscription is not sub for local in topic.subscriptions):
                    local = _LocalSubscription(sub)
                    topic.subscriptions.append(local)
                    sub.callback = self._dds_filter(topic, local)
        for topic in self.topics.values():
            for pub in topic.publishers:
                pub.publish = self._publisher(pub, topic)
        return {name: (len(t.publishers), len(t.subscriptions))
                for name, t in self.topics.items()}

    # -- publishing and delivery ------------------------------------------------------------

    def _publisher(self, pub: Any, topic: _Topic) -> Callback:
        dds_publish = pub.publish  # the bound Publisher.publish: DDS
        locals_ = topic.subscriptions
        msg_type = pub.msg_type
        ready = self._ready

        def publish(msg: Any) -> None:
            if not isinstance(msg, msg_type):
                raise TypeError(f'Expected {msg_type}, got {type(msg)}')
            # Matched subscriptions beyond the paired local ones: someone else listens.
            if pub.get_subscription_count() > len(locals_):
                dds_publish(msg)
                self.published_dds += 1
            for local in locals_:
                local.queue.append(msg)
                ready.append(local)
            if not self._triggered:
                self._wake()
        return publish

    def _wake(self) -> None:
        executor = self._host.executor
        if executor is not None:
            self._triggered = True
            executor.create_task(self._deliver)

    def _deliver(self) -> None:
        """Deliver what is queued now, in publishing order (an executor task)."""
        self._triggered = False
        ready = self._ready
        for _ in range(len(ready)):
            local = ready.popleft()
            if not local.queue:
                continue  # dropped by the subscription's KEEP_LAST depth
            msg = local.queue.popleft()
            self.delivered += 1
            if local.with_info:
                now = time.time_ns()
                local.callback(msg, {'source_timestamp': now, 'received_timestamp': now,
                                     'publication_sequence_number': None,
                                     'reception_sequence_number': None,
                                     'publisher_gid': None})
            else:
                local.callback(msg)
        if ready and not self._triggered:
            self._wake()

    def _dds_filter(self, topic: _Topic, local: _LocalSubscription) -> Callable[[Any, Any], None]:
        """A subscription callback that drops DDS copies of messages delivered in process."""
        callback, with_info = local.callback, local.with_info

        def on_dds(msg: Any, info: Any) -> None:
            if info['source_timestamp'] >= self._since_ns and self._is_local(
                    topic, _gid(info.get('publisher_gid'))):
                local.dds_dropped += 1
                return
            if with_info:
                callback(msg, info)
            else:
                callback(msg)
        return on_dds

    def _is_local(self, topic: _Topic, gid: bytes) -> bool:
        """Whether ``gid`` is a paired publisher of ``topic`` (asks the graph once per GID)."""
        if gid in topic.local_gids:
            return True
        if gid in topic.remote_gids or not gid:
            return False
        for info in self._host.get_publishers_info_by_topic(topic.name):
            if (info.node_namespace, info.node_name) in topic.local_nodes:
                topic.local_gids.add(_gid(info.endpoint_gid))
        if gid in topic.local_gids:
            return True
        topic.remote_gids.add(gid)
        return False
