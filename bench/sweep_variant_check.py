"""How much of the GPU sweep's disagreement with the CPU twin comes from the model changes MJX
forces (pyramidal cones, implicitfast, arm cylinders as capsules) rather than from MJX itself
(float32, its solver): the same grid on CPU MuJoCo with the original model and with
``mjx_sweep.mjx_model``'s variant (``batch.CpuStepper(transform=...)``), compared with
``sweep.agreement``. Runs anywhere MuJoCo runs (no JAX). Prints and appends to bench.jsonl.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from benchlib import Recorder  # noqa: E402

from realm_ros.backends.mujoco.batch import CpuStepper, run_batch  # noqa: E402
from realm_ros.backends.mujoco.mjx_sweep import mjx_model  # noqa: E402
from realm_ros.backends.mujoco.world import MujocoWorld  # noqa: E402
from realm_ros.core.config import WorldConfig  # noqa: E402
from realm_ros.policies.scripted import ScriptedPolicy, infer_batch  # noqa: E402
from realm_ros.sweep import mjx as sweep  # noqa: E402


def run(cells, transform):
    worlds = [MujocoWorld(WorldConfig(task=c.task, cameras=(), camera_rate_hz=0.0))
              for c in cells]
    qs = [[] for _ in cells]
    first = [None] * len(cells)

    def on_step(i, k, obs):
        qs[i].append(obs.joints.position)
        if first[i] is None and sweep.robot_contact(obs.privileged):
            first[i] = k

    results = run_batch(worlds, [ScriptedPolicy() for _ in cells], cells,
                        lambda ws: CpuStepper(ws, transform), on_step=on_step,
                        infer_batch=infer_batch)
    return [r.to_record() for r in results], [(np.array(q), f) for q, f in zip(qs, first)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--task', default='stack_cubes')
    parser.add_argument('--codes', default='Default,B-HOBJ,VB-POSE')
    parser.add_argument('--seeds', type=int, default=22)
    parser.add_argument('--max-steps', type=int, default=200)
    args = parser.parse_args()
    rec = Recorder('sweep_variant')
    cells, _ = sweep.plan_grid(args.task, args.codes.split(','), args.seeds, 1.0,
                               args.max_steps, 0)
    base, base_tr = run(cells, None)
    variant, variant_tr = run(cells, mjx_model)
    for code, row in sweep.agreement(base, variant, base_tr, variant_tr).items():
        rec.figure(f'CPU MuJoCo, MJX model variant vs twin model, {args.task} {code}: same '
                   f'success ({row["n"]} cells)', row['same_success'], 'fraction',
                   same_progression=row['same_progression'],
                   precontact_div_max_rad=row['precontact_div_max_rad'],
                   precontact_div_median_rad=row['precontact_div_median_rad'],
                   success_twin=sum(r['success'] for r in base if r['perturbation'] == code)
                   / row['n'],
                   success_variant=sum(r['success'] for r in variant
                                       if r['perturbation'] == code) / row['n'])
    return 0


if __name__ == '__main__':
    sys.exit(main())
