"""A launch argument's choices read from a launch file's source (``launch`` is not installed)."""

import ast
from typing import Callable


def launch_choices(node: ast.AST, literal: Callable[[ast.AST], list]) -> list:
    """Return the choices ``node`` declares: ``realm_ros.graph.backend_choices(...)`` (the
    registered world backends, core/backends.py) evaluated here, else ``literal(node)``."""
    if isinstance(node, ast.Call) and getattr(node.func, 'id', '') == 'backend_choices':
        from realm_ros.graph import backend_choices
        return eval(ast.unparse(node), {'backend_choices': backend_choices})  # noqa: S307
    return literal(node)

