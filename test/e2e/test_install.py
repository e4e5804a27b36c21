"""Both documented installs are visible to ament: ``ros2 run`` and ``ros2 launch`` find everything.

``ros2 run realm_ros X`` runs ``<prefix>/lib/realm_ros/X`` of the prefix that
``ament_index_python`` finds through the marker ``share/ament_index/resource_index/packages/
realm_ros`` on ``AMENT_PREFIX_PATH``; ``ros2 launch realm_ros F`` reads
``<prefix>/share/realm_ros/launch/F``, and launch files read ``config/``, ``urdf/``, ``rviz/``
from the same share folder. Checked here for a colcon-style install (``setup.py install
--prefix P --single-version-externally-managed``, what ``colcon build`` runs for an
ament_python package) and for ``pip install --prefix P .``, each into a fresh prefix, with the
real ``ament_index_python``.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARE_FOLDERS = ('launch', 'config', 'urdf', 'rviz')
SOURCES = ('setup.py', 'setup.cfg', 'package.xml', 'pyproject.toml', 'resource', 'realm_ros',
           *SHARE_FOLDERS)
PY = f'python{sys.version_info.major}.{sys.version_info.minor}'
BIN = pathlib.Path(sys.executable).parent


def _console_scripts() -> set[str]:
    return set(re.findall(r"'([\w\-]+)\s*=\s*realm_ros[\w.]*:\w+'",
                          (ROOT / 'setup.py').read_text()))


def _source_copy(tmp: pathlib.Path) -> pathlib.Path:
    """The package's tracked layout, so neither install writes into the checkout."""
    src = tmp / 'src'
    ignore = shutil.ignore_patterns('__pycache__', '*.pyc', '*.egg-info')
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=ignore)
        else:
            src.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, src / name)
    return src


def _colcon_style(src: pathlib.Path, prefix: pathlib.Path) -> None:
    build = src.parent / 'build'
    build.mkdir()
    subprocess.run([sys.executable, 'setup.py', 'egg_info', '--egg-base', str(build), 'build',
                    '--build-base', str(build / 'build'), 'install', '--prefix', str(prefix),
                    '--record', str(build / 'install.log'),
                    '--single-version-externally-managed'],
                   cwd=src, check=True, capture_output=True)


def _pip(src: pathlib.Path, prefix: pathlib.Path) -> None:
    # --ignore-installed: without it pip uninstalls the realm_ros of the environment running
    # the tests (the venv's console scripts vanish) before installing into the prefix.
    before = sorted(p.name for p in BIN.iterdir())
    subprocess.run([sys.executable, '-m', 'pip', 'install', '--quiet', '--no-deps',
                    '--no-build-isolation', '--no-compile', '--ignore-installed',
                    '--prefix', str(prefix), str(src)], check=True, capture_output=True)
    assert sorted(p.name for p in BIN.iterdir()) == before, 'pip changed the test environment'


INSTALLS = {'colcon': _colcon_style, 'pip': _pip}


@pytest.fixture(scope='module', params=sorted(INSTALLS))
def installed(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(request.param)
    prefix = tmp / 'install'
    INSTALLS[request.param](_source_copy(tmp), prefix)
    return request.param, prefix


def _ament(prefix: pathlib.Path, code: str) -> str:
    """Run ``code`` with only ``prefix`` on AMENT_PREFIX_PATH and its site-packages first."""
    env = dict(os.environ, AMENT_PREFIX_PATH=str(prefix),
               PYTHONPATH=str(prefix / 'lib' / PY / 'site-packages'))
    result = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True,
                            text=True, cwd=prefix, check=True)
    return result.stdout.strip()


def test_ament_index_finds_the_package(installed):
    _, prefix = installed
    out = _ament(prefix, 'from ament_index_python.packages import get_package_prefix, '
                         'get_package_share_directory\n'
                         "print(get_package_prefix('realm_ros'))\n"
                         "print(get_package_share_directory('realm_ros'))")
    assert out.splitlines() == [str(prefix), str(prefix / 'share' / 'realm_ros')]


def test_every_executable_is_where_ros2_run_looks(installed):
    kind, prefix = installed
    lib = prefix / 'lib' / 'realm_ros'
    scripts = _console_scripts()
    assert scripts and {p.name for p in lib.iterdir()} == scripts
    for name in scripts:
        assert os.access(lib / name, os.X_OK), name
    if kind == 'pip':  # the ament entry runs pip's console script
        assert {p.name for p in (prefix / 'bin').iterdir()} >= scripts
    env = dict(os.environ, PYTHONPATH=str(prefix / 'lib' / PY / 'site-packages'))
    result = subprocess.run([str(lib / 'realm-ros'), '--help'], env=env, capture_output=True,
                            text=True, cwd=prefix)
    assert result.returncode == 0 and 'usage: realm-ros' in result.stdout, result.stderr
    imported = subprocess.run([str(lib / 'realm-ros'), 'doctor', '--help'], env=env,
                              capture_output=True, text=True, cwd=prefix)
    assert imported.returncode == 0, imported.stderr


def test_every_share_file_is_installed(installed):
    _, prefix = installed
    share = prefix / 'share' / 'realm_ros'
    assert (share / 'package.xml').is_file()
    for folder in SHARE_FOLDERS:
        expected = {p.relative_to(ROOT) for p in (ROOT / folder).rglob('*')
                    if p.is_file() and '__pycache__' not in p.parts}
        got = {p.relative_to(share) for p in (share / folder).rglob('*')
               if p.is_file() and '__pycache__' not in p.parts}
        assert expected and expected <= got, sorted(map(str, expected - got))


def test_installed_code_finds_its_share_files(installed):
    """realm_ros.graph.share_path resolves packaged config through the ament index."""
    _, prefix = installed
    out = _ament(prefix, "from realm_ros.graph import share_path\n"
                         "print(share_path('config/paired_eval.yaml'))")
    assert out == str(prefix / 'share' / 'realm_ros' / 'config' / 'paired_eval.yaml')
