"""Record system-identification data: one world (digital real or real arm) and the recorder.

    ros2 launch realm_ros sysid_record.launch.py robot:=digital_real
    ros2 launch realm_ros sysid_record.launch.py robot:=franka   # franka_ros2 already running

``robot:=digital_real`` starts ``fake_franka`` (the franka_ros2-shaped digital real) and reaches it
through the same ``franka`` bridge a lab uses for the real arm; ``robot:=franka`` expects the lab's
franka_ros2 (``ros2 launch franka_bringup franka.launch.py``) to be up. ``recorder_node`` logs
the commanded and measured joint trajectories of ``namespace`` to rosbag2/MCAP.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.conditions import LaunchConfigurationEquals
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterFile, ParameterValue
from launch_ros.substitutions import FindPackageShare


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments, the world (included) and the recorder."""
    share = FindPackageShare('realm_ros')
    namespace = LaunchConfiguration('namespace')
    arguments = [
        DeclareLaunchArgument(
            'robot', default_value='digital_real', choices=['digital_real', 'franka'],
            description='digital_real: start fake_franka (MuJoCo with hidden dynamics); '
                        'franka: the real arm through an already running franka_ros2'),
        DeclareLaunchArgument(
            'namespace', default_value='real',
            description='namespace of the recorded world interface'),
        DeclareLaunchArgument(
            'params_file', default_value=PathJoinSubstitution([share, 'config', 'world.yaml']),
            description='world_node parameter YAML'),
        DeclareLaunchArgument(
            'recorder_params_file',
            default_value=PathJoinSubstitution([share, 'config', 'recorder.yaml']),
            description='recorder_node parameter YAML (bag folder, topics)'),
        DeclareLaunchArgument(
            'fake_franka_params_file',
            default_value=PathJoinSubstitution([share, 'config', 'fake_franka.yaml']),
            description='fake_franka parameter YAML (robot:=digital_real only)'),
        DeclareLaunchArgument(
            'dynamics_file', default_value='',
            description='robot:=digital_real only: hidden-dynamics YAML ("" = the packaged '
                        'realm_ros/data/digital_real_dynamics.yaml)'),
    ]
    world = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(PathJoinSubstitution([share, 'launch', 'world.launch.py'])),
        launch_arguments={'backend': 'franka', 'namespace': namespace,
                          'params_file': LaunchConfiguration('params_file'),
                          'lockstep': 'false'}.items())
    digital_real = Node(
        package='realm_ros', executable='fake_franka', namespace=namespace, output='screen',
        emulate_tty=True, condition=LaunchConfigurationEquals('robot', 'digital_real'),
        parameters=[
            ParameterFile(LaunchConfiguration('fake_franka_params_file'), allow_substs=True),
            {'dynamics_file': ParameterValue(LaunchConfiguration('dynamics_file'),
                                             value_type=str)}])
    recorder = Node(
        package='realm_ros', executable='recorder_node', namespace=namespace, output='screen',
        emulate_tty=True,
        parameters=[ParameterFile(LaunchConfiguration('recorder_params_file'),
                                  allow_substs=True)])
    return LaunchDescription([*arguments, digital_real, world, recorder])
