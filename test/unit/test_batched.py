"""The batched policy chain (``core/batched.py``) against ``standard_chain`` world by world:
the same actions bit for bit, the same re-query steps, on random chunks of both modes."""

import numpy as np
import pytest

from realm_ros.core import robot
from realm_ros.core.batched import BatchedChain, actions
from realm_ros.core.errors import ConfigError
from realm_ros.core.policy import Policy, standard_chain
from realm_ros.core.types import ActionChunk, ActionMode, EpisodeSpec, JointState, Observation


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
