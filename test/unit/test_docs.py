"""The generated reference pages match the code they are generated from."""

import pathlib
import subprocess
import sys

from realm_ros.commands import docs_params

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_parameters_page_matches_the_config_schemas():
    committed = (ROOT / docs_params.DEFAULT_OUT).read_text()
    assert committed == docs_params.render(), \
        'docs/parameters.md is out of date: run `realm-ros docs-params` and commit the result'


def test_every_config_dataclass_is_documented():
    """A new config dataclass in core (or a node) gets a section in docs/parameters.md."""
    import dataclasses
    import importlib
    import pkgutil

    import realm_ros.core as core

    targets = [s.target.split(':') for sec in docs_params.SECTIONS for s in sec.schemas]
    schemas = [getattr(importlib.import_module(m), name) for m, name in targets]
    # A base class whose fields every documented subclass lists (config.SimulationConfig).
    documented = {base.__name__ for cls in schemas for base in cls.__mro__}
    found = set()
    for info in pkgutil.iter_modules(core.__path__, 'realm_ros.core.'):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if dataclasses.is_dataclass(obj) and obj.__module__ == info.name and any(
                    'help' in f.metadata for f in dataclasses.fields(obj)):
                found.add(name)
    assert {'WorldConfig', 'DigitalRealConfig', 'SimulationConfig'} <= found
    assert found - documented == set(), 'add these schemas to docs_params.SECTIONS'


def test_check_mode_reports_a_stale_page(tmp_path):
    stale = tmp_path / 'parameters.md'
    stale.write_text('# old\n')
    proc = subprocess.run([sys.executable, '-m', 'realm_ros.cli', 'docs-params', '--check',
                           '--out', str(stale)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and 'out of date' in proc.stdout
    subprocess.run([sys.executable, '-m', 'realm_ros.cli', 'docs-params', '--out', str(stale)],
                   check=True, capture_output=True, timeout=60)
    assert stale.read_text() == docs_params.render()
