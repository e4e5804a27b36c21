"""A ROS parameter of the wrong type: one line naming the parameter and the type it takes, exit 2,
no traceback, from the real node executables (``--ros-args -p``). Before, rclpy's
``InvalidParameterTypeException`` came out of ``declare_parameter`` as a traceback (exit 1).
An integer for a number is taken (``control_hz:=15``)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from realm_ros.ros.params import type_words

pytestmark = [pytest.mark.ros]

BIN = pathlib.Path(sys.executable).parent

CASES = [
    # (executable, parameters, the error line's parameter and type)
    ('world_node', ['control_hz:=abc'], "'control_hz' of node 'world' must be a number, "
                                        "got 'abc' (a string)"),
    ('world_node', ['cameras:=3'], "'cameras' of node 'world' must be a list of strings"),
    # The franka bridge declares franka.* and safety.* on world_node before it waits for an arm.
    ('world_node', ['backend:=franka', 'safety.state_timeout_s:=abc'],
     "'safety.state_timeout_s' of node 'world' must be a number"),
    ('world_node', ['backend:=franka', 'safety.workspace_min:=7'],
     "'safety.workspace_min' of node 'world' must be a list of numbers"),
    # A parameter the node declares itself (not from a config schema): rclpy's own message.
    ('digital_real', ['auto_recover_s:=soon'], 'auto_recover_s'),
]


def test_wrong_parameter_types_are_one_line_and_exit_2(tmp_path):
    procs = []
    for k, (exe, params, _) in enumerate(CASES):
        args = [str(BIN / exe), '--ros-args', '-r', f'__ns:=/ptype{k}']
        for p in params:
            args += ['-p', p]
        log = open(tmp_path / f'{k}.log', 'w')  # noqa: SIM115 - closed below
        procs.append((subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT), log))
    for (exe, params, expected), (proc, log) in zip(CASES, procs):
        try:
            code = proc.wait(120)
        finally:
            if proc.poll() is None:
                proc.kill()
            log.close()
        text = pathlib.Path(log.name).read_text()
        assert code == 2, (exe, params, text[-2000:])
        assert 'Traceback' not in text, text
        errors = [line for line in text.splitlines() if 'invalid parameter' in line]
        assert len(errors) == 1 and expected in errors[0], text[-2000:]
        assert errors[0].startswith(f'{exe}: invalid parameter: ')


def test_an_integer_is_taken_for_a_number_and_types_are_worded():
    """``-p control_hz:=15`` reaches the config as 15.0 (in-process node)."""
    import rclpy
    from rclpy.parameter import Parameter

    from realm_ros.core.config import SafetyConfig
    from realm_ros.core.errors import ConfigError
    from realm_ros.ros.params import declare_config

    assert type_words(3) == 'a number' and type_words(9) == 'a list of strings, e.g. [a, b]'
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = rclpy.create_node('ptypes', context=context, parameter_overrides=[
            Parameter('safety.state_timeout_s', Parameter.Type.INTEGER, 2),
            Parameter('safety.workspace_min', Parameter.Type.INTEGER_ARRAY, [0, -1, 0])])
        cfg = declare_config(node, SafetyConfig, prefix='safety.')
        assert cfg.state_timeout_s == 2.0 and isinstance(cfg.state_timeout_s, float)
        assert cfg.workspace_min == (0.0, -1.0, 0.0)
        node.destroy_node()
        node = rclpy.create_node('ptypes2', context=context, parameter_overrides=[
            Parameter('safety.watchdog_s', Parameter.Type.STRING, 'abc')])
        with pytest.raises(ConfigError, match="'safety.watchdog_s' of node 'ptypes2' must be "
                                              "a number, got 'abc'"):
            declare_config(node, SafetyConfig, prefix='safety.')
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)
