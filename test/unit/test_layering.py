"""The package's layers import only downwards (docs/architecture.md, "Layers").

Order, lowest first: ``core`` <- ``io``, ``policies``, ``backends`` <- ``ros`` (and the ROS-free
``programs``: paired, report, vision_demo, demonstrations, description) <- ``nodes``, ``graph``
<- ``commands``, ``cli``. A module may import
its own layer and the layers below it, never one above, and never a private (``_name``) from
another module. ``core`` also stays free of ROS and simulator SDKs. No two modules import each
other, directly or round a loop, counting every import (function-local ones too: an import
moved into a function to dodge a cycle is still the cycle).
"""

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / 'realm_ros'
CORE = PACKAGE / 'core'
FORBIDDEN = ('rclpy', 'mujoco', 'isaacsim', 'omni', 'launch', 'launch_ros', 'torch', 'jax')

#: First component under ``realm_ros`` -> rank; a module imports only ranks <= its own.
RANKS = {
    'core': 0,
    'io': 1, 'policies': 1, 'backends': 1, 'scorers': 1, 'console': 1,
    'ros': 2, 'programs': 2, 'arena': 2, 'sweep': 2,
    'nodes': 3, 'graph': 3,
    'commands': 4, 'cli': 4,
}
#: Sibling packages of one rank that must not import each other either.
SIBLINGS_APART = {'io', 'policies', 'backends', 'scorers'}
#: Nodes and the graph reach a backend through ``core.world``'s registries (``make_world``,
#: ``initial_state_sampler``), imported lazily by name, so a node never names a simulator.
#: The exceptions are nodes that *are* one backend's host.
BACKEND_HOSTS = {'realm_ros.nodes.digital_real_node'}
#: Known edges against the order, each with its reason. Keep this short.
EXCEPTIONS = {
    # The franka bridge is a World whose far side is ROS: it owns an rclpy node and uses the
    # package's ROS conversions and QoS to talk to franka_ros2.
    ('realm_ros.backends.franka', 'ros'),
}


#: Import cycles still in the tree, each removed by the issue named (then delete its entry;
#: the test fails while an entry names a cycle that is gone).
ALLOWED_CYCLES: set[frozenset[str]] = set()


def _excepted(module: str, layer: str) -> bool:
    """Whether ``module`` (or the package it is in) may import ``layer`` (:data:`EXCEPTIONS`)."""
    return any(layer == allowed and (module == owner or module.startswith(owner + '.'))
               for owner, allowed in EXCEPTIONS)


def _modules() -> list[pathlib.Path]:
    return sorted(PACKAGE.rglob('*.py'))


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix('').parts
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def _imports(path: pathlib.Path) -> list[tuple[str, list[str]]]:
    """Return ``(module, imported names)`` for each import, relative imports resolved."""
    tree = ast.parse(path.read_text())
    package = _module_name(path).split('.')
    if path.name != '__init__.py':
        package = package[:-1]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                module = '.'.join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ''
            names = [a.name for a in node.names]
            out.append((module, names))
            if module == 'realm_ros':  # from realm_ros import cli: the names are modules
                out += [(f'realm_ros.{n}', []) for n in names]
    return out


def _layer(module: str) -> str | None:
    parts = module.split('.')
    if parts[0] != 'realm_ros' or len(parts) < 2:
        return None
    return parts[1]


def test_architecture_md_ranks_every_layer_as_ranks_does():
    """docs/architecture.md's layer table names each layer of :data:`RANKS` at its rank."""
    import re
    text = (PACKAGE.parent / 'docs' / 'architecture.md').read_text()
    section = text.split('## Layers', 1)[1].split('\n## ', 1)[0]
    documented = {}
    for rank, layers in re.findall(r'^\| (\d) \| ([^|]+) \|', section, re.M):
        while re.search(r'\([^()]*\)', layers):  # what a layer holds, in brackets, is not one
            layers = re.sub(r'\([^()]*\)', '', layers)
        for name in re.findall(r'`([a-z_]+)(?:/|\.py)`', layers):
            documented[name] = int(rank)
    assert documented == RANKS


def test_every_layer_is_ranked():
    layers = {p.relative_to(PACKAGE).parts[0].removesuffix('.py') for p in _modules()}
    layers.discard('__init__')
    assert layers - set(RANKS) == set(), 'rank the new layer in RANKS'


@pytest.mark.parametrize('path', _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_down_the_layers(path):
    me = _module_name(path)
    mine = _layer(me)
    if mine is None:  # realm_ros/__init__.py
        return
    for module, _ in _imports(path):
        theirs = _layer(module)
        if theirs is None or theirs == mine or _excepted(me, theirs):
            continue
        assert RANKS[theirs] <= RANKS[mine], f'{me} ({mine}) imports {module}: upward edge'
        assert not (RANKS[theirs] == RANKS[mine] and {mine, theirs} <= SIBLINGS_APART), \
            f'{me} imports its sibling layer {module}'
        if theirs == 'backends' and mine in ('ros', 'nodes', 'graph'):
            assert me in BACKEND_HOSTS, \
                f'{me} imports backend {module}; go through realm_ros.core.world instead'


@pytest.mark.parametrize('path', _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_private_names_across_modules(path):
    me = _module_name(path)
    for module, names in _imports(path):
        if module.startswith('realm_ros') and module != me:
            private = [n for n in names if n.startswith('_') and not n.startswith('__')]
            assert not private, f'{me} imports private {private} from {module}'


@pytest.mark.parametrize('path', sorted(CORE.rglob('*.py')), ids=lambda p: p.name)
def test_core_imports_no_ros_or_simulator(path):
    for name, _ in _imports(path):
        top = name.split('.')[0]
        assert top not in FORBIDDEN, f'{path.name} imports {name}'
        assert not top.endswith('_msgs') and not top.endswith('_srvs'), \
            f'{path.name} imports message package {name}'


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


def _import_graph() -> dict[str, set[str]]:
    """Return module -> the realm_ros modules it imports (anywhere in it, functions too).

    ``from package import name`` counts as importing ``package.name`` when that is a module,
    else ``package``.
    """
    modules = {_module_name(p) for p in _modules()}
    graph: dict[str, set[str]] = {}
    for path in _modules():
        me = _module_name(path)
        edges = set()
        for module, names in _imports(path):
            if not module.startswith('realm_ros'):
                continue
            subs = {f'{module}.{n}' for n in names} & modules
            edges |= subs
            if len(subs) < len(names) or not names:
                edges.add(module)
        graph[me] = (edges & modules) - {me}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Return the strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles_between_modules():
    cycles = set(_cycles(_import_graph()))
    new = [sorted(c) for c in cycles - ALLOWED_CYCLES]
    assert not new, f'import cycles (function-local imports count): {new}'
    gone = [sorted(c) for c in ALLOWED_CYCLES - cycles]
    assert not gone, f'these cycles are gone: delete them from ALLOWED_CYCLES: {gone}'


def test_the_cycle_check_sees_a_function_local_import():
    graph = {'a': {'b'}, 'b': {'c'}, 'c': {'a'}, 'd': {'a'}}
    assert _cycles(graph) == [frozenset({'a', 'b', 'c'})]
    # model.py imports visuals only inside functions; the edge is there all the same.
    edges = _import_graph()['realm_ros.backends.mujoco.model']
    assert 'realm_ros.backends.mujoco.visuals' in edges
