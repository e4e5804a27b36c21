"""Intra-process delivery between the nodes of one process (rclcpp's ``use_intra_process_comms``).

rclpy has no intra-process communication: a message from one node to another in the same
process is converted to C, serialised, handed to DDS, deserialised and converted back, which
costs more than a lockstep control step itself (docs/performance.md, "ROS overhead").
:class:`IntraProcess` pairs, in one process, each publisher with the subscriptions of the same
topic (same type, QoS that DDS would match, no content filter, a callback that takes only the
message) and delivers the message object itself to those subscriptions:

* **through the executor**, never as a nested call: ``publish`` only queues the message;
  :class:`IntraProcess` wraps the process's executor (it is what the container spins), and
  each :meth:`IntraProcess.spin_once` delivers what was queued then and lets the wrapped
  executor serve one waiting DDS event, timer or service call (a callback that publishes again
  queues for the next turn, so a lockstep world/policy pair never recurses and DDS is never
  starved; while in-process messages keep coming, one DDS turn every :attr:`DDS_PERIOD_S`, since
  one ``spin_once(timeout_sec=0)`` of the events executor costs about 200 us of CPU here (5 % of
  a lockstep episode's CPU when made every 8 deliveries, py-spy). rclpy's events executor has
  no guard conditions to wake it;
* **in order, every message**: one FIFO across topics (a step's ``privileged_state`` reaches the
  policy before its ``joint_states``, as published); each subscription keeps at most its QoS
  ``depth`` undelivered messages (``KEEP_LAST``), as a DDS reader's history would;
* **on DDS too when someone else listens**: the publisher still publishes on DDS when it has
  more matched subscriptions than its paired local ones (a recorder, the evaluator, RViz, a
  ``ros2 topic echo`` from another process), so they see every message; a transient-local
  (latched) publisher always does, so that a late joiner gets the last message from DDS's
  history. The paired local subscriptions drop the DDS copy of a message they were given in
  process (the rmw's ``ignore_local_publications``, which rclpy does not expose): each keeps
  the messages it is owed a DDS copy of and drops an arriving message equal to one of them
  (DDS keeps a writer's order; the publisher GID would need a callback that takes a
  ``MessageInfo``, which made rclpy 9.1's events executor raise ``SystemError`` from
  ``spin_once`` here). A message published before the pairing arrives over DDS as before;
  world_policy_container pairs the nodes before the world publishes anything
  (``WorldNode(start=False)``), so that the policy gets the episode message before that
  episode's observations;
* messages from publishers outside the pairing (another process, or an entity created after
  :meth:`IntraProcess.connect`) arrive over DDS as before.

As in rclcpp with several subscriptions, the message object is shared: a subscription callback
must not modify the message it is given.
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

    __slots__ = ('subscription', 'callback', 'queue', 'owed', 'dds_dropped')

    def __init__(self, subscription: Subscription) -> None:
        self.subscription = subscription
        qos = subscription.qos_profile
        depth = qos.depth if qos.history is not HistoryPolicy.KEEP_ALL else None
        self.queue: collections.deque[Any] = collections.deque(maxlen=depth or None)
        self.callback: Callable[..., None] = subscription.callback
        #: Messages delivered in process whose DDS copy has not arrived yet (bounded: a copy
        #: that never comes, to a reader not matched yet, is forgotten).
        self.owed: collections.deque[Any] = collections.deque(maxlen=64)
        #: DDS copies of locally delivered messages dropped (for tests and diagnostics).
        self.dds_dropped = 0


class _Topic:
    """The publishers and subscriptions of one topic that are paired in this process."""

    __slots__ = ('name', 'publishers', 'subscriptions')

    def __init__(self, name: str) -> None:
        self.name = name
        self.publishers: list[Any] = []
        self.subscriptions: list[_LocalSubscription] = []


def _pairable(pub_qos: Any, sub_qos: Any) -> bool:
    """Whether DDS would match these (a volatile publisher never serves a transient-local
    subscription, a best-effort one never a reliable one)."""
    compatibility, _reason = qos_check_compatible(pub_qos, sub_qos)
    return compatibility is not QoSCompatibility.ERROR  # WARNING: system-default liveliness


class IntraProcess:
    """An executor that also delivers messages between its nodes without DDS (module text).

    ``executor``: the executor to wrap (rclpy's events executor or any rclpy executor); add
    the nodes with :meth:`add_node`, call :meth:`connect` once they are all built, then spin
    with :meth:`spin_once` (or :meth:`spin`). ``add_node``, ``remove_node`` and ``shutdown`` are
    the wrapped executor's.
    """

    #: While messages keep coming in process (a lockstep pair), the wrapped executor gets a
    #: turn (one waiting DDS event, timer or service call) at least this often, s; once the
    #: in-process traffic pauses it serves everything as usual.
    DDS_PERIOD_S = 0.02

    def __init__(self, executor: Any) -> None:
        self.executor = executor
        self._nodes: list[Node] = []
        self._ready: collections.deque[_LocalSubscription] = collections.deque()
        self._next_turn = 0.0
        self.topics: dict[str, _Topic] = {}
        #: Messages delivered in process, and published on DDS as well (external listeners).
        self.delivered = 0
        self.published_dds = 0

    # -- the executor -----------------------------------------------------------------------

    def add_node(self, node: Node) -> bool:
        self._nodes.append(node)
        return self.executor.add_node(node)

    def remove_node(self, node: Node) -> None:
        if node in self._nodes:
            self._nodes.remove(node)
        self.executor.remove_node(node)

    def shutdown(self, timeout_sec: float | None = None) -> bool:
        return self.executor.shutdown(timeout_sec=timeout_sec)

    def spin_once(self, timeout_sec: float | None = None) -> None:
        """Deliver what is queued in process, else wait up to ``timeout_sec`` for DDS work."""
        if self._ready:
            self._deliver()
            now = time.monotonic()
            if now >= self._next_turn:
                self._next_turn = now + self.DDS_PERIOD_S
                self.executor.spin_once(timeout_sec=0)  # one waiting DDS event, if any
        else:
            self.executor.spin_once(timeout_sec=timeout_sec)

    def spin(self) -> None:
        import rclpy
        while rclpy.ok(context=self.executor.context):
            self.spin_once(timeout_sec=0.1)

    @property
    def pending(self) -> int:
        """Messages queued for in-process delivery."""
        return len(self._ready)

    # -- pairing ------------------------------------------------------------------------------

    def connect(self, nodes: Iterable[Node] | None = None) -> dict[str, tuple[int, int]]:
        """Pair the publishers and subscriptions of ``nodes`` (default: the added ones) and
        return {topic: (publishers, subscriptions)} paired."""
        nodes = list(self._nodes if nodes is None else nodes)
        publishers = [pub for node in nodes for pub in node.publishers]
        # A callback that takes a MessageInfo stays on DDS (its publisher GID, sequence numbers).
        subscriptions = [sub for node in nodes for sub in node.subscriptions
                         if sub._callback_type is Subscription.CallbackType.MessageOnly]
        for pub in publishers:
            name = pub.topic_name
            subs = [s for s in subscriptions if s.topic_name == name
                    and s.msg_type is pub.msg_type and not s.raw
                    and not s.is_cft_enabled and _pairable(pub.qos_profile, s.qos_profile)]
            if not subs:
                continue
            topic = self.topics.setdefault(name, _Topic(name))
            topic.publishers.append(pub)
            for sub in subs:
                if all(local.subscription is not sub for local in topic.subscriptions):
                    local = _LocalSubscription(sub)
                    topic.subscriptions.append(local)
                    sub.callback = self._dds_filter(local)
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
        # A latched publisher keeps DDS's history for late joiners: it always publishes there.
        always = pub.qos_profile.durability is DurabilityPolicy.TRANSIENT_LOCAL

        def publish(msg: Any) -> None:
            if not isinstance(msg, msg_type):
                raise TypeError(f'Expected {msg_type}, got {type(msg)}')
            # Matched subscriptions beyond the paired local ones: someone else listens.
            if always or pub.get_subscription_count() > len(locals_):
                for local in locals_:
                    local.owed.append(msg)
                dds_publish(msg)
                self.published_dds += 1
            for local in locals_:
                local.queue.append(msg)
                ready.append(local)
        return publish

    def _deliver(self) -> None:
        """Deliver what is queued now, in publishing order (from :meth:`spin_once`)."""
        ready = self._ready
        for _ in range(len(ready)):
            local = ready.popleft()
            if not local.queue:
                continue  # dropped by the subscription's KEEP_LAST depth
            msg = local.queue.popleft()
            self.delivered += 1
            local.callback(msg)

    def _dds_filter(self, local: _LocalSubscription) -> Callable[[Any], None]:
        """A subscription callback that drops DDS copies of messages delivered in process."""
        callback, owed = local.callback, local.owed

        def on_dds(msg: Any) -> None:
            for k, sent in enumerate(owed):
                if sent == msg:
                    for _ in range(k + 1):  # older ones' copies did not come: forget them
                        owed.popleft()
                    local.dds_dropped += 1
                    return
            callback(msg)
        return on_dds
