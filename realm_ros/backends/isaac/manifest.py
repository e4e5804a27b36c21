"""The Isaac Sim Python API the ``isaac`` backend may call, as published in Isaac Sim's wheels.

Every Isaac Sim extension ships ``config/python_api.md``: its public classes, methods and
signatures as text. :func:`parse_python_api` reads that format; :func:`build_manifest` keeps
the modules the backend uses and writes ``isaac_api_manifest.json`` beside this file (names and
signatures: interface facts). ``test/unit/test_isaac_backend.py`` runs the backend against objects
built from this manifest, so a call that is not in Isaac Sim 6.x's API, or whose arguments do
not bind to the published signature, fails the test.

Regenerate (needs network once; the wheels are cp312-only, downloading them works anywhere)::

    pip download --no-deps --python-version 3.12 --only-binary=:all: \\
        isaacsim-core==6.2.0.0 isaacsim-sensor==6.2.0.0 -d /tmp/isaac_wheels
    python -m realm_ros.backends.isaac.manifest /tmp/isaac_wheels
"""

from __future__ import annotations

import json
import pathlib
import re
import sys
import zipfile

MANIFEST_PATH = pathlib.Path(__file__).with_name('isaac_api_manifest.json')

#: Modules whose API the backend uses: 6.x (experimental) and the 5.x spelling it falls back to.
MODULES = (
    'isaacsim.simulation_app',
    'isaacsim.core.simulation_manager',
    'isaacsim.core.experimental.prims',
    'isaacsim.sensors.experimental.rtx',
    'isaacsim.core.api',
)

#: Modules whose python_api.md says "No public API" although their functions are public
#: (``isaacsim.core.experimental.utils.stage.open_stage`` ...): their signatures are read from
#: the wheel's source with ``ast`` (names and parameters only).
SOURCE_MODULES = {
    'isaacsim.core.experimental.utils.stage':
        'isaacsim/exts/isaacsim.core.experimental.utils/isaacsim/core/experimental/utils/'
        'impl/stage.py',
    'isaacsim.core.experimental.utils.app':
        'isaacsim/exts/isaacsim.core.experimental.utils/isaacsim/core/experimental/utils/'
        'impl/app.py',
}

_MODULE = re.compile(r'^# Public API for module (\S+):')
_CLASS = re.compile(r'^- class (\w+)(?:\((.*)\))?\s*$')
_MEMBER = re.compile(
    r'^  - (?:(\[property\]|static|class|async) )?def (\w+)\((.*)\)(?: -> (.*))?$')
_FUNC = re.compile(r'^- def (\w+)\((.*)\)(?: -> (.*))?$')


def parse_python_api(text: str) -> dict[str, dict]:
    """Return ``{module: {'classes': {name: {'bases': [...], 'members': {...}}},
    'functions': {name: signature}}}`` from one ``python_api.md``."""
    out: dict[str, dict] = {}
    module = cls = None
    for line in text.splitlines():
        if m := _MODULE.match(line):
            module = m.group(1)
            out[module] = {'classes': {}, 'functions': {}}
            cls = None
        elif module is None:
            continue
        elif m := _CLASS.match(line):
            cls = m.group(1)
            bases = [b.strip() for b in (m.group(2) or '').split(',') if b.strip()]
            out[module]['classes'][cls] = {'bases': bases, 'members': {}}
        elif (m := _MEMBER.match(line)) and cls is not None:
            kind = {'[property]': 'property', 'static': 'staticmethod', 'class': 'classmethod',
                    'async': 'async'}.get(m.group(1) or '', 'method')
            out[module]['classes'][cls]['members'][m.group(2)] = {
                'kind': kind, 'params': m.group(3)}
        elif m := _FUNC.match(line):
            out[module]['functions'][m.group(1)] = {'kind': 'function', 'params': m.group(2)}
            cls = None
    return out


def parse_source_functions(source: str) -> dict[str, dict]:
    """Return ``{name: {'kind': 'function', 'params': '...'}}`` of public top-level defs."""
    import ast
    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith('_'):
            out[node.name] = {'kind': 'function', 'params': ast.unparse(node.args)}
    return out


def build_manifest(wheel_dir: str | pathlib.Path) -> dict:
    """Parse every ``python_api.md`` in the wheels under ``wheel_dir``; keep :data:`MODULES`."""
    modules: dict[str, dict] = {}
    sources = []
    for wheel in sorted(pathlib.Path(wheel_dir).glob('isaacsim_*.whl')):
        with zipfile.ZipFile(wheel) as z:
            for name in z.namelist():
                if name.endswith('config/python_api.md'):
                    parsed = parse_python_api(z.read(name).decode())
                    for module, api in parsed.items():
                        if module in MODULES:
                            modules[module] = api
                            sources.append(f'{wheel.name}:{name}')
                for module, path in SOURCE_MODULES.items():
                    if name == path:
                        modules[module] = {'classes': {}, 'functions': parse_source_functions(
                            z.read(name).decode())}
                        sources.append(f'{wheel.name}:{name}')
    missing = [m for m in (*MODULES, *SOURCE_MODULES) if m not in modules]
    if missing:
        raise SystemExit(f'modules not found in {wheel_dir}: {missing}')
    return {'isaac_sim': '6.2.0.0', 'sources': sorted(set(sources)), 'modules': modules}


def load_manifest() -> dict:
    """Return the committed manifest."""
    return json.loads(MANIFEST_PATH.read_text())


if __name__ == '__main__':
    manifest = build_manifest(sys.argv[1] if len(sys.argv) > 1 else '.')
    MANIFEST_PATH.write_text(json.dumps(manifest, indent=1, sort_keys=True) + '\n')
    print(f'wrote {MANIFEST_PATH}')
