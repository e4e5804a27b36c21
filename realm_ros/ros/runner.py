"""The one ``main()`` body of a realm_ros node executable.

The Humble/Jazzy idiom: ``rclpy.init()`` ... ``try/finally`` with ``rclpy.try_shutdown()``.
A bad parameter (:class:`ConfigError`) exits 2 with one line naming the field; Ctrl-C and an
external shutdown end the node cleanly; ``close`` releases what the node holds (a world, a
policy) before the node is destroyed.
"""

from __future__ import annotations

import sys
from typing import Callable, Sequence

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node

from realm_ros.core.errors import ConfigError


def spin_node(prog: str, factory: Callable[[], Node], args: Sequence[str] | None = None,
              close: Callable[[Node], None] | None = None) -> int:
    """Build the node with ``factory`` and spin it until interrupted; return the exit code."""
    rclpy.init(args=args)
    node = None
    try:
        node = factory()
        rclpy.spin(node)
    except ConfigError as err:
        print(f'{prog}: invalid parameter: {err}', file=sys.stderr)
        return 2
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            if close is not None:
                close(node)
            node.destroy_node()
        rclpy.try_shutdown()
    return 0
