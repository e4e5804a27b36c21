"""A bench script (``bench/NAME.py``) loaded as a module, for the tests of its pure parts (the
bench folder is not a package and sits outside ``realm_ros``)."""

from __future__ import annotations

import importlib.util
import pathlib
from types import ModuleType

REPO = pathlib.Path(__file__).resolve().parents[2]


def load_bench(name: str) -> ModuleType:
    """Return ``bench/<name>.py`` executed as the module ``name``."""
    spec = importlib.util.spec_from_file_location(name, REPO / 'bench' / f'{name}.py')
    assert spec is not None and spec.loader is not None, name
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
