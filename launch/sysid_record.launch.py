"""Record system-identification data: one world (digital real or real arm) and the recorder.

    ros2 launch realm_ros sysid_record.launch.py robot:=digital_real out_dir:=bags
    ros2 launch realm_ros sysid_record.launch.py robot:=franka out_dir:=bags \
        franka_namespace:=/   # franka_ros2 already running there

``robot:=digital_real`` starts ``fake_franka`` (the franka_ros2-shaped digital real) in
``/<namespace>/franka`` and reaches it through the same ``franka`` bridge (``world_node
backend:=franka``, ``fr3_`` joints, ``franka.digital_real``) a lab uses for the real arm, as
``realm-ros sysid record --backend fake`` does in one process; ``robot:=franka`` bridges to the
lab's franka_ros2 (``ros2 launch franka_bringup franka.launch.py``) at ``franka_namespace``.
Both run in real time. ``recorder_node`` logs the commanded and measured joint trajectories of
``/<namespace>`` to rosbag2/MCAP in ``out_dir``; drive the world with
``realm-ros sysid record --backend franka --namespace /<namespace>`` or any command source.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import LaunchConfigurationEquals
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterFile, ParameterValue
from launch_ros.substitutions import FindPackageShare


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments, the robot side, the bridge world and the recorder."""
    share = FindPackageShare('realm_ros')
    namespace = LaunchConfiguration('namespace')
    robot_namespace = ['/', namespace, '/franka']  # the digital real's franka_ros2 side
    arguments = [
        DeclareLaunchArgument(
            'robot', default_value='digital_real', choices=['digital_real', 'franka'],
            description='digital_real: start fake_franka (MuJoCo with hidden dynamics); '
                        'franka: the real arm through an already running franka_ros2'),
        DeclareLaunchArgument(
            'namespace', default_value='real',
            description='namespace of the recorded world interface (no leading slash)'),
        DeclareLaunchArgument(
            'franka_namespace', default_value='/',
            description='robot:=franka only: absolute namespace of the franka_ros2 graph'),
        DeclareLaunchArgument(
            'out_dir', default_value='bags',
            description='directory that receives the bags (one per run)'),
        DeclareLaunchArgument(
            'params_file', default_value=PathJoinSubstitution([share, 'config', 'world.yaml']),
            description='world_node parameter YAML (the bridge, safety.* limits included)'),
        DeclareLaunchArgument(
            'recorder_params_file',
            default_value=PathJoinSubstitution([share, 'config', 'recorder.yaml']),
            description='recorder_node parameter YAML (bag prefix, cameras, stamps)'),
        DeclareLaunchArgument(
            'fake_franka_params_file',
            default_value=PathJoinSubstitution([share, 'config', 'fake_franka.yaml']),
            description='fake_franka parameter YAML (robot:=digital_real only)'),
        DeclareLaunchArgument(
            'dynamics_file', default_value='',
            description='robot:=digital_real only: hidden-dynamics YAML ("" = the packaged '
                        'realm_ros/data/digital_real_dynamics.yaml)'),
    ]
    digital_real = Node(
        package='realm_ros', executable='fake_franka', name='fake_franka',
        namespace=robot_namespace, output='screen', emulate_tty=True,
        condition=LaunchConfigurationEquals('robot', 'digital_real'),
        parameters=[
            ParameterFile(LaunchConfiguration('fake_franka_params_file'), allow_substs=True),
            {'arm_id': 'fr3', 'lockstep': False,
             'dynamics_file': ParameterValue(LaunchConfiguration('dynamics_file'),
                                             value_type=str)}])
    bridge = {'backend': 'franka', 'lockstep': False, 'franka.arm_id': 'fr3',
              'camera_rate_hz': 0.0}
    world_digital_real = Node(
        package='realm_ros', executable='world_node', name='world', namespace=namespace,
        output='screen', emulate_tty=True,
        condition=LaunchConfigurationEquals('robot', 'digital_real'),
        parameters=[
            ParameterFile(LaunchConfiguration('params_file'), allow_substs=True),
            {**bridge, 'franka.digital_real': True, 'franka.gripper': 'width_topic',
             'franka.namespace': ParameterValue(robot_namespace, value_type=str)}])
    world_franka = Node(
        package='realm_ros', executable='world_node', name='world', namespace=namespace,
        output='screen', emulate_tty=True,
        condition=LaunchConfigurationEquals('robot', 'franka'),
        parameters=[
            ParameterFile(LaunchConfiguration('params_file'), allow_substs=True),
            {**bridge, 'franka.digital_real': False,
             'franka.namespace': ParameterValue(LaunchConfiguration('franka_namespace'),
                                                value_type=str)}])
    recorder = Node(
        package='realm_ros', executable='recorder_node', name='recorder', output='screen',
        emulate_tty=True,
        parameters=[
            ParameterFile(LaunchConfiguration('recorder_params_file'), allow_substs=True),
            {'out_dir': ParameterValue(LaunchConfiguration('out_dir'), value_type=str),
             'namespace': ParameterValue(['/', namespace], value_type=str)}])
    return LaunchDescription([*arguments, digital_real, world_digital_real, world_franka,
                              recorder])
