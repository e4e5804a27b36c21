"""``realm-ros metrics FILE.csv``: agreement metrics for numbers a user brings.

The CSV has a header with columns ``policy``, ``real``, ``sim`` and optionally ``group``, one
row per policy per group. Prints JSON to stdout:
``{"groups": {"<group>": {"pearson_r", "mmrv", "mean_abs_gap", "n_policies"}},
"mean": {"pearson_r", "mmrv", "mean_abs_gap"}}``; ``mean`` is the unweighted mean over groups;
without a ``group`` column there is one group named ``all``.

With an ``n`` column (trials per policy; the scores are then success rates), each group also
gets ``kruskal``: ``{policy: {statistic, pvalue, note, ...}}``, SimplerEnv's Kruskal-Wallis test
of sim vs real per policy on ``n`` unordered 0/1 trials rebuilt from each rate
(``construct_unordered_trial_results``); identical samples give p = 1 ('all same').

``realm-ros metrics --power P RUN`` reads a run's ``episodes.jsonl`` (RUN is the file or its
folder) as a pilot instead and prints how many episodes per policy a fixed (uniform) design
needs so that every adjacent pair of the pilot's ranking is ordered with probability ``P``
(:func:`realm_ros.core.allocation.fixed_design_power`), for the ``--world`` (default real).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import pathlib
import sys
from typing import Any

from realm_ros.commands import decided_probability, path_arg
from realm_ros.core import metrics
from realm_ros.core.errors import DataError

REQUIRED = ('policy', 'real', 'sim')


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the CSV path (or, with --power, the run)."""
    parser.add_argument('csv', type=path_arg, help='CSV with columns policy, real, sim '
                                                       '[, group]; with --power: a run folder '
                                                       'or its episodes.jsonl')
    parser.add_argument('--power', type=decided_probability, default=None, metavar='P',
                        help='episodes per policy a fixed design needs to order every adjacent '
                             'pair of the pilot run with probability P')
    parser.add_argument('--world', choices=('real', 'sim'), default='real',
                        help='with --power: whose episodes form the pilot (default: real)')


def pilot_scores(path: pathlib.Path, world: str) -> dict[str, list[float]]:
    """Return ``{policy: [progression, ...]}`` of ``world``'s scored episodes in a run.

    Raises:
        DataError: no such file, or no scored episode of ``world``.
    """
    from realm_ros.core.evaluation import EpisodeLog, scored
    from realm_ros.core.types import record_role
    file = path / 'episodes.jsonl' if path.is_dir() else path
    if not file.is_file():
        raise DataError(f'{file} does not exist (give a run folder or its episodes.jsonl)')
    out: dict[str, list[float]] = {}
    for record in scored(EpisodeLog(file).records):
        if record_role(record) == world:
            out.setdefault(str(record['policy']), []).append(float(record['progression']))
    if not out:
        raise DataError(f'{file}: no scored {world} episodes')
    return out


def power(path: pathlib.Path, target: float, world: str) -> dict[str, Any]:
    """Return the JSON-ready fixed-design power of a pilot run."""
    from realm_ros.core import allocation
    pilot = pilot_scores(path, world)
    rows = allocation.fixed_design_power(pilot, target)
    needed = [r.episodes_per_policy for r in rows]
    per_policy = None if None in needed else max(n for n in needed if n is not None)
    return {
        'target': target, 'world': world,
        'pilot_episodes': {p: len(v) for p, v in pilot.items()},
        'adjacent_pairs': [r.as_dict() for r in rows],
        'episodes_per_policy': per_policy,
        'total_episodes': None if per_policy is None else per_policy * len(pilot),
        'note': 'normal approximation at the pilot means and spreads; a pair with no '
                'difference in the pilot has no finite design (null)',
    }


def read_scores(path: pathlib.Path) -> dict[str, dict[str, tuple[float, ...]]]:
    """Return ``{group: {policy: (real, sim[, n])}}`` from the CSV, validating every row.

    Raises:
        DataError: unreadable file, missing columns, non-numeric or NaN values, a policy twice
            in one group, a group with fewer than two policies.
    """
    try:
        with open(path, newline='') as handle:
            text = handle.read()
    except OSError as err:
        raise DataError(f'cannot read {path}: {err.strerror}') from None
    reader = csv.DictReader(text.splitlines())  # newline='' keeps quoted newlines intact
    header = [h.strip() for h in (reader.fieldnames or [])]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise DataError(f'{path}: missing column(s) {missing}; the header must name '
                        f'policy, real, sim and optionally group (found {header})')
    groups: dict[str, dict[str, tuple[float, ...]]] = {}
    for line, row in enumerate(reader, start=2):
        row = {(k or '').strip(): (v or '').strip() for k, v in row.items()}
        policy = row['policy']
        if not policy:
            raise DataError(f'{path}:{line}: empty policy name')
        values: list[float] = []
        for column in ('real', 'sim'):
            try:
                value = float(row[column])
            except ValueError:
                raise DataError(f'{path}:{line}: column {column!r} is not a number: '
                                f'{row[column]!r}') from None
            if not math.isfinite(value):
                raise DataError(f'{path}:{line}: column {column!r} is {row[column]}; '
                                'scores must be finite')
            values.append(value)
        if 'n' in header:
            try:
                n = int(row['n'])
            except ValueError:
                raise DataError(f"{path}:{line}: column 'n' must be a whole number of "
                                f'trials: {row["n"]!r}') from None
            if n < 1:
                raise DataError(f"{path}:{line}: column 'n' must be >= 1, got {n}")
            for column, value in zip(('real', 'sim'), values):
                if not 0.0 <= value <= 1.0:
                    raise DataError(f'{path}:{line}: with an n column, {column!r} is a success '
                                    f'rate in [0, 1], got {value}')
            values.append(float(n))
        group = (row.get('group') or 'all') if 'group' in header else 'all'
        scores = groups.setdefault(group, {})
        if policy in scores:
            raise DataError(f'{path}:{line}: policy {policy!r} appears twice in group {group!r}')
        scores[policy] = tuple(values)
    if not groups:
        raise DataError(f'{path}: no data rows')
    for group, scores in groups.items():
        if len(scores) < 2:
            raise DataError(f'{path}: group {group!r} has {len(scores)} policy; agreement '
                            'needs at least two policies per group')
    return groups


def compute(groups: dict[str, dict[str, tuple[float, ...]]]) -> dict[str, Any]:
    """Return the JSON-ready result for ``{group: {policy: (real, sim[, n])}}``."""
    out: dict[str, Any] = {'groups': {}}
    for group, scores in groups.items():
        real = [v[0] for v in scores.values()]
        sim = [v[1] for v in scores.values()]
        out['groups'][group] = metrics.agreement(sim=sim, real=real).as_dict()
        if all(len(v) == 3 for v in scores.values()):
            out['groups'][group]['kruskal'] = {
                policy: metrics.kruskal_sim_real(
                    sim=metrics.trials_from_rate(v[1], int(v[2])),
                    real=metrics.trials_from_rate(v[0], int(v[2])))
                for policy, v in scores.items()}
    keys = ('pearson_r', 'mmrv', 'mean_abs_gap')
    out['mean'] = {k: float(sum(g[k] for g in out['groups'].values()) / len(out['groups']))
                   for k in keys}
    return out


def run(args: argparse.Namespace) -> int:
    """Print the agreement JSON (or, with --power, the fixed design's episodes)."""
    if args.power is not None:
        from realm_ros.core.allocation import check_target
        check_target(args.power, '--power')
        result = power(args.csv, args.power, args.world)
    else:
        result = compute(read_scores(args.csv))
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write('\n')
    return 0


__all__ = ['DataError', 'compute', 'read_scores']
