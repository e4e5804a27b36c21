"""Episodes needed to decide the scripted ladder's ranking at P: adaptive vs uniform allocation.

1. A pool of real-side episodes: every rung of the scripted ladder on the digital real (its
   hidden dynamics, core episode loop, no ROS) over the demo's tasks, ``--pool-seeds`` seeds
   each. The pool's per-policy mean progression over the balanced task mix is the truth.
2. ``--evaluations`` simulated evaluations per allocation: each episode the allocation asks for
   (policy, task) is drawn from that cell of the pool with replacement, with the evaluation's
   own random stream; the evaluation stops when every adjacent pair is ordered with probability
   ``--target`` or at ``--budget``.
3. Per allocation: episodes spent (mean, median, 90th percentile), how often the decided ranking
   is wrong (differs from the truth), and how often the budget ran out undecided.

Run: ``python bench/bench_until_decided.py`` (the pool takes a few minutes on 2 cores and is
cached in ``--pool``). Figures go to stdout and ``bench/results/bench.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import benchlib  # noqa: E402

from realm_ros.core import allocation  # noqa: E402

TASKS = ('pick_spoon', 'put_green_block_in_bowl', 'open_drawer')


def build_pool(path: pathlib.Path, seeds: int, max_steps: int) -> list[dict]:
    """Run (or load) the pool of digital-real ladder episodes."""
    if path.exists():
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        if len(records) >= seeds * len(TASKS) * 4:
            return records
    from realm_ros.backends.digital_real import DigitalRealWorld
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.episode import run_episode
    from realm_ros.core.policy import standard_chain
    from realm_ros.core.types import EpisodeSpec
    from realm_ros.policies.scripted import SKILLS, ScriptedPolicy

    records = []
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, 'w') as out:
        for task in TASKS:
            world = DigitalRealWorld(WorldConfig(task=task))
            for level in range(4):
                inner = ScriptedPolicy(skill=level)
                policy = standard_chain(inner, execute=inner.needs.horizon)
                for seed in range(seeds):
                    result = run_episode(world, policy, EpisodeSpec(
                        task=task, seed=1000 + seed, policy=policy.label, max_steps=max_steps))
                    record = {'policy': SKILLS[level].name, 'task': task, 'seed': seed,
                              'progression': result.progression}
                    out.write(json.dumps(record) + '\n')
                    records.append(record)
            world.close()
    return records


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--pool', type=pathlib.Path,
                        default=pathlib.Path('bench/results/until_decided_pool.jsonl'))
    parser.add_argument('--pool-seeds', type=int, default=30)
    parser.add_argument('--max-steps', type=int, default=300)
    parser.add_argument('--evaluations', type=int, default=100)
    parser.add_argument('--target', type=float, default=0.95)
    parser.add_argument('--budget', type=int, default=480)
    args = parser.parse_args()

    start = time.perf_counter()
    pool = build_pool(args.pool, args.pool_seeds, args.max_steps)
    pool_s = time.perf_counter() - start
    cells: dict[tuple[str, str], list[float]] = {}
    for r in pool:
        cells.setdefault((r['policy'], r['task']), []).append(float(r['progression']))
    policies = sorted({p for p, _ in cells}, key=lambda p: [r['policy'] for r in pool].index(p))
    truth = {p: float(np.mean([np.mean(cells[(p, t)]) for t in TASKS])) for p in policies}
    truth_order = sorted(policies, key=lambda p: -truth[p])
    print(flush=True)
    print(f'pool: {len(pool)} digital-real episodes ({pool_s:.0f} s); truth (mean progression '
          'over the task mix): ' + ', '.join(f'{p} {truth[p]:.3f}' for p in truth_order))

    results = {}
    for rule in allocation.ALLOCATIONS:
        spent, wrong, undecided = [], 0, 0
        for k in range(args.evaluations):
            rng = np.random.default_rng(10_000 + k)
            ranking = allocation.AdaptiveRanking(
                policies, TASKS, args.target, budget=args.budget, allocation=rule, seed=k)

            def episode(req: allocation.Request, rng: np.random.Generator = rng) -> float:
                values = cells[(req.policy, req.task)]
                return values[int(rng.integers(len(values)))]

            state = allocation.run_until_decided(ranking, episode)
            spent.append(state.total_episodes)
            if not state.decided:
                undecided += 1
            elif list(state.order) != truth_order:
                wrong += 1
        results[rule] = {
            'mean_episodes': float(np.mean(spent)), 'median_episodes': float(np.median(spent)),
            'p90_episodes': float(np.percentile(spent, 90)),
            'wrong_ranking_rate': wrong / args.evaluations,
            'undecided_rate': undecided / args.evaluations}
        r = results[rule]
        print(f'{rule:>8}: episodes mean {r["mean_episodes"]:.1f}, median '
              f'{r["median_episodes"]:.0f}, p90 {r["p90_episodes"]:.0f}; wrong rankings '
              f'{wrong}/{args.evaluations}; undecided at budget {undecided}/{args.evaluations}')
    saving = 1 - results['adaptive']['mean_episodes'] / results['uniform']['mean_episodes']
    print(f'adaptive spends {100 * saving:.0f} % fewer episodes than uniform at P = '
          f'{args.target}')
    rec = benchlib.Recorder('until_decided')
    for rule, r in results.items():
        rec.figure(f'episodes to decide the ladder at P={args.target}, {rule}',
                   r['mean_episodes'], 'episodes',
                   baseline=results['uniform']['mean_episodes'], baseline_label='uniform',
                   wrong_ranking_rate=r['wrong_ranking_rate'],
                   undecided_rate=r['undecided_rate'], evaluations=args.evaluations,
                   budget=args.budget, pool_episodes=len(pool), truth=truth)
    return 0


if __name__ == '__main__':
    sys.exit(main())
