"""Paired evaluation on a lab machine: real and sim worlds, their policies, the evaluator.

The node list and every parameter come from ``realm_ros.graph.paired_eval_graph``, the same
definition ``realm-ros paired-eval`` runs in one process; this file only maps launch arguments
onto that definition (test/test_graph.py checks the two agree).

    ros2 launch realm_ros paired_eval.launch.py real_backend:=franka policy:=openpi \
        host:=gpu-box port:=8000 sim_params_file:=/path/params.yaml out_dir:=/data/eval1
"""

import json
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def _nodes(context):
    from realm_ros.core.evaluation import EvalConfig
    from realm_ros.graph import evaluator_parameters, paired_eval_graph

    # Literal names so test/test_launch_files.py can check each is declared.
    values = {
        'real_backend': LaunchConfiguration('real_backend'),
        'sim_backend': LaunchConfiguration('sim_backend'),
        'policy': LaunchConfiguration('policy'),
        'host': LaunchConfiguration('host'),
        'port': LaunchConfiguration('port'),
        'sim_params_file': LaunchConfiguration('sim_params_file'),
        'real_dynamics_file': LaunchConfiguration('real_dynamics_file'),
        'config_file': LaunchConfiguration('config_file'),
        'out_dir': LaunchConfiguration('out_dir'),
        'monitor': LaunchConfiguration('monitor'),
        'record': LaunchConfiguration('record'),
        'cameras': LaunchConfiguration('cameras'),
        'execute_horizon': LaunchConfiguration('execute_horizon'),
    }
    performed = {n: v.perform(context) for n, v in values.items()}

    def arg(name):
        return performed[name]

    config_file = arg('config_file') or os.path.join(
        get_package_share_directory('realm_ros'), 'config', 'paired_eval.yaml')
    overrides = {'real': arg('real_backend'), 'sim': arg('sim_backend'),
                 'sim_params_file': arg('sim_params_file'),
                 'real_dynamics_file': arg('real_dynamics_file')}
    if arg('cameras'):
        overrides['cameras'] = arg('cameras').lower() == 'true'
    policy = {'execute_horizon': int(arg('execute_horizon'))}
    if arg('policy'):
        extra = {k: v for k, v in (('host', arg('host')), ('port', int(arg('port')))) if v}
        suffix = ':' + ','.join(f'{k}={v}' for k, v in extra.items()) if extra else ''
        overrides['policies'] = (f'{arg("policy")}={arg("policy")}{suffix}',)
        policy.update(policy=arg('policy'), policy_args=json.dumps(extra))
    config = EvalConfig.from_yaml(config_file, **overrides)
    graph = paired_eval_graph(config, arg('out_dir'), policy=policy,
                              monitor=arg('monitor').lower() == 'true',
                              record=arg('record').lower() == 'true')
    return [
        Node(package='realm_ros', executable=spec.executable, name=spec.name,
             namespace=spec.namespace,
             parameters=[evaluator_parameters(spec, config)],
             remappings=list(spec.remappings), output='screen', emulate_tty=True)
        for spec in graph
    ]


def generate_launch_description():
    """Declare the arguments; the nodes are built from realm_ros.graph at launch time."""
    return LaunchDescription([
        DeclareLaunchArgument(
            'real_backend', default_value='fake', choices=['fake', 'franka'],
            description='real world: fake (the digital real) or franka (the arm via franka_ros2)'),
        DeclareLaunchArgument(
            'sim_backend', default_value='mujoco', choices=['mujoco', 'physx', 'isaac'],
            description='simulated twin: mujoco, physx (kit-less PhysX) or isaac (not run)'),
        DeclareLaunchArgument(
            'policy', default_value='',
            description='policy under test in every episode (scripted, openpi, gr00t, torch); '
                        'empty = the policies listed in the config file'),
        DeclareLaunchArgument(
            'host', default_value='', description='policy server host (openpi, gr00t)'),
        DeclareLaunchArgument(
            'port', default_value='0',
            description='policy server port (openpi 8000, gr00t 5555); 0 = policy default'),
        DeclareLaunchArgument(
            'sim_params_file', default_value='',
            description='identified twin parameters YAML from realm-ros sysid fit'),
        DeclareLaunchArgument(
            'real_dynamics_file', default_value='',
            description='digital real hidden dynamics YAML (real_backend:=fake only)'),
        DeclareLaunchArgument(
            'config_file', default_value='',
            description='evaluation YAML (default: the package config/paired_eval.yaml)'),
        DeclareLaunchArgument(
            'out_dir', default_value='realm_eval',
            description='output folder of the evaluator (episodes.jsonl, summary, report)'),
        DeclareLaunchArgument(
            'monitor', default_value='true', choices=['true', 'false'],
            description='start monitor_node for RViz'),
        DeclareLaunchArgument(
            'record', default_value='true', choices=['true', 'false'],
            description='record both worlds to rosbag2/MCAP, one bag per pair (recorder_node)'),
        DeclareLaunchArgument(
            'cameras', default_value='', choices=['', 'true', 'false'],
            description='render and publish the cameras ("" = the config file; on anyway when '
                        'a policy under test declares cameras)'),
        DeclareLaunchArgument(
            'execute_horizon', default_value='0',
            description="actions executed open loop per chunk; 0 = each policy's own "
                        '(openpi DROID 8, GR00T N1.6/N1.7 15)'),
        OpaqueFunction(function=_nodes),
    ])
