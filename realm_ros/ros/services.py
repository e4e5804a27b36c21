"""One generic helper to call a service and wait, from a thread outside the executor.

No copy-pasted per-service client methods. The evaluator runs its episode loop in
a worker thread while a (multi-threaded) executor spins the node, so waiting on a future here
never blocks a callback (the nav2 simple-commander facade works only outside the executor too).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from rclpy.node import Node

from realm_ros.core.errors import InfrastructureError

#: Seconds a new client waits after the service is discovered, before its first request.
#: ``wait_for_service`` returns once the client has matched the server; the server's response
#: writer can match the client's response reader a little later, and a response sent before
#: that is dropped (Fast DDS logs "failed to send response (timeout)" in the server, and the
#: caller waits out its whole timeout: seen once in four ``bench/launch_check.py paired`` runs,
#: a world reset 0.3 s after the world came up).
NEW_CLIENT_SETTLE_S = 0.3


def ready_client(node: Node, srv_type: Any, name: str, timeout_s: float = 30.0,
                 clients: dict | None = None) -> Any:
    """Return a client of service ``name`` that has matched its server; raise
    InfrastructureError if the service does not appear within ``timeout_s``.

    ``clients`` caches clients per (type, name) so repeated calls reuse one client. A client
    that has just matched waits :data:`NEW_CLIENT_SETTLE_S` before it is returned."""
    key = (srv_type, name)
    client = clients.get(key) if clients is not None else None
    new = client is None
    if client is None:
        client = node.create_client(srv_type, name)
        if clients is not None:
            clients[key] = client
    ready = client.service_is_ready()
    if not ready and not client.wait_for_service(timeout_sec=timeout_s):
        raise InfrastructureError(f'service {name} is not available after {timeout_s:g} s; '
                                  'is the node running?')
    if new or not ready:  # just matched: let the response path match too
        time.sleep(NEW_CLIENT_SETTLE_S)
    return client


def call(node: Node, srv_type: Any, name: str, request: Any | None = None,
         timeout_s: float = 30.0, clients: dict | None = None) -> Any:
    """Call service ``name`` and return its response; raise InfrastructureError on timeout.

    ``clients`` caches clients per (type, name) so repeated calls reuse one client
    (:func:`ready_client`).
    """
    client = ready_client(node, srv_type, name, timeout_s, clients)
    done = threading.Event()
    future = client.call_async(request if request is not None else srv_type.Request())
    future.add_done_callback(lambda _: done.set())
    if not done.wait(timeout_s):
        future.cancel()
        raise InfrastructureError(f'service {name} did not answer within {timeout_s:g} s')
    if future.exception() is not None:
        raise InfrastructureError(f'service {name} failed: {future.exception()}')
    return future.result()


def _value(value: Any) -> ParameterValue:
    if isinstance(value, bool):
        return ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=value)
    if isinstance(value, int):
        return ParameterValue(type=ParameterType.PARAMETER_INTEGER, integer_value=value)
    if isinstance(value, float):
        return ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=value)
    if isinstance(value, str):
        return ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value)
    raise TypeError(f'unsupported parameter value {value!r}')


def set_parameters(node: Node, target_node: str, values: dict[str, Any],
                   timeout_s: float = 30.0, clients: dict | None = None) -> None:
    """Set parameters on ``target_node`` (fully qualified name) and check every result."""
    request = SetParameters.Request()
    request.parameters = [Parameter(name=k, value=_value(v)) for k, v in values.items()]
    response = call(node, SetParameters, f'{target_node}/set_parameters', request, timeout_s,
                    clients)
    failed = [f'{p.name}: {r.reason}' for p, r in zip(request.parameters, response.results)
              if not r.successful]
    if failed:
        raise InfrastructureError(f'{target_node} refused parameters: {failed}')


def recorder_status(node: Node, recorders: str, timeout_s: float = 30.0,
                    clients: dict | None = None) -> list[dict[str, Any]]:
    """Return each recorder's ``~/status`` (JSON: bag, counts, namespace, first_ns, last_ns).

    ``recorders`` is the evaluator's comma-separated list of fully qualified recorder names. A
    recorder that does not answer is logged and left out: its episode then has no bag-map line
    (the episode itself is still recorded and scored).
    """
    from std_srvs.srv import Trigger

    answers = []
    for name in filter(None, (r.strip() for r in recorders.split(','))):
        try:
            answers.append(json.loads(call(node, Trigger, f'{name}/status',
                                           timeout_s=timeout_s, clients=clients).message))
        except (InfrastructureError, json.JSONDecodeError) as err:
            node.get_logger().error(f'{name} status: {err}; its bag is not mapped')
    return answers
