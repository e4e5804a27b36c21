"""Whole episodes of many twin worlds in lockstep, with the physics handed to a batched stepper.

:func:`run_batch` is :func:`~realm_ros.core.episode.run_episode` for W worlds at once: each
world is a :class:`MujocoWorld` (its own scene, perturbation, initial state, latency queue,
privileged state), its policy the usual ``standard_chain`` and its scoring the usual
:class:`~realm_ros.core.tasks.ProgressTracker` and :class:`EpisodeReferee`. Per control step
the policies' chunks can be computed together (``infer_batch``: the scripted experts' IK
for all worlds in one ``policies.scripted.infer_batch``), each world turns its action into the
period's control rows (:meth:`MujocoWorld.period_controls`, the latency rule included), a
stepper integrates every world's period at once, and each world takes its new state back
(:meth:`MujocoWorld.load_step`) and is scored. A world that is over keeps being stepped
(holding its last target) but is no longer read.

Two steppers: :class:`CpuStepper` (``mj_step`` per world: the loop reproduces ``run_episode``
exactly, ``test/unit/test_sweep.py``) and ``mjx_sweep.MjxStepper`` (MJX on the GPU).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from realm_ros.backends.mujoco.derived import FIELDS, Derived
from realm_ros.backends.mujoco.world import MujocoWorld, apply_all
from realm_ros.core.batched import BatchedChain
from realm_ros.core.episode import EpisodeState
from realm_ros.core.errors import BackendUnavailable, InfrastructureError
from realm_ros.core.policy import ActionChunker, Policy, PolicyWrapper
from realm_ros.core.types import ActionChunk, EpisodeResult, EpisodeSpec, Observation

try:
    import mujoco
except ImportError as err:  # pragma: no cover - test_mujoco_missing runs it without mujoco
    raise BackendUnavailable('the MuJoCo twin needs the "mujoco" package') from err

#: ``on_step(world_index, step, obs)`` after every control step of a live world.
BatchStepCallback = Callable[[int, int, Observation], None]
#: ``infer_batch(policies, observations) -> chunks``: the policies' chunks, computed together
#: (``policies.scripted.infer_batch`` stacks the scripted experts' IK).
BatchInfer = Callable[[Sequence[Any], Sequence[Observation]], Sequence[ActionChunk]]
#: The clock of :func:`run_batch`'s ``timing`` (a bench on a shared machine sets
#: ``time.process_time``: the process's CPU time, which other jobs do not inflate).
TIMER: Callable[[], float] = time.perf_counter
#: One world's period: (ctrl (S, nu), mocap_pos (S, nm, 3), mocap_quat (S, nm, 4)).
Rows = tuple[np.ndarray, np.ndarray, np.ndarray]
#: A world's state: (qpos, qvel, time).
State = tuple[np.ndarray, np.ndarray, float]


class Stepper(Protocol):
    """Integrates one control period of every world at once."""

    #: The backend each record names: the stepper's own ('mjx', 'warp') where its physics
    #: replaces the worlds'; '' where it steps each world's own model, so that each record
    #: names its world (``MujocoWorld.name``: 'mujoco', 'digital_real', ...) as
    #: :func:`~realm_ros.core.episode.run_episode`'s does.
    name: str
    #: After :meth:`step`: the derived quantities the observations read (``derived.py``) of
    #: every world's state before the period's last physics step, computed with each world's
    #: own model; None when the stepper does not hand them back (its model is a changed copy:
    #: MJX's; or it keeps them on its device): each world then rebuilds them on the host.
    derived: Derived | None

    def step(self, rows: Sequence[Rows]) -> list[tuple[State, State]]:
        """Return per world (state before the period's last physics step, state after)."""


class CpuStepper:
    """``mj_step`` per world on its own copy of the world's model and data (the reference).

    After each period its data holds what ``mj_step`` leaves: the derived quantities of the
    state before the last physics step, which it hands back as :attr:`derived` (copied out of
    its data, fresh arrays per step; one array per world, since the worlds of a CPU batch may
    differ in size), so no world needs a host ``mj_forward``; not with
    ``transform`` (they would be the changed model's).
    """

    #: Each world's own physics: its records name the world (``Stepper.name``).
    name = ''

    def __init__(self, worlds: Sequence[MujocoWorld],
                 transform: Callable[[Any], Any] | None = None) -> None:
        """``transform(model) -> model``: step a changed copy of each world's model instead
        (``mjx_sweep.mjx_model``: the MJX variant on CPU MuJoCo, to tell the model's
        changes from MJX's numerics)."""
        self._models = [w.model if transform is None else transform(w.model) for w in worlds]
        self._own = transform is None
        self.derived: Derived | None = None
        #: Seconds (``TIMER``) spent copying the derived quantities out (part of ``step``).
        self.timing = {'derived': 0.0}
        self._data = []
        for w in worlds:
            d = mujoco.MjData(w.model)
            d.qpos[:], d.qvel[:], d.time = w.data.qpos, w.data.qvel, w.data.time
            d.act[:] = w.data.act
            self._data.append(d)

    def step(self, rows: Sequence[Rows]) -> list[tuple[State, State]]:
        out = []
        for m, d, (ctrl, pos, quat) in zip(self._models, self._data, rows):
            before: State = (d.qpos, d.qvel, d.time)
            for k in range(len(ctrl)):
                if k == len(ctrl) - 1:
                    before = (d.qpos.copy(), d.qvel.copy(), float(d.time))
                d.ctrl[:], d.mocap_pos[:], d.mocap_quat[:] = ctrl[k], pos[k], quat[k]
                mujoco.mj_step(m, d)
            out.append((before, (d.qpos.copy(), d.qvel.copy(), float(d.time))))
        t = TIMER()
        derived = None
        if self._own:  # each world's data keeps them until its next step
            derived = Derived({name: [getattr(d, name).copy() for d in self._data]
                               for name in FIELDS},
                              [d.contact.geom.copy() for d in self._data])
        self.timing['derived'] += TIMER() - t
        self.derived = derived
        return out


class _Prepared(PolicyWrapper):
    """The innermost link of a world's chain: returns the chunk :func:`run_batch` computed for
    this step (in a batch with the other worlds), else asks the policy itself."""

    def __init__(self, inner: Policy) -> None:
        super().__init__(inner)
        self.chunk: Any = None

    def infer(self, obs: Observation) -> Any:
        chunk, self.chunk = self.chunk, None
        return chunk if chunk is not None else self.inner.infer(obs)


def _chunker(policy: Policy) -> ActionChunker | None:
    while isinstance(policy, PolicyWrapper):
        if isinstance(policy, ActionChunker):
            return policy
        policy = policy.inner
    return None


def _queries(chunker: ActionChunker | None) -> bool:
    """Whether the chain's next infer asks the inner policy (ActionChunker's own rule)."""
    return chunker is None or chunker.queries_next


def prepared_chain(inner: Policy, execute: int = 8) -> tuple[Policy, _Prepared]:
    """Return ``standard_chain(inner)`` with a :class:`_Prepared` link under it, and the link."""
    from realm_ros.core.policy import standard_chain

    link = _Prepared(inner)
    return standard_chain(link, execute=execute), link


def run_batch(worlds: Sequence[MujocoWorld], inners: Sequence[Policy],
              specs: Sequence[EpisodeSpec], stepper_factory: Callable[..., Stepper],
              on_step: BatchStepCallback | None = None,
              progress: Callable[[int], None] | None = None,
              drawer_rule: str = 'realm_code', execute: int = 8,
              infer_batch: BatchInfer | None = None, batched: bool = True,
              timing: dict[str, float] | None = None) -> list[EpisodeResult]:
    """Run one episode per world (``specs[i]`` with ``inners[i]`` in ``worlds[i]``) in lockstep
    and return the results in order, scored as :func:`run_episode` scores them and named as
    it names them (each world's name, or the stepper's where its physics replaces the worlds':
    ``Stepper.name``).

    ``stepper_factory(worlds)`` is called after every world was reset (it reads their initial
    states and models). ``progress(n)`` is told when n more episodes have ended.
    ``infer_batch``: computes the chunks of the worlds whose chain asks its policy this step
    in one call (else each policy's own ``infer``, in the chain).
    ``batched``: the host's per-world work as array code, each part the same bit for bit:
    every world's chain (chunker, binariser, clipper, rate limiter) runs as one
    :class:`~realm_ros.core.batched.BatchedChain`; the worlds' targets are made at once
    (``world.apply_all``); and the observations read the derived quantities the stepper
    hands back (``Stepper.derived``, ``derived.py``) instead of a host ``mj_forward`` per
    world. False: each world's ``standard_chain``, ``apply`` and ``load_step``'s
    ``mj_forward``, world by world (the reference).
    ``timing``: seconds added per phase of the host's loop (``policy``: the policies' chunks;
    ``chain``; ``controls``: the worlds' targets and ``period_controls``; ``stepper``;
    ``load``: each world's ``load_step``, its observation; ``score``: advancing and judging
    each episode) and ``steps`` (control steps of the batch).
    """
    n = len(worlds)
    start = time.monotonic()
    chains, links = zip(*(prepared_chain(p, execute) for p in inners))
    chunkers = [_chunker(c) for c in chains]
    together = BatchedChain(n, execute) if batched else None
    states = [EpisodeState(s, drawer_rule, wall_start=start) for s in specs]
    results: list[EpisodeResult | None] = [None] * n
    obs: list[Observation] = []
    for i, (w, s) in enumerate(zip(worlds, specs)):
        obs.append(w.reset(s))
        states[i].begin(obs[i], w.time)
        if together is None:
            chains[i].reset(s)
        else:
            inners[i].reset(s)
    stepper = stepper_factory(worlds)
    held: list[Rows | None] = [None] * n
    live = [i for i in range(n) if not states[i].over]
    clock = _Clock(timing)

    def finish(i: int) -> None:
        results[i] = states[i].result(stepper.name or worlds[i].name, worlds[i].time)
        if progress is not None:
            progress(1)

    for i in range(n):
        if i not in live:
            finish(i)
    while live:
        ended: list[int] = []
        if together is None:
            if infer_batch is not None:
                batch = [i for i in live if _queries(chunkers[i])]
                for i, chunk in zip(batch, infer_batch([links[i].inner for i in batch],
                                                       [obs[i] for i in batch])):
                    links[i].chunk = chunk
            clock.lap('policy')
            for i in live:
                try:
                    chunk = chains[i].infer(obs[i])
                    worlds[i].apply(chunk[0])
                    held[i] = worlds[i].period_controls()
                except InfrastructureError as err:
                    states[i].fail(str(err))
                    ended.append(i)
            clock.lap('controls')
        else:
            asks = together.queries()
            batch = [i for i in live if asks[i]]
            if infer_batch is not None:
                chunks = list(infer_batch([inners[i] for i in batch], [obs[i] for i in batch]))
            else:
                chunks = []
                for i in batch:
                    try:
                        chunks.append(inners[i].infer(obs[i]))
                    except InfrastructureError as err:
                        states[i].fail(str(err))
                        ended.append(i)
                batch = [i for i in batch if i not in ended]
            for i in live:
                if not asks[i]:
                    inners[i].observe(obs[i])
            together.set_chunks(batch, chunks)
            clock.lap('policy')
            going = [i for i in live if i not in ended]
            rows, velocity = together.step(
                going, np.array([obs[i].joints.position for i in going], dtype=float))
            clock.lap('chain')
            apply_all([worlds[i] for i in going], rows[:, :7], rows[:, 7], velocity)
            for i in going:
                try:
                    held[i] = worlds[i].period_controls()
                except InfrastructureError as err:
                    states[i].fail(str(err))
                    ended.append(i)
            clock.lap('controls')
        rows_all = [row if row is not None else worlds[i].period_controls()
                    for i, row in enumerate(held)]
        stepped = stepper.step(rows_all)
        derived = stepper.derived if together is not None else None
        clock.lap('stepper')
        for i in live:
            if i in ended:
                continue
            before_t = worlds[i].time
            obs[i] = worlds[i].load_step(*stepped[i], derived=derived, index=i)
            clock.lap('load')
            if states[i].advance(obs[i], (before_t, worlds[i].time)):
                ended.append(i)
                clock.lap('score')
                continue
            if on_step is not None:
                on_step(i, states[i].steps, obs[i])
            if states[i].judge():
                ended.append(i)
            clock.lap('score')
        for i in ended:
            finish(i)
        done = set(ended)
        live = [i for i in live if i not in done]
        clock.count()
    return [r for r in results if r is not None]


class _Clock:
    """Adds the seconds since the last lap to ``timing[phase]`` (nothing when timing is None)."""

    def __init__(self, timing: dict[str, float] | None) -> None:
        self.timing = timing
        self._t = TIMER()

    def lap(self, phase: str) -> None:
        if self.timing is not None:
            now = TIMER()
            self.timing[phase] = self.timing.get(phase, 0.0) + now - self._t
            self._t = now

    def count(self) -> None:
        if self.timing is not None:
            self.timing['steps'] = self.timing.get('steps', 0.0) + 1
