"""ament_python package setup; also installable anywhere with ``pip install -e .``."""

import glob
import os

from setuptools import find_packages, setup

PACKAGE = 'realm_ros'


def data_files():
    """Install package.xml, the ament index marker, launch/config/urdf/rviz under share/."""
    files = [
        ('share/ament_index/resource_index/packages', [f'resource/{PACKAGE}']),
        (f'share/{PACKAGE}', ['package.xml']),
    ]
    for folder in ('launch', 'config', 'urdf', 'rviz'):
        paths = [p for p in glob.glob(f'{folder}/**/*', recursive=True) if os.path.isfile(p)]
        for directory in sorted({os.path.dirname(p) for p in paths}):
            files.append((f'share/{PACKAGE}/{directory}',
                          [p for p in paths if os.path.dirname(p) == directory]))
    return files


setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*', 'bench']),
    data_files=data_files(),
    package_data={'realm_ros': ['data/*.yaml', 'data/*.json']},
    include_package_data=True,
    zip_safe=True,
    python_requires='>=3.10',
    # Runtime dependencies a lab's apt ROS install does not provide. rclpy and message
    # packages come from the ROS install (package.xml), or from the `ros` extra on PyPI.
    install_requires=[
        'numpy>=1.22,<2',
        'scipy>=1.10',
        'pyyaml>=6',
        'mujoco>=3.2',
        'cma>=3.3',
        'rosbags>=0.10',
        'mcap>=1.1',
        'mcap-ros2-support>=0.5',
        'matplotlib>=3.6',
        'tqdm>=4.60',
        'msgpack>=1.0.5',
        'websockets>=11',
        'pyzmq>=25',
        'opencv-python-headless>=4.8,<4.12',
        'imageio>=2.30',
        'imageio-ffmpeg>=0.4',
        'rich>=13',
        # pybullet_data ships the Panda's visual meshes (franka_ros, Apache-2.0) offline: the
        # twin's cameras see the real arm (realm_ros/backends/mujoco/visuals.py).
        'pybullet>=3.2',
    ],
    extras_require={
        # ROS 2 Kilted from PyPI wheels, for machines without a ROS install. Never install
        # this extra on top of an apt ROS: the wheels would shadow its rclpy.
        'ros': [
            'ros-rclpy',
            'ros-rmw-fastrtps-cpp',
            'ros-std-msgs',
            'ros-sensor-msgs',
            'ros-trajectory-msgs',
            'ros-geometry-msgs',
            'ros-std-srvs',
            'ros-diagnostic-msgs',
            'ros-visualization-msgs',
            'ros-rosgraph-msgs',
            'ros-action-msgs',
            'ros-rcl-interfaces',
            'ros-builtin-interfaces',
        ],
        'test': ['pytest>=7', 'pytest-timeout>=2', 'ruff>=0.5', 'ros-test-msgs',
                 'openpi-client>=0.1.2',
                 'yourdfpy>=0.0.56', 'xacro>=2.0'],
        # Local TorchScript / state-dict policies (realm_ros.policies.torch_policy), the learned
        # policy (realm_ros.policies.learned) and its LeRobot datasets (parquet via pyarrow).
        'torch': ['torch>=2.1', 'pyarrow>=14'],
    },
    maintainer='realm_ros maintainers',
    maintainer_email='realm-ros@example.org',
    description='Paired real and simulated rollouts of manipulation policies on a Franka Panda.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'world_node = realm_ros.nodes.world_node:main',
            'evaluator_node = realm_ros.nodes.evaluator_node:main',
            'fake_franka = realm_ros.nodes.fake_franka_node:main',
            'policy_node = realm_ros.nodes.policy_node:main',
            'realm-ros = realm_ros.cli:main',
            'policy_server = realm_ros.policies.server:main',
            'monitor_node = realm_ros.nodes.monitor_node:main',
            'operator_node = realm_ros.nodes.operator_node:main',
            'recorder_node = realm_ros.nodes.recorder_node:main',
        ],
    },
)
