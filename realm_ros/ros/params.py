"""Declare a core config dataclass as ROS parameters, with descriptions, and read it back.

The dataclass in ``realm_ros.core.config`` is the schema (docs/parameters.md): each field becomes a
parameter with its type, default and ``metadata['help']`` as description.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, TypeVar

from rcl_interfaces.msg import ParameterDescriptor, ParameterType
from rclpy.node import Node
from rclpy.parameter import Parameter

from realm_ros.core.config import from_mapping

T = TypeVar('T')

_ARRAY_TYPES = {
    str: ParameterType.PARAMETER_STRING_ARRAY,
    float: ParameterType.PARAMETER_DOUBLE_ARRAY,
    int: ParameterType.PARAMETER_INTEGER_ARRAY,
    bool: ParameterType.PARAMETER_BOOL_ARRAY,
}
_SCALAR_TYPES = {
    str: ParameterType.PARAMETER_STRING,
    float: ParameterType.PARAMETER_DOUBLE,
    int: ParameterType.PARAMETER_INTEGER,
    bool: ParameterType.PARAMETER_BOOL,
}


def _descriptor(f: dataclasses.Field, default: Any) -> ParameterDescriptor:
    text = f.metadata.get('help', '')
    choices = f.metadata.get('choices')
    if choices:
        text += f' (one of: {", ".join(repr(c) for c in choices)})'
    if isinstance(default, tuple):
        elem = type(default[0]) if default else str
        ptype = _ARRAY_TYPES[elem]
    else:
        ptype = _SCALAR_TYPES[type(default)]
    return ParameterDescriptor(description=text, type=ptype)


def declare_config(node: Node, cls: type[T], prefix: str = '',
                   overrides: Mapping[str, Any] | None = None) -> T:
    """Declare every field of ``cls`` on ``node`` and return the validated config.

    Raises:
        ConfigError: a parameter value is invalid; the message names the field.
    """
    values = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        if overrides and f.name in overrides:
            default = overrides[f.name]
        name = f'{prefix}{f.name}'
        descriptor = _descriptor(f, default)
        if isinstance(default, tuple) and not default:
            # An empty list has no type of its own: declare the typed parameter unset.
            param = node.declare_parameter(name, Parameter.Type(descriptor.type), descriptor)
        else:
            param = node.declare_parameter(
                name, list(default) if isinstance(default, tuple) else default, descriptor)
        value = param.value
        if isinstance(default, float) and isinstance(value, int):
            value = float(value)
        if isinstance(default, tuple):
            value = tuple(value) if value is not None else ()
        values[f.name] = value
    return from_mapping(cls, values, where=f'parameters of node {node.get_name()!r}')


#: The string parameter through which the evaluator hands a node the pair's EpisodeSpec (JSON;
#: ``''`` = none given). world_node, digital_real, monitor_node and operator_node declare it.
EPISODE_SPEC = 'episode_spec'


def declare_episode_spec(node: Node, use: str) -> None:
    """Declare :data:`EPISODE_SPEC` on ``node``; ``use`` says what the node does with it."""
    node.declare_parameter(EPISODE_SPEC, '', ParameterDescriptor(
        description=f'JSON EpisodeSpec {use}'))


def episode_spec_text(node: Node) -> str:
    """Return the node's :data:`EPISODE_SPEC` parameter (``''`` when none was set)."""
    return str(node.get_parameter(EPISODE_SPEC).value or '')
