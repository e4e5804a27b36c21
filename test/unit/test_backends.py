"""World backends are one registered record each (``realm_ros/core/backends.py``).

Nothing else spells the list: no tuple, list, set or dict of two or more backend names and no
comparison with a backend name anywhere in the package or the launch files outside the registry
(counted by reading the source). A toy backend registered here, and nowhere else, is a choice of
the CLI, of the configs, of the launch files and a world of the paired graph, and runs.
"""

import ast
import pathlib

import pytest

from realm_ros.core import backends
from realm_ros.core.config import WorldConfig
from realm_ros.core.errors import ConfigError
from realm_ros.core.evaluation import EvalConfig
from realm_ros.core.types import Action, EpisodeSpec, Observation
from realm_ros.core.world import World, make_world

ROOT = pathlib.Path(__file__).resolve().parents[2]
REGISTRY = ROOT / 'realm_ros' / 'core' / 'backends.py'
SOURCES = sorted([*(ROOT / 'realm_ros').rglob('*.py'), *(ROOT / 'launch').glob('*.py')])
NAMES = frozenset(backends.BACKENDS)


def _named(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in NAMES


def hand_written(path: pathlib.Path) -> tuple[list[int], list[int]]:
    """Return the lines of ``path`` with a hand-written list of backend names (two or more in
    one tuple, list, set or dict literal) and those branching on one (a comparison with it)."""
    lists, branches = [], []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            if sum(_named(e) for e in node.elts) >= 2:
                lists.append(node.lineno)
        elif isinstance(node, ast.Dict):
            if sum(k is not None and _named(k) for k in node.keys) >= 2:
                lists.append(node.lineno)
        elif isinstance(node, ast.Compare):
            if any(_named(n) for n in (node.left, *node.comparators)):
                branches.append(node.lineno)
    return lists, branches


def test_no_backend_list_or_branch_outside_the_registry():
    lists, branches = [], []
    for path in SOURCES:
        if path == REGISTRY:
            continue
        found_lists, found_branches = hand_written(path)
        where = str(path.relative_to(ROOT))
        lists += [f'{where}:{line}' for line in found_lists]
        branches += [f'{where}:{line}' for line in found_branches]
    assert (lists, branches) == ([], []), \
        'derive these from realm_ros.core.backends (a Backend field, names(), get())'


def test_the_count_sees_a_list_and_a_branch(tmp_path):
    path = tmp_path / 'old.py'
    path.write_text("CHOICES = ('mujoco', 'physx')\nif real == 'franka':\n    pass\n"
                    "WORLDS = {'mujoco': 1, 'isaac': 2}\nONE = ('mujoco', 'x')\n")
    assert hand_written(path) == ([1, 4], [2])


class ToyWorld(World):
    """A world that holds its arm where it is: enough to be built, reset and stepped."""

    name = 'toy'

    def __init__(self, config: WorldConfig) -> None:
        self.config = config
        self._t = 0.0

    @property
    def control_dt(self) -> float:
        return 1.0 / self.config.control_hz

    @property
    def time(self) -> float:
        return self._t

    def reset(self, spec: EpisodeSpec) -> Observation:
        self._t = 0.0
        return self.observe()

    def apply(self, action: Action) -> Action:
        return action

    def step(self) -> Observation:
        self._t += self.control_dt
        return self.observe()

    def observe(self, render: bool = True) -> Observation:
        import numpy as np

        from realm_ros.core import robot
        from realm_ros.core.types import JointState
        return Observation(JointState(robot.RESET_Q.copy(), np.zeros(7), np.zeros(7), 0.0,
                                      stamp=self._t))


TOY = backends.Backend('toy', real=False, target=f'{__name__}:ToyWorld',
                       description='a toy twin (a test)', cameras=False)


@pytest.fixture
def toy():
    """Register the toy backend (this file is the only one that knows it); unregister after."""
    backends.register(TOY)
    try:
        yield TOY
    finally:
        del backends.BACKENDS[TOY.name]


def test_a_toy_backend_is_a_choice_everywhere(toy):
    from realm_ros.cli import build_parser
    from realm_ros.graph import backend_choices, paired_eval_graph
    parser = build_parser()
    assert parser.parse_args(['paired-eval', '--out', 'x', '--sim', 'toy']).sim == 'toy'
    assert parser.parse_args(['episode', '--task', 'stack_cubes', '--backend', 'toy']).backend \
        == 'toy'
    with pytest.raises(SystemExit):
        parser.parse_args(['paired-eval', '--out', 'x', '--real', 'toy'])  # a twin, not an arm
    assert WorldConfig(backend='toy').backend == 'toy'
    config = EvalConfig(sim='toy', tasks=('stack_cubes',), policies=('scripted:0',))
    (sim,) = [n for n in paired_eval_graph(config, '/tmp/x') if n.namespace == '/sim'
              and n.executable == 'world_node']
    assert sim.parameters['backend'] == 'toy'
    # The launch files' choices (read at launch time from realm_ros.graph).
    assert 'toy' in backend_choices(lambda b: not b.real) and 'toy' in backend_choices()
    assert 'toy' not in backend_choices(lambda b: b.real)
    for name in ('world', 'paired_eval'):
        text = (ROOT / 'launch' / f'{name}.launch.py').read_text()
        assert 'choices=backend_choices(' in text
    world = make_world(WorldConfig(backend='toy', cameras=()))
    assert isinstance(world, ToyWorld)
    assert world.step().joints.stamp == pytest.approx(world.control_dt)


def test_a_toy_real_backend_is_reached_as_its_record_says(toy):
    from realm_ros.graph import paired_eval_graph
    arm = backends.register(backends.Backend(
        'toy_arm', real=True, target=f'{__name__}:ToyWorld', lockstep=False, privileged=False,
        operator_scored=True, via='franka'))
    try:
        config = EvalConfig(real='toy_arm', tasks=('stack_cubes',), policies=('openpi',))
        nodes = paired_eval_graph(config, '/tmp/x', operator=True)
        (real,) = [n for n in nodes if n.namespace == '/real' and n.executable == 'world_node']
        assert real.parameters['backend'] == 'franka' and real.parameters['lockstep'] is False
        assert any(n.executable == 'operator_node' for n in nodes)
        with pytest.raises(ConfigError, match='privileged'):
            paired_eval_graph(EvalConfig(real='toy_arm', tasks=('stack_cubes',)), '/tmp/x')
    finally:
        del backends.BACKENDS[arm.name]


def test_a_backend_name_is_registered_once():
    with pytest.raises(ConfigError, match='already registered'):
        backends.register(backends.Backend('mujoco', real=False, target='x:Y'))
    with pytest.raises(ConfigError, match='unknown world backend'):
        backends.get('nope')


def test_the_extending_md_backend_recipe_makes_a_choice_everywhere():
    """docs/extending.md's "A world backend" registration, run as written."""
    from docrecipes import recipe

    from realm_ros.cli import build_parser
    from realm_ros.graph import backend_choices
    exec(recipe('A world backend'), {})  # noqa: S102 - the documented code
    try:
        assert backends.get('toy').target == 'realm_ros.backends.toy:ToyWorld'
        assert build_parser().parse_args(['paired-eval', '--out', 'x', '--sim', 'toy']).sim \
            == 'toy'
        assert 'toy' in backend_choices(lambda b: not b.real)
        assert WorldConfig(backend='toy').backend == 'toy'
    finally:
        del backends.BACKENDS['toy']
