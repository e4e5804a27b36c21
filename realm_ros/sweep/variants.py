"""Variant aggregation (SIMPLER's VA) for a lab with no recording: the twin over several looks.

``realm-ros paired-eval --variant-aggregation N`` runs, after the paired evaluation, the sim
side of the same plan (same specs, same seeds, same initial states) on each of the N looks of
:class:`~realm_ros.core.appearance.VariantSet` (variant 0 the twin's own look, then
backgrounds, lighting, table textures, distractors in turn), through the sweep's cell runner:
records in ``OUT/variants/episodes.jsonl`` (crash-safe; a re-run skips what is done), one
world per variant (``variant_3_table``...). The twin's variant-aggregated score of a policy is
the mean over variants of its mean progression (and success); it sits in ``summary.json``
under ``variant_aggregation`` beside the plain (or visually matched) twin's, with its
agreement with the real side. Only what the policy sees changes: the physics is the twin's,
so a state-based policy (the scripted ladder) scores the same on every variant, and a vision
policy shows how much its ranking depends on the look.
"""

from __future__ import annotations

import pathlib
from typing import Any, Mapping, Sequence

import numpy as np

from realm_ros.core import backends
from realm_ros.core.appearance import VariantSet
from realm_ros.core.errors import ConfigError, DataError
from realm_ros.core.sweep import Cell
from realm_ros.core.types import record_role

#: The folder under the evaluation's ``--out`` that holds the variants' episodes.
FOLDER = 'variants'


def variant_cells(config: Any, variants: VariantSet,
                  cameras_for: Any = None) -> list[Cell]:
    """Return the sim side of ``config``'s plan (an :class:`~realm_ros.core.evaluation.
    EvalConfig`) once per variant: cell world = the variant's name.

    ``cameras_for(entry)`` gives the cameras a policy entry renders (default: every camera when
    ``config.cameras``, else none).
    """
    from realm_ros.core.config import CAMERA_NAMES
    from realm_ros.core.evaluation import plan_pairs

    if not backends.get(config.sim).looks:
        raise ConfigError(f'--variant-aggregation dresses the MuJoCo twin; --sim is '
                          f'{config.sim!r}')
    entries = {e.label: e for e in config.policy_entries()}
    cells = []
    for k in range(variants.count):
        for spec in plan_pairs(config):
            entry = entries[spec.policy]
            cams = (tuple(cameras_for(entry)) if cameras_for is not None
                    else (CAMERA_NAMES if config.cameras else ()))
            cells.append(Cell(world=variants.name(k), entry=entry, spec=spec, cameras=cams,
                              sim_params_file=config.sim_params_file or '',
                              variant=(k, variants.count, variants.seed)))
    return cells


def aggregate(records: Sequence[Mapping[str, Any]], variants: VariantSet,
              real: Mapping[str, float] | None = None) -> dict[str, Any]:
    """Return the variant-aggregated scores of ``records`` (one world per variant).

    Per policy: the mean over variants of each variant's mean progression and success, and
    each variant's own; with ``real`` (policy -> real mean progression), Pearson r, MMRV and
    the mean gap of the aggregated scores against it.
    """
    from realm_ros.core import metrics

    scored = [r for r in records if r.get('outcome') != 'infra_failure']
    names = [variants.name(k) for k in range(variants.count)]
    policies = list(dict.fromkeys(r['policy'] for r in scored))
    rows = []
    for policy in policies:
        per_variant = {}
        for name in names:
            mine = [r for r in scored if r['policy'] == policy and record_role(r) == name]
            if mine:
                per_variant[name] = {
                    'episodes': len(mine),
                    'progress': float(np.mean([r['progression'] for r in mine])),
                    'success': float(np.mean([bool(r['success']) for r in mine]))}
        if not per_variant:
            continue
        rows.append({
            'policy': policy,
            'variants': len(per_variant),
            'progress': float(np.mean([v['progress'] for v in per_variant.values()])),
            'progress_spread': float(np.ptp([v['progress'] for v in per_variant.values()])),
            'success': float(np.mean([v['success'] for v in per_variant.values()])),
            'per_variant': per_variant})
    out: dict[str, Any] = {'count': variants.count, 'seed': variants.seed, 'variants': names,
                           'axes': [variants.axis(k) for k in range(variants.count)],
                           'per_policy': rows,
                           'infra_failures': len(records) - len(scored)}
    if real:
        both = [r for r in rows if r['policy'] in real]
        if len(both) >= 2:
            try:
                out['agreement'] = metrics.agreement(
                    sim=[r['progress'] for r in both],
                    real=[real[r['policy']] for r in both]).as_dict()
            except DataError as err:
                out['agreement'] = {'note': str(err)}
    return out


def run_variant_aggregation(config: Any, variants: VariantSet, out_dir: str | pathlib.Path,
                            real: Mapping[str, float] | None = None,
                            cameras_for: Any = None, quiet: bool = True,
                            rerun_changed: bool = False) -> dict[str, Any]:
    """Run (or resume) the variants' cells of ``config`` in this process; return
    :func:`aggregate`'s summary. Records go to ``out_dir``/variants/episodes.jsonl; cells
    recorded there with other settings are refused, or run again with ``rerun_changed``."""
    from realm_ros.sweep.driver import run_sweep
    from realm_ros.sweep.executors import InProcessExecutor

    cells = variant_cells(config, variants, cameras_for)
    folder = pathlib.Path(out_dir) / FOLDER
    with InProcessExecutor() as executor:
        _, log = run_sweep(cells, executor, folder, rerun_changed=rerun_changed)
    keys = {c.key for c in cells}
    mine = [r for r in log.records if (r['pair_id'], record_role(r)) in keys]
    return aggregate(mine, variants, real)


def format_table(section: Mapping[str, Any]) -> str:
    """Return the variant aggregation as a console table."""
    names = section['variants']
    lines = [f'variant aggregation over {section["count"]} looks of the twin '
             f'({", ".join(a or "own" for a in section["axes"])}):',
             f'{"policy":<24}{"VA progress":>12}{"spread":>8}{"VA success":>11}']
    for row in section['per_policy']:
        lines.append(f'{row["policy"]:<24}{row["progress"]:>12.3f}'
                     f'{row["progress_spread"]:>8.3f}{row["success"]:>11.3f}')
    a = section.get('agreement') or {}
    if 'pearson_r' in a:
        lines.append(f'VA vs real: Pearson r {a["pearson_r"]:.3f}, MMRV {a["mmrv"]:.3f}, mean '
                     f'|gap| {a["mean_abs_gap"]:.3f} ({len(names)} variants)')
    return '\n'.join(lines)


__all__ = ['FOLDER', 'aggregate', 'format_table', 'run_variant_aggregation', 'variant_cells']
