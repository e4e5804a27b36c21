"""The one episode loop: reset, query the policy, step the world, score with REALM's rubric.

The tests, the benchmarks and ``realm-ros episode`` / ``ladder`` call :func:`run_episode`; the
ROS nodes run the same steps through topics (``world_node`` scores with the same
:class:`~realm_ros.core.tasks.ProgressTracker`). Both decide when an episode ends and how it
ended with one :class:`EpisodeReferee`.
"""

from __future__ import annotations

import time
from typing import Callable

from realm_ros.core import perturbations, tasks
from realm_ros.core.errors import InfrastructureError
from realm_ros.core.policy import Policy
from realm_ros.core.types import (
    STEPS_AFTER_SUCCESS,
    SUCCESS_PROGRESSION,
    Action,
    EpisodeOutcome,
    EpisodeResult,
    EpisodeSpec,
    Observation,
    Progress,
)
from realm_ros.core.world import World

#: ``on_step(step, obs, action, progress)`` is called after every control step.
StepCallback = Callable[[int, Observation, Action, Progress], None]


class EpisodeReferee:
    """Decides when an episode is over and how it ended, from its progress after each step.

    REALM's rollout rule: an episode ends after ``max_steps`` control steps, or
    :data:`STEPS_AFTER_SUCCESS` steps after its progression first reaches 1.0. Pure: no clock,
    no I/O; ``run_episode`` feeds it in-process, ``evaluator_node`` from ``progress`` messages.
    """

    def __init__(self, max_steps: int) -> None:
        self.max_steps = max_steps
        self.step = 0
        self.progression = 0.0
        self.success_step: int | None = None

    def update(self, step: int, progression: float) -> bool:
        """Record the (maximum) progression after control step ``step``; return :attr:`over`."""
        self.step = step
        self.progression = progression
        if self.success_step is None and progression >= SUCCESS_PROGRESSION:
            self.success_step = step
        return self.over

    @property
    def over(self) -> bool:
        """Whether the episode has ended (out of steps, or long enough after success)."""
        return self.step >= self.max_steps or (
            self.success_step is not None
            and self.step - self.success_step >= STEPS_AFTER_SUCCESS)

    def outcome(self, error: str = '') -> EpisodeOutcome:
        """How the episode ended: an infrastructure ``error`` is never scored."""
        if error:
            return EpisodeOutcome.INFRA_FAILURE
        if self.progression >= SUCCESS_PROGRESSION:
            return EpisodeOutcome.SUCCESS
        return EpisodeOutcome.TIMEOUT


def make_tracker(task: str, spec: EpisodeSpec | None = None,
                 drawer_rule: str = 'realm_code') -> tasks.ProgressTracker | None:
    """Return a progress tracker for a REALM task, or None for the empty table.

    With ``spec``, the rubric of the task as its perturbation scores it (SB-NOUN retargets the
    object, SB-VRB the skill: ``perturbations.scored_task``). ``drawer_rule``: see
    :data:`~realm_ros.core.tasks.DRAWER_RULES`.
    """
    if tasks.is_empty(task):
        return None
    if spec is None:
        return tasks.ProgressTracker(task, drawer_rule)
    # A code without the ``rubric`` kind (Default among them) scores the task as it is.
    return tasks.ProgressTracker(perturbations.scored_task(
        task, spec.perturbation, spec.intensity, spec.seed), drawer_rule)


def clock_error(step: int, before: float, now: float) -> str:
    """Return why an episode ends when the world clock went from ``before`` to ``now`` (s) at
    control step ``step``, or '' when it did not run backwards (MuJoCo resets its state when
    the physics becomes unstable)."""
    if now >= before:
        return ''
    return (f'the world clock ran backwards at step {step} ({before:.3f} s -> {now:.3f} s): '
            'the simulation became unstable and was reset')


def episode_result(spec: EpisodeSpec, backend: str, outcome: EpisodeOutcome, progress: Progress,
                   steps: int, sim_time_s: float, wall_time_s: float, error: str = '',
                   tracked: bool = True) -> EpisodeResult:
    """Return the scored result of an episode that ended with ``progress`` (``tracked``: it was
    scored by a tracker, which ``scored_by`` then names)."""
    return EpisodeResult(
        spec=spec, backend=backend, outcome=outcome, progression=progress.max_progression,
        stages=progress.stages, stages_reached=progress.reached, steps=steps,
        sim_time_s=sim_time_s, wall_time_s=wall_time_s, error=error,
        scored_by=progress.source if tracked else '', progress=progress)


class EpisodeState:
    """Everything one running episode keeps between control steps: the one home of the loop's
    state for every loop that runs episodes (:func:`run_episode`, the MuJoCo batch
    ``backends/mujoco/batch.run_batch`` and so the MJX sweep, ``world_node``, the evaluator).

    ``steps`` control steps taken, ``progress`` the rubric's latest (from the ``tracker`` of
    the scored task, or given by :meth:`receive` when another process scores: the evaluator
    follows ``progress`` messages), the ``referee`` that decides the end, the infrastructure
    ``error`` that ended it ('' if none), and the clocks: ``wall_start`` (monotonic s, None
    until the episode starts) and ``sim_start`` (the world's time after its reset).

    Args:
        spec: the episode; its task and perturbation choose the rubric.
        drawer_rule: see :data:`~realm_ros.core.tasks.DRAWER_RULES`.
        tracked: score here with a tracker (False: progress arrives through :meth:`receive`).
        wall_start: the wall clock's start (monotonic s; default: now, or with
            ``started=False`` none until :meth:`start`).
    """

    def __init__(self, spec: EpisodeSpec, drawer_rule: str = 'realm_code', tracked: bool = True,
                 wall_start: float | None = None, started: bool = True) -> None:
        self.spec = spec
        self.tracker = make_tracker(spec.task, spec, drawer_rule) if tracked else None
        self.referee = EpisodeReferee(spec.max_steps)
        self.progress = tasks.empty_progress(spec.task)
        self.received = False
        self.steps = 0
        self.error = ''
        self.failed = False
        self.wall_start = wall_start if wall_start is not None else (
            time.monotonic() if started else None)
        self.sim_start = 0.0

    def start(self, now: float | None = None) -> float:
        """Start the wall clock (now, or at monotonic ``now``); return its start."""
        self.wall_start = time.monotonic() if now is None else now
        return self.wall_start

    def begin(self, obs: Observation, sim_time: float) -> Progress:
        """The world was reset to ``obs`` at world time ``sim_time``: score the initial state."""
        self.sim_start = sim_time
        if self.tracker is not None:
            self.progress = self.tracker.update(obs.privileged, 0)
        return self.progress

    def advance(self, obs: Observation, clock: tuple[float, float] | None = None) -> str:
        """Count one control step that ended in ``obs`` and score it; return the error that ends
        the episode ('' if none). ``clock``: the world time (before, after) the step, checked
        for a clock that ran backwards (:func:`clock_error`); such a step is not scored."""
        self.steps += 1
        if clock is not None:
            backwards = clock_error(self.steps, *clock)
            if backwards:
                self.fail(backwards)
                return backwards
        if self.tracker is not None:
            self.progress = self.tracker.update(obs.privileged, self.steps)
        return ''

    def judge(self) -> bool:
        """Tell the referee the progression after this step; return whether the episode is
        over."""
        return self.referee.update(self.steps, self.progress.max_progression)

    def receive(self, progress: Progress) -> bool:
        """Take ``progress`` scored elsewhere (a world's ``progress`` message): its step is the
        step count; return whether the episode is over."""
        self.progress, self.received = progress, True
        self.steps = progress.step
        return self.judge()

    def fail(self, error: str) -> None:
        """End the episode as an infrastructure failure (never scored), for ``error``."""
        self.error, self.failed = error, True

    @property
    def over(self) -> bool:
        """Whether the referee ended the episode (an error ends it too: see :meth:`outcome`)."""
        return self.referee.over

    def outcome(self) -> EpisodeOutcome:
        """How the episode ended (:meth:`EpisodeReferee.outcome`; a failure is never scored)."""
        if self.failed:
            return EpisodeOutcome.INFRA_FAILURE
        return self.referee.outcome(self.error)

    def wall_time(self, now: float | None = None) -> float:
        """Wall seconds since the start (0 when it never started)."""
        if self.wall_start is None:
            return 0.0
        return (time.monotonic() if now is None else now) - self.wall_start

    def result(self, backend: str, sim_now: float, now: float | None = None) -> EpisodeResult:
        """Return the scored result of the episode as it stands, the world's clock at
        ``sim_now``."""
        return episode_result(self.spec, backend, self.outcome(), self.progress, self.steps,
                              sim_now - self.sim_start, self.wall_time(now), self.error,
                              self.tracker is not None)


def run_episode(world: World, policy: Policy, spec: EpisodeSpec,
                on_step: StepCallback | None = None,
                drawer_rule: str = 'realm_code',
                on_reset: Callable[[Observation], None] | None = None) -> EpisodeResult:
    """Run one episode of ``spec`` with ``policy`` in ``world`` and return its scored result.

    Every action of each chunk the policy returns is executed, one per control step (wrap the
    policy in :class:`~realm_ros.core.policy.ActionChunker` for open-loop chunks of k). The
    episode stops after ``spec.max_steps`` steps, or :data:`STEPS_AFTER_SUCCESS` steps after the
    progression first reaches 1.0 (REALM's rollout rule). An :class:`InfrastructureError` from
    the policy or the world ends it as ``INFRA_FAILURE`` (never scored as a policy failure), and
    so does a world clock that runs backwards (MuJoCo resets its state when the physics becomes
    unstable); any other error propagates.
    """
    state = EpisodeState(spec, drawer_rule)
    try:
        obs = world.reset(spec)
        state.begin(obs, world.time)
        if on_reset is not None:  # the reset's observation, which the rubric scores too
            on_reset(obs)
        policy.reset(spec)
        while not state.over:
            chunk = policy.infer(obs)
            for k in range(len(chunk)):
                action = world.apply(chunk[k])
                before = world.time
                obs = world.step()
                backwards = state.advance(obs, (before, world.time))
                if backwards:
                    raise InfrastructureError(backwards)
                if on_step is not None:
                    on_step(state.steps, obs, action, state.progress)
                if state.judge():
                    break
    except InfrastructureError as err:
        state.fail(str(err))
    return state.result(world.name, world.time)
