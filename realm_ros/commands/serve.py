"""``realm-ros serve``: serve a realm_ros policy over openpi's websocket protocol."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: see :func:`realm_ros.policies.server.add_arguments`."""
    from realm_ros.policies import server
    server.add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted (or ``--max-seconds``)."""
    from realm_ros.policies import server
    return server.run(args)
