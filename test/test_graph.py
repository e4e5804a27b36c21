"""One graph definition: the launch file and realm-ros paired-eval cannot drift apart."""

import ast
import pathlib
import re

import pytest

from realm_ros.core.errors import ConfigError
from realm_ros.core.evaluation import EvalConfig
from realm_ros.graph import NODE_CLASSES, evaluator_parameters, paired_eval_graph, share_path

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _package(call):
    value = next((k.value for k in call.keywords if k.arg == 'package'), None)
    return value.value if isinstance(value, ast.Constant) else None


def _console_scripts():
    return set(re.findall(r"'([\w\-]+)\s*=\s*realm_ros[\w.]*:\w+'",
                          (ROOT / 'setup.py').read_text()))


@pytest.mark.parametrize('real', ['fake', 'franka'])
def test_graph_executables_are_console_scripts_with_node_classes(real):
    policies = ('scripted:3', 'scripted:0') if real == 'fake' else ('pi05=openpi', 'hold')
    graph = paired_eval_graph(EvalConfig(real=real, policies=policies), 'out', monitor=True,
                              record=True)
    scripts = _console_scripts()
    for spec in graph:
        assert spec.executable in scripts, spec.executable
        assert spec.executable in NODE_CLASSES
    names = {(s.namespace, s.name) for s in graph}
    assert {('/real', 'world'), ('/sim', 'world'), ('/real', 'policy'), ('/sim', 'policy'),
            ('', 'evaluator')} <= names
    assert (('/real/franka', 'fake_franka') in names) == (real == 'fake')
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
