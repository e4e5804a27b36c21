"""Watch a running pair: RViz with realm_ros's configuration, ``monitor_node`` and TF.

    ros2 launch realm_ros monitor.launch.py                  # a pair from realm-ros paired-eval
    ros2 launch realm_ros monitor.launch.py monitor_node:=false robot_state_publishers:=false
                                                             # a pair from paired_eval.launch.py

RViz (``rviz/realm.rviz``, Fixed Frame ``base_link``) shows the real arm (TF prefix ``real``)
and the twin as a translucent ghost (TF prefix ``sim``) over it, the three cameras of the real
world and ``/monitor/markers``. The arms need a ``robot_state_publisher`` per world
(``description.launch.py``): started here unless ``robot_state_publishers:=false``
(``paired_eval.launch.py`` starts its own; two would publish the same frames). Plot
``/monitor/divergence`` and ``/monitor/divergence_norm`` with any plot tool (rqt_plot,
PlotJuggler).
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction, IncludeLaunchDescription
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterFile, ParameterValue
from launch_ros.substitutions import FindPackageShare


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments, monitor_node, a robot_state_publisher per world and rviz2."""
    share = FindPackageShare('realm_ros')
    use_sim_time = ParameterValue(LaunchConfiguration('use_sim_time'), value_type=bool)
    arguments = [
        DeclareLaunchArgument(
            'params_file', default_value=PathJoinSubstitution([share, 'config', 'monitor.yaml']),
            description='monitor_node parameter YAML (schema: realm_ros.core.monitor.'
                        'MonitorConfig)'),
        DeclareLaunchArgument(
            'rviz_config', default_value=PathJoinSubstitution([share, 'rviz', 'realm.rviz']),
            description='RViz configuration file'),
        DeclareLaunchArgument(
            'use_sim_time', default_value='false', choices=['true', 'false'],
            description='true when the worlds run in lockstep and publish /clock'),
        DeclareLaunchArgument(
            'rviz', default_value='true', choices=['true', 'false'],
            description='start RViz (false: only monitor_node, e.g. on a headless machine)'),
        DeclareLaunchArgument(
            'monitor_node', default_value='true', choices=['true', 'false'],
            description='start monitor_node (false when paired_eval.launch.py runs one)'),
        DeclareLaunchArgument(
            'robot_state_publishers', default_value='true', choices=['true', 'false'],
            description='start a robot_state_publisher per world, TF prefixes real/ and sim/ '
                        '(false when paired_eval.launch.py runs them)'),
        DeclareLaunchArgument(
            'arm_id', default_value='fr3', choices=['fr3', 'fer', 'panda'],
            description='arm model for the meshes (panda = fer, the Panda)'),
    ]
    monitor = Node(
        package='realm_ros', executable='monitor_node', name='monitor', output='log',
        condition=IfCondition(LaunchConfiguration('monitor_node')),
        parameters=[ParameterFile(LaunchConfiguration('params_file'), allow_substs=True),
                    {'use_sim_time': use_sim_time}])
    descriptions = [
        GroupAction(
            scoped=True, condition=IfCondition(LaunchConfiguration('robot_state_publishers')),
            actions=[IncludeLaunchDescription(
                PythonLaunchDescriptionSource(
                    PathJoinSubstitution([share, 'launch', 'description.launch.py'])),
                launch_arguments={'namespace': world, 'frame_prefix': f'{world}/',
                                  'arm_id': LaunchConfiguration('arm_id')}.items())])
        for world in ('real', 'sim')]
    rviz = Node(
        package='rviz2', executable='rviz2', name='rviz2', output='log',
        arguments=['-d', LaunchConfiguration('rviz_config')],
        parameters=[{'use_sim_time': use_sim_time}],
        condition=IfCondition(LaunchConfiguration('rviz')))
    return LaunchDescription([*arguments, monitor, *descriptions, rviz])
