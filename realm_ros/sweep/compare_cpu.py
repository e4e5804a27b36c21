"""``--compare-cpu``: a GPU sweep's records (``mjx`` or ``warp``) against the CPU twin's.

:func:`compare_with_cpu` re-runs the first N GPU cells with ``run_episode`` on the CPU twin
(the CPU sweep's :class:`~realm_ros.sweep.runner.CellRunner`, cameras of the GPU batch's
size) and :func:`compare` checks them per cell within :data:`TOLERANCE`.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Mapping, Sequence

from realm_ros.core import robot
from realm_ros.core.errors import ConfigError
from realm_ros.core.metrics import bootstrap_ci, wilson_interval
from realm_ros.core.sweep import Cell

#: ``--compare-cpu``'s tolerance, per cell and over the compared cells. float32 physics and a
#: different renderer (ray tracing against OpenGL) make a vision policy see slightly different
#: pictures, so its chunks, and after a few chunks its path, differ; what must hold is the
#: outcome: |progression difference| <= ``progression`` on at least ``cells`` of the cells, and
#: the same success on at least ``cells`` of them.
TOLERANCE = {'progression': 0.25, 'cells': 0.8}


def compare(gpu: Sequence[Mapping[str, Any]], cpu: Sequence[Mapping[str, Any]],
            tolerance: Mapping[str, float] = TOLERANCE) -> dict[str, Any]:
    """Return the per-cell agreement of two runs of the same cells (records in the same order)
    and whether it is within ``tolerance`` (:data:`TOLERANCE`)."""
    rows = []
    for g, c in zip(gpu, cpu):
        if g['pair_id'] != c['pair_id']:
            raise ConfigError(f'compare: cells differ ({g["pair_id"]} vs {c["pair_id"]})')
        rows.append({'pair_id': g['pair_id'], 'gpu_progression': g['progression'],
                     'cpu_progression': c['progression'], 'gpu_success': g['success'],
                     'cpu_success': c['success'], 'gpu_steps': g['steps'],
                     'cpu_steps': c['steps']})
    n = len(rows)
    if not n:
        raise ConfigError('compare: no cells')
    diffs = [abs(r['gpu_progression'] - r['cpu_progression']) for r in rows]
    n_close = sum(d <= tolerance['progression'] for d in diffs)
    n_same = sum(bool(r['gpu_success']) == bool(r['cpu_success']) for r in rows)
    n_gpu = sum(bool(r['gpu_success']) for r in rows)
    n_cpu = sum(bool(r['cpu_success']) for r in rows)
    close, same = n_close / n, n_same / n
    return {'cells': n, 'progression_within': close, 'same_success': same,
            'mean_abs_progression_diff': sum(diffs) / n,
            'gpu_success_rate': n_gpu / n,
            'cpu_success_rate': n_cpu / n,
            # 95 % intervals: Wilson for the fractions of cells, a percentile bootstrap over
            # the cells for the mean |difference|.
            'progression_within_ci': wilson_interval(n_close, n),
            'same_success_ci': wilson_interval(n_same, n),
            'gpu_success_rate_ci': wilson_interval(n_gpu, n),
            'cpu_success_rate_ci': wilson_interval(n_cpu, n),
            'mean_abs_progression_diff_ci': list(bootstrap_ci(diffs)),
            'tolerance': dict(tolerance),
            'within_tolerance': close >= tolerance['cells'] and same >= tolerance['cells'],
            'per_cell': rows}


def summary_section(result: Mapping[str, Any]) -> dict[str, Any]:
    """``summary.json``'s ``compare_cpu``: :func:`compare`'s figures and intervals without the
    per-cell rows (those stay in ``compare_cpu.json``)."""
    return {k: v for k, v in result.items() if k != 'per_cell'}


def cpu_runner(image_size: tuple[int, int] = (320, 180), camera_rig_file: str = '') -> Any:
    """The CPU sweep's :class:`CellRunner` with cameras of ``image_size`` (the Warp batch's);
    ``camera_rig_file``: the rig (its render passes) the twin's worlds are built with."""
    from realm_ros.sweep.runner import CellRunner

    def factory(backend: str, cameras: tuple[str, ...], sim_params_file: str) -> Any:
        from realm_ros.core.config import WorldConfig
        from realm_ros.core.world import make_world

        return make_world(WorldConfig(backend=backend, cameras=cameras,
                                      camera_rate_hz=robot.CONTROL_HZ if cameras else 0.0,
                                      camera_width=image_size[0], camera_height=image_size[1],
                                      sim_params_file=sim_params_file,
                                      camera_rig_file=camera_rig_file))

    return CellRunner(world_factory=factory)


def cpu_twin(cell: Cell) -> Cell:
    """``cell`` on the CPU twin (world ``mujoco``), for ``--compare-cpu``."""
    return dataclasses.replace(cell, world='mujoco')


def compare_with_cpu(out: Any, cells: Sequence[Cell], records: Sequence[Mapping[str, Any]],
                     n: int, quiet: bool = False) -> dict[str, Any]:
    """``--compare-cpu N``: run the first ``n`` GPU cells of ``cells`` on the CPU twin
    (``run_episode``, the CPU sweep's worker), compare their records with the GPU's
    (:func:`compare`) and write ``OUT/compare_cpu.json`` (and the CPU records,
    ``OUT/compare_cpu.jsonl``)."""
    import json
    import pathlib

    from realm_ros.core.sweep import BATCH_WORLDS
    from realm_ros.core.types import record_role

    by_key = {(r['pair_id'], record_role(r)): r for r in records}
    chosen = [c for c in cells if c.world in BATCH_WORLDS and c.key in by_key][:n]
    if not chosen:
        raise ConfigError('--compare-cpu: no GPU cells were run')
    runner = cpu_runner()
    t = time.perf_counter()
    try:
        cpu = [runner.run(cpu_twin(c)) for c in chosen]
    finally:
        runner.close()
    cpu_s = time.perf_counter() - t
    result = compare([by_key[c.key] for c in chosen], cpu)
    result['cpu_wall_s'] = cpu_s
    result['cpu_sim_s'] = sum(r['steps'] for r in cpu) / robot.CONTROL_HZ
    folder = pathlib.Path(out)
    (folder / 'compare_cpu.json').write_text(json.dumps(result, indent=2))
    (folder / 'compare_cpu.jsonl').write_text(''.join(json.dumps(r) + '\n' for r in cpu))
    if not quiet:
        verdict = 'within' if result['within_tolerance'] else 'OUTSIDE'
        print(f"compare-cpu: {result['cells']} cells: progression within "
              f"{TOLERANCE['progression']} on {result['progression_within']:.0%}, same success "
              f"on {result['same_success']:.0%} ({verdict} the tolerance, >= "
              f"{TOLERANCE['cells']:.0%} each); CPU {result['cpu_sim_s']:.0f} s simulated in "
              f"{cpu_s:.0f} s: {folder / 'compare_cpu.json'}")
    return result
