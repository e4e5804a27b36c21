"""How many of a lab's own labelled episodes the learned scorer's calibration needs.

    python bench/scorer_calibration.py [--checkpoint CKPT ...] [--ks 0 2 4 8 16] [--draws 3]
        [--data-dir data/progress_scorer] [--json OUT.json] [--tune] [--measure learned_ladder]

For each lab look of ``learned.PLANS['calibrate']`` (7001-7003 and 7010, never in training):
the look's episodes of the training rungs (scripted:0, 1, 3) with seeds 100-101 are its
*calibration pool* (18), every other episode of the look is *measured* (30: seeds 102-103 of the
training rungs, and every episode of scripted:2, a rung never in training nor in any pool). For
k in ``--ks`` and each of ``--draws`` draws, k episodes drawn from the pool (nested: the first k
of one shuffle of the pool per draw) calibrate the checkpoint (``learned.calibrate``, its default
settings) and the calibrated scorer is measured on the look's measured episodes; k = 0 is the
checkpoint as shipped. Per set (each look, all looks, the unseen rung over all looks): Pearson r
of episode progressions with the rubric, stage accuracy (sampled frames whose stage count is
the rubric's), success accuracy (``scoring.calls_success``), the operator's view of the
proposals at the episode's end (accepted unchanged: the scorer proposes exactly the stages the
rubric met; with times: and each within 1 s of the rubric's), each the mean over draws with a
95 % percentile bootstrap interval over the measured episodes (2,000 resamples of distinct
episodes, the same resample for every draw), and the best constants on the measured episodes
themselves (always success / always failure, the most frequent stage count per task).

``--measure learned_ladder``: the calibration pool stays the same (each look's 18 scripted
episodes of seeds 100-101), and the measured episodes are instead the look's episodes of plan
``learned_ladder``: three rungs of the learned vision ladder, a policy family never in training
nor in any pool, on looks 7001-7003 (set "all looks, learned ladder"; per task and per rung
too); it also prints (and the JSON keeps, ``final_counts_k0``) the rubric's final stage count
against the uncalibrated scorer's per task. Every run prints each set's ``task_mean_pearson_r``:
the r of answering each task's mean progression, knowing the task and nothing else.
``--own-pool`` (with ``--measure``): the pool is instead the look's episodes of that plan with
its first two seeds (200-201: 12 per look, the lab's own policy labelled), the measured its
other seeds (202-203).

``--tune 1`` / ``--tune 2``: the settings grids on look ``learned.TUNE_LOOK`` only (plan
``calibrate_tune``), to choose ``CalibrateConfig``'s defaults; nothing else is measured there.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import sys
import time
from typing import Any, Callable

import numpy as np

os.environ.setdefault('MUJOCO_GL', 'egl')

POOL_SEEDS = (100, 101)
TIME_TOLERANCE_S = 1.0


def split(episodes: list[Any]) -> tuple[list[Any], list[Any]]:
    """Return (calibration pool, measured) of one look's episodes (see the module docstring)."""
    from realm_ros.scorers import learned
    trained = {p.replace(':', '-') for p in learned.TRAIN_POLICIES}
    pool = [e for e in episodes if e.policy in trained and e.seed in POOL_SEEDS]
    measured = [e for e in episodes if not (e.policy in trained and e.seed in POOL_SEEDS)]
    return pool, measured


def _first_reached(counts: np.ndarray, k: int) -> int | None:
    hit = np.flatnonzero(counts >= k)
    return int(hit[0]) if hit.size else None


def per_episode(scorer: Any, episode: Any) -> dict[str, Any]:
    """The scorer's answers on one labelled episode, beside the rubric's."""
    from realm_ros.scorers import learned
    counts = learned.stage_counts(scorer, episode)
    met = episode.met
    proposed, reached = int(counts.max()), int(met.max())
    timed = proposed == reached and all(
        abs(float(episode.times_s[_first_reached(counts, k)])
            - float(episode.times_s[_first_reached(met, k)])) <= TIME_TOLERANCE_S
        for k in range(1, reached + 1))
    return {'predicted': proposed / episode.n_stages, 'truth': episode.progression,
            'n': episode.n_stages, 'hits': int(np.sum(counts == met)), 'frames': len(met),
            'accepted': proposed == reached, 'accepted_timed': bool(timed)}


def figures(rows: list[list[dict[str, Any]]], n_resamples: int = 2000,
            seed: int = 0) -> dict[str, Any]:
    """Mean over draws (``rows[d][i]``: draw d, episode i) of each figure, with a percentile
    bootstrap interval over episodes."""
    from realm_ros.core import scoring
    predicted = np.array([[r['predicted'] for r in draw] for draw in rows])
    truth = np.array([r['truth'] for r in rows[0]])
    n = np.array([r['n'] for r in rows[0]])
    hits = np.array([[r['hits'] for r in draw] for draw in rows], float)
    frames = np.array([r['frames'] for r in rows[0]], float)
    accepted = np.array([[r['accepted'] for r in draw] for draw in rows], float)
    timed = np.array([[r['accepted_timed'] for r in draw] for draw in rows], float)
    real = scoring.calls_success(truth, n)
    called = np.array([scoring.calls_success(p, n) for p in predicted])
    right = (called == real[None, :]).astype(float)

    def stats(index: np.ndarray) -> dict[str, float]:
        t = truth[index]
        rs = [float(np.corrcoef(p[index], t)[0, 1])
              if np.ptp(p[index]) > 0 and np.ptp(t) > 0 else np.nan for p in predicted]
        return {'pearson_r': float(np.nanmean(rs)) if not np.all(np.isnan(rs)) else np.nan,
                'stage_accuracy': float(np.mean(hits[:, index].sum(1) / frames[index].sum())),
                'success_accuracy': float(right[:, index].mean()),
                'accepted_unchanged': float(accepted[:, index].mean()),
                'accepted_unchanged_timed': float(timed[:, index].mean()),
                'mean_abs_error': float(np.mean(np.abs(predicted[:, index] - t[None, :])))}

    everything = np.arange(len(truth))
    out: dict[str, Any] = {k: v for k, v in stats(everything).items()}
    rng = np.random.default_rng(seed)
    boot = [stats(rng.integers(0, len(truth), len(truth))) for _ in range(n_resamples)]
    for key in list(out):
        values = np.array([b[key] for b in boot], float)
        values = values[~np.isnan(values)]
        out[f'{key}_ci'] = ([float(v) for v in np.quantile(values, [0.025, 0.975])]
                            if values.size else None)
    per_draw_r = [float(np.corrcoef(p, truth)[0, 1]) if np.ptp(p) > 0 else np.nan
                  for p in predicted]
    out['pearson_r_draws'] = per_draw_r
    out['episodes'] = int(len(truth))
    out['draws'] = int(len(rows))
    return out


def constants(episodes: list[Any]) -> dict[str, float]:
    """The best constant answers on ``episodes`` themselves (favouring the constants)."""
    successes = float(np.mean([e.success for e in episodes]))
    hits = 0
    for task in {e.task for e in episodes}:
        met = np.concatenate([e.met for e in episodes if e.task == task])
        hits += int(np.bincount(met).max())
    frames = sum(len(e.met) for e in episodes)
    mean = float(np.mean([e.progression for e in episodes]))
    # Knowing only the task: each task's mean progression on these episodes, as the answer.
    task_mean = {t: np.mean([e.progression for e in episodes if e.task == t])
                 for t in {e.task for e in episodes}}
    per_task = np.array([task_mean[e.task] for e in episodes])
    truth = np.array([e.progression for e in episodes])
    final_hits = 0
    for task in {e.task for e in episodes}:
        final_hits += int(np.bincount([int(e.met.max()) for e in episodes
                                       if e.task == task]).max())
    return {'always_success': successes, 'always_failure': 1.0 - successes,
            'best_constant_success': max(successes, 1.0 - successes),
            'majority_stage_accuracy': hits / frames,
            'mean_progression_abs_error': float(np.mean([abs(e.progression - mean)
                                                         for e in episodes])),
            # a proposer that always proposes the stages most often met by its task's end
            'majority_final_count': final_hits / len(episodes),
            # Pearson r of that per-task constant (nan with one task: a constant)
            'task_mean_pearson_r': (float(np.corrcoef(per_task, truth)[0, 1])
                                    if np.ptp(per_task) > 0 and np.ptp(truth) > 0 else np.nan)}


def run_look(base: dict[str, Any], base_name: str, episodes: list[Any], ks: list[int],
             draws: int, config: Any, seed: int, measured: list[Any] | None = None,
             pool: list[Any] | None = None) -> dict[int, list[list[dict[str, Any]]]]:
    """Return, per k, per draw, the per-episode answers on the look's measured episodes (those
    of :func:`split`, or ``measured``: other episodes of the look), calibrated from ``pool``
    (default: :func:`split`'s)."""
    from realm_ros.scorers import learned
    own_pool, held = split(episodes)
    measured = held if measured is None else measured
    pool = own_pool if pool is None else pool
    out: dict[int, list[list[dict[str, Any]]]] = {}
    plain = learned.LearnedScorer(base)
    for k in ks:
        if k == 0:
            out[0] = [[per_episode(plain, e) for e in measured]]
            continue
        if k > len(pool):
            raise SystemExit(f'--ks: {k} is more than the pool of {len(pool)} episodes')
        out[k] = []
        for d in range(draws):
            order = np.random.default_rng([seed, d]).permutation(len(pool))
            chosen = [pool[i] for i in order[:k]]
            calibrated = learned.calibrate(base, chosen, config, base_name=base_name)
            scorer = learned.LearnedScorer(calibrated)
            out[k].append([per_episode(scorer, e) for e in measured])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--checkpoint', type=pathlib.Path, action='append', default=None)
    parser.add_argument('--ks', type=int, nargs='+', default=[0, 2, 4, 8, 16])
    parser.add_argument('--draws', type=int, default=3)
    parser.add_argument('--data-dir', type=pathlib.Path,
                        default=pathlib.Path('data/progress_scorer'))
    parser.add_argument('--json', type=pathlib.Path, default=None)
    parser.add_argument('--tune', type=int, choices=(1, 2), default=None,
                        help='the settings grid on look TUNE_LOOK: 1 (layers x steps x lr) or '
                             '2 (gentler learning rates, the anchor, fewer steps)')
    parser.add_argument('--threads', type=int, default=1)
    parser.add_argument('--measure', choices=('learned_ladder',), default=None,
                        help="measure on that plan's episodes of each look (the pool stays)")
    parser.add_argument('--own-pool', action='store_true',
                        help="with --measure: calibrate from that plan's episodes of the look "
                             '(its first two seeds) and measure its others')
    args = parser.parse_args()

    from realm_ros.commands import score
    from realm_ros.core.evaluation import PolicyEntry
    from realm_ros.scorers import learned

    appearance = score._appearance(argparse.Namespace(appearance=None))
    checkpoints = args.checkpoint or [learned.DEFAULT_CHECKPOINT, learned.LOOKS_CHECKPOINT]
    result: dict[str, Any] = {'ks': args.ks, 'draws': args.draws, 'results': {}}
    if args.tune:
        episodes = score.labelled('calibrate_tune', args.data_dir, appearance)
        plain = learned.CalibrateConfig(anchor=0.0, threads=args.threads)
        if args.tune == 1:
            grid = [dataclasses.replace(plain, layers=layers, steps=steps, lr=lr)
                    for layers in ('head', 'all') for steps in (60, 150) for lr in (1e-3, 3e-3)]
        else:
            grid = [dataclasses.replace(plain, **settings) for settings in (
                {}, {'lr': 3e-4}, {'layers': 'norm', 'lr': 3e-3}, {'anchor': 1.0},
                {'anchor': 0.1}, {'anchor': 0.03}, {'steps': 40})]
        for path in checkpoints:
            base = learned.load_checkpoint(path)
            for config in grid:
                start = time.monotonic()
                answers = run_look(base, str(path), episodes, [k for k in args.ks if k],
                                   args.draws, config, seed=learned.TUNE_LOOK)
                for k, rows in answers.items():
                    f = figures(rows, n_resamples=200)
                    print(f'{pathlib.Path(path).stem} {config.layers} steps {config.steps} lr '
                          f'{config.lr:g} anchor {config.anchor:g} k {k}: r '
                          f'{f["pearson_r"]:.3f} stage {f["stage_accuracy"]:.3f} success '
                          f'{f["success_accuracy"]:.3f} '
                          f'accepted {f["accepted_unchanged"]:.3f} '
                          f'({time.monotonic() - start:.0f} s)', flush=True)
        return
    episodes = score.labelled('calibrate', args.data_dir, appearance)
    other = score.labelled(args.measure, args.data_dir, appearance) if args.measure else None
    config = dataclasses.replace(learned.CalibrateConfig(), threads=args.threads)
    result['config'] = dataclasses.asdict(config)
    result['measure'] = args.measure or 'calibrate'
    looks = learned.PLANS[args.measure or 'calibrate'].looks
    if args.own_pool and other is None:
        raise SystemExit('--own-pool: only with --measure')
    # --own-pool: the measured plan's first two seeds calibrate, its other seeds are measured.
    own_seeds = set(learned.PLANS[args.measure].seeds[:2]) if args.own_pool else set()
    result['pool'] = sorted(own_seeds) or 'scripted seeds 100-101'

    def pool_look(look: int) -> list[Any]:
        return [e for e in episodes if e.look == f'lab:{look}']

    def measured_of(look: int) -> list[Any]:
        if other is None:
            return split(pool_look(look))[1]
        return [e for e in other if e.look == f'lab:{look}' and e.seed not in own_seeds]

    def pool_of(look: int) -> list[Any] | None:
        if not own_seeds:
            return None
        return [e for e in other if e.look == f'lab:{look}' and e.seed in own_seeds]

    # The sets over all looks: a name and which measured episodes it keeps.
    subsets: dict[str, Callable[[Any], bool]]
    if other is None:
        subsets = {'all looks': lambda e: True,
                   'all looks, unseen rung scripted:2': lambda e: e.policy == 'scripted-2'}
    else:
        rungs = [PolicyEntry.parse(t).label for t in learned.PLANS[args.measure].policies]
        subsets = {'all looks, learned ladder': lambda e: True,
                   **{f'learned ladder, {task}': (lambda e, t=task: e.task == t)
                      for task in learned.PLANS[args.measure].tasks},
                   **{f'learned ladder, {rung}': (lambda e, r=rung: e.policy == r)
                      for rung in rungs}}
    for path in checkpoints:
        base = learned.load_checkpoint(path)
        name = learned.LearnedScorer(path).name
        per_look: dict[int, dict[int, list[list[dict[str, Any]]]]] = {}
        for look in looks:
            start = time.monotonic()
            per_look[look] = run_look(base, name, pool_look(look), args.ks, args.draws, config,
                                      seed=look, measured=measured_of(look), pool=pool_of(look))
            print(f'{name} lab:{look}: {time.monotonic() - start:.0f} s', file=sys.stderr,
                  flush=True)
        sets: dict[str, Any] = {}
        for k in args.ks:
            for look in looks:
                sets.setdefault(f'lab:{look}', {})[k] = figures(per_look[look][k])
            draws = range(len(per_look[looks[0]][k]))
            for key, keep in subsets.items():
                rows = [sum(([r for r, e in zip(per_look[look][k][d], measured_of(look))
                              if keep(e)] for look in looks), []) for d in draws]
                sets.setdefault(key, {})[k] = figures(rows)
        measured = {f'lab:{look}': measured_of(look) for look in looks}
        for key, keep in subsets.items():
            measured[key] = [e for look in looks for e in measured_of(look) if keep(e)]
        result['results'][name] = {'sets': sets, 'constants': {
            key: constants(value) for key, value in measured.items()}}
        for key, by_k in sets.items():
            c = result['results'][name]['constants'][key]
            for k, f in by_k.items():
                ci = f['pearson_r_ci'] or [np.nan, np.nan]
                print(f'| {name} | {key} | {k} | {f["pearson_r"]:.3f} [{ci[0]:.2f}, {ci[1]:.2f}] '
                      f'| {f["stage_accuracy"]:.3f} ({c["majority_stage_accuracy"]:.3f}) '
                      f'| {f["success_accuracy"]:.3f} ({c["best_constant_success"]:.3f}) '
                      f'| {f["accepted_unchanged"]:.3f} | {f["accepted_unchanged_timed"]:.3f} |',
                      flush=True)
        if other is not None and 0 in args.ks:
            # Final stage counts, the rubric's against the uncalibrated scorer's, per task.
            pairs: dict[str, dict[str, int]] = {}
            for look in looks:
                for r, e in zip(per_look[look][0][0], measured_of(look)):
                    key = f'{round(r["truth"] * r["n"])} -> {round(r["predicted"] * r["n"])}'
                    pairs.setdefault(e.task, {}).setdefault(key, 0)
                    pairs[e.task][key] += 1
            result['results'][name]['final_counts_k0'] = pairs
            for task, counts in pairs.items():
                print(f'{name} k 0 {task} (rubric -> proposed: episodes): '
                      + ', '.join(f'{k}: {v}' for k, v in sorted(counts.items())), flush=True)
        for key, c in result['results'][name]['constants'].items():
            print(f'{name} {key}: per-task constant r {c["task_mean_pearson_r"]:.3f}',
                  flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1, default=float))


if __name__ == '__main__':
    main()
