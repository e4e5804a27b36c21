"""Launch files, read as source (``launch`` cannot be installed here), and the config YAMLs.

Generic over ``launch/*.launch.py``, so a new launch file is covered by being added. Checked:
the file parses and defines ``generate_launch_description``; every realm_ros executable it
starts is a console script in setup.py; every package-share path it builds (``config/``,
``launch/``, ``urdf/``, ``rviz/`` ...) exists in the repo; every ``DeclareLaunchArgument`` has a
non-empty description and a default value that is one of its ``choices``; every
``LaunchConfiguration`` it reads is declared in the same file; and the included launch files
receive only arguments they declare. Config YAMLs name only parameters of their node's schema.
"""

import ast
import dataclasses
import pathlib
import re

from launchchoices import launch_choices
import pytest
import yaml

from realm_ros.core.annotation import OperatorConfig
from realm_ros.core.config import DigitalRealConfig, FrankaBridgeConfig, SafetyConfig, WorldConfig
from realm_ros.core.monitor import MonitorConfig
from realm_ros.core.recording import RecorderConfig

ROOT = pathlib.Path(__file__).resolve().parents[2]
LAUNCH_FILES = sorted((ROOT / 'launch').glob('*.launch.py'))
SHARE_FOLDERS = ('config', 'launch', 'urdf', 'rviz', 'realm_ros')


def _console_scripts():
    text = (ROOT / 'setup.py').read_text()
    return set(re.findall(r"'([\w\-]+)\s*=\s*realm_ros[\w.]*:\w+'", text))


def _name(func):
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ''


def _calls(tree, name):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _name(n.func) == name]


def _kw(call, key):
    return next((k.value for k in call.keywords if k.arg == key), None)


def _const(node):
    return node.value if isinstance(node, ast.Constant) else None


def _strings(node):
    """Flatten string constants of a call argument (lists included), in order."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return [s for elt in node.elts for s in _strings(elt)]
    value = _const(node)
    return [value] if isinstance(value, str) else []


def _uses_graph(tree):
    return any(isinstance(n, ast.ImportFrom) and n.module == 'realm_ros.graph'
               for n in ast.walk(tree))


def _declared(tree):
    return {_const(c.args[0]): c for c in _calls(tree, 'DeclareLaunchArgument')}


@pytest.fixture(params=LAUNCH_FILES, ids=lambda p: p.name)
def launch_file(request):
    return request.param, ast.parse(request.param.read_text())


def test_there_are_launch_files():
    names = {p.name for p in LAUNCH_FILES}
    assert {'world.launch.py', 'sysid_record.launch.py', 'monitor.launch.py'} <= names


def test_defines_generate_launch_description(launch_file):
    _, tree = launch_file
    assert any(isinstance(n, ast.FunctionDef) and n.name == 'generate_launch_description'
               for n in tree.body)


def test_realm_ros_executables_are_console_scripts(launch_file):
    _, tree = launch_file
    scripts = _console_scripts()
    for call in _calls(tree, 'Node'):
        if _const(_kw(call, 'package')) != 'realm_ros':
            continue
        exe = _const(_kw(call, 'executable'))
        if exe is None and _uses_graph(tree):
            continue  # executables come from realm_ros.graph: test_graph.py checks them
        assert exe, f'line {call.lineno}: realm_ros Node without a literal executable'
        assert exe in scripts, \
            f'line {call.lineno}: executable {exe!r} is not a console script in setup.py'


def test_referenced_share_files_exist(launch_file):
    path, tree = launch_file
    found = 0
    for call in [*_calls(tree, 'PathJoinSubstitution'), *_calls(tree, 'join')]:
        parts = [s for arg in call.args for s in _strings(arg)]
        if parts and parts[0] in SHARE_FOLDERS:
            found += 1
            assert (ROOT.joinpath(*parts)).exists(), \
                f'{path.name} line {call.lineno}: {"/".join(parts)} is not in the repo'
    assert found, f'{path.name} references no package file; is the path check still working?'


def test_arguments_have_descriptions_and_valid_defaults(launch_file):
    path, tree = launch_file
    declared = _declared(tree)
    assert declared, f'{path.name} declares no arguments'
    for name, call in declared.items():
        description = _const(_kw(call, 'description'))
        if description is None and isinstance(_kw(call, 'description'), ast.BinOp):
            description = 'concatenated'
        assert description and len(description) > 10, f'{path.name}: {name} has no description'
        choices = _kw(call, 'choices')
        default = _const(_kw(call, 'default_value'))
        if choices is not None and default is not None:
            assert default in launch_choices(choices, _strings), \
                f'{path.name}: {name} default not in choices'


def test_launch_configurations_are_declared(launch_file):
    path, tree = launch_file
    declared = set(_declared(tree))
    used = {_const(c.args[0]) for c in _calls(tree, 'LaunchConfiguration')}
    used |= {_const(c.args[0]) for c in _calls(tree, 'LaunchConfigurationEquals')}
    assert used <= declared, f'{path.name}: undeclared {sorted(used - declared)}'


def test_included_launch_files_get_only_declared_arguments(launch_file):
    path, tree = launch_file
    for call in _calls(tree, 'IncludeLaunchDescription'):
        target = [s for c in _calls(call, 'PathJoinSubstitution') for a in c.args
                  for s in _strings(a)]
        included = ROOT.joinpath(*target)
        assert included.suffixes[-2:] == ['.launch', '.py'] and included.is_file(), target
        accepted = set(_declared(ast.parse(included.read_text())))
        args = _kw(call, 'launch_arguments')
        mapping = args.func.value if isinstance(args, ast.Call) else args
        keys = {_const(k) for k in mapping.keys} if isinstance(mapping, ast.Dict) else set()
        assert keys and keys <= accepted, \
            f'{path.name} passes {sorted(keys - accepted)} to {included.name}'


def test_only_the_evaluator_writes_to_the_console(launch_file):
    """Under ros2 launch the nodes log to their files; the console is the evaluator's bar and
    tables: every Node is ``output='log'``, except ``'screen' if <the evaluator> else 'log'``."""
    path, tree = launch_file
    for call in _calls(tree, 'Node'):
        output = _kw(call, 'output')
        if isinstance(output, ast.IfExp):
            test = ast.unparse(output.test)
            assert (_const(output.body), _const(output.orelse)) == ('screen', 'log'), \
                f'{path.name} line {call.lineno}: {ast.unparse(output)}'
            assert 'evaluator' in test, f'{path.name} line {call.lineno}: screen when {test}?'
        else:
            assert _const(output) == 'log', \
                f'{path.name} line {call.lineno}: output={ast.unparse(output) if output else None}'


SCHEMAS = {'world.yaml': (WorldConfig, {'episode_spec', 'use_sim_time'}),
           'monitor.yaml': (MonitorConfig, {'episode_spec', 'use_sim_time'}),
           'operator.yaml': (OperatorConfig, {'episode_spec', 'use_sim_time'}),
           'digital_real.yaml': (DigitalRealConfig, {'episode_spec', 'use_sim_time'})}


@pytest.mark.parametrize('name', sorted(SCHEMAS))
def test_config_yaml_names_only_schema_parameters(name):
    schema, extra = SCHEMAS[name]
    data = yaml.safe_load((ROOT / 'config' / name).read_text())
    params = data['/**']['ros__parameters']
    fields = {f.name for f in dataclasses.fields(schema)} | extra
    assert params and set(params) <= fields, sorted(set(params) - fields)
    # The values must also pass the schema's own validation.
    schema(**{k: tuple(v) if isinstance(v, list) else v
              for k, v in params.items() if k not in extra})


def _is_parameter_tree(body):
    """A node's ``ros__parameters``, or namespaces/nodes that each lead to one."""
    if not isinstance(body, dict) or not body:
        return False
    if set(body) == {'ros__parameters'}:
        return True
    return all(_is_parameter_tree(child) for child in body.values())


def test_every_config_yaml_is_a_ros_parameter_file():
    for path in sorted((ROOT / 'config').glob('*.yaml')):
        data = yaml.safe_load(path.read_text())
        assert isinstance(data, dict) and data, path.name
        for node, body in data.items():
            assert _is_parameter_tree(body), f'{path.name}: {node}'


def test_recorder_yaml_names_only_recorder_parameters():
    params = yaml.safe_load((ROOT / 'config' / 'recorder.yaml').read_text())[
        '/**']['ros__parameters']
    assert set(params) <= {f.name for f in dataclasses.fields(RecorderConfig)}
    RecorderConfig(out_dir='bags', **{k: tuple(v) if isinstance(v, list) else v
                                      for k, v in params.items()})


def test_sysid_record_launch_sets_only_real_parameters():
    """Each node's inline parameters are fields of that executable's schema."""
    schemas = {
        'digital_real': {f.name for f in dataclasses.fields(DigitalRealConfig)},
        'recorder_node': {f.name for f in dataclasses.fields(RecorderConfig)},
        'world_node': ({f.name for f in dataclasses.fields(WorldConfig)}
                       | {f'franka.{f.name}' for f in dataclasses.fields(FrankaBridgeConfig)}
                       | {f'safety.{f.name}' for f in dataclasses.fields(SafetyConfig)}),
    }
    tree = ast.parse((ROOT / 'launch' / 'sysid_record.launch.py').read_text())
    dicts = {}  # variable name -> keys of a dict literal assigned to it (``**bridge``)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            dicts[node.targets[0].id] = [_const(k) for k in node.value.keys]
    seen = set()
    for call in _calls(tree, 'Node'):
        executable = _const(_kw(call, 'executable'))
        if executable not in schemas:
            continue
        seen.add(executable)
        for item in ast.walk(_kw(call, 'parameters')):
            if not isinstance(item, ast.Dict):
                continue
            keys = [_const(k) for k in item.keys if k is not None]
            keys += [key for k, v in zip(item.keys, item.values) if k is None
                     for key in dicts.get(getattr(v, 'id', ''), [])]
            assert set(keys) <= schemas[executable], (executable,
                                                      sorted(set(keys) - schemas[executable]))
    assert seen == set(schemas)
