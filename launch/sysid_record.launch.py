"""Bring up one world for system-identification recordings: the digital real or the real arm.

    ros2 launch realm_ros sysid_record.launch.py robot:=digital_real
    ros2 launch realm_ros sysid_record.launch.py robot:=franka arm_id:=fr3 \
        franka_namespace:=/   # franka_ros2 already running there
    realm-ros sysid record --backend franka --namespace /real --out bags   # second terminal

``robot:=digital_real`` starts ``digital_real`` (the franka_ros2-shaped digital real) in
``/<namespace>/franka`` and reaches it through the same ``franka`` bridge (``world_node
backend:=franka``, joints ``<arm_id>_jointN``, ``franka.digital_real``) a lab uses for the real
arm, as ``realm-ros sysid record --backend digital_real`` does in one
process; ``robot:=franka`` bridges
to the lab's franka_ros2 (``ros2 launch franka_bringup franka.launch.py``) at
``franka_namespace``. Both run in real time. ``realm-ros sysid record`` drives the world and
records each excitation to its own bag (its node ``/recorder``); ``record:=true`` adds a
``recorder_node`` named ``recorder_<namespace>`` that logs ``/<namespace>`` to ``out_dir`` for
any other command source (teleoperation, a replay).
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterFile
from launch_ros.substitutions import FindPackageShare


def _nodes(context):
    from realm_ros.core import backends
    from realm_ros.core.config import renamed
    from realm_ros.graph import (
        bridge_parameters,
        digital_real_parameters,
        digital_real_params_file,
    )

    # Literal names so test/unit/test_launch_files.py can check each is declared.
    configurations = {
        'robot': LaunchConfiguration('robot'),
        'namespace': LaunchConfiguration('namespace'),
        'franka_namespace': LaunchConfiguration('franka_namespace'),
        'out_dir': LaunchConfiguration('out_dir'),
        'dynamics_file': LaunchConfiguration('dynamics_file'),
        'arm_id': LaunchConfiguration('arm_id'),
        'gripper': LaunchConfiguration('gripper'),
        'record': LaunchConfiguration('record'),
        'digital_real_params_file': LaunchConfiguration('digital_real_params_file'),
        'fake_franka_params_file': LaunchConfiguration('fake_franka_params_file'),
    }
    values = {name: value.perform(context) for name, value in configurations.items()}
    namespace = values['namespace'].strip('/')
    # The node brought up here as the robot side (the digital real's), none for an arm.
    robot_node = backends.get(renamed(values['robot'], 'robot')).robot_node
    digital_real = bool(robot_node)
    robot_namespace = f'/{namespace}/franka' if digital_real else values['franka_namespace']
    nodes = []
    if digital_real:
        nodes.append(Node(
            package='realm_ros', executable='digital_real', name=robot_node,
            namespace=robot_namespace, output='log',
            parameters=[
                ParameterFile(digital_real_params_file(values['digital_real_params_file'],
                                                       values['fake_franka_params_file']),
                              allow_substs=True),
                {**digital_real_parameters(values['arm_id']), 'lockstep': False,
                 'dynamics_file': values['dynamics_file']}]))
    nodes.append(Node(
        package='realm_ros', executable='world_node', name='world', namespace=namespace,
        output='log',
        parameters=[
            ParameterFile(LaunchConfiguration('params_file'), allow_substs=True),
            {'backend': 'franka', 'lockstep': False, 'camera_rate_hz': 0.0,
             **bridge_parameters(values['arm_id'], values['gripper'], digital_real),
             'franka.digital_real': digital_real, 'franka.namespace': robot_namespace}]))
    if values['record'] == 'true':
        nodes.append(Node(
            package='realm_ros', executable='recorder_node', name=f'recorder_{namespace}',
            output='log',
            parameters=[
                ParameterFile(LaunchConfiguration('recorder_params_file'), allow_substs=True),
                {'out_dir': values['out_dir'], 'namespace': f'/{namespace}'}]))
    return nodes


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments; the robot side, the bridge world and the recorder."""
    from realm_ros.graph import backend_choices

    share = FindPackageShare('realm_ros')
    return LaunchDescription([
        DeclareLaunchArgument(
            'robot', default_value='digital_real', choices=backend_choices(lambda b: b.real),
            description='digital_real: start the digital real (MuJoCo with hidden dynamics); '
                        'franka: the real arm through an already running franka_ros2'),
        DeclareLaunchArgument(
            'namespace', default_value='real',
            description='namespace of the recorded world interface (no leading slash)'),
        DeclareLaunchArgument(
            'franka_namespace', default_value='/',
            description='robot:=franka only: absolute namespace of the franka_ros2 graph'),
        DeclareLaunchArgument(
            'arm_id', default_value='fr3', choices=['fr3', 'fer', 'panda'],
            description='arm: fr3 (fr3_jointN) or fer / panda (the Panda, fer_jointN); the '
                        'digital real speaks the same names'),
        DeclareLaunchArgument(
            'gripper', default_value='franka_hand', choices=['franka_hand', 'robotiq_2f_85'],
            description='robot:=franka: franka_hand (franka_ros2 gripper actions) or '
                        'robotiq_2f_85 (control_msgs GripperCommand)'),
        DeclareLaunchArgument(
            'record', default_value='false', choices=['true', 'false'],
            description='also run recorder_node (recorder_<namespace>); realm-ros sysid '
                        'record records by itself'),
        DeclareLaunchArgument(
            'out_dir', default_value='bags',
            description='record:=true: directory that receives the bags (one per run)'),
        DeclareLaunchArgument(
            'params_file', default_value=PathJoinSubstitution([share, 'config', 'world.yaml']),
            description='world_node parameter YAML (the bridge, safety.* limits included)'),
        DeclareLaunchArgument(
            'recorder_params_file',
            default_value=PathJoinSubstitution([share, 'config', 'recorder.yaml']),
            description='recorder_node parameter YAML (bag prefix, cameras, stamps)'),
        DeclareLaunchArgument(
            'digital_real_params_file',
            default_value=PathJoinSubstitution([share, 'config', 'digital_real.yaml']),
            description='digital_real parameter YAML (robot:=digital_real only)'),
        DeclareLaunchArgument(
            'fake_franka_params_file', default_value='',
            description='old name of digital_real_params_file, deprecated ("" = unused)'),
        DeclareLaunchArgument(
            'dynamics_file', default_value='',
            description='robot:=digital_real only: hidden-dynamics YAML ("" = the packaged '
                        'realm_ros/data/digital_real_dynamics.yaml)'),
        OpaqueFunction(function=_nodes),
    ])
