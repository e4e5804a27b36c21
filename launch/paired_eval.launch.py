"""Paired evaluation on a lab machine: real and sim worlds, their policies, the evaluator.

The node list and every parameter come from ``realm_ros.graph.paired_eval_graph``, the same
definition ``realm-ros paired-eval`` runs in one process; this file only maps launch arguments
onto that definition.

    ros2 launch realm_ros paired_eval.launch.py real_backend:=franka policy:=openpi \
        host:=gpu-box port:=8000 sim_params_file:=/path/params.yaml out_dir:=/data/eval1
"""

import json

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

ARGUMENTS = {
    'real_backend': ('fake', 'real world: fake (the digital real) or franka (the arm through '
                             'franka_ros2)'),
    'sim_backend': ('mujoco', 'simulated twin: mujoco or isaac'),
    'policy': ('', 'policy under test for every episode (scripted, openpi, gr00t, torch); '
                   'empty = the policies listed in the config file'),
    'host': ('', 'policy server host (openpi, gr00t)'),
    'port': ('0', 'policy server port (openpi 8000, gr00t 5555); 0 = policy default'),
    'sim_params_file': ('', 'identified twin parameters YAML (realm-ros sysid fit)'),
    'real_dynamics_file': ('', 'digital real hidden dynamics YAML'),
    'config_file': ('', 'evaluation YAML (default: the package config/paired_eval.yaml)'),
    'out_dir': ('realm_eval', 'output folder of the evaluator'),
    'monitor': ('true', 'start monitor_node for RViz'),
}


def _nodes(context):
    from realm_ros.core.evaluation import EvalConfig
    from realm_ros.graph import paired_eval_graph

    def arg(name):
        return LaunchConfiguration(name).perform(context)

    config_file = arg('config_file') or (
        get_package_share_directory('realm_ros') + '/config/paired_eval.yaml')
    overrides = {'real': arg('real_backend'), 'sim': arg('sim_backend'),
                 'sim_params_file': arg('sim_params_file'),
                 'real_dynamics_file': arg('real_dynamics_file')}
    policy = {}
    if arg('policy'):
        label = arg('policy')
        extra = {k: v for k, v in (('host', arg('host')), ('port', int(arg('port'))))
                 if v}
        overrides['policies'] = (
            f'{label}={label}' + (':' + ','.join(f'{k}={v}' for k, v in extra.items())
                                  if extra else ''),)
        policy = {'policy': label, 'policy_args': json.dumps(extra)}
    config = EvalConfig.from_yaml(config_file, **overrides)
    graph = paired_eval_graph(config, arg('out_dir'), policy=policy,
                              monitor=arg('monitor').lower() == 'true')
    actions = []
    for spec in graph:
        params = dict(spec.parameters)
        if spec.executable == 'evaluator_node':
            params.update({k: list(v) if isinstance(v, tuple) else v
                           for k, v in vars(config).items()})
        params = {k: v for k, v in params.items() if not (isinstance(v, list) and not v)}
        actions.append(Node(package='realm_ros', executable=spec.executable, name=spec.name,
                            namespace=spec.namespace, parameters=[params],
                            remappings=list(spec.remappings), output='screen',
                            emulate_tty=True))
    return actions


def generate_launch_description():
    """Declare the arguments, then build the graph from realm_ros.graph at launch time."""
    declared = [DeclareLaunchArgument(name, default_value=default, description=text)
                for name, (default, text) in ARGUMENTS.items()]
    return LaunchDescription(declared + [OpaqueFunction(function=_nodes)])
