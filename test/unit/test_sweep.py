"""Batched sweeps: the batched IK and scripted expert against the per-world ones, the lockstep
episode loop (``batch.run_batch``) against ``run_episode``, the one-task screening grid.
(The sweep's grid, executors and CLI: ``test_sweep_grid.py``; on Ray: ``test_sweep_ray.py``.)

All of this runs here on CPU MuJoCo. The MJX stepper's tests (``test_sweep_gpu.py``) need
``mujoco-mjx`` and JAX and skip without them.
"""


import numpy as np
import pytest

from realm_ros.core import kinematics, robot
from realm_ros.core.config import WorldConfig
from realm_ros.core.types import EpisodeSpec


def test_solve_ik_batch_equals_solve_ik_row_by_row():
    """Each row of solve_ik_batch is solve_ik on that row (1e-9 rad), whatever its iteration
    count: converged warm starts, far targets, a 180-degree rotation error, at 8 and 30
    iterations."""
    rng = np.random.default_rng(3)
    n = 64
    q0 = robot.RESET_Q + rng.normal(0.0, 0.3, (n, 7))
    pos = np.array([0.5, 0.0, 0.2]) + rng.normal(0.0, 0.12, (n, 3))
    rot = np.stack([kinematics.down_rotation(y) for y in rng.uniform(-3.0, 3.0, n)])
    rest = np.broadcast_to(robot.RESET_Q, (n, 7)).copy()
    # Row 0: already at its target (stops after one forward kinematics).
    tcp = kinematics.tcp_pose(q0[0])
    pos[0], rot[0] = tcp[:3, 3], tcp[:3, :3]
    # Row 1: the target rotation is the start's turned by pi about z.
    tcp = kinematics.tcp_pose(q0[1])
    rot[1] = np.diag([-1.0, -1.0, 1.0]) @ tcp[:3, :3]
    for iterations in (8, 30):
        q, err = kinematics.solve_ik_batch(pos, rot, q0, rest, iterations=iterations)
        for i in range(n):
            qi, ei = kinematics.solve_ik(pos[i], rot[i], q0[i], rest[i], iterations=iterations)
            np.testing.assert_allclose(q[i], qi, atol=1e-9, rtol=0)
            assert abs(err[i] - ei) < 1e-9
    np.testing.assert_allclose(kinematics.tcp_pose_batch(q0[:3])[1], kinematics.tcp_pose(q0[1]),
                               atol=1e-12)
    with pytest.raises(ValueError, match='q_start'):
        kinematics.solve_ik_batch(pos[0], rot[0], q0[0])


def _worlds(specs):
    from realm_ros.backends.mujoco.world import MujocoWorld

    return [MujocoWorld(WorldConfig(task=s.task, cameras=(), camera_rate_hz=0.0)) for s in specs]


def _specs(task, codes, seeds, max_steps):
    return [EpisodeSpec(task=task, seed=s, perturbation=c, max_steps=max_steps,
                        policy='scripted-expert') for c in codes for s in seeds]


@pytest.mark.parametrize('skill', [0, 2])
def test_infer_batch_equals_each_policys_infer(skill):
    """The scripted expert (and a sloppy rung) batched over worlds gives the chunks each
    policy gives alone, along whole episodes of the twin."""
    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.policies.scripted import ScriptedPolicy, infer_batch

    specs = _specs('stack_cubes', ['Default'], [0, 1, 2], 60)
    world = MujocoWorld(WorldConfig(task='stack_cubes', cameras=(), camera_rate_hz=0.0))
    alone = [ScriptedPolicy(skill=skill) for _ in specs]
    batched = [ScriptedPolicy(skill=skill) for _ in specs]
    for spec, a, b in zip(specs, alone, batched):
        obs = world.reset(spec)
        a.reset(spec)
        b.reset(spec)
        for _ in range(spec.max_steps):
            ca = a.infer(obs)
            (cb,) = infer_batch([b], [obs])
            np.testing.assert_allclose(cb.values, ca.values, atol=1e-9, rtol=0)
            world.apply(ca[0])
            obs = world.step()


class _Refusing:
    """A CPU stepper whose batch refuses every second episode loaded into it (as a Warp
    batch refuses a model it cannot hold): those run in a batch of their own after."""

    def __init__(self, worlds):
        from realm_ros.backends.mujoco.batch import CpuStepper

        self.inner = CpuStepper(worlds)
        self.name, self.calls = '', 0

    @property
    def derived(self):
        return self.inner.derived

    def step(self, rows):
        return self.inner.step(rows)

    def replace(self, slot, world):
        self.calls += 1
        return self.calls % 2 == 0 and self.inner.replace(slot, world)


@pytest.mark.parametrize('slots,refusing,align', [(8, False, 1), (3, False, 1), (3, True, 1),
                                                   (3, False, 4)])
def test_run_batch_with_the_cpu_stepper_reproduces_run_episode(slots, refusing, align):
    """The lockstep loop (policy chains, period controls with latency, state hand-back,
    scoring) gives each world's run_episode record and joint trajectory exactly, across
    perturbations that change the scene (V-SC), the model (B-HOBJ) and the pose (VB-POSE),
    with a latency queue and episodes of different lengths; and so it does with 8 episodes in
    3 worlds, each world taking the next episode as soon as its own ends (``align`` 4: at the
    batch's next step that is a multiple of 4)."""
    from realm_ros.backends.mujoco.batch import CpuStepper, run_batch
    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.core.episode import run_episode
    from realm_ros.core.policy import standard_chain
    from realm_ros.policies.scripted import ScriptedPolicy, infer_batch

    specs = _specs('put_green_block_in_bowl', ['Default', 'B-HOBJ', 'VB-POSE', 'V-SC'],
                   [0, 1], 150)
    expected, traj_cpu = [], []
    for spec in specs:
        world = MujocoWorld(WorldConfig(task=spec.task, cameras=(), camera_rate_hz=0.0),
                            latency_s=0.01)
        qs = []
        inner = ScriptedPolicy()
        expected.append(run_episode(
            world, standard_chain(inner, execute=8), spec,
            on_step=lambda k, o, a, p, qs=qs: qs.append(o.joints.position)))
        traj_cpu.append(np.array(qs))
    worlds = [MujocoWorld(WorldConfig(task=s.task, cameras=(), camera_rate_hz=0.0),
                          latency_s=0.01) for s in specs[:slots]]
    traj = [[] for _ in specs]
    taken: list[tuple[int, int]] = []
    made: list = []

    def factory(ws):
        made.append(_Refusing(ws) if refusing else CpuStepper(ws))
        made[-1].steps = 0
        step = made[-1].step

        def counted(rows, stepper=made[-1], step=step):
            stepper.steps += 1
            return step(rows)
        made[-1].step = counted
        return made[-1]

    at: list[int] = []
    got = run_batch(worlds, [ScriptedPolicy() for _ in specs], specs, factory,
                    on_step=lambda i, k, o: traj[i].append(o.joints.position),
                    infer_batch=infer_batch, align=align,
                    on_slot=lambda i, k: (taken.append((i, k)),
                                          at.append(made[-1].steps if made else 0)))
    assert all(n % align == 0 for n in at[:len(specs)]), at
    assert len({r.steps for r in expected}) > 1  # some end early (success), some do not
    # every episode ran once, in a world; with 3 worlds a world took the one that ended first
    assert sorted(set(i for i, _ in taken)) == list(range(len(specs)))
    assert {k for _, k in taken} == set(range(slots))
    if slots < len(specs) and not refusing:
        first_end = min(range(slots), key=lambda i: (expected[i].steps, i))
        assert taken[slots] == (slots, first_end)
    for e, g, qe, qg in zip(expected, got, traj_cpu, traj):
        re, rg = e.to_record(), g.to_record()
        for key in ('wall_time_s',):
            re.pop(key), rg.pop(key)
        assert rg == re
        np.testing.assert_array_equal(np.array(qg), qe)


def test_run_batch_refuses_more_episodes_than_worlds_without_a_stepper_that_reloads():
    from realm_ros.backends.mujoco.batch import CpuStepper, run_batch
    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.policies.scripted import ScriptedPolicy

    class Fixed:  # a stepper that steps the worlds it was built with, and no others
        name = ''

        def __init__(self, worlds):
            self.inner = CpuStepper(worlds)
            self.derived = None

        def step(self, rows):
            return self.inner.step(rows)

    specs = _specs('push_switch', ['Default'], [0, 1], 5)
    world = MujocoWorld(WorldConfig(task='push_switch', cameras=(), camera_rate_hz=0.0))
    with pytest.raises(ValueError, match='2 episodes in 1 worlds need a stepper'):
        run_batch([world], [ScriptedPolicy() for _ in specs], specs, Fixed)


def test_grid_plans_cells_and_refuses_incompatible_pairs():
    from realm_ros.sweep.mjx import plan_grid

    cells, skipped = plan_grid('push_switch', ['Default', 'V-SC', 'V-LIGHT'], 3, 1.0, 50, 0)
    assert [(c.perturbation, c.seed) for c in cells] == [
        ('Default', 0), ('Default', 1), ('Default', 2), ('V-LIGHT', 0), ('V-LIGHT', 1),
        ('V-LIGHT', 2)]
    assert 'V-SC' in skipped and 'switch' in skipped['V-SC']
    from realm_ros.core.errors import ConfigError
    with pytest.raises(ConfigError, match='--perturbations'):
        plan_grid('push_switch', ['X-NOPE'], 1, 1.0, 50, 0)


def test_gpu_refuses_geometry_perturbations_by_name():
    from realm_ros.core.errors import ConfigError
    from realm_ros.sweep.mjx import plan_grid, refuse_on_gpu

    cells, _ = plan_grid('stack_cubes', ['Default', 'V-SC', 'VB-MOBJ'], 1, 1.0, 10, 0)
    with pytest.raises(ConfigError, match='V-SC, VB-MOBJ'):
        refuse_on_gpu(cells)
    refuse_on_gpu(plan_grid('stack_cubes', ['Default', 'B-HOBJ', 'VB-POSE', 'V-LIGHT'], 1,
                            1.0, 10, 0)[0])
