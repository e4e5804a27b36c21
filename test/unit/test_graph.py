"""One graph definition: the launch file and realm-ros paired-eval cannot drift apart."""

import ast
import pathlib
import re

import pytest

from realm_ros.core.errors import ConfigError
from realm_ros.core.evaluation import EvalConfig
from realm_ros.graph import NODE_CLASSES, evaluator_parameters, paired_eval_graph, share_path

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _package(call):
    value = next((k.value for k in call.keywords if k.arg == 'package'), None)
    return value.value if isinstance(value, ast.Constant) else None


def _console_scripts():
    return set(re.findall(r"'([\w\-]+)\s*=\s*realm_ros[\w.]*:\w+'",
                          (ROOT / 'setup.py').read_text()))


@pytest.mark.parametrize('real', ['digital_real', 'franka'])
def test_graph_executables_are_console_scripts_with_node_classes(real):
    policies = ('scripted:3', 'scripted:0') if real == 'digital_real' else ('pi05=openpi', 'hold')
    graph = paired_eval_graph(EvalConfig(real=real, policies=policies), 'out', monitor=True,
                              record=True)
    scripts = _console_scripts()
    for spec in graph:
        assert spec.executable in scripts, spec.executable
        assert spec.executable in NODE_CLASSES
    names = {(s.namespace, s.name) for s in graph}
    assert {('/real', 'world'), ('/sim', 'world'), ('/real', 'policy'), ('/sim', 'policy'),
            ('', 'evaluator')} <= names
    assert (('/real/franka', 'digital_real') in names) == (real == 'digital_real')
    assert {('', 'recorder_real'), ('', 'recorder_sim'), ('', 'monitor')} <= names
    evaluator = next(s for s in graph if s.name == 'evaluator')
    assert evaluator.parameters['recorders'] == '/recorder_real,/recorder_sim'
    assert (('/real', 'operator') in names) == (real == 'franka')


def test_each_lockstep_world_keeps_its_own_clock():
    for spec in paired_eval_graph(EvalConfig(), 'out'):
        if spec.namespace:
            world = spec.namespace.split('/')[1]
            assert ('/clock', f'/{world}/clock') in spec.remappings


def test_scripted_policies_cannot_target_a_real_arm():
    with pytest.raises(ConfigError, match='privileged'):
        paired_eval_graph(EvalConfig(real='franka'), 'out')


def test_launch_file_and_cli_build_nodes_from_the_same_definition():
    launch = ast.parse((ROOT / 'launch' / 'paired_eval.launch.py').read_text())
    cli = ast.parse((ROOT / 'realm_ros' / 'commands' / 'paired_eval.py').read_text())
    for tree in (launch, cli):
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                    and n.module == 'realm_ros.graph' for a in n.names}
        assert {'paired_eval_graph', 'evaluator_parameters'} <= imported
        # Neither adds a realm_ros node of its own (launch adds rviz2 and, included,
        # robot_state_publisher: processes the in-process CLI cannot host).
        creates = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
                   and getattr(n.func, 'id', getattr(n.func, 'attr', '')) == 'Node'
                   and _package(n) in (None, 'realm_ros')]
        assert len(creates) <= 1


def test_evaluator_gets_the_whole_config_and_no_empty_lists():
    config = EvalConfig(tasks=('pick_spoon', 'open_drawer'))
    spec = next(s for s in paired_eval_graph(config, 'out') if s.name == 'evaluator')
    params = evaluator_parameters(spec, config)
    assert params['tasks'] == ['pick_spoon', 'open_drawer'] and params['out_dir'] == 'out'
    assert not any(isinstance(v, list) and not v for v in params.values())


def test_default_config_file_is_found_and_valid():
    config = EvalConfig.from_yaml(share_path('config/paired_eval.yaml'))
    assert len(config.policies) >= 4 and len(config.tasks) >= 3


# -- parameter consistency: launch arguments -> graph -> node schemas ---------------------------

def _declared_parameters() -> dict[str, set[str]]:
    """Every parameter each executable declares (its schemas, as ros/params.declare_config)."""
    import dataclasses

    from realm_ros.core.annotation import OperatorConfig
    from realm_ros.core.config import (
        DigitalRealConfig,
        FrankaBridgeConfig,
        PolicyNodeConfig,
        SafetyConfig,
        WorldConfig,
    )
    from realm_ros.core.monitor import MonitorConfig
    from realm_ros.core.recording import RecorderConfig
    from realm_ros.nodes.evaluator_node import EvaluatorConfig

    def names(cls, prefix=''):
        return {prefix + f.name for f in dataclasses.fields(cls)}

    common = {'use_sim_time'}
    return {
        'world_node': names(WorldConfig) | names(FrankaBridgeConfig, 'franka.')
        | names(SafetyConfig, 'safety.') | {'episode_spec'} | common,
        'digital_real': names(DigitalRealConfig) | {'episode_spec'} | common,
        'policy_node': names(PolicyNodeConfig) | common,
        'evaluator_node': names(EvalConfig) | names(EvaluatorConfig) | common,
        'recorder_node': names(RecorderConfig) | common,
        'monitor_node': names(MonitorConfig) | common,
        'operator_node': names(OperatorConfig) | {'episode_spec'} | common,
    }


def _graphs():
    from realm_ros.graph import ARM_IDS, GRIPPERS
    for real, policies in (('digital_real', ('scripted:1',)), ('franka', ('pi05=openpi',))):
        for arm in ARM_IDS:
            for gripper in GRIPPERS:
                config = EvalConfig(real=real, policies=policies)
                yield (real, arm, gripper), config, paired_eval_graph(
                    config, 'out', monitor=True, record=True, arm=arm, gripper=gripper)


def test_every_graph_parameter_is_declared_by_its_node_and_valid():
    from realm_ros.core.config import DigitalRealConfig, FrankaBridgeConfig, WorldConfig

    declared = _declared_parameters()
    for case, config, graph in _graphs():
        for spec in graph:
            params = evaluator_parameters(spec, config)
            unknown = set(params) - declared[spec.executable]
            assert not unknown, (case, spec.executable, sorted(unknown))
            if spec.executable == 'world_node' and params.get('backend') == 'franka':
                # The values pass the node's own validation (choices, ranges).
                FrankaBridgeConfig(**{k.split('.', 1)[1]: v for k, v in params.items()
                                      if k.startswith('franka.')})
                WorldConfig(**{k: v for k, v in params.items()
                               if '.' not in k and k != 'use_sim_time'})
            if spec.executable == 'digital_real':
                DigitalRealConfig(**{k: v for k, v in params.items() if k != 'use_sim_time'})


def test_arm_id_gives_the_bridge_and_the_digital_real_the_same_joint_names():
    from realm_ros.graph import arm_id
    for (real, arm, _), _, graph in _graphs():
        by_exe = {s.executable: s.parameters for s in graph if s.namespace != '/sim'}
        world = by_exe['world_node']
        names = {v for k, v in world.items() if k in ('franka.arm_id', 'joint_prefix')}
        assert names and {n.rstrip('_') for n in names} == {arm_id(arm)}, (arm, world)
        if real == 'digital_real':
            robot = by_exe['digital_real']
            robot_names = {v for k, v in robot.items() if k in ('arm_id', 'arm_prefix')}
            assert {n.rstrip('_') for n in robot_names} == {arm_id(arm)}, (arm, robot)
    assert arm_id('panda') == 'fer'
    with pytest.raises(ConfigError, match='arm_id'):
        arm_id('ur5')


def test_node_names_are_unique_and_no_interactive_node_in_launch():
    for case, _, graph in _graphs():
        names = [(s.namespace, s.name) for s in graph]
        assert len(names) == len(set(names)), case
    launched = paired_eval_graph(EvalConfig(real='franka', policies=('pi05=openpi',)), 'out',
                                 operator=False)
    assert 'operator_node' not in {s.executable for s in launched}
    launch = (ROOT / 'launch' / 'paired_eval.launch.py').read_text()
    assert 'operator=False' in launch


def _launch_arguments(path):
    tree = ast.parse(path.read_text())
    found = {}
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and getattr(call.func, 'id', '') == 'DeclareLaunchArgument':
            kw = {k.arg: k.value for k in call.keywords}
            choices = kw.get('choices')
            found[call.args[0].value] = (
                kw['default_value'].value if isinstance(kw.get('default_value'), ast.Constant)
                else None,
                [e.value for e in choices.elts] if isinstance(choices, ast.List) else None)
    return found


def test_arm_and_gripper_launch_arguments_match_the_graph():
    import inspect

    from realm_ros.graph import ARM_IDS, GRIPPERS
    defaults = inspect.signature(paired_eval_graph).parameters
    for path in sorted((ROOT / 'launch').glob('*.launch.py')):
        args = _launch_arguments(path)
        if 'arm_id' in args:
            assert args['arm_id'] == (defaults['arm'].default, list(ARM_IDS)), path.name
        if 'gripper' in args:
            assert args['gripper'] == (defaults['gripper'].default, list(GRIPPERS)), path.name
    for name in ('paired_eval', 'world', 'sysid_record'):
        args = _launch_arguments(ROOT / 'launch' / f'{name}.launch.py')
        assert {'arm_id', 'gripper'} <= set(args), name


def test_paired_launch_shuts_the_graph_down_when_the_evaluator_exits():
    tree = ast.parse((ROOT / 'launch' / 'paired_eval.launch.py').read_text())
    called = {getattr(n.func, 'id', getattr(n.func, 'attr', '')) for n in ast.walk(tree)
              if isinstance(n, ast.Call)}
    assert {'RegisterEventHandler', 'OnProcessExit', 'Shutdown'} <= called
    # One robot_state_publisher per world, TF prefixes real/ and sim/ (RViz's TF Prefix).
    text = (ROOT / 'launch' / 'paired_eval.launch.py').read_text()
    assert "_description('real')" in text and "_description('sim')" in text
    assert "'frame_prefix': f'{world}/'" in text
