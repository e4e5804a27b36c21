"""The scene as USD for PhysX, and the PhysX twin's own checks (kit-less ovphysx).

The checks every twin passes (hold, step response, friction, armature, rejected commands,
gripper, determinism, latency) run on PhysX too, from ``test_twin.py`` (parametrised over the
backend). USD tests need ``usd-core`` + ``physx-usd-schemas``; PhysX tests need ``ovphysx`` (the
``physx`` extra, installed by ``make setup``). Each group skips with the import error if its
packages are missing, so a machine without AVX or glibc 2.35 still runs the rest.
"""

import numpy as np
import pytest
from twin_helpers import import_or_skip, world_per_task

from realm_ros.core import robot, tasks
from realm_ros.core.config import DynamicsParams, WorldConfig
from realm_ros.core.types import Action, EpisodeSpec

# -- USD export -----------------------------------------------------------------------------

@pytest.fixture(scope='module')
def usd():
    import_or_skip('pxr')
    import_or_skip('physx_usd_schemas')
    from realm_ros.backends import usd_export
    return usd_export


@pytest.mark.parametrize('task', [''] + sorted(tasks.TASKS))
def test_every_task_exports_to_a_valid_physx_usd(usd, task):
    stage, layout = usd.export_model(usd.twin_model(task))
    assert usd.validate_stage(stage) == []
    assert list(layout.joints)[:7] == list(robot.JOINT_NAMES)
    assert 'panda_link0' in layout.articulation_bases


def test_usd_masses_equal_the_twin_and_panda_link8_is_folded_into_link7(usd):
    from pxr import UsdPhysics
    model = usd.twin_model('')
    stage, layout = usd.export_model(model)
    masses = {}
    for body, path in layout.rigid_bodies.items():
        masses[model.body(body).name] = UsdPhysics.MassAPI(
            stage.GetPrimAtPath(path)).GetMassAttr().Get()
    robot_bodies = [b for b in range(model.nbody)
                    if model.body_rootid[b] == model.body('panda_link0').id]
    assert sum(masses.values()) == pytest.approx(sum(model.body_mass[robot_bodies]), rel=1e-6)
    # MuJoCo's panda_link8 has no inertial; it and the gripper housing move with link 7.
    assert model.body_mass[model.body('panda_link8').id] == 0.0
    assert 'panda_link8' not in masses
    link7 = sum(model.body_mass[model.body(n).id] for n in ('panda_link7', 'gripper'))
    assert masses['panda_link7'] == pytest.approx(link7, rel=1e-6)
    for name in robot.JOINT_NAMES:
        prim = stage.GetPrimAtPath(layout.joints[name])
        assert prim.GetAttribute('drive:angular:physics:stiffness').Get() == pytest.approx(
            robot.KQ[robot.JOINT_NAMES.index(name)] * np.pi / 180)


def test_validator_reports_a_massless_rigid_body(usd):
    from pxr import UsdPhysics
    stage, layout = usd.export_model(usd.twin_model(''))
    prim = stage.GetPrimAtPath(layout.rigid_bodies[mujoco_body_id(usd, 'panda_link3')])
    UsdPhysics.MassAPI(prim).GetMassAttr().Set(0.0)
    problems = usd.validate_stage(stage)
    assert any('panda_link3' in p and 'mass' in p for p in problems), problems


def mujoco_body_id(usd, name):
    return usd.twin_model('').body(name).id


def test_realm_ros_usd_writes_cameras_lights_and_no_mocap(usd, tmp_path):
    from pxr import Usd, UsdGeom

    from realm_ros.cli import main
    out = tmp_path / 'drawer.usda'
    assert main(['usd', '--task', 'open_drawer', '--out', str(out)]) == 0
    stage = Usd.Stage.Open(str(out))
    names = {p.GetName(): p for p in stage.Traverse()}
    assert {'exterior_1', 'exterior_2', 'wrist'} <= set(names)
    assert names['wrist'].IsA(UsdGeom.Camera)
    assert 'target_frame' not in names
    assert 'top_drawer_slide' in names and 'key' in names
    assert usd.validate_stage(stage) == []


# -- the PhysX twin -------------------------------------------------------------------------

@pytest.fixture(scope='module')
def physx_world():
    import_or_skip('ovphysx')
    from realm_ros.backends.physx.world import PhysxWorld
    w = PhysxWorld(WorldConfig(camera_rate_hz=0, cameras=()))
    yield w
    w.close()


@pytest.fixture
def world(physx_world):
    physx_world.set_dynamics(DynamicsParams())
    physx_world.reset(EpisodeSpec())
    return physx_world


def test_dof_order_and_limits_match_core(world):
    assert world.arm.dof_names[:7] == list(robot.JOINT_NAMES)
    np.testing.assert_allclose(world.arm.read('q')[:7], robot.RESET_Q, atol=1e-6)


def test_tracks_the_mujoco_twin_on_an_excitation_trajectory(world):
    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.core.sysid import ExcitationSpec, excitation_trajectory
    targets = excitation_trajectory(ExcitationSpec(duration_s=4.0), seed=0)
    twin = MujocoWorld(WorldConfig(camera_rate_hz=0, cameras=()))
    twin.reset(EpisodeSpec())
    gaps = []
    for q_d in targets:
        world.apply(Action(q_d, 0.0))
        twin.apply(Action(q_d, 0.0))
        gaps.append(world.step().joints.position - twin.step().joints.position)
    twin.close()
    rms = np.sqrt(np.mean(np.square(gaps), axis=0))
    assert np.all(rms < 0.01), rms  # rad; measured ~1e-3 (docs/isaac-and-physx.md)


def test_make_world_builds_the_physx_backend():
    import_or_skip('ovphysx')
    from realm_ros.core.world import make_world
    w = make_world(WorldConfig(backend='physx', task='push_switch', camera_rate_hz=0,
                               cameras=()))
    obs = w.reset(EpisodeSpec(task='push_switch', seed=1))
    assert w.name == 'physx'
    assert 'light_switch' in obs.privileged['objects']
    w.close()


@pytest.fixture(scope='module')
def task_worlds():
    import_or_skip('ovphysx')
    from realm_ros.backends.physx.world import PhysxWorld
    yield from world_per_task(
        lambda task: PhysxWorld(WorldConfig(task=task, camera_rate_hz=0, cameras=())))


@pytest.mark.slow
@pytest.mark.parametrize('task', sorted(tasks.TASKS))
def test_expert_solves_every_task_in_physx(task_worlds, task):
    from realm_ros.core.episode import run_episode
    from realm_ros.policies.scripted import ScriptedPolicy
    result = run_episode(task_worlds(task), ScriptedPolicy(skill='expert'),
                         EpisodeSpec(task=task, seed=0, max_steps=300))
    assert result.success, result.stages_reached


@pytest.mark.slow
def test_ladder_is_ordered_in_physx(task_worlds):
    from realm_ros.core.episode import run_episode
    from realm_ros.policies.scripted import ScriptedPolicy
    means = []
    for skill in (0, 3):
        scores = [run_episode(task_worlds('push_switch'), ScriptedPolicy(skill=skill),
                              EpisodeSpec(task='push_switch', seed=seed, max_steps=200))
                  .progression for seed in range(2)]
        means.append(float(np.mean(scores)))
    assert means[0] == 1.0
    assert means[0] - means[1] > 0.4, means


def test_batched_physx_rollout_equals_the_world_stepping():
    """sysid's PhysX evaluator (cloned arms) replays what PhysxWorld does, latency included."""
    import_or_skip('ovphysx')
    from realm_ros.backends.physx.rollout import PhysxRollout
    from realm_ros.backends.physx.world import PhysxWorld
    from realm_ros.core.sysid import ExcitationSpec, Trajectory, excitation_trajectory
    targets = excitation_trajectory(ExcitationSpec(duration_s=2.5), seed=1)
    params = [DynamicsParams(), DynamicsParams(friction=(0.2,) * 7, armature=(0.3,) * 7)]
    world = PhysxWorld(WorldConfig(camera_rate_hz=0, cameras=()), latency_s=0.02)
    expected = []
    for p in params:
        world.set_dynamics(p)
        world.reset(EpisodeSpec())
        rows = []
        for q_d in targets:
            world.apply(Action(q_d, 0.0))
            rows.append(world.step().joints.position)
        expected.append(np.array(rows))
    world.close()
    traj = Trajectory(name='t', q0=robot.RESET_Q, dq0=np.zeros(7), gripper0=0.0,
                      targets=targets, gripper=np.zeros(len(targets)), measured=expected[0],
                      measured_dq=np.zeros_like(expected[0]), dt=1 / 15)
    rollout = PhysxRollout(latency_s=0.02, envs=3)
    simulated = rollout.simulate(params, [traj])[0]
    rollout.close()
    assert np.abs(expected[0] - expected[1]).max() > 0.01  # the parameters matter
    for p in range(2):
        np.testing.assert_allclose(simulated[p], expected[p], atol=1e-4)


def test_hidden_object_mass_perturbation_reaches_physx(task_worlds):
    """B-HOBJ scales object masses in the mirror at reset; PhysX's rigid bodies follow."""
    world = task_worlds('stack_cubes')
    world.reset(EpisodeSpec(task='stack_cubes', seed=0))
    base = {n: float(b.read('mass')[0]) for n, b in world._bodies.items()}
    world.reset(EpisodeSpec(task='stack_cubes', seed=0, perturbation='B-HOBJ', intensity=1.0))
    scaled = {n: float(b.read('mass')[0]) for n, b in world._bodies.items()}
    mirror = {n: world._group_mass(n) for n in base}
    assert any(abs(scaled[n] / base[n] - 1) > 0.05 for n in base), (base, scaled)
    for n in base:
        assert scaled[n] == pytest.approx(mirror[n], rel=1e-4)
    world.reset(EpisodeSpec(task='stack_cubes', seed=0))
    assert {n: float(b.read('mass')[0]) for n, b in world._bodies.items()} == pytest.approx(base)


def test_a_blown_up_scene_is_an_infrastructure_error_not_a_score(task_worlds):
    from realm_ros.core.errors import InfrastructureError
    world = task_worlds('stack_cubes')
    world.reset(EpisodeSpec(task='stack_cubes', seed=0))
    body = next(iter(world._bodies.values()))
    body.write('pose', np.r_[1000.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])
    with pytest.raises(InfrastructureError, match='left the scene'):
        world.step()
    world.reset(EpisodeSpec(task='stack_cubes', seed=0))  # and the world recovers at reset
    assert np.all(np.abs(body.read('pose')[:3]) < 2.0)


def test_batched_impedance_equals_the_per_arm_law():
    from realm_ros.backends.physx.common import HybridImpedance, batched_extra_torque
    rng = np.random.default_rng(0)
    q = rng.uniform(robot.JOINT_LOWER, robot.JOINT_UPPER, (6, 7))
    dq = rng.normal(size=(6, 7))
    q_d = q + rng.normal(0.0, 0.3, (6, 7))  # large errors: the effort clip is active too
    law = HybridImpedance()
    expected = np.array([law.extra_torque(q[i], dq[i], q_d[i]) for i in range(6)])
    np.testing.assert_allclose(batched_extra_torque(q, dq, q_d), expected, atol=1e-9)
    total = expected + robot.KQ * (q_d - q) - robot.KQD * dq
    assert np.all(np.abs(total) <= robot.EFFORT_LIMIT + 1e-9)


def test_gripper_closes_at_the_mujoco_twins_speed(world):
    """MuJoCo: one 40 N servo for both fingers against 2 x 300 N s/m slews at 0.067 m/s."""
    from realm_ros.backends.mujoco.world import MujocoWorld
    twin = MujocoWorld(WorldConfig(camera_rate_hz=0, cameras=()))
    twin.reset(EpisodeSpec())
    world.apply(Action(robot.RESET_Q, 1.0))
    twin.apply(Action(robot.RESET_Q, 1.0))
    for _ in range(5):
        physx_g, mujoco_g = world.step().joints.gripper, twin.step().joints.gripper
    twin.close()
    assert physx_g == pytest.approx(mujoco_g, rel=0.1)
