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


def _collect(task: str, n: int, steps: int
             ) -> tuple[list[list[dict]], float, int, list[list[dict]], float,
                        list[list[dict]], tuple | None]:
    """Return each world's scored privileged states (reset first), the CPU seconds the batch
    spent in ``TaskScene.privileged``, its calls, and the same states' fields made by
    :func:`_from_view` with the CPU seconds that took, what :func:`_from_batch` reads of
    each, and the batch's one layout (None when the worlds' models differ in ids)."""
    from realm_ros.backends.mujoco import scenes
    from realm_ros.backends.mujoco.batch import CpuStepper, run_batch
    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.core import tasks
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
    fields: list[list[dict]] = [[] for _ in range(n)]
    cache: dict[int, Any] = {}
    made = [0.0]
    definition = tasks.get_task(task)

    kept: list[list[dict]] = [[] for _ in range(n)]

    def on_step(i: int, k: int, obs: Any) -> None:
        states[i].append(obs.privileged)
        t = time.process_time()
        fields[i].append(_from_view(worlds[i], definition, cache))
        made[0] += time.process_time() - t
        kept[i].append(_kept(worlds[i]))

    scenes.TaskScene.privileged = timed  # type: ignore[method-assign]
    try:
        for i, (w, s) in enumerate(zip(worlds, specs)):
            states[i].append(w.reset(s).privileged)
            fields[i].append(_from_view(w, definition, cache))
            kept[i].append(_kept(w))
        spent[0], spent[1] = 0.0, 0
        run_batch(worlds, [ScriptedPolicy() for _ in specs], specs, CpuStepper,
                  on_step=on_step, infer_batch=infer_batch)
    finally:
        scenes.TaskScene.privileged = original  # type: ignore[method-assign]
        for w in worlds:
            w.close()
    # One layout for _from_batch when every world's model has the same ids (else None).
    layouts = [cache[id(w.model)] for w in worlds]
    same = all(len(x[2]) == len(layouts[0][2]) and (x[2] == layouts[0][2]).all()
               and x[0]['objects'] == layouts[0][0]['objects']
               and x[0]['pads'] == layouts[0][0]['pads']
               and x[0]['fingers'] == layouts[0][0]['fingers'] for x in layouts)
    ids = layouts[0][0]['objects']
    layout = ((*layouts[0], ids.get(definition.obj), ids.get(definition.target), definition)
              if same else None)
    return states, spent[0], int(spent[1]), fields, made[0], kept, layout


def _from_view(world: Any, task: Any, cache: dict[int, Any]) -> dict[str, Any]:
    """The prototype's other source: one world's fields that the predicates read (as
    :func:`_gather` makes them) straight from what ``TaskScene.privileged`` reads (the
    stepper's derived quantities and qpos, ``world._observed()``), with no dictionaries: body
    and geom ids and per-body masks looked up once per model, the contacts' owners by array
    indexing."""
    model, scene, view = world.model, world._scene, world._observed()
    key = id(model)
    if key not in cache:
        ids = scene._index(model)
        owner = ids['owner']
        names = list(ids['objects'])
        code = np.array([names.index(owner[b]) if owner[b] else -1
                         for b in range(model.nbody)])
        mask = {side: np.isin(np.arange(model.nbody), sorted(ids[side]))
                for side in ('robot', 'left', 'right')}
        reach = ids['handles'].get(task.obj)
        button = [t[2] for t in ids['toggles'] if t[0] == task.obj]
        toggle = [(model.jnt_qposadr[ids['joints'][t[1]]], t[3]) for t in ids['toggles']
                  if t[0] == task.obj]
        joint = [(model.jnt_qposadr[jid], model.jnt_range[jid])
                 for n, jid in ids['joints'].items() if n.replace('_slide', '') == task.target]
        container = [o for o in scene.free if o.name == task.target and o.interior]
        cache[key] = (ids, names, code, mask, reach, button, toggle, joint, container,
                      model.geom_bodyid)
    ids, names, code, mask, reach, button, toggle, joint, container, bodyid = cache[key]
    out: dict[str, Any] = {}
    obj = ids['objects'].get(task.obj)
    tgt = ids['objects'].get(task.target)
    if obj is not None and task.obj in scene._initial:
        out['pos'], out['quat'] = view.xpos[obj], view.xquat[obj]
        out['init'] = scene._initial[task.obj]['pos']
        out['init_quat'] = scene._initial[task.obj]['quat']
    if tgt is not None and task.target in scene._initial:
        out['target_pos'] = view.xpos[tgt]
    if reach is not None:
        out['centre'] = view.site_xpos[reach]
    elif button:
        out['centre'] = view.xpos[button[0]]
    else:
        out['centre'] = out['pos']
    out['fingers'] = view.geom_xpos[list(ids['pads'])]
    pairs = bodyid[view.contact.geom]
    me = names.index(task.obj)
    flags = {'robot': False, 'left': False, 'right': False}
    touches_target = False
    if len(pairs):
        for a, b in ((pairs[:, 0], pairs[:, 1]), (pairs[:, 1], pairs[:, 0])):
            mine = code[a] == me
            for side in flags:
                flags[side] = flags[side] or bool((mine & mask[side][b]).any())
            if task.target in names:
                touches_target = touches_target or bool(
                    (mine & ~mask['robot'][b] & (code[b] == names.index(task.target))).any())
    out.update(flags)
    out['finger_q'] = view.qpos[list(ids['fingers'])]
    out['finger_open'] = scene_finger_open()
    out['on_top'] = bool(touches_target and 'pos' in out and 'target_pos' in out
                         and out['pos'][2] > out['target_pos'][2] + 1e-3)
    inside = False
    if container and 'pos' in out:
        hx, hy, height = container[0].interior
        local = view.xmat[tgt].reshape(3, 3).T @ (np.asarray(out['pos']) - view.xpos[tgt])
        inside = bool(abs(local[0]) < hx and abs(local[1]) < hy and 0.0 < local[2] < height)
    out['inside'] = inside
    out['toggled'] = bool(toggle and view.qpos[toggle[0][0]] < -toggle[0][1])
    if joint:
        adr, (lower, upper) = joint[0]
        j0 = scene._initial_joints[task.target]
        span, span0 = upper - lower, j0['upper'] - j0['lower']
        out['open'] = (view.qpos[adr] - lower) / span if span > 0 else 0.0
        out['open0'] = (j0['q'] - j0['lower']) / span0 if span0 > 0 else 0.0
    return out


def scene_finger_open() -> float:
    """The fully open finger value the privileged state reports (``finger_open``)."""
    from realm_ros.backends.mujoco import model

    return float(model.FINGER_TRAVEL)


#: What :func:`_from_batch` reads of each world's step (``derived.FIELDS`` it needs, qpos).
KEPT = ('xpos', 'xquat', 'xmat', 'geom_xpos', 'site_xpos', 'qpos')


def _kept(world: Any) -> dict[str, np.ndarray]:
    view = world._observed()
    out = {name: np.array(getattr(view, name)) for name in KEPT}
    out['contact'] = np.array(view.contact.geom).reshape(-1, 2)
    return out


def _from_batch(kept: list[dict[str, np.ndarray]], initial: dict[str, np.ndarray],
                layout: tuple) -> tuple[dict[str, np.ndarray], float]:
    """The prototype's third source: the fields of every listed world at once, by indexing
    (W, ...) arrays of the derived quantities (a device batch's layout: every world the same
    model sizes and ids, ``layout`` from :func:`_from_view`'s cache) and the contacts of all
    worlds as one list with each pair's world; ``initial``: each listed world's reset poses
    and openness. Returns the fields and the CPU seconds spent stacking the per-world arrays
    into (W, ...) ones (a CPU batch's step; a device batch hands them over so)."""
    ids, names, code, mask, reach, button, toggle, joint, container, bodyid, obj, tgt, task = \
        layout
    t = time.process_time()
    arr = {name: np.stack([k[name] for k in kept]) for name in KEPT}
    ncon = [len(k['contact']) for k in kept]
    pairs = bodyid[np.concatenate([k['contact'] for k in kept])]
    widx = np.repeat(np.arange(len(kept)), ncon)
    stacking = time.process_time() - t
    n = len(kept)
    out: dict[str, np.ndarray] = dict(initial)
    if obj is not None:
        out['pos'], out['quat'] = arr['xpos'][:, obj], arr['xquat'][:, obj]
    if tgt is not None:
        out['target_pos'] = arr['xpos'][:, tgt]
    if reach is not None:
        out['centre'] = arr['site_xpos'][:, reach]
    elif button:
        out['centre'] = arr['xpos'][:, button[0]]
    else:
        out['centre'] = out['pos']
    out['fingers'] = arr['geom_xpos'][:, list(ids['pads'])]
    me = names.index(task.obj)
    other = names.index(task.target) if task.target in names else -2
    flags = {side: np.zeros(n, dtype=bool) for side in ('robot', 'left', 'right')}
    touches = np.zeros(n, dtype=bool)
    for a, b in ((pairs[:, 0], pairs[:, 1]), (pairs[:, 1], pairs[:, 0])):
        mine = code[a] == me
        for side in flags:
            flags[side][widx[mine & mask[side][b]]] = True
        touches[widx[mine & ~mask['robot'][b] & (code[b] == other)]] = True
    out.update(flags)
    out['finger_q'] = arr['qpos'][:, list(ids['fingers'])]
    out['finger_open'] = np.full(n, scene_finger_open())
    out['on_top'] = (touches & (out['pos'][:, 2] > out['target_pos'][:, 2] + 1e-3)
                     if tgt is not None and obj is not None else np.zeros(n, dtype=bool))
    out['inside'] = np.zeros(n, dtype=bool)
    if container and obj is not None:
        hx, hy, height = container[0].interior
        rot = arr['xmat'][:, tgt].reshape(n, 3, 3)
        local = np.einsum('wji,wj->wi', rot, out['pos'] - arr['xpos'][:, tgt])
        out['inside'] = ((np.abs(local[:, 0]) < hx) & (np.abs(local[:, 1]) < hy)
                         & (0.0 < local[:, 2]) & (local[:, 2] < height))
    out['toggled'] = (arr['qpos'][:, toggle[0][0]] < -toggle[0][1] if toggle
                      else np.zeros(n, dtype=bool))
    if joint:
        adr, (lower, upper) = joint[0]
        span = upper - lower
        out['open'] = (arr['qpos'][:, adr] - lower) / span if span > 0 else np.zeros(n)
    return out, stacking


def _stack(rows: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Rows of :func:`_from_view` as the arrays :func:`_gather` makes."""
    return {k: np.array([r[k] for r in rows]) for k in rows[0]}


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
    keys = ('states', 'privileged_us', 'gather_us', 'from_derived_us', 'stack_us',
            'from_batch_us', 'batch_stacking_us', 'arrays_us', 'ended_early',
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
    states, built, calls, fields, made, kept, layout = _collect(name, args.worlds, args.steps)
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
    # The same from the fields made without dictionaries (stacked per step, timed apart).
    steps_rows = [[w[k] for w in fields if k < len(w)] for k in range(depth)]
    stack = _best(lambda: [_stack(r) for r in steps_rows], args.repeat)
    # And from (W, ...) arrays of the live worlds' derived quantities, indexed all at once.
    sources = [arrays(), arrays([_stack(r) for r in steps_rows])]
    batch = stacking = -1.0
    if layout is not None:
        first = [w[0] for w in fields]
        init = {key: np.array([f[key] for f in first]) for key in
                ('init', 'init_quat', 'open0') if key in first[0]}
        lives = [np.array([i for i, w in enumerate(states) if k < len(w)])
                 for k in range(depth)]

        def batched(layout: tuple = layout) -> tuple[list[dict], float]:
            out, spent = [], 0.0
            for k, live in enumerate(lives):
                a, s = _from_batch([kept[i][k] for i in live],
                                   {key: v[live] for key, v in init.items()}, layout)
                out.append(a)
                spent += s
            return out, spent

        runs = []
        for _ in range(args.repeat):
            t = time.process_time()
            made_batch, spent = batched()
            runs.append((time.process_time() - t - spent, spent))
        batch, stacking = min(runs)
        sources.append(arrays(made_batch))
    want = replay()
    mismatch = 0
    for got in sources:
        for k, have in enumerate(got):
            live = [i for i, w in enumerate(states) if k < len(w)]
            for row, i in zip(have, live):
                mismatch += tuple(bool(x) for x in row) != want[i][k]
    _show(rec.figure(f'score_arrays {name}: tracker update per world-step',
                     update / n_states * 1e6, 'us', worlds=args.worlds, steps=args.steps,
                     states=n_states, privileged_us=built / max(calls, 1) * 1e6,
                     gather_us=gather / n_states * 1e6, arrays_us=t_arrays / n_states * 1e6,
                     from_derived_us=made / max(n_states - len(states), 1) * 1e6,
                     stack_us=stack / n_states * 1e6,
                     from_batch_us=batch / n_states * 1e6,
                     batch_stacking_us=stacking / n_states * 1e6,
                     ended_early=sum(len(w) < args.steps + 1 for w in states),
                     stages_met_mismatch=mismatch,
                     stage_us={s: round(per_stage[s][-1], 2) for s in task.stages}))
    return {'states': n_states, 'privileged': built / max(calls, 1) * n_states,
            'update': update, 'gather': gather, 'arrays': t_arrays, 'mismatch': mismatch,
            'from_derived': made / max(n_states - len(states), 1) * n_states,
            'stack': stack, 'from_batch': batch, 'batch_stacking': stacking}


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
                               'arrays': 0.0, 'mismatch': 0, 'from_derived': 0.0,
                               'stack': 0.0, 'from_batch': 0.0, 'batch_stacking': 0.0}
    per_stage: dict[str, list[float]] = {}
    for name in args.tasks:
        for key, value in _task(name, args, rec, per_stage).items():
            total[key] += value
    n = total['states']
    _show(rec.figure('score_arrays all tasks: tracker update per world-step',
                     total['update'] / n * 1e6, 'us', states=int(n),
                     privileged_us=total['privileged'] / n * 1e6,
                     gather_us=total['gather'] / n * 1e6, arrays_us=total['arrays'] / n * 1e6,
                     from_derived_us=total['from_derived'] / n * 1e6,
                     stack_us=total['stack'] / n * 1e6,
                     from_batch_us=total['from_batch'] / n * 1e6,
                     batch_stacking_us=total['batch_stacking'] / n * 1e6,
                     stages_met_mismatch=int(total['mismatch']),
                     stage_us={s: round(float(np.mean(v)), 2) for s, v in per_stage.items()}))
    return 0


if __name__ == '__main__':
    sys.exit(main())
