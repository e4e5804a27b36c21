"""Publish one world's robot for RViz: ``robot_state_publisher`` and its mount in TF.

    ros2 launch realm_ros description.launch.py namespace:=real frame_prefix:=real/

Included once per world by ``paired_eval.launch.py`` and ``monitor.launch.py`` (namespaces
``real`` and ``sim``, prefixes ``real/`` and ``sim/``) and by ``world.launch.py``.
robot_state_publisher reads the world's ``<namespace>/joint_states`` (canonical names
``panda_joint1..7`` and ``gripper``, whatever the arm's own names are: the world interface maps
them) and publishes ``<namespace>/robot_description`` (transient local) and TF with
``frame_prefix``. With a prefix, a static transform ``base_link`` -> ``<prefix>base_link``
puts the robot on the common mount, so RViz (Fixed Frame ``base_link``) draws both worlds'
arms over each other.
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
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments, robot_state_publisher and the mount."""
    from realm_ros.core.robot import ARM_ALIASES

    share = FindPackageShare('realm_ros')
    namespace = LaunchConfiguration('namespace')
    frame_prefix = LaunchConfiguration('frame_prefix')
    arguments = [
        DeclareLaunchArgument(
            'namespace', default_value='real',
            description='namespace of the world whose joint_states are drawn (real or sim)'),
        DeclareLaunchArgument(
            'frame_prefix', default_value='',
            description='TF frame prefix of this robot, e.g. "real/" ("" = unprefixed frames, '
                        "base_link is this robot's own base and no mount is published)"),
        DeclareLaunchArgument(
            'arm_id', default_value='fr3', choices=['fr3', 'fer', 'panda'],
            description='arm model for the meshes (panda = fer, the Panda)'),
        DeclareLaunchArgument(
            'franka_meshes', default_value='false', choices=['true', 'false'],
            description='draw the arm with franka_description meshes (must be installed) '
                        'instead of primitive shapes'),
        DeclareLaunchArgument(
            'use_sim_time', default_value='false', choices=['true', 'false'],
            description='robot_state_publisher follows /clock (a lockstep world)'),
    ]
    # franka_description's mesh folder of the arm: an alias (panda) resolved by core.robot's
    # table, e.g. "{'panda': 'fer'}.get('panda', 'panda')".
    arm = LaunchConfiguration('arm_id')
    mesh_arm = PythonExpression([repr(dict(ARM_ALIASES)), ".get('", arm, "', '", arm, "')"])
    description = ParameterValue(Command([
        'xacro ', PathJoinSubstitution([share, 'urdf', 'panda_droid.urdf.xacro']),
        ' franka_meshes:=', LaunchConfiguration('franka_meshes'), ' arm_id:=', mesh_arm]),
        value_type=str)
    state_publisher = Node(
        package='robot_state_publisher', executable='robot_state_publisher',
        name='robot_state_publisher', namespace=namespace, output='log',
        parameters=[{'robot_description': description,
                     'frame_prefix': ParameterValue(frame_prefix, value_type=str),
                     'use_sim_time': ParameterValue(LaunchConfiguration('use_sim_time'),
                                                    value_type=bool)}])
    mount = Node(
        package='tf2_ros', executable='static_transform_publisher', namespace=namespace,
        name='mount', output='log',
        condition=IfCondition(PythonExpression(["'", frame_prefix, "' != ''"])),
        arguments=['--frame-id', 'base_link', '--child-frame-id', [frame_prefix, 'base_link']])
    return LaunchDescription([*arguments, state_publisher, mount])
