"""Paired evaluation on a lab machine: real and sim worlds, their policies, the evaluator.

The node list and every parameter come from ``realm_ros.graph.paired_eval_graph``, the same
definition ``realm-ros paired-eval`` runs in one process; this file only maps launch arguments
onto that definition (test/unit/test_graph.py checks the two agree), and adds what only a lab
machine has: a ``robot_state_publisher`` per world (TF prefixes ``real/`` and ``sim/``, see
``description.launch.py``) and optionally RViz with ``rviz/realm.rviz``.

    ros2 launch realm_ros paired_eval.launch.py real_backend:=franka arm_id:=fr3 \
        gripper:=franka_hand policy:=openpi host:=gpu-box port:=8000 \
        sim_params_file:=/path/params.yaml out_dir:=/data/eval1

Ending: when ``evaluator_node`` exits the whole graph is shut down. The launch exits 0 when the
evaluation finished (exit code 0); any other exit code of the evaluator, or a realm_ros node
that dies with a non-zero code, ends the launch with code 1 (``ros2 launch`` can report no
other non-zero code) after one error line naming the node and its code. Ctrl-C stops every
node within about a second; finished pairs stay in ``out_dir/episodes.jsonl`` and the same
command resumes. The console shows the evaluator's progress bar and tables; the other nodes'
logs go to their files under ``~/.ros/log`` (``ROS_LOG_DIR``), whose folder launch prints first.
With ``real_backend:=franka`` the operator runs ``operator_node`` in a second
terminal (docs/install-and-launch.md): launch cannot host an interactive node.
"""

import json
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import (
    DeclareLaunchArgument,
    GroupAction,
    IncludeLaunchDescription,
    OpaqueFunction,
    RegisterEventHandler,
    Shutdown,
)
from launch.conditions import IfCondition
from launch.event_handlers import OnProcessExit
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


class NodeFailed(RuntimeError):
    """A realm_ros node exited with a non-zero code: launch logs it and exits 1."""


#: What realm_ros exit codes mean (realm_ros.ros.runner, evaluator_node.main).
EXIT_CODES = {1: 'failed', 2: 'invalid parameter or data',
              130: 'stopped before the end: finished pairs are kept, the same command resumes'}


def _check_exit(event, context):
    """Fail the launch on a node's non-zero exit code (-N: killed by signal N)."""
    del context
    code = event.returncode
    if code != 0:
        name = getattr(event.action, 'node_name', event.process_name)
        meaning = EXIT_CODES.get(code, f'killed by signal {-code}' if code < 0 else 'error')
        raise NodeFailed(f'{name} exited with code {code} ({meaning})')


def _evaluator_exit(event, context):
    """The evaluation is over: shut the graph down, failing the launch on a non-zero code."""
    _check_exit(event, context)
    return [Shutdown(reason='evaluator_node finished')]


def _nodes(context):
    from realm_ros.core.config import renamed
    from realm_ros.core.evaluation import EvalConfig
    from realm_ros.graph import evaluator_parameters, paired_eval_graph

    # Literal names so test/unit/test_launch_files.py can check each is declared.
    values = {
        'real_backend': LaunchConfiguration('real_backend'),
        'sim_backend': LaunchConfiguration('sim_backend'),
        'arm_id': LaunchConfiguration('arm_id'),
        'gripper': LaunchConfiguration('gripper'),
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
    overrides = {'real': renamed(arg('real_backend'), 'real_backend'), 'sim': arg('sim_backend'),
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
                              record=arg('record').lower() == 'true', operator=False,
                              arm=arg('arm_id'), gripper=arg('gripper'))
    actions = []
    for spec in graph:
        # The console is the evaluator's (its bar and tables, on a terminal); every other
        # node logs to its file under ~/.ros/log (the launch prints the folder).
        evaluator = spec.executable == 'evaluator_node'
        node = Node(package='realm_ros', executable=spec.executable, name=spec.name,
                    namespace=spec.namespace,
                    parameters=[evaluator_parameters(spec, config)],
                    remappings=list(spec.remappings),
                    output='screen' if evaluator else 'log', emulate_tty=evaluator)
        on_exit = _evaluator_exit if evaluator else _check_exit
        actions += [node, RegisterEventHandler(OnProcessExit(target_action=node,
                                                             on_exit=on_exit))]
    return actions


def _description(world):
    """robot_state_publisher for one world, its TF frames prefixed ``<world>/``."""
    return GroupAction(scoped=True, actions=[IncludeLaunchDescription(
        PythonLaunchDescriptionSource(
            PathJoinSubstitution([FindPackageShare('realm_ros'), 'launch',
                                  'description.launch.py'])),
        launch_arguments={'namespace': world, 'frame_prefix': f'{world}/',
                          'arm_id': LaunchConfiguration('arm_id')}.items())])


def generate_launch_description():
    """Declare the arguments; the nodes are built from realm_ros.graph at launch time."""
    from realm_ros.graph import backend_choices, backend_help

    share = FindPackageShare('realm_ros')
    rviz = Node(
        package='rviz2', executable='rviz2', name='rviz2', output='log',
        arguments=['-d', PathJoinSubstitution([share, 'rviz', 'realm.rviz'])],
        condition=IfCondition(LaunchConfiguration('rviz')))
    return LaunchDescription([
        DeclareLaunchArgument(
            'real_backend', default_value='digital_real',
            choices=backend_choices(lambda b: b.real),
            description='real world: ' + backend_help(lambda b: b.real)
                        + '; fake: old name of digital_real, deprecated'),
        DeclareLaunchArgument(
            'sim_backend', default_value='mujoco', choices=backend_choices(lambda b: not b.real),
            description='simulated twin: ' + backend_help(lambda b: not b.real)),
        DeclareLaunchArgument(
            'arm_id', default_value='fr3', choices=['fr3', 'fer', 'panda'],
            description='arm: fr3 (franka_ros2, fr3_jointN) or fer / panda (the Panda through '
                        'the agimus franka_ros2 fork, fer_jointN); sets joint names and limits '
                        'of the bridge and the digital real'),
        DeclareLaunchArgument(
            'gripper', default_value='franka_hand', choices=['franka_hand', 'robotiq_2f_85'],
            description='gripper on the arm: franka_hand (franka_ros2 gripper actions, 0.08 m) '
                        'or robotiq_2f_85 (control_msgs GripperCommand, 0.085 m)'),
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
            description='digital real hidden dynamics YAML (real_backend:=digital_real only)'),
        DeclareLaunchArgument(
            'config_file', default_value='',
            description='evaluation YAML (default: the package config/paired_eval.yaml)'),
        DeclareLaunchArgument(
            'out_dir', default_value='realm_eval',
            description='output folder of the evaluator (episodes.jsonl, summary, report)'),
        DeclareLaunchArgument(
            'monitor', default_value='true', choices=['true', 'false'],
            description='start monitor_node (divergence and markers for RViz)'),
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
        DeclareLaunchArgument(
            'rviz', default_value='false', choices=['true', 'false'],
            description='start RViz with rviz/realm.rviz (both arms, cameras, markers)'),
        _description('real'),
        _description('sim'),
        rviz,
        OpaqueFunction(function=_nodes),
    ])
