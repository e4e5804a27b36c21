"""Start one world: ``world_node`` and ``robot_state_publisher`` in one namespace.

    ros2 launch realm_ros world.launch.py backend:=franka namespace:=real
    ros2 launch realm_ros world.launch.py backend:=mujoco namespace:=sim frame_prefix:=sim/

robot_state_publisher turns the world's ``joint_states`` (``panda_joint1..7`` + ``gripper``) into
TF with ``urdf/panda_droid.urdf.xacro``. Two robots share one TF tree, so the second one (the
twin in a pair) gets a ``frame_prefix`` and a static identity transform ``base_link`` ->
``<prefix>base_link``: both stand on the same mount, so RViz draws the twin over the real arm.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import (
    Command,
    LaunchConfiguration,
    PathJoinSubstitution,
    PythonExpression,
)
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterFile, ParameterValue
from launch_ros.substitutions import FindPackageShare


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments and the two nodes."""
    share = FindPackageShare('realm_ros')
    namespace = LaunchConfiguration('namespace')
    lockstep = LaunchConfiguration('lockstep')
    frame_prefix = LaunchConfiguration('frame_prefix')
    arguments = [
        DeclareLaunchArgument(
            'backend', default_value='mujoco',
            choices=['mujoco', 'fake', 'franka', 'physx', 'isaac'],
            description='world backend: mujoco (twin), fake (digital real), franka (bridge to '
                        'a running franka_ros2), physx (twin on kit-less PhysX), isaac (Isaac '
                        'Sim twin, not run)'),
        DeclareLaunchArgument(
            'namespace', default_value='sim',
            description='namespace of the world interface: real or sim in a paired run'),
        DeclareLaunchArgument(
            'params_file', default_value=PathJoinSubstitution([share, 'config', 'world.yaml']),
            description='world_node parameter YAML (schema: realm_ros.core.config.WorldConfig)'),
        DeclareLaunchArgument(
            'lockstep', default_value='false', choices=['true', 'false'],
            description='true: one control step per command, world publishes /clock and '
                        'robot_state_publisher uses sim time; false: real time'),
        DeclareLaunchArgument(
            'sim_params_file', default_value='',
            description='YAML with identified friction/armature for a simulated twin '
                        '("" = defaults)'),
        DeclareLaunchArgument(
            'frame_prefix', default_value='',
            description='TF frame prefix of this robot, e.g. "sim/" for the twin of a pair '
                        '("" = unprefixed frames, base_link is this robot\'s base)'),
        DeclareLaunchArgument(
            'franka_meshes', default_value='false', choices=['true', 'false'],
            description='draw the arm with franka_description meshes (must be installed) '
                        'instead of primitive shapes'),
        DeclareLaunchArgument(
            'use_robot_state_publisher', default_value='true', choices=['true', 'false'],
            description='start robot_state_publisher for this world (false if another one '
                        'already publishes the same frames)'),
    ]
    description = ParameterValue(Command([
        'xacro ', PathJoinSubstitution([share, 'urdf', 'panda_droid.urdf.xacro']),
        ' franka_meshes:=', LaunchConfiguration('franka_meshes')]), value_type=str)
    world = Node(
        package='realm_ros', executable='world_node', name='world', namespace=namespace,
        output='screen', emulate_tty=True,
        parameters=[
            ParameterFile(LaunchConfiguration('params_file'), allow_substs=True),
            {'backend': ParameterValue(LaunchConfiguration('backend'), value_type=str),
             'lockstep': ParameterValue(lockstep, value_type=bool),
             'sim_params_file': ParameterValue(LaunchConfiguration('sim_params_file'),
                                               value_type=str)}])
    state_publisher = Node(
        package='robot_state_publisher', executable='robot_state_publisher',
        namespace=namespace, output='screen',
        condition=IfCondition(LaunchConfiguration('use_robot_state_publisher')),
        parameters=[{'robot_description': description,
                     'frame_prefix': ParameterValue(frame_prefix, value_type=str),
                     'use_sim_time': ParameterValue(lockstep, value_type=bool)}])
    mount = Node(
        package='tf2_ros', executable='static_transform_publisher', namespace=namespace,
        name='mount', output='screen',
        condition=IfCondition(PythonExpression(["'", frame_prefix, "' != ''"])),
        arguments=['--frame-id', 'base_link', '--child-frame-id', [frame_prefix, 'base_link']])
    return LaunchDescription([*arguments, world, state_publisher, mount])
