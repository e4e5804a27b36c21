"""``sweep --until-decided P``: a sweep's cells chosen one episode at a time where they most
reduce the uncertainty of the policy ranking (:mod:`realm_ros.core.allocation`, the rule
``paired-eval --until-decided`` uses), until every adjacent pair of policies is ordered with
probability P or the budget is spent (docs/deciding-rankings.md).

The ranking's "tasks" are the grid's runnable conditions (task, perturbation, intensity): each
policy cycles through them in order, so every policy is averaged over the same mix. A request
``(policy, condition, k)`` is the fixed grid's cell of that episode index (same seed, same
``pair_id``), run in every world of the sweep; the ranking is the **first** world's (the others
run the same episodes beside it). A re-run replays the finished cells in the order they were
chosen (the choice is deterministic given the outcomes), so an interrupted run resumes.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any, Callable, Mapping, Sequence

from realm_ros.core import allocation, perturbations
from realm_ros.core.errors import ConfigError
from realm_ros.core.evaluation import PolicyEntry
from realm_ros.core.sweep import Cell, SweepConfig, plan_cells
from realm_ros.core.types import record_role
from realm_ros.sweep.driver import SweepRun, run_sweep
from realm_ros.sweep.executors import Executor


def conditions(config: SweepConfig) -> list[tuple[str, str, float]]:
    """Return the grid's runnable (task, perturbation, intensity) conditions, in plan order."""
    return [(t, c, float(i)) for t in config.tasks for c in config.perturbations
            if not perturbations.skip_reason(t, c) for i in config.intensities]


def default_budget(config: SweepConfig) -> int:
    """Episodes (of the ranked world) when none is given: four times the fixed grid's."""
    return 4 * config.episodes_per_cell * len(conditions(config)) * len(config.policies)


def ranking_for(config: SweepConfig, target: float, budget: int | None = None,
                allocation_rule: str = 'adaptive') -> allocation.AdaptiveRanking:
    """Return the :class:`~realm_ros.core.allocation.AdaptiveRanking` of the sweep's grid."""
    labels = [e.label for e in config.policy_entries()]
    return allocation.AdaptiveRanking(
        labels, [str(k) for k in range(len(conditions(config)))], target,
        budget=budget or default_budget(config), allocation=allocation_rule, seed=config.seed)


def cells_for(config: SweepConfig, request: allocation.Request,
              cameras_for: Callable[[PolicyEntry], tuple[str, ...]] | None = None,
              servers: Mapping[str, Sequence[str]] | None = None) -> list[Cell]:
    """Return the cells (one per world) of ``request``: the fixed grid's episode ``index`` of
    that policy and condition."""
    task, code, intensity = conditions(config)[int(request.task)]
    labels = [e.label for e in config.policy_entries()]
    text = config.policies[labels.index(request.policy)]
    one = dataclasses.replace(config, tasks=(task,), perturbations=(code,),
                              intensities=(intensity,), policies=(text,),
                              episodes_per_cell=request.index + 1)
    label_servers = {request.policy: (servers or {})[request.policy]} \
        if servers and request.policy in servers else None
    cells = plan_cells(one, cameras_for, label_servers)
    suffix = f'/{request.index}/{request.policy}'
    return [c for c in cells if c.spec.pair_id.endswith(suffix)]


@dataclasses.dataclass
class DecidedRun:
    """What ``sweep --until-decided`` did: the cells it ran (or found), and the decision."""

    cells: list[Cell]
    run: SweepRun
    log: Any
    decision: dict[str, Any]


def run_until_decided(config: SweepConfig, executor: Executor, out_dir: str | pathlib.Path,
                      target: float, budget: int | None = None,
                      allocation_rule: str = 'adaptive',
                      cameras_for: Callable[[PolicyEntry], tuple[str, ...]] | None = None,
                      servers: Mapping[str, Sequence[str]] | None = None,
                      progress: Callable[[int], None] | None = None,
                      rerun_changed: bool = False) -> DecidedRun:
    """Run the grid's cells one request at a time until the first world's ranking is decided.

    A request whose ranked cell ends as an infrastructure failure stops the run (its score is
    needed to choose the next); a re-run retries it and goes on.
    """
    if 'mjx' in config.worlds:
        raise ConfigError('--until-decided runs cells one at a time; the GPU batch (--device '
                          'gpu) is for whole grids')
    ranking = ranking_for(config, target, budget, allocation_rule)
    ranked_world = config.worlds[0]
    total = SweepRun(executor=executor.name)
    chosen: list[Cell] = []
    log: Any = None
    stopped = ''
    while (request := ranking.next()) is not None:
        cells = cells_for(config, request, cameras_for, servers)
        run, log = run_sweep(cells, executor, out_dir, progress=progress,
                             rerun_changed=rerun_changed)
        _add(total, run)
        chosen += cells
        key = next(c.key for c in cells if c.world == ranked_world)
        record = next((r for r in reversed(log.records)
                       if (r['pair_id'], record_role(r)) == key), None)
        if record is None or record.get('outcome') == 'infra_failure':
            stopped = (f'cell {ranked_world}:{key[0]} did not finish (infrastructure); re-run '
                       'the same command to retry it and go on')
            break
        ranking.record(request, float(record['progression']))
    decision = ranking.state.as_dict()
    decision.update({
        'budget': ranking.budget, 'allocation': ranking.allocation, 'world': ranked_world,
        'episodes_spent': ranking.spent, 'cells_spent': len(chosen),
        'fixed_grid_episodes': config.episodes_per_cell * len(conditions(config))
        * len(config.policies),
        'stopped': stopped or ('decided' if ranking.state.decided
                               else 'budget spent before the ranking was decided')})
    scores = dict(ranking.scores)
    if all(scores.values()):
        rows = allocation.fixed_design_power(scores, target)
        decision['fixed_design'] = [r.as_dict() for r in rows]
        needed = [r.episodes_per_policy for r in rows]
        decision['fixed_design_total'] = (None if any(n is None for n in needed)
                                          else max(n for n in needed if n is not None)
                                          * len(scores))
    return DecidedRun(cells=chosen, run=total, log=log, decision=decision)


def _add(total: SweepRun, run: SweepRun) -> None:
    for name in ('planned', 'resumed', 'ran', 'infra_failures', 'after_infra_failure',
                 'worker_lost', 'duplicates', 'steps'):
        setattr(total, name, getattr(total, name) + getattr(run, name))
    total.wall_s += run.wall_s


def describe(decision: Mapping[str, Any]) -> str:
    """Return the summary line: episodes spent, the order, and how sure."""
    order = ' > '.join(decision['order'])
    probs = [p['probability'] for p in decision.get('adjacent_pairs', ())] or [float('nan')]
    fixed = decision.get('fixed_design_total')
    return (f'until decided at P = {decision["target"]:.2f} ({decision["allocation"]}, ranked '
            f'on {decision["world"]}): {decision["episodes_spent"]} episodes spent '
            f'({decision["cells_spent"]} cells; the fixed grid has '
            f'{decision["fixed_grid_episodes"]}; budget {decision["budget"]}); '
            f'{decision["stopped"]}; {order} (min adjacent P {min(probs):.3f})'
            + (f'; a fixed design would need about {fixed}' if fixed else ''))


__all__ = ['DecidedRun', 'cells_for', 'conditions', 'default_budget', 'describe',
           'ranking_for', 'run_until_decided']
