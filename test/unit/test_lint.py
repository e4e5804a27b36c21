"""Lint as a test: ruff configured like ament_flake8 (99 columns, quotes)."""

import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_ruff_is_clean():
    ruff = shutil.which('ruff') or str(pathlib.Path(sys.executable).parent / 'ruff')
    paths = [p for p in ('realm_ros', 'test', 'bench', 'launch') if (ROOT / p).is_dir()]
    proc = subprocess.run([ruff, 'check', *paths],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
