"""``realm_ros.core`` stays free of ROS and simulator imports (DESIGN section 3)."""

import ast
import pathlib

import pytest

CORE = pathlib.Path(__file__).resolve().parents[1] / 'realm_ros' / 'core'
FORBIDDEN = ('rclpy', 'mujoco', 'isaacsim', 'omni', 'launch', 'launch_ros', 'torch', 'jax')


def _imports(path: pathlib.Path) -> list[str]:
    tree = ast.parse(path.read_text())
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


@pytest.mark.parametrize('path', sorted(CORE.rglob('*.py')), ids=lambda p: p.name)
def test_core_imports_no_ros_or_simulator(path):
    for name in _imports(path):
        top = name.split('.')[0]
        assert top not in FORBIDDEN, f'{path.name} imports {name}'
        assert not top.endswith('_msgs') and not top.endswith('_srvs'), \
            f'{path.name} imports message package {name}'
        assert not name.startswith(('realm_ros.ros', 'realm_ros.nodes', 'realm_ros.backends')), \
            f'{path.name} imports outer layer {name}'


def test_core_imports_in_clean_interpreter():
    """Importing every core module pulls in neither rclpy nor mujoco."""
    import subprocess
    import sys
    code = ('import sys, importlib, pkgutil, realm_ros.core as c\n'
            'for m in pkgutil.walk_packages(c.__path__, "realm_ros.core."):\n'
            '    importlib.import_module(m.name)\n'
            'bad = [m for m in ("rclpy", "mujoco") if m in sys.modules]\n'
            'assert not bad, bad\n')
    subprocess.run([sys.executable, '-c', code], check=True)
