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

    def replace(self, slot: int, world: MujocoWorld) -> bool:
        """Load ``world`` (just reset to a new episode) into world ``slot`` of the batch and
        return True; False where the batch cannot hold its model (the episode then runs in a
        batch of its own). Optional: :func:`run_batch` calls it only when episodes outnumber
        the worlds."""


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
        self._transform = transform
        self._data = [self._load(w) for w in worlds]

    @staticmethod
    def _load(w: MujocoWorld) -> Any:
        d = mujoco.MjData(w.model)
        d.qpos[:], d.qvel[:], d.time = w.data.qpos, w.data.qvel, w.data.time
        d.act[:] = w.data.act
        return d

    def replace(self, slot: int, world: MujocoWorld) -> bool:
        """World ``slot`` steps ``world``'s model and state from now on (``Stepper.replace``)."""
        self._models[slot] = (world.model if self._transform is None
                              else self._transform(world.model))
        self._data[slot] = self._load(world)
        return True

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
              timing: dict[str, float] | None = None,
              on_slot: Callable[[int, int], None] | None = None,
              align: int = 1) -> list[EpisodeResult]:
    """Run episode i (``specs[i]`` with ``inners[i]``) in the worlds, in lockstep, and return
    the results in episode order, scored as :func:`run_episode` scores them and named as it
    names them (each world's name, or the stepper's where its physics replaces the worlds':
    ``Stepper.name``).

    ``worlds`` are the batch's slots. With as many episodes as worlds, episode i runs in world
    i. With more episodes (the worlds of one template: same task and twin parameters), the
    first ``len(worlds)`` start and each world that ends an episode takes the next one at once
    (reset on the host, then loaded into the stepper's slot: :meth:`Stepper.replace`), so every
    slot stays busy while episodes remain instead of the whole batch waiting for its longest
    episode; an episode whose model the stepper's batch cannot hold (``replace`` False) runs in
    a batch of its own after. ``on_slot(i, k)`` is told when episode i takes world k (before its
    reset: a learned view reads slot k's images). ``align`` K: a world that ended waits for the
    batch's next step that is a multiple of K (counted from the first episodes' start) before it
    takes the next episode, so that every live episode asks its policy on the same steps (its
    chunk's length K: the batch then renders its cameras once per K steps, as a batch whose
    episodes all started together; without it, episodes started at other steps ask on other
    steps and the batch renders on most steps).

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
    each episode; ``refill``: the next episodes' resets and loads; ``reset``: the first
    episodes' resets; ``setup``: building the stepper) and ``steps`` (control steps of the
    batch).
    """
    if len(inners) != len(specs):
        raise ValueError(f'run_batch: {len(inners)} policies for {len(specs)} episodes')
    if len(specs) < len(worlds):
        raise ValueError(f'run_batch: {len(worlds)} worlds for {len(specs)} episodes')
    if align < 1:
        raise ValueError(f'run_batch: align must be >= 1, got {align}')
    slots = len(worlds)
    start = time.monotonic()
    chains, links = zip(*(prepared_chain(p, execute) for p in inners))
    chunkers = [_chunker(c) for c in chains]
    together = BatchedChain(slots, execute) if batched else None
    states = [EpisodeState(s, drawer_rule, wall_start=start) for s in specs]
    results: list[EpisodeResult | None] = [None] * len(specs)
    obs: dict[int, Observation] = {}
    slot_of: dict[int, int] = {}

    def begin(i: int, k: int) -> None:
        if on_slot is not None:
            on_slot(i, k)
        slot_of[i] = k
        obs[i] = worlds[k].reset(specs[i])
        states[i].begin(obs[i], worlds[k].time)
        if together is None:
            chains[i].reset(specs[i])
        else:
            together.reset([k])
            inners[i].reset(specs[i])

    clock = _Clock(timing)
    for i in range(slots):
        begin(i, i)
    clock.lap('reset')
    waiting = list(range(slots, len(specs)))
    deferred: list[int] = []
    stepper = stepper_factory(worlds)
    clock.lap('setup')
    if waiting and not hasattr(stepper, 'replace'):
        raise ValueError(f'run_batch: {len(specs)} episodes in {slots} worlds need a stepper '
                         f'that loads a new episode into a world ({type(stepper).__name__} '
                         'has no replace)')
    held: list[Rows | None] = [None] * slots
    live = [i for i in range(slots) if not states[i].over]
    steps = 0

    def finish(i: int) -> None:
        k = slot_of[i]
        results[i] = states[i].result(stepper.name or worlds[k].name, worlds[k].time)
        if progress is not None:
            progress(1)

    free: list[int] = []  # worlds whose episode ended, waiting to take the next one

    def refill() -> list[int]:
        """The next waiting episodes into the free worlds; the new live ones."""
        started: list[int] = []
        while free and waiting:
            k = free.pop(0)
            while waiting:
                j = waiting.pop(0)
                begin(j, k)
                if not stepper.replace(k, worlds[k]):
                    deferred.append(j)
                    continue
                held[k] = None
                if states[j].over:
                    finish(j)
                    continue
                started.append(j)
                break
        return started

    for i in range(slots):
        if i not in live:
            finish(i)
            free.append(i)
    live += refill()
    phase = 0  # the step the live episodes' chunk boundaries count from
    while live:
        ended = []
        if together is None:
            if infer_batch is not None:
                batch = [i for i in live if _queries(chunkers[i])]
                for i, chunk in zip(batch, infer_batch([links[i].inner for i in batch],
                                                       [obs[i] for i in batch])):
                    links[i].chunk = chunk
            clock.lap('policy')
            for i in live:
                w = worlds[slot_of[i]]
                try:
                    chunk = chains[i].infer(obs[i])
                    w.apply(chunk[0])
                    held[slot_of[i]] = w.period_controls()
                except InfrastructureError as err:
                    states[i].fail(str(err))
                    ended.append(i)
            clock.lap('controls')
        else:
            asks = together.queries()
            batch = [i for i in live if asks[slot_of[i]]]
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
                if not asks[slot_of[i]]:
                    inners[i].observe(obs[i])
            together.set_chunks([slot_of[i] for i in batch], chunks)
            clock.lap('policy')
            going = [i for i in live if i not in ended]
            rows, velocity = together.step(
                [slot_of[i] for i in going],
                np.array([obs[i].joints.position for i in going], dtype=float))
            clock.lap('chain')
            apply_all([worlds[slot_of[i]] for i in going], rows[:, :7], rows[:, 7], velocity)
            for i in going:
                try:
                    held[slot_of[i]] = worlds[slot_of[i]].period_controls()
                except InfrastructureError as err:
                    states[i].fail(str(err))
                    ended.append(i)
            clock.lap('controls')
        rows_all = [row if row is not None else worlds[k].period_controls()
                    for k, row in enumerate(held)]
        stepped = stepper.step(rows_all)
        derived = stepper.derived if together is not None else None
        clock.lap('stepper')
        for i in live:
            if i in ended:
                continue
            k = slot_of[i]
            before_t = worlds[k].time
            obs[i] = worlds[k].load_step(*stepped[k], derived=derived, index=k)
            clock.lap('load')
            if states[i].advance(obs[i], (before_t, worlds[k].time)):
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
            free.append(slot_of[i])
        done = set(ended)
        live = [i for i in live if i not in done]
        steps += 1
        if not live:
            phase = steps
        if (steps - phase) % align == 0:
            live += refill()
        clock.lap('refill')
        clock.count()
    if deferred:
        rest = run_batch(worlds[:min(slots, len(deferred))], [inners[i] for i in deferred],
                         [specs[i] for i in deferred], stepper_factory,
                         on_step=None if on_step is None else
                         (lambda j, n, o: on_step(deferred[j], n, o)),
                         progress=progress, drawer_rule=drawer_rule, execute=execute,
                         infer_batch=infer_batch, batched=batched, timing=timing,
                         on_slot=None if on_slot is None else
                         (lambda j, k: on_slot(deferred[j], k)), align=align)
        for i, result in zip(deferred, rest):
            results[i] = result
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
