"""ament_python package setup: ``colcon build`` in a ROS 2 workspace, or ``pip install .``.

Both install what ``ros2 run`` and ``ros2 launch`` look for under the install prefix: the
ament index marker ``share/ament_index/resource_index/packages/realm_ros``,
``share/realm_ros/{package.xml,launch,config,urdf,rviz}`` and every executable in
``lib/realm_ros/``. colcon puts the console scripts there itself (setup.cfg ``[install]``);
pip puts them in ``bin/``, so :class:`InstallData` adds a two-line ``lib/realm_ros/<name>``
that runs ``bin/<name>`` (docs/install-and-launch.md).
"""

import glob
import os
import re

from setuptools import find_packages, setup
from setuptools.dist import Distribution

PACKAGE = 'realm_ros'

CONSOLE_SCRIPTS = [
    'world_node = realm_ros.nodes.world_node:main',
    'evaluator_node = realm_ros.nodes.evaluator_node:main',
    'digital_real = realm_ros.nodes.digital_real_node:main',
    # The digital real's old executable name: a deprecation line, then the same node.
    'fake_franka = realm_ros.nodes.digital_real_node:main_fake_franka',
    'policy_node = realm_ros.nodes.policy_node:main',
    # world_node + policy_node in one process, intra-process delivery (docs/interface.md).
    'world_policy_container = realm_ros.nodes.world_policy_container:main',
    'realm-ros = realm_ros.cli:main',
    'policy_server = realm_ros.policies.server:main',
    'monitor_node = realm_ros.nodes.monitor_node:main',
    'operator_node = realm_ros.nodes.operator_node:main',
    'recorder_node = realm_ros.nodes.recorder_node:main',
]

#: ``lib/realm_ros/<name>`` of a pip install: ament looks there, pip wrote ``bin/<name>``.
AMENT_ENTRY = """#!/bin/sh
# realm_ros: ros2 run / ros2 launch look for executables in <prefix>/lib/realm_ros; pip
# installed the console script in <prefix>/bin.
exec "$(dirname "$0")/../../bin/{name}" "$@"
"""

_install_data = Distribution().get_command_class('install_data')


class InstallData(_install_data):
    """Install data files, then an ament entry for each console script that has none.

    colcon (``setup.py install``, setup.cfg ``install_scripts=$base/lib/realm_ros``) has
    already put the console scripts in ``lib/realm_ros``: nothing is added. A wheel (``pip
    install .``, ``pip install -e .``) carries its console scripts to ``bin/`` only, so each
    gets an executable ``lib/realm_ros/<name>`` that runs ``bin/<name>``. (An editable wheel,
    ``pip install -e .``, carries no data files at all: not an ament install.)
    """

    def run(self):
        super().run()
        lib = os.path.join(self.install_dir, 'lib', PACKAGE)
        for entry in CONSOLE_SCRIPTS:
            name = re.match(r'\s*([\w\-]+)\s*=', entry).group(1)
            path = os.path.join(lib, name)
            if os.path.exists(path):
                continue
            os.makedirs(lib, exist_ok=True)
            with open(path, 'w') as f:
                f.write(AMENT_ENTRY.format(name=name))
            os.chmod(path, 0o755)
            self.outfiles.append(path)


def data_files():
    """Install package.xml, the ament index marker, launch/config/urdf/rviz under share/."""
    files = [
        ('share/ament_index/resource_index/packages', [f'resource/{PACKAGE}']),
        (f'share/{PACKAGE}', ['package.xml']),
    ]
    for folder in ('launch', 'config', 'urdf', 'rviz'):
        paths = [p for p in glob.glob(f'{folder}/**/*', recursive=True)
                 if os.path.isfile(p) and '__pycache__' not in p]
        for directory in sorted({os.path.dirname(p) for p in paths}):
            files.append((f'share/{PACKAGE}/{directory}',
                          [p for p in paths if os.path.dirname(p) == directory]))
    return files


setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*', 'bench']),
    data_files=data_files(),
    package_data={'realm_ros': ['data/*.yaml', 'data/*.json', 'data/*.pt']},
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
        # pybullet_data ships the Panda's visual meshes (franka_ros, Apache-2.0) and the
        # perturbation object set's meshes (zlib licence), read from the installed package at
        # run time: the twin's cameras see the real arm (backends/mujoco/visuals.py) and
        # VSB-NOBJ, V-SC, SB-NOUN, SB-VRB get real objects (backends/mujoco/objects.py).
        'pybullet>=3.2.6',
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
        # setuptools >= 70.1 builds wheels itself: test_install.py's pip install runs
        # without build isolation (no download), so the test environment's setuptools builds.
        # pytest-xdist: `make test` runs the suite on two workers (docs/testing.md).
        # pytest-rerunfailures: a test over DDS gets one re-run on failure (test/conftest.py).
        'test': ['pytest>=7', 'pytest-timeout>=2', 'pytest-xdist>=3.5',
                 'pytest-rerunfailures>=14', 'ruff>=0.5', 'mypy>=1.10', 'ros-test-msgs',
                 'setuptools>=70.1',
                 'openpi-client>=0.1.2',
                 'yourdfpy>=0.0.56', 'xacro>=2.0',
                 # The arena's browser test drives Debian's chromium (make sysdeps) with it;
                 # `playwright install` (a browser download) is never needed.
                 'playwright>=1.45'],
        # realm-ros arena serve: the blind judging page (docs/arena.md).
        'arena': ['fastapi>=0.115', 'uvicorn>=0.30'],
        # realm-ros sysid fit --device gpu (backends/mujoco/mjx_fit.py): MuJoCo MJX on JAX.
        # MJX 3.17 was run with MuJoCo 3.17 and JAX 0.11.2 (docs/performance.md); a GPU needs
        # JAX's CUDA plugin too (pip install 'jax[cuda13]'); JAX's CPU backend runs the tests.
        'gpu': ['mujoco-mjx>=3.17', 'jax>=0.6', 'flatbuffers'],
        # The sysid twin's rollouts on MuJoCo Warp (backends/mujoco/warp_rollout.py,
        # bench/bench_sysid_warp.py): an NVIDIA GPU; run on one H200 (docs/performance.md).
        'warp': ['mujoco-warp>=4.0', 'warp-lang>=1.19,<2'],
        # bench/bench_sysid_vs_mujoco.py only: mujoco.sysid, which imports these extras.
        'sysid-bench': ['mujoco[sysid]>=4.0'],
        # Local TorchScript / state-dict policies (realm_ros.policies.torch_policy), the learned
        # policy (realm_ros.policies.learned) and its LeRobot datasets (parquet via pyarrow).
        'torch': ['torch>=2.1', 'pyarrow>=14'],
        # realm-ros sweep --ray: the grid on a Ray cluster (realm_ros/sweep/ray_executor.py).
        'ray': ['ray>=2.40'],
        # USD export (realm-ros usd) and the kit-less PhysX twin (backend physx). ovphysx
        # itself (x86_64 Linux, glibc >= 2.35, AVX) is installed by `make setup` with
        # --no-deps: it declares packaging<24, which pytest >= 9 (packaging>=24) excludes,
        # while it only calls packaging.version.Version. About 380 MB of downloads.
        'physx': [
            'usd-core>=24.11',
            'physx-usd-schemas>=25.11',
            "ovstage>=0.3; platform_system == 'Linux' and platform_machine == 'x86_64'",
            "warp-lang>=1.16,<2; platform_system == 'Linux' and platform_machine == 'x86_64'",
        ],
    },
    maintainer='realm_ros maintainers',
    maintainer_email='realm-ros@example.org',
    description='Paired real and simulated rollouts of manipulation policies on a Franka Panda.',
    license='Apache-2.0',
    entry_points={'console_scripts': CONSOLE_SCRIPTS},
    cmdclass={'install_data': InstallData},
)
