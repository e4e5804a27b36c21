"""The batched policy chain (``core/batched.py``) against ``standard_chain`` world by world:
the same actions bit for bit, the same re-query steps, on random chunks of both modes."""

import numpy as np
import pytest

from realm_ros.core import robot
from realm_ros.core.batched import BatchedChain, actions
from realm_ros.core.errors import ConfigError
from realm_ros.core.policy import Policy, standard_chain
from realm_ros.core.types import (
    Action,
    ActionChunk,
    ActionMode,
    EpisodeSpec,
    JointState,
    Observation,
)


class _Given(Policy):
    """Returns the chunks it is handed, one per query, and counts observations."""

    def __init__(self) -> None:
        self.next: ActionChunk | None = None
        self.observed = 0

    def infer(self, obs: Observation) -> ActionChunk:
        chunk, self.next = self.next, None
        assert chunk is not None, 'the chain asked for a chunk the test did not expect'
        return chunk

    def observe(self, obs: Observation) -> None:
        self.observed += 1


def _chunk(rng: np.random.Generator, nan: bool) -> ActionChunk:
    h = int(rng.integers(1, 13))
    velocity = bool(rng.random() < 0.4)
    if velocity:
        arm = rng.normal(0.0, 1.2, (h, 7))  # some beyond [-1, 1]
    else:
        arm = rng.uniform(robot.JOINT_LOWER - 0.3, robot.JOINT_UPPER + 0.3, (h, 7))
    values = np.concatenate([arm, rng.uniform(-0.2, 1.2, (h, 1))], axis=1)
    if nan and rng.random() < 0.2:
        values[rng.integers(h), rng.integers(8)] = np.nan
    dtype = np.float32 if rng.random() < 0.5 else np.float64
    return ActionChunk(values.astype(dtype),
                       ActionMode.VELOCITY if velocity else ActionMode.POSITION)


def _obs(q: np.ndarray) -> Observation:
    return Observation(joints=JointState(position=q, velocity=np.zeros(7), effort=np.zeros(7),
                                         gripper=0.0))


@pytest.mark.parametrize('execute', [1, 3, 8])
@pytest.mark.parametrize('nan', [False, True])
def test_batched_chain_equals_standard_chain_world_by_world(execute, nan):
    """16 worlds, 60 steps, chunks of 1-12 rows in position or velocity mode (float32 or
    float64, out of range, with NaN in the second case), measured joints that wander: each
    step's actions are the per-world chain's, bit for bit (NaN where it has NaN), the worlds
    that ask for a chunk are those whose chunker asks, and the others are observed. A reset
    of some worlds mid-way starts them over in both."""
    rng = np.random.default_rng(execute * 10 + nan)
    n = 16
    inners = [_Given() for _ in range(n)]
    chains = [standard_chain(p, execute=execute) for p in inners]
    spec = EpisodeSpec(task='stack_cubes', perturbation='Default', seed=0, max_steps=60)
    for c in chains:
        c.reset(spec)
    together = BatchedChain(n, execute)
    q = np.broadcast_to(robot.RESET_Q, (n, 7)) + rng.normal(0.0, 0.2, (n, 7))
    for step in range(60):
        if step == 30:
            again = [1, 5, 9]
            for i in again:
                chains[i].reset(spec)
            together.reset(again)
        live = [i for i in range(n) if rng.random() < 0.9]  # some worlds already over
        asks = together.queries()
        batch = [i for i in live if asks[i]]
        chunks = [_chunk(rng, nan) for _ in batch]
        for i, c in zip(batch, chunks):
            inners[i].next = c
        together.set_chunks(batch, chunks)
        seen = [p.observed for p in inners]
        q = q + rng.normal(0.0, 0.02, (n, 7))
        expected = [chains[i].infer(_obs(q[i])) for i in live]
        assert all(inners[i].next is None for i in batch)  # each asked exactly when told
        assert [p.observed - s for p, s in zip(inners, seen)] == [
            int(i in live and i not in batch) for i in range(n)]
        rows, velocity = together.step(live, q[live])
        for k, e in enumerate(expected):
            np.testing.assert_array_equal(rows[k], e.values[0])
            assert velocity[k] == (e.mode is ActionMode.VELOCITY)
        got = actions(rows, velocity)
        for a, e in zip(got, expected):
            np.testing.assert_array_equal(a.arm, e[0].arm)
            assert a.gripper == e[0].gripper or (np.isnan(a.gripper) and np.isnan(e[0].gripper))
            assert a.mode is e.mode


def test_batched_chain_refuses_what_the_chain_cannot_run():
    with pytest.raises(ConfigError):
        BatchedChain(2, execute=0)
    with pytest.raises(ConfigError):
        BatchedChain(2, scale=3.0)
    chain = BatchedChain(2)
    with pytest.raises(ConfigError, match='no action left'):
        chain.step([0], np.zeros((1, 7)))
    with pytest.raises(ConfigError, match='empty'):
        chain.set_chunks([0], [ActionChunk(np.zeros((0, 8)))])
    rows, velocity = chain.step([], np.zeros((0, 7)))
    assert rows.shape == (0, 8) and velocity.shape == (0,)


def test_run_batch_without_latency_reproduces_run_episode():
    """With no latency queue a world's period controls are its current target repeated (the
    fast path of ``MujocoWorld.period_controls``), and the lockstep loop with the batched chain
    still gives run_episode's records and joint trajectories exactly."""
    from realm_ros.backends.mujoco.batch import CpuStepper, run_batch
    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.episode import run_episode
    from realm_ros.policies.scripted import ScriptedPolicy, infer_batch

    specs = [EpisodeSpec(task='stack_cubes', seed=k, max_steps=40) for k in range(2)]
    config = WorldConfig(task='stack_cubes', cameras=(), camera_rate_hz=0.0)
    expected, traj_cpu = [], []
    for spec in specs:
        qs: list = []
        expected.append(run_episode(
            MujocoWorld(config), standard_chain(ScriptedPolicy()), spec,
            on_step=lambda k, o, a, p, qs=qs: qs.append(o.joints.position)))
        traj_cpu.append(np.array(qs))
    worlds = [MujocoWorld(config) for _ in specs]
    assert not worlds[0]._pending
    traj: list[list] = [[] for _ in specs]
    got = run_batch(worlds, [ScriptedPolicy() for _ in specs], specs, CpuStepper,
                    on_step=lambda i, k, o: traj[i].append(o.joints.position),
                    infer_batch=infer_batch)
    for e, g, qe, qg in zip(expected, got, traj_cpu, traj):
        re, rg = e.to_record(), g.to_record()
        re.pop('wall_time_s'), rg.pop('wall_time_s')
        assert rg == re
        np.testing.assert_array_equal(np.array(qg), qe)


def _observed(obs: Observation) -> tuple:
    """What a policy, the tracker and the referee read of an observation (images aside)."""
    j = obs.joints
    return (j.position.tobytes(), j.velocity.tobytes(), j.effort.tobytes(), j.gripper,
            j.stamp, obs.step, obs.privileged)


def _host_forward_stepper(worlds):
    """The CPU stepper handing back no derived quantities: each world rebuilds them with a
    host mj_forward in load_step (the path the GPU steppers take)."""
    from realm_ros.backends.mujoco.batch import CpuStepper

    class HostForward(CpuStepper):
        def step(self, rows):
            out = super().step(rows)
            self.derived = None
            return out

    return HostForward(worlds)


def test_stepper_derived_quantities_give_run_episodes_observations():
    """The CPU stepper's derived quantities (``derived.py``: poses, contacts, actuator forces
    of the state before the period's last physics step, no host mj_forward) give every
    observation ``run_episode`` sees, bit for bit (efforts, the privileged state: object
    poses, contacts, fixtures' joints and reach points), and so its records: in one batch of
    different tasks (free objects, a drawer, a switch: worlds of different sizes), worlds
    that end early and others that do not, latency-delayed targets, and the digital real
    (parameter-only: latency, encoder noise); and so does the host mj_forward path."""
    from realm_ros.backends.digital_real import DigitalRealWorld
    from realm_ros.backends.mujoco.batch import CpuStepper, run_batch
    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.episode import run_episode
    from realm_ros.policies.scripted import ScriptedPolicy, infer_batch

    cells = [('put_green_block_in_bowl', 0, 0.0, False),
             ('put_green_block_in_bowl', 1, 0.01, False), ('open_drawer', 0, 0.01, False),
             ('push_switch', 2, 0.0, False), ('stack_cubes', 3, 0.0, True)]
    specs = [EpisodeSpec(task=t, seed=s, max_steps=70) for t, s, _, _ in cells]

    def world(task: str, latency: float, real: bool) -> MujocoWorld:
        config = WorldConfig(task=task, cameras=(), camera_rate_hz=0.0,
                             dynamics_file='config/dynamics/sysid_demo.yaml')
        return DigitalRealWorld(config) if real else MujocoWorld(config, latency_s=latency)

    expected, seen = [], []
    for spec, (task, _, latency, real) in zip(specs, cells):
        obs: list = []
        expected.append(run_episode(
            world(task, latency, real), standard_chain(ScriptedPolicy()), spec,
            on_step=lambda k, o, a, p, obs=obs: obs.append(_observed(o))))
        seen.append(obs)
    assert len({r.steps for r in expected}) > 1 and min(r.steps for r in expected) < 70
    for factory in (CpuStepper, _host_forward_stepper):
        worlds = [world(t, latency, real) for t, _, latency, real in cells]
        got: list[list] = [[] for _ in specs]
        results = run_batch(worlds, [ScriptedPolicy() for _ in specs], specs, factory,
                            on_step=lambda i, k, o, got=got: got[i].append(_observed(o)),
                            infer_batch=infer_batch)
        for e, r, want, have, cell in zip(expected, results, seen, got, cells):
            re, rg = e.to_record(), r.to_record()
            re.pop('wall_time_s'), rg.pop('wall_time_s')
            # Named as run_episode names it: the digital real's record as the digital real.
            assert rg['backend'] == ('digital_real' if cell[3] else 'mujoco')
            assert rg == re
            assert have == want


def test_a_world_left_with_derived_quantities_syncs_its_data_when_read():
    """After load_step took the stepper's derived quantities, ``data``'s own are rebuilt
    (sync_data) only when something else reads them, and then equal the host mj_forward
    path's in every derived field (what a renderer reads: geoms, cameras, lights), with the
    state after and the controls in force put back; stepping the world on afterwards
    (step_physics) gives the same state as from the host path."""
    from realm_ros.backends.mujoco.batch import CpuStepper
    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.core.config import WorldConfig

    spec = EpisodeSpec(task='put_green_block_in_bowl', seed=4, max_steps=10)
    worlds = []
    for factory in (CpuStepper, _host_forward_stepper):
        # No latency: apply writes its target into data at once.
        w = MujocoWorld(WorldConfig(task=spec.task, cameras=(), camera_rate_hz=0.0))
        w.reset(spec)
        stepper = factory([w])
        q = w.data.qpos[w._arm_qpos].copy()
        for k in range(3):
            w.apply(ActionChunk(np.r_[q + 0.05 * (k + 1), 1.0][None])[0])
            rows = w.period_controls()
            (before, after), = stepper.step([rows])
            w.load_step(before, after, stepper.derived, 0)
        worlds.append(w)
    lazy, host = worlds
    assert lazy._unsynced is not None and host._unsynced is None
    assert lazy.privileged_state() == host.privileged_state()
    for w in worlds:  # a new target in force before anything reads data
        w.apply(ActionChunk(np.r_[robot.RESET_Q, 0.0][None])[0])
    lazy.sync_data()
    assert lazy._unsynced is None
    for name in ('qpos', 'qvel', 'time', 'ctrl', 'mocap_pos', 'mocap_quat', 'xpos', 'xquat',
                 'xmat', 'geom_xpos', 'geom_xmat', 'site_xpos', 'cam_xpos', 'cam_xmat',
                 'light_xpos', 'qfrc_actuator', 'qacc_warmstart'):
        np.testing.assert_array_equal(getattr(lazy.data, name), getattr(host.data, name),
                                      err_msg=name)
    np.testing.assert_array_equal(lazy.data.contact.geom, host.data.contact.geom)
    for w in worlds:
        w.step_physics(20)
    np.testing.assert_array_equal(lazy.data.qpos, host.data.qpos)
    np.testing.assert_array_equal(lazy.data.qvel, host.data.qvel)


def test_pictures_after_a_step_that_took_the_steppers_derived_quantities():
    """A world with a camera in a CPU batch draws the same pictures whether its derived
    quantities came from the stepper (rebuilt on the host only to draw) or from load_step's
    host mj_forward."""
    from realm_ros.backends.mujoco.batch import CpuStepper
    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.core.config import WorldConfig

    spec = EpisodeSpec(task='stack_cubes', seed=1, max_steps=10)
    pictures = []
    for factory in (CpuStepper, _host_forward_stepper):
        w = MujocoWorld(WorldConfig(task=spec.task, cameras=('exterior_1',), camera_width=64,
                                    camera_height=48, camera_rate_hz=15.0))
        w.reset(spec)
        stepper = factory([w])
        q = w.data.qpos[w._arm_qpos].copy()
        for k in range(2):
            w.apply(ActionChunk(np.r_[q + 0.1 * (k + 1), 1.0][None])[0])
            (before, after), = stepper.step([w.period_controls()])
            obs = w.load_step(before, after, stepper.derived, 0)
        pictures.append(obs.images['exterior_1'])
        w.close()
    assert pictures[0].shape == (48, 64, 3) and pictures[0].std() > 0
    np.testing.assert_array_equal(pictures[0], pictures[1])


@pytest.mark.parametrize('shape', [True, False])
def test_world_targets_are_world_target_row_by_row(shape):
    """control.world_targets over 400 rows gives world_target's target of each row bit for
    bit: position and velocity rows, speeds above 1 (scaled down), targets and joints near
    the limits (clipped, shaped), the gripper beyond [0, 1] within the tolerance; the rows
    validate_action refuses (NaN, beyond the limits, gripper out of range) are flagged."""
    from realm_ros.core import control
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.errors import CommandRejected

    config = WorldConfig(task='stack_cubes', shape_targets=shape, joint_margin_rad=0.1)
    rng = np.random.default_rng(5)
    n, dt = 400, 1.0 / 15
    mid = (robot.JOINT_UPPER + robot.JOINT_LOWER) / 2
    half = (robot.JOINT_UPPER - robot.JOINT_LOWER) / 2
    q_meas = mid + half * rng.uniform(-1.0, 1.0, (n, 7))
    q_prev = np.clip(q_meas + rng.normal(0.0, 0.2, (n, 7)), robot.JOINT_LOWER,
                     robot.JOINT_UPPER)
    dq = rng.normal(0.0, 1.5, (n, 7))
    velocity = rng.uniform(size=n) < 0.4
    arm = np.where(velocity[:, None], rng.normal(0.0, 1.2, (n, 7)),
                   mid + half * rng.uniform(-1.0005, 1.0005, (n, 7)))
    gripper = rng.uniform(-0.0008, 1.0008, n)
    arm[3, 2], arm[4, 0], gripper[5] = np.nan, 9.0, 1.5
    velocity[4] = False
    q_d, g, valid = control.world_targets(arm, gripper, velocity, q_meas, q_prev, dq, dt,
                                          config)
    refused = 0
    for i in range(n):
        action = Action(arm=arm[i].copy(), gripper=float(gripper[i]),
                        mode=ActionMode.VELOCITY if velocity[i] else ActionMode.POSITION)
        try:
            want, wg = control.world_target(action, q_meas[i], q_prev[i], dq[i], dt, config)
        except CommandRejected:
            assert not valid[i]
            refused += 1
            continue
        assert valid[i]
        assert q_d[i].tobytes() == want.tobytes() and g[i] == wg
    assert refused >= 3 and valid.sum() > n // 2


def test_apply_all_holds_the_targets_apply_would():
    """world.apply_all in worlds with and without latency, one making its targets otherwise,
    leaves each world's target, latency queue, controls and target frame exactly as
    MujocoWorld.apply would, and sends a row apply refuses to apply (CommandRejected)."""
    from realm_ros.backends.mujoco.world import MujocoWorld, apply_all
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.errors import CommandRejected

    rng = np.random.default_rng(2)
    pairs = []
    for k in range(4):
        # The last world makes its targets otherwise (the digital real's preset: no margin,
        # no shaping): a group of its own.
        config = WorldConfig(task='stack_cubes', cameras=(), camera_rate_hz=0.0,
                             joint_margin_rad=0.0 if k == 3 else 0.1, shape_targets=k != 3)
        pair = [MujocoWorld(config, latency_s=0.01 * (k % 2)) for _ in range(2)]
        for w in pair:
            w.reset(EpisodeSpec(task='stack_cubes', seed=k))
        pairs.append(pair)
    for _ in range(3):
        velocity = rng.uniform(size=4) < 0.5
        arm = np.where(velocity[:, None], rng.normal(0.0, 1.0, (4, 7)),
                       robot.RESET_Q + rng.normal(0.0, 0.3, (4, 7)))
        gripper = rng.uniform(0.0, 1.0, 4).round()
        apply_all([p[0] for p in pairs], arm, gripper, velocity)
        for i, (batch, alone) in enumerate(pairs):
            alone.apply(Action(arm=arm[i].copy(), gripper=float(gripper[i]),
                               mode=ActionMode.VELOCITY if velocity[i] else ActionMode.POSITION))
            for w in (batch, alone):
                w.load_step(*_steps(w))
            assert batch.target[0].tobytes() == alone.target[0].tobytes()
            for name in ('ctrl', 'mocap_pos', 'mocap_quat', 'qpos'):
                assert (getattr(batch.data, name).tobytes()
                        == getattr(alone.data, name).tobytes())
    bad = np.tile(robot.RESET_Q, (2, 1))
    bad[1, 0] = np.nan
    with pytest.raises(CommandRejected, match='NaN'):
        apply_all([pairs[0][0], pairs[1][0]], bad, np.zeros(2), np.zeros(2, dtype=bool))


def _steps(world):
    """One control period of ``world`` stepped apart (mj_step on a copy of its data), as a
    batched stepper would: (before, after) for load_step."""
    import mujoco

    d = mujoco.MjData(world.model)
    d.qpos[:], d.qvel[:], d.time = world.data.qpos, world.data.qvel, world.data.time
    ctrl, pos, quat = world.period_controls()
    for k in range(len(ctrl)):
        if k == len(ctrl) - 1:
            before = (d.qpos.copy(), d.qvel.copy(), float(d.time))
        d.ctrl[:], d.mocap_pos[:], d.mocap_quat[:] = ctrl[k], pos[k], quat[k]
        mujoco.mj_step(world.model, d)
    return before, (d.qpos.copy(), d.qvel.copy(), float(d.time))
