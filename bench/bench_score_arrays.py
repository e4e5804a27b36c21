"""Where a batch's scoring from state spends its host time, and what stage predicates written
over arrays of worlds would save: a measured prototype, not the scoring ``run_batch`` runs.

``run_batch`` (``backends/mujoco/batch.py``) scores each world's step with its own
:class:`~realm_ros.core.tasks.ProgressTracker` on the privileged state's dictionaries
(``TaskScene.privileged``), and its referee. This bench

1. runs ``--worlds`` worlds of every registered task (``--tasks``; the scripted expert with its
   batched IK, Default, seeds 0..W-1, ``--steps`` control steps, headless, CPU stepper,
   ``batched=True``) and keeps every privileged state the tracker scored (the reset's and
   each live step's; worlds that end early stop there), with the time the batch spent
   building them (``TaskScene.privileged``, process CPU time);
2. replays those states through the tracker and through each stage's predicate alone
   (``skills.StageCheck``), process CPU time per world-step, best of ``--repeat``: which
   predicates cost what, and what the rest of ``update`` (the ``Progress`` record, the
   stage loop) costs;
3. runs a prototype of the same predicates over (W, ...) arrays of the states (the fields the
   predicates read, gathered from the dictionaries; the gathering timed apart) with the
   tracker's bookkeeping vectorised (``met |= cumprod(met | holds)``: a stage counts once all
   earlier ones are met, and stays met), checks that it gives the tracker's stages met after
   every step of every world, and times it per world-step.

The prototype's predicates restate :mod:`realm_ros.core.skills`' (this is a measurement; a
build would write them once, over arrays, with ``run_episode`` calling them with W = 1).
Prints and appends to bench/results/bench.jsonl (or ``$REALM_BENCH_RESULTS``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from benchlib import Recorder  # noqa: E402


def _collect(task: str, n: int, steps: int) -> tuple[list[list[dict]], float, int]:
    """Return each world's scored privileged states (reset first), the CPU seconds the batch
    spent in ``TaskScene.privileged``, and its calls."""
    from realm_ros.backends.mujoco import scenes
    from realm_ros.backends.mujoco.batch import CpuStepper, run_batch
    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.types import EpisodeSpec
    from realm_ros.policies.scripted import ScriptedPolicy, infer_batch

    spent = [0.0, 0]
    original = scenes.TaskScene.privileged

    def timed(self: Any, model: Any, data: Any) -> dict[str, Any]:
        t = time.process_time()
        out = original(self, model, data)
        spent[0] += time.process_time() - t
        spent[1] += 1
        return out

    worlds = [MujocoWorld(WorldConfig(task=task, cameras=(), camera_rate_hz=0.0))
              for _ in range(n)]
    specs = [EpisodeSpec(task=task, seed=k, max_steps=steps) for k in range(n)]
    states: list[list[dict]] = [[] for _ in range(n)]
    scenes.TaskScene.privileged = timed  # type: ignore[method-assign]
    try:
        for i, (w, s) in enumerate(zip(worlds, specs)):
            states[i].append(w.reset(s).privileged)
        spent[0], spent[1] = 0.0, 0
        run_batch(worlds, [ScriptedPolicy() for _ in specs], specs, CpuStepper,
                  on_step=lambda i, k, o: states[i].append(o.privileged),
                  infer_batch=infer_batch)
    finally:
        scenes.TaskScene.privileged = original  # type: ignore[method-assign]
        for w in worlds:
            w.close()
    return states, spent[0], int(spent[1])


def _gather(task: Any, flat: list[dict]) -> dict[str, np.ndarray]:
    """The fields the stage predicates read, as arrays over the states (missing: absent)."""
    obj, target = task.obj, task.target
    out: dict[str, np.ndarray] = {}
    s0 = flat[0]
    if obj in s0.get('objects', {}):
        out['pos'] = np.array([s['objects'][obj]['pos'] for s in flat], dtype=float)
        out['init'] = np.array([s['initial'][obj]['pos'] for s in flat], dtype=float)
        out['quat'] = np.array([s['objects'][obj]['quat'] for s in flat], dtype=float)
        out['init_quat'] = np.array([s['initial'][obj]['quat'] for s in flat], dtype=float)
    if target in s0.get('objects', {}):
        out['target_pos'] = np.array([s['objects'][target]['pos'] for s in flat], dtype=float)
    if obj in s0.get('reach_point', {}):
        out['centre'] = np.array([s['reach_point'][obj] for s in flat], dtype=float)
    else:
        out['centre'] = out['pos']
    out['fingers'] = np.array([list(s['fingers'].values()) for s in flat], dtype=float)
    contact = [s.get('contacts', {}).get(obj, {}) for s in flat]
    for side in ('left', 'right', 'robot'):
        out[side] = np.array([bool(c.get(side, False)) for c in contact])
    out['finger_q'] = np.array([s['finger_q'] for s in flat], dtype=float)
    out['finger_open'] = np.array([s['finger_open'] for s in flat], dtype=float)
    for rel in ('on_top', 'inside'):
        out[rel] = np.array([target in s.get(rel, {}).get(obj, ()) for s in flat])
    out['toggled'] = np.array([bool(s.get('toggled', {}).get(obj, False)) for s in flat])
    if target in s0.get('joints', {}):
        for key, name in (('joints', 'open'), ('initial_joints', 'open0')):
            j = np.array([[s[key][target][k] for k in ('q', 'lower', 'upper')] for s in flat],
                         dtype=float)
            span = j[:, 2] - j[:, 1]
            out[name] = np.where(span > 0, (j[:, 0] - j[:, 1]) / np.where(span > 0, span, 1),
                                 0.0)
    return out


def _array_predicates(skill: str, rule: str = 'realm_code'
                      ) -> dict[str, Callable[[dict[str, np.ndarray]], np.ndarray]]:
    """The prototype: each stage's predicate over arrays of states (restating skills.py)."""
    from realm_ros.core import skills as k

    def norm(v: np.ndarray) -> np.ndarray:
        return np.sqrt(np.einsum('...i,...i->...', v, v))

    def grasp(a: dict) -> np.ndarray:
        not_open = (a['finger_q'] < (a['finger_open'] - k.GRASP_OPEN_MARGIN)[:, None]).any(1)
        return a['left'] & a['right'] & a['robot'] & not_open

    def lifted(up: float, moved: float) -> Callable[[dict], np.ndarray]:
        return lambda a: ((a['pos'][:, 2] - a['init'][:, 2] > up)
                          & (norm(a['pos'] - a['init']) > moved))

    def rotated(a: dict) -> np.ndarray:
        q0 = a['init_quat'] / norm(a['init_quat'])[:, None]
        q1 = a['quat'] / norm(a['quat'])[:, None]
        w0, x0, y0, z0 = q0.T * np.array([[1.0], [-1.0], [-1.0], [-1.0]])
        w1, x1, y1, z1 = q1.T
        d = np.stack([w1 * w0 - x1 * x0 - y1 * y0 - z1 * z0,
                      w1 * x0 + x1 * w0 + y1 * z0 - z1 * y0,
                      w1 * y0 - x1 * z0 + y1 * w0 + z1 * x0,
                      w1 * z0 + x1 * y0 - y1 * x0 + z1 * w0], axis=1)
        d = np.where((d[:, 0] < 0)[:, None], -d, d)
        sin_half = norm(d[:, 1:])
        small = sin_half < 1e-12
        angle = 2.0 * np.arctan2(sin_half, d[:, 0])
        z = np.where(small, 0.0, d[:, 3] / np.where(small, 1.0, sin_half) * angle)
        return np.abs(z) > k.ROTATED_ANGLE

    def touch_and_move(a: dict) -> np.ndarray:
        opened = a['open'] - a['open0']
        if skill == 'close_drawer':
            return a['robot'] & (-opened > k.JOINT_MOVED)
        if rule == 'strict':
            return a['robot'] & (opened > k.JOINT_MOVED)
        return a['robot'] & (-opened < k.JOINT_MOVED)

    return {
        'REACH': lambda a: ((norm(a['fingers'] - a['centre'][:, None, :]).min(1)
                             < k.REACH_DISTANCE) | a['robot']),
        'GRASP': grasp,
        'TOUCH': lambda a: a['robot'],
        'LIFT_SLIGHT': lifted(k.LIFT_SLIGHT_UP, k.LIFT_SLIGHT_MOVED),
        'LIFT_LARGE': lifted(k.LIFT_LARGE_UP, k.LIFT_LARGE_MOVED),
        'ROTATED': rotated,
        'MOVE_CLOSE': lambda a: norm(a['pos'] - a['target_pos']) < k.MOVE_CLOSE_DISTANCE,
        'PLACE_INTO': lambda a: (a['on_top'] | a['inside']) & ~grasp(a),
        'PLACE_ONTO': lambda a: a['on_top'] & ~grasp(a),
        'TOGGLED_ON': lambda a: a['toggled'],
        'TOUCH_AND_MOVE_JOINT': touch_and_move,
        'OPEN_JOINT_SMALL': lambda a: a['open'] > k.OPEN_THRESHOLDS[0],
        'OPEN_JOINT_LARGE': lambda a: a['open'] > k.OPEN_THRESHOLDS[1],
        'OPEN_JOINT_FULL': lambda a: a['open'] > k.OPEN_THRESHOLDS[2],
        'CLOSE_JOINT_SMALL': lambda a: a['open'] < k.CLOSE_THRESHOLDS[0],
        'CLOSE_JOINT_LARGE': lambda a: a['open'] < k.CLOSE_THRESHOLDS[1],
        'CLOSE_JOINT_FULL': lambda a: a['open'] < k.CLOSE_THRESHOLDS[2],
    }


def _show(row: dict[str, Any]) -> None:
    keys = ('states', 'privileged_us', 'gather_us', 'arrays_us', 'ended_early',
            'stages_met_mismatch', 'stage_us')
    print('   ', {k: (round(row[k], 2) if isinstance(row[k], float) else row[k])
                  for k in keys if k in row}, flush=True)


def _best(fn: Callable[[], Any], repeat: int) -> float:
    best = float('inf')
    for _ in range(repeat):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def _task(name: str, args: argparse.Namespace, rec: Recorder,
          per_stage: dict[str, list[float]]) -> dict[str, float]:
    """Measure one task (see the module's docstring); return its totals (CPU seconds)."""
    from realm_ros.core import skills, tasks

    task = tasks.get_task(name)
    states, built, calls = _collect(name, args.worlds, args.steps)
    flat = [s for world in states for s in world]
    n_states = len(flat)

    def replay(states: list[list[dict]] = states, task: Any = task) -> list[list[tuple]]:
        out = []
        for world in states:
            tracker = tasks.ProgressTracker(task)
            out.append([tracker.update(s, k).met for k, s in enumerate(world)])
        return out

    update = _best(replay, args.repeat)
    for stage in task.stages:
        t = _best(lambda stage=stage: [skills.StageCheck(task, s).predicate(stage)
                                       for s in flat], args.repeat)
        per_stage.setdefault(stage, []).append(t / n_states * 1e6)

    # The prototype: every step's states of all live worlds as one array call.
    depth = max(len(w) for w in states)
    rows = [[w[k] for w in states if k < len(w)] for k in range(depth)]
    gathered = [_gather(task, r) for r in rows]
    gather = _best(lambda: [_gather(task, r) for r in rows], args.repeat)
    preds = _array_predicates(task.skill)
    stages = task.stages

    def arrays(gathered: list = gathered) -> list[np.ndarray]:
        met = np.zeros((args.worlds, len(stages)), dtype=bool)
        out = []
        for k, a in enumerate(gathered):
            live = np.array([i for i, w in enumerate(states) if k < len(w)])
            holds = np.stack([preds[s](a) for s in stages], axis=1)
            m = met[live]
            met[live] = m | np.cumprod(m | holds, axis=1).astype(bool)
            out.append(met[live].copy())
        return out

    t_arrays = _best(arrays, args.repeat)
    want, got = replay(), arrays()
    mismatch = 0
    for k, have in enumerate(got):
        live = [i for i, w in enumerate(states) if k < len(w)]
        for row, i in zip(have, live):
            mismatch += tuple(bool(x) for x in row) != want[i][k]
    _show(rec.figure(f'score_arrays {name}: tracker update per world-step',
                     update / n_states * 1e6, 'us', worlds=args.worlds, steps=args.steps,
                     states=n_states, privileged_us=built / max(calls, 1) * 1e6,
                     gather_us=gather / n_states * 1e6, arrays_us=t_arrays / n_states * 1e6,
                     ended_early=sum(len(w) < args.steps + 1 for w in states),
                     stages_met_mismatch=mismatch,
                     stage_us={s: round(per_stage[s][-1], 2) for s in task.stages}))
    return {'states': n_states, 'privileged': built / max(calls, 1) * n_states,
            'update': update, 'gather': gather, 'arrays': t_arrays, 'mismatch': mismatch}


def main() -> int:
    from realm_ros.core import tasks

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--worlds', type=int, default=32)
    parser.add_argument('--steps', type=int, default=80)
    parser.add_argument('--tasks', nargs='+', default=list(tasks.TASKS))
    parser.add_argument('--repeat', type=int, default=5)
    args = parser.parse_args()

    rec = Recorder('score_arrays')
    total: dict[str, float] = {'states': 0, 'privileged': 0.0, 'update': 0.0, 'gather': 0.0,
                               'arrays': 0.0, 'mismatch': 0}
    per_stage: dict[str, list[float]] = {}
    for name in args.tasks:
        for key, value in _task(name, args, rec, per_stage).items():
            total[key] += value
    n = total['states']
    _show(rec.figure('score_arrays all tasks: tracker update per world-step',
                     total['update'] / n * 1e6, 'us', states=int(n),
                     privileged_us=total['privileged'] / n * 1e6,
                     gather_us=total['gather'] / n * 1e6, arrays_us=total['arrays'] / n * 1e6,
                     stages_met_mismatch=int(total['mismatch']),
                     stage_us={s: round(float(np.mean(v)), 2) for s, v in per_stage.items()}))
    return 0


if __name__ == '__main__':
    sys.exit(main())
