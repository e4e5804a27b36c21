"""Start one world: ``world_node`` and its ``robot_state_publisher`` in one namespace.

    ros2 launch realm_ros world.launch.py backend:=franka namespace:=real arm_id:=fr3 \
        params_file:=$(ros2 pkg prefix realm_ros)/share/realm_ros/config/franka_bridge.yaml
    ros2 launch realm_ros world.launch.py backend:=mujoco namespace:=sim frame_prefix:=sim/

robot_state_publisher (``description.launch.py``) turns the world's ``joint_states``
(``panda_joint1..7`` + ``gripper``, whatever the arm's own joint names) into TF with
``urdf/panda_droid.urdf.xacro``. Two robots share one TF tree, so give each a ``frame_prefix``
(a pair: ``real/`` and ``sim/``); a prefixed robot is mounted on ``base_link`` by a static
identity transform, so RViz draws the two over each other.

``backend:=franka``: ``arm_id`` (fr3 | fer | panda) names the arm's joints (``fr3_jointN``,
``fer_jointN``) and picks its limits; ``gripper`` (franka_hand | robotiq_2f_85) picks the
gripper interface (franka_ros2 gripper actions, or control_msgs GripperCommand).
"""

from launch import LaunchDescription
from launch.actions import (
    DeclareLaunchArgument,
    GroupAction,
    IncludeLaunchDescription,
    OpaqueFunction,
)
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterFile
from launch_ros.substitutions import FindPackageShare


def _world(context):
    from realm_ros.core import backends
    from realm_ros.core.config import renamed
    from realm_ros.graph import bridge_parameters

    backend = renamed(LaunchConfiguration('backend').perform(context), 'backend')
    lockstep = LaunchConfiguration('lockstep').perform(context) == 'true'
    params = {'backend': backend, 'lockstep': lockstep,
              'sim_params_file': LaunchConfiguration('sim_params_file').perform(context)}
    if backends.get(backend).bridge:
        params.update(bridge_parameters(LaunchConfiguration('arm_id').perform(context),
                                        LaunchConfiguration('gripper').perform(context)))
    return [Node(
        package='realm_ros', executable='world_node', name='world',
        namespace=LaunchConfiguration('namespace'), output='log',
        parameters=[ParameterFile(LaunchConfiguration('params_file'), allow_substs=True),
                    params])]


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments, world_node and the robot description."""
    from realm_ros.graph import backend_choices, backend_help

    share = FindPackageShare('realm_ros')
    arguments = [
        DeclareLaunchArgument(
            'backend', default_value='mujoco',
            choices=backend_choices(),
            description='world backend: ' + backend_help()
                        + '; fake: old name of digital_real, deprecated'),
        DeclareLaunchArgument(
            'namespace', default_value='sim',
            description='namespace of the world interface: real or sim in a paired run'),
        DeclareLaunchArgument(
            'params_file', default_value=PathJoinSubstitution([share, 'config', 'world.yaml']),
            description='world_node parameter YAML (schema: realm_ros.core.config.WorldConfig; '
                        'config/franka_bridge.yaml for backend:=franka)'),
        DeclareLaunchArgument(
            'arm_id', default_value='fr3', choices=['fr3', 'fer', 'panda'],
            description='backend:=franka: fr3 (franka_ros2, fr3_jointN) or fer / panda (the '
                        'Panda through the agimus franka_ros2 fork, fer_jointN)'),
        DeclareLaunchArgument(
            'gripper', default_value='franka_hand', choices=['franka_hand', 'robotiq_2f_85'],
            description='backend:=franka: franka_hand (franka_ros2 gripper actions) or '
                        'robotiq_2f_85 (control_msgs GripperCommand)'),
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
    description = GroupAction(
        scoped=True, condition=IfCondition(LaunchConfiguration('use_robot_state_publisher')),
        actions=[IncludeLaunchDescription(
            PythonLaunchDescriptionSource(
                PathJoinSubstitution([share, 'launch', 'description.launch.py'])),
            launch_arguments={
                'namespace': LaunchConfiguration('namespace'),
                'frame_prefix': LaunchConfiguration('frame_prefix'),
                'arm_id': LaunchConfiguration('arm_id'),
                'franka_meshes': LaunchConfiguration('franka_meshes'),
                'use_sim_time': LaunchConfiguration('lockstep')}.items())])
    return LaunchDescription([*arguments, OpaqueFunction(function=_world), description])
