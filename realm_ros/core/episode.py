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
    if task in ('', 'empty'):
        return None
    if spec is None or spec.perturbation == 'Default':
        return tasks.ProgressTracker(task, drawer_rule)
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


def run_episode(world: World, policy: Policy, spec: EpisodeSpec,
                on_step: StepCallback | None = None,
                drawer_rule: str = 'realm_code') -> EpisodeResult:
    """Run one episode of ``spec`` with ``policy`` in ``world`` and return its scored result.

    Every action of each chunk the policy returns is executed, one per control step (wrap the
    policy in :class:`~realm_ros.core.policy.ActionChunker` for open-loop chunks of k). The
    episode stops after ``spec.max_steps`` steps, or :data:`STEPS_AFTER_SUCCESS` steps after the
    progression first reaches 1.0 (REALM's rollout rule). An :class:`InfrastructureError` from
    the policy or the world ends it as ``INFRA_FAILURE`` (never scored as a policy failure), and
    so does a world clock that runs backwards (MuJoCo resets its state when the physics becomes
    unstable); any other error propagates.
    """
    tracker = make_tracker(spec.task, spec, drawer_rule)
    referee = EpisodeReferee(spec.max_steps)
    start = time.monotonic()
    steps = 0
    progress = tasks.empty_progress(spec.task)
    sim_start = 0.0

    def result(outcome: EpisodeOutcome, error: str = '') -> EpisodeResult:
        return episode_result(spec, world.name, outcome, progress, steps,
                              world.time - sim_start, time.monotonic() - start, error,
                              tracker is not None)

    try:
        obs = world.reset(spec)
        sim_start = world.time
        policy.reset(spec)
        if tracker is not None:
            progress = tracker.update(obs.privileged, 0)
        while not referee.over:
            chunk = policy.infer(obs)
            for k in range(len(chunk)):
                action = world.apply(chunk[k])
                before = world.time
                obs = world.step()
                steps += 1
                backwards = clock_error(steps, before, world.time)
                if backwards:
                    raise InfrastructureError(backwards)
                if tracker is not None:
                    progress = tracker.update(obs.privileged, steps)
                if on_step is not None:
                    on_step(steps, obs, action, progress)
                if referee.update(steps, progress.max_progression):
                    break
    except InfrastructureError as err:
        return result(EpisodeOutcome.INFRA_FAILURE, str(err))
    return result(referee.outcome())
