"""``realm-ros serve``: serve a realm_ros policy over openpi's websocket protocol."""

from __future__ import annotations

import argparse

from realm_ros.commands import non_negative_float, non_negative_int, port

#: The server's numeric flags and their argparse types (:func:`realm_ros.commands.number`):
#: refused when parsed, naming the flag, as in every command.
NUMBERS = {'port': port, 'chunk_size': non_negative_int, 'max_seconds': non_negative_float}

#: Registered policies that read privileged simulator state (``PolicyNeeds.privileged``): an
#: openpi request does not carry it, so the server refuses them (saying why) and ``--policy``'s
#: help does not offer them (test/unit/test_cli_docs.py checks the list against the policies'
#: own needs).
PRIVILEGED = ('scripted',)


def served_policies() -> list[str]:
    """The registered policies ``realm-ros serve`` serves."""
    from realm_ros.core.policy import POLICIES
    return [name for name in sorted(POLICIES) if name not in PRIVILEGED]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: see :func:`realm_ros.policies.server.add_arguments`; ``--policy`` lists only
    the policies this command serves."""
    from realm_ros.policies import server
    server.add_arguments(parser)
    # Listed, not argparse choices: asked for a privileged one, the server says why it cannot.
    for action in parser._actions:  # argparse has no public way to amend a declared option
        action.type = NUMBERS.get(action.dest, action.type)
        if action.dest == 'policy':
            action.help = (f'registered policy to serve: {", ".join(served_policies())} (not '
                           'scripted: it reads simulator state a request does not carry)')


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted (or ``--max-seconds``)."""
    from realm_ros.policies import server
    return server.run(args)
