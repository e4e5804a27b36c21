"""The Isaac Sim backend against Isaac Sim 6.2's published API (no Isaac Sim here).

Isaac Sim cannot run on this project's machines (RTX GPU). What can be checked here:

1. Every Isaac Sim call in ``backends/isaac/world.py`` names a function, class, method or
   property of the API manifest taken from the 6.2 wheels' ``config/python_api.md``
   (static check of the source: misspelt or invented calls fail).
2. The backend runs end to end (build, reset, apply, step, set_dynamics, render) against
   stand-in modules generated *from that manifest*: each method exists only if the manifest
   lists it and binds its arguments to the published signature (``inspect.Signature.bind``), so
   a wrong keyword or arity fails. The stand-ins hold state (what was set is what is read) but
   simulate nothing: this checks the wiring and the interface, not Isaac Sim's physics. That
   is the PhysX twin's job (test_physx_twin.py), which shares the rest of the code.
"""

import ast
import inspect
import pathlib
import sys
import textwrap
import types

import numpy as np
import pytest

from realm_ros.backends.isaac import manifest as manifest_mod

SOURCE = pathlib.Path(manifest_mod.__file__).with_name('world.py')


@pytest.fixture(scope='module')
def manifest():
    return manifest_mod.load_manifest()


def _names(manifest):
    names = set()
    for api in manifest['modules'].values():
        names.update(api['functions'])
        for cls, spec in api['classes'].items():
            names.add(cls)
            names.update(spec['members'])
    return names


#: Calls in world.py that are not Isaac Sim's (numpy, stdlib, cv2, this package).
NOT_ISAAC = {
    'np.array', 'np.r_', 'np.stack', 'np.asarray', 'hasattr', 'list', 'float', 'KeyError',
    'importlib.import_module', 'ConfigError', 'BackendUnavailable', 'super', 'abs', 'str',
    'getattr', 'cv2.resize', 'dataclasses.replace', 'rgb.astype', 'value.numpy',
    'data.numpy', 'self.read', 'launch_app', '_np', '_ArticulationView', '_RigidView',
    'IsaacEngine', 'self.render', 'super().__init__', 'super().observe', 'super().close',
    'perturbations.augment_image', 'values.reshape', 'images.items',
}


def _call_name(node):
    return ast.unparse(node.func)


def test_every_isaac_call_in_the_backend_is_in_the_6x_manifest(manifest):
    names = _names(manifest)
    tree = ast.parse(SOURCE.read_text())
    unknown = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node)
        if name in NOT_ISAAC or name.split('.')[-1] in {'numpy'} or name.startswith('_np('):
            continue
        if name.split('.')[-1] not in names:
            unknown.append(name)
    # Properties read without a call (dof_names).
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == 'dof_names' and \
                ast.unparse(node.value) == 'self.art':
            assert 'dof_names' in names
    assert unknown == [], f'calls not in the Isaac Sim 6.2 manifest: {unknown}'


def test_manifest_is_from_the_wheels_and_has_the_calls_the_issue_names(manifest):
    prims = manifest['modules']['isaacsim.core.experimental.prims']['classes']
    members = prims['Articulation']['members']
    for name in ('set_dof_position_targets', 'set_dof_armatures', 'set_dof_friction_properties'):
        assert name in members
    assert 'armatures' in members['set_dof_armatures']['params']
    assert all('python_api.md' in s or s.endswith('.py') for s in manifest['sources'])
    assert manifest['isaac_sim'].startswith('6.')


def test_manifest_parser_reads_the_python_api_md_format():
    text = textwrap.dedent("""\
        # Public API for module isaacsim.core.experimental.prims:

        ## Classes

        - class Articulation(XformPrim)
          - def __init__(self, paths: str | list[str])
          - [property] def dof_names(self) -> list[str]
          - def set_dof_armatures(self, armatures: float | list | np.ndarray | wp.array)
        """)
    api = manifest_mod.parse_python_api(text)['isaacsim.core.experimental.prims']
    art = api['classes']['Articulation']
    assert art['bases'] == ['XformPrim']
    assert art['members']['dof_names']['kind'] == 'property'
    assert art['members']['set_dof_armatures']['params'].startswith('self, armatures')


# -- stand-in modules generated from the manifest ---------------------------------------------

class FakeArray:
    """What Isaac returns: a warp array; only ``numpy()`` is used."""

    def __init__(self, value):
        self.value = np.array(value, dtype=float)

    def numpy(self):
        return self.value.copy()


def _signature(params, kind):
    src = f'from __future__ import annotations\ndef f({params}): pass\n'
    namespace = {}
    exec(compile(src, '<manifest>', 'exec'), namespace)  # noqa: S102 - manifest text only
    sig = inspect.signature(namespace['f'])
    if kind in ('classmethod',) and list(sig.parameters)[:1] == ['cls']:
        sig = sig.replace(parameters=list(sig.parameters.values())[1:])
    return sig


class Recorder:
    def __init__(self):
        self.calls = []
        self.behaviour = {}


def build_fake_isaac(manifest, recorder, drop=()):
    """Return {module name: module} with classes/functions exactly as the manifest lists."""
    modules = {}
    for mod_name, api in manifest['modules'].items():
        module = types.ModuleType(mod_name)
        for fname, spec in api['functions'].items():
            module.__dict__[fname] = _make_function(mod_name, None, fname, spec, recorder)
        pending = dict(api['classes'])
        while pending:  # bases first (same-module bases only; ABC and the like are dropped)
            for cls_name, cspec in list(pending.items()):
                bases = [b for b in cspec['bases'] if b in api['classes']]
                if any(b in pending for b in bases):
                    continue
                attrs = {}
                for member, spec in cspec['members'].items():
                    if (mod_name, cls_name, member) not in drop:
                        attrs[member] = _make_member(mod_name, cls_name, member, spec, recorder)
                parents = tuple(module.__dict__[b] for b in bases)
                module.__dict__[cls_name] = type(cls_name, parents or (), attrs)
                del pending[cls_name]
        modules[mod_name] = module
    # ``from isaacsim import SimulationApp`` (the documented idiom) re-exports this class.
    top = types.ModuleType('isaacsim')
    top.SimulationApp = modules['isaacsim.simulation_app'].SimulationApp
    modules['isaacsim'] = top
    return modules


def _make_function(mod, cls, name, spec, recorder):
    sig = _signature(spec['params'], spec['kind'])
    key = f'{mod}.{cls + "." if cls else ""}{name}'

    def call(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)  # TypeError if not the published signature
        recorder.calls.append(key)
        hook = recorder.behaviour.get(key)
        return hook(*bound.args, **bound.kwargs) if hook else None

    return call


def _make_member(mod, cls, name, spec, recorder):
    key = f'{mod}.{cls}.{name}'
    sig = _signature(spec['params'], spec['kind'])
    if spec['kind'] == 'property':
        def getter(self):
            recorder.calls.append(key)
            return recorder.behaviour[key](self)
        return property(getter)

    def method(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        recorder.calls.append(key)
        hook = recorder.behaviour.get(key)
        return hook(*bound.args, **bound.kwargs) if hook else None

    if spec['kind'] == 'classmethod':
        return classmethod(lambda cls_, *a, **k: method(*a, **k))
    if spec['kind'] == 'staticmethod':
        return staticmethod(method)
    return method


class KinematicState:
    """State behind the stand-ins: what is set is what is read; nothing is simulated."""

    def __init__(self):
        self.usd_path = None
        self.arts = {}
        self.bodies = {}
        self.steps = 0

    def joints_of(self, root_joint):
        from pxr import Usd, UsdPhysics
        stage = Usd.Stage.Open(self.usd_path)
        prefix = root_joint.rsplit('/', 1)[0] + '/'
        return [p.GetName() for p in stage.Traverse()
                if str(p.GetPath()).startswith(prefix) and
                (p.IsA(UsdPhysics.RevoluteJoint) or p.IsA(UsdPhysics.PrismaticJoint))]

    def install(self, rec):
        P = 'isaacsim.core.experimental.prims.Articulation.'
        R = 'isaacsim.core.experimental.prims.RigidPrim.'
        b = rec.behaviour

        def open_stage(usd_path):
            self.usd_path = usd_path
            return True, object()

        b['isaacsim.core.experimental.utils.stage.open_stage'] = open_stage

        def art_init(obj, paths):
            n = len(self.joints_of(paths))
            obj._path = paths
            self.arts[paths] = {k: np.zeros((1, n)) for k in (
                'q', 'dq', 'target', 'effort', 'armature', 'static', 'dynamic', 'viscous')}
            self.arts[paths]['pos'] = np.zeros((1, 3))
            self.arts[paths]['quat'] = np.array([[1.0, 0, 0, 0]])

        b[P + '__init__'] = art_init
        b[P + 'dof_names'] = lambda obj: self.joints_of(obj._path)
        for getter, key in (('get_dof_positions', 'q'), ('get_dof_velocities', 'dq'),
                            ('get_dof_position_targets', 'target'),
                            ('get_dof_efforts', 'effort'), ('get_dof_armatures', 'armature')):
            b[P + getter] = lambda obj, key=key: FakeArray(self.arts[obj._path][key])
        for setter, key, arg in (('set_dof_positions', 'q', 'positions'),
                                 ('set_dof_velocities', 'dq', 'velocities'),
                                 ('set_dof_position_targets', 'target', 'positions'),
                                 ('set_dof_efforts', 'effort', 'efforts'),
                                 ('set_dof_armatures', 'armature', 'armatures')):
            def setter_fn(obj, *args, key=key, arg=arg, **kwargs):
                self.arts[obj._path][key] = np.array(args[0] if args else kwargs[arg], float)
            b[P + setter] = setter_fn
        b[P + 'get_dof_friction_properties'] = lambda obj: tuple(
            FakeArray(self.arts[obj._path][k]) for k in ('static', 'dynamic', 'viscous'))

        def set_friction(obj, static_frictions=None, dynamic_frictions=None,
                         viscous_frictions=None):
            for key, value in (('static', static_frictions), ('dynamic', dynamic_frictions),
                               ('viscous', viscous_frictions)):
                if value is not None:
                    self.arts[obj._path][key] = np.array(value, float)

        b[P + 'set_dof_friction_properties'] = set_friction
        b[P + 'get_world_poses'] = lambda obj: (FakeArray(self.arts[obj._path]['pos']),
                                                FakeArray(self.arts[obj._path]['quat']))

        def set_art_pose(obj, positions=None, orientations=None):
            self.arts[obj._path]['pos'] = np.array(positions, float)
            self.arts[obj._path]['quat'] = np.array(orientations, float)

        b[P + 'set_world_poses'] = set_art_pose

        def body_init(obj, paths):
            obj._path = paths
            self.bodies[paths] = {'pos': np.zeros((1, 3)), 'quat': np.array([[1.0, 0, 0, 0]]),
                                  'lin': np.zeros((1, 3)), 'ang': np.zeros((1, 3))}

        b[R + '__init__'] = body_init
        b[R + 'get_world_poses'] = lambda obj: (FakeArray(self.bodies[obj._path]['pos']),
                                                FakeArray(self.bodies[obj._path]['quat']))
        b[R + 'get_velocities'] = lambda obj: (FakeArray(self.bodies[obj._path]['lin']),
                                               FakeArray(self.bodies[obj._path]['ang']))

        def set_body_pose(obj, positions=None, orientations=None):
            self.bodies[obj._path].update(pos=np.array(positions, float),
                                          quat=np.array(orientations, float))

        def set_body_vel(obj, linear_velocities=None, angular_velocities=None):
            self.bodies[obj._path].update(lin=np.array(linear_velocities, float),
                                          ang=np.array(angular_velocities, float))

        b[R + 'get_masses'] = lambda obj: FakeArray([self.bodies[obj._path].get('mass', 0.1)])
        b[R + 'get_inertias'] = lambda obj: FakeArray(
            self.bodies[obj._path].get('inertia', np.eye(3).reshape(1, 9) * 1e-4))
        b[R + 'set_masses'] = lambda obj, masses: self.bodies[obj._path].update(
            mass=float(np.asarray(masses).reshape(-1)[0]))
        b[R + 'set_inertias'] = lambda obj, inertias: self.bodies[obj._path].update(
            inertia=np.asarray(inertias, float).reshape(1, 9))
        b[R + 'set_world_poses'] = set_body_pose
        b[R + 'set_velocities'] = set_body_vel

        def count_step(*args, **kwargs):
            self.steps += 1

        b['isaacsim.core.simulation_manager.SimulationManager.step'] = count_step
        b['isaacsim.core.api.World.step'] = count_step
        b['isaacsim.sensors.experimental.rtx.CameraSensor.get_data'] = lambda obj, annotator: (
            FakeArray(np.zeros((720, 1280, 4))), {})


@pytest.fixture(params=['6.x', '5.x'])
def fake_isaac(request, manifest, monkeypatch):
    pytest.importorskip('pxr')
    recorder = Recorder()
    drop = set()
    if request.param == '5.x':
        drop.add(('isaacsim.core.simulation_manager', 'SimulationManager', 'setup_simulation'))
    modules = build_fake_isaac(manifest, recorder, drop)
    state = KinematicState()
    state.install(recorder)
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    return recorder, state, request.param


def test_isaac_world_runs_against_the_manifest_stand_ins(fake_isaac):
    from realm_ros.backends.isaac.world import IsaacWorld, launch_app
    from realm_ros.core import robot
    from realm_ros.core.config import DynamicsParams, WorldConfig
    from realm_ros.core.types import Action, EpisodeSpec
    recorder, state, version = fake_isaac
    config = WorldConfig(backend='isaac', task='put_banana_into_box',
                         cameras=('exterior_1', 'wrist'), camera_width=320, camera_height=180)
    world = IsaacWorld(config, app=launch_app())
    obs = world.reset(EpisodeSpec(task='put_banana_into_box', seed=3))
    np.testing.assert_allclose(obs.joints.position, world._mirror.data.qpos[:7])
    assert set(obs.images) == {'exterior_1', 'wrist'}
    assert obs.images['wrist'].shape == (180, 320, 3)
    steps_before = state.steps
    world.apply(Action(robot.RESET_Q + 0.01, 1.0))
    world.step()
    assert state.steps - steps_before == config.substeps
    world.set_dynamics(DynamicsParams(friction=(0.1,) * 7, armature=(0.2,) * 7))
    assert world.dynamics().armature == pytest.approx((0.2,) * 7)
    assert world.dynamics().friction == pytest.approx((0.1,) * 7)
    art = next(iter(a for p, a in state.arts.items() if 'panda' in p))
    assert np.all(art['target'][0, :7] == pytest.approx(robot.RESET_Q + 0.01))
    world.close()
    called = set(recorder.calls)
    if version == '6.x':
        assert 'isaacsim.core.simulation_manager.SimulationManager.setup_simulation' in called
    else:
        assert 'isaacsim.core.api.World.__init__' in called
    assert {'isaacsim.core.experimental.prims.Articulation.set_dof_position_targets',
            'isaacsim.core.experimental.prims.Articulation.set_dof_efforts',
            'isaacsim.core.experimental.prims.Articulation.set_dof_armatures',
            'isaacsim.core.experimental.prims.Articulation.set_dof_friction_properties',
            'isaacsim.sensors.experimental.rtx.CameraSensor.get_data'} <= called


def test_isaac_stays_not_run_unless_a_lab_opts_in(monkeypatch):
    from realm_ros.core.backends import get
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.errors import BackendUnavailable
    from realm_ros.core.world import TRY_NOT_RUN, make_world
    assert 'NOT been run' in get('isaac').not_run
    with pytest.raises(BackendUnavailable, match='NOT been run'):
        make_world(WorldConfig(backend='isaac'))
    monkeypatch.setenv(TRY_NOT_RUN, 'isaac')
    monkeypatch.setitem(sys.modules, 'isaacsim', None)  # not installed here
    with pytest.raises(BackendUnavailable, match='Isaac Sim is not installed'):
        make_world(WorldConfig(backend='isaac'))
