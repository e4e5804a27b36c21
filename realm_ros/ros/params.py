"""Declare a core config dataclass as ROS parameters, with descriptions, and read it back.

The dataclass in ``realm_ros.core.config`` is the schema (docs/parameters.md): each field becomes a
parameter with its type, default and ``metadata['help']`` as description.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, TypeVar

from rcl_interfaces.msg import ParameterDescriptor, ParameterType
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.node import Node
from rclpy.parameter import Parameter

from realm_ros.core.config import from_mapping
from realm_ros.core.errors import ConfigError

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


#: What each parameter type accepts, for error lines.
_TYPE_WORDS = {
    ParameterType.PARAMETER_STRING: 'a string',
    ParameterType.PARAMETER_DOUBLE: 'a number',
    ParameterType.PARAMETER_INTEGER: 'an integer',
    ParameterType.PARAMETER_BOOL: 'true or false',
    ParameterType.PARAMETER_STRING_ARRAY: 'a list of strings, e.g. [a, b]',
    ParameterType.PARAMETER_DOUBLE_ARRAY: 'a list of numbers, e.g. [0.1, 0.2]',
    ParameterType.PARAMETER_INTEGER_ARRAY: 'a list of integers, e.g. [1, 2]',
    ParameterType.PARAMETER_BOOL_ARRAY: 'a list of true/false',
}
#: Given type -> expected type that takes it unchanged in meaning (an integer for a number).
_WIDENED = {
    (ParameterType.PARAMETER_INTEGER, ParameterType.PARAMETER_DOUBLE): float,
    (ParameterType.PARAMETER_INTEGER_ARRAY, ParameterType.PARAMETER_DOUBLE_ARRAY): float,
}


def type_words(ptype: int) -> str:
    """Say what a parameter of ``ParameterType`` ``ptype`` takes (``'a number'``)."""
    return _TYPE_WORDS.get(ptype, Parameter.Type(ptype).name.lower())


def _given(node: Node, name: str) -> Parameter | None:
    """The value given for ``name`` on the command line or in a parameter file, if any."""
    # rclpy keeps the overrides (``-p``, ``--params-file``) until a parameter is declared.
    overrides: dict[str, Parameter] = getattr(node, '_parameter_overrides', {})
    return overrides.get(name)


def _widen_override(node: Node, name: str, ptype: int) -> None:
    """Let an integer stand for a number (``-p state_timeout_s:=1`` for 1.0)."""
    given = _given(node, name)
    if given is None:
        return
    cast = _WIDENED.get((given.type_.value, ptype))
    if cast is None:
        return
    value = given.value
    value = [cast(v) for v in value] if isinstance(value, (list, tuple)) else cast(value)
    node._parameter_overrides[name] = Parameter(name, Parameter.Type(ptype), value)


def declare_typed(node: Node, name: str, default: Any,
                  descriptor: ParameterDescriptor) -> Parameter:
    """``node.declare_parameter`` that turns a value of the wrong type into a ConfigError naming
    the parameter and the type it takes (one line, no traceback); an integer is taken for a
    number."""
    _widen_override(node, name, descriptor.type)
    try:
        return node.declare_parameter(name, default, descriptor)
    except (InvalidParameterTypeException, InvalidParameterValueException) as err:
        given = _given(node, name)
        got = (f'{given.value!r} ({type_words(given.type_.value)})' if given is not None
               else str(err))
        raise ConfigError(f'parameter {name!r} of node {node.get_name()!r} must be '
                          f'{type_words(descriptor.type)}, got {got}') from None


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


def _factory_default(f: dataclasses.Field) -> Any:
    factory: Any = f.default_factory  # every schema field has a default or a factory
    return factory()


def declare_config(node: Node, cls: type[T], prefix: str = '',
                   overrides: Mapping[str, Any] | None = None) -> T:
    """Declare every field of ``cls`` on ``node`` and return the validated config.

    Raises:
        ConfigError: a parameter value is invalid; the message names the field.
    """
    values = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        default = f.default if f.default is not dataclasses.MISSING else _factory_default(f)
        if overrides and f.name in overrides:
            default = overrides[f.name]
        name = f'{prefix}{f.name}'
        descriptor = _descriptor(f, default)
        if isinstance(default, tuple) and not default:
            # An empty list has no type of its own: declare the typed parameter unset.
            param = declare_typed(node, name, Parameter.Type(descriptor.type), descriptor)
        else:
            param = declare_typed(
                node, name, list(default) if isinstance(default, tuple) else default, descriptor)
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
