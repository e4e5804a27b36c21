"""Watch a running pair: RViz with realm_ros's configuration, and ``monitor_node``.

    ros2 launch realm_ros monitor.launch.py
    ros2 launch realm_ros monitor.launch.py use_sim_time:=true   # lockstep pair

RViz (``rviz/realm.rviz``, Fixed Frame ``base_link``) shows the real arm, the twin as a
translucent ghost (``/sim/robot_description``, TF prefix ``sim``), the three cameras of the real
world and ``/monitor/markers``. Plot ``/monitor/divergence`` and ``/monitor/divergence_norm`` with
any plot tool (rqt_plot, PlotJuggler).
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterFile, ParameterValue
from launch_ros.substitutions import FindPackageShare


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments, monitor_node and rviz2."""
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
    ]
    monitor = Node(
        package='realm_ros', executable='monitor_node', name='monitor', output='screen',
        emulate_tty=True,
        parameters=[ParameterFile(LaunchConfiguration('params_file'), allow_substs=True),
                    {'use_sim_time': use_sim_time}])
    rviz = Node(
        package='rviz2', executable='rviz2', name='rviz2', output='screen',
        arguments=['-d', LaunchConfiguration('rviz_config')],
        parameters=[{'use_sim_time': use_sim_time}],
        condition=IfCondition(LaunchConfiguration('rviz')))
    return LaunchDescription([*arguments, monitor, rviz])
