"""Type-check as a test, so `make test` fails on a type error: mypy over all of realm_ros/.

Settings live in pyproject.toml (``[tool.mypy]``): mypy's defaults, with the untyped third-party
libraries (cma, yaml, tqdm, msgpack, mujoco) treated as ``Any``.
"""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECKED = ('realm_ros',)


def test_testing_md_says_what_mypy_checks():
    text = (ROOT / 'docs' / 'testing.md').read_text()
    assert f"`mypy {' '.join(CHECKED)}` (the whole package)" in text


def test_mypy_is_clean():
    proc = subprocess.run([sys.executable, '-m', 'mypy', *CHECKED],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
