"""The host's share of a batched sweep step, per phase, with the host's per-world work world
by world (``run_batch(batched=False)``, the reference) and as array code (``batched=True``).

``run_batch`` (``backends/mujoco/batch.py``) is the loop the GPU sweeps (MJX, MuJoCo Warp) run
on the host: per control step the policies' chunks, the chains, the worlds' targets and
control rows, the stepper (the GPU's part there; ``mj_step`` per world here, timed apart),
each world's observation and its scoring. ``batched=True`` runs the chains as one
``BatchedChain``, makes every world's target in one ``control.world_targets`` call
(``world.apply_all``) and reads each observation's derived quantities (poses, contacts,
actuator forces) from the stepper (``Stepper.derived``, ``derived.py``) instead of a host
``mj_forward`` per world; ``batched=False`` does each of these world by world. This bench runs
``--steps`` control steps of W worlds (``--worlds``, the scripted expert with its batched IK,
``--task`` under Default, seeds 0..W-1, headless) with the CPU stepper, ``--repeat`` times per W
alternating the two, and prints per phase the host's CPU milliseconds per control step of the
whole batch (``batch.TIMER = time.process_time``: other jobs on a shared machine do not
inflate it; each phase's best over the repeats), the host total without the stepper (and the
stepper's own time, with what it spent copying the derived quantities out), and whether the
runs' records are the same (wall time aside; they must be, bit for bit).

First, the chains alone: ``--chain-steps`` control steps of W worlds' chains on synthetic
8-row chunks (position mode, measured joints that move), world by world (``standard_chain``)
and as one ``BatchedChain``, the process's CPU time per control step, best of 5
(``--chain-worlds 0``: skipped).

``--gil``: whether MuJoCo's bindings release the GIL in ``mj_step`` / ``mj_forward``: one
thread makes long calls (one step of 1,500 free spheres in a pile, ~0.1 s) while a Python
thread counts; the counting thread's longest pause is the whole call if the GIL is held, a
switch interval (5 ms) or so if it is released.
Prints and appends to bench/results/bench.jsonl (or ``$REALM_BENCH_RESULTS``).
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from benchlib import Recorder  # noqa: E402

PHASES = ('policy', 'chain', 'controls', 'load', 'score')


def _chains(n: int, steps: int) -> tuple[float, float]:
    """CPU ms per control step of ``n`` worlds' chains: (world by world, batched), best of 5."""
    import numpy as np

    from realm_ros.core import robot
    from realm_ros.core.batched import BatchedChain, actions
    from realm_ros.core.policy import Policy, standard_chain
    from realm_ros.core.types import ActionChunk, EpisodeSpec, JointState, Observation

    rng = np.random.default_rng(0)
    q = np.broadcast_to(robot.RESET_Q, (n, 7)) + rng.normal(0.0, 0.1, (n, 7))
    moves = rng.normal(0.0, 0.01, (steps, n, 7))
    chunk = [ActionChunk(np.c_[q[i] + rng.normal(0.0, 0.05, (8, 7)), np.ones(8)])
             for i in range(n)]

    class Fixed(Policy):
        def __init__(self, i: int) -> None:
            self.i = i

        def infer(self, obs: Observation) -> ActionChunk:
            return chunk[self.i]

    spec = EpisodeSpec(task='stack_cubes')
    zeros = np.zeros(7)

    def world_by_world() -> float:
        chains = [standard_chain(Fixed(i)) for i in range(n)]
        for c in chains:
            c.reset(spec)
        t = time.process_time()
        for k in range(steps):
            qk = q + moves[k]
            for i, c in enumerate(chains):
                c.infer(Observation(joints=JointState(qk[i], zeros, zeros, 0.0)))[0]
        return time.process_time() - t

    def together() -> float:
        chain = BatchedChain(n)
        t = time.process_time()
        for k in range(steps):
            qk = q + moves[k]
            obs = [Observation(joints=JointState(qk[i], zeros, zeros, 0.0)) for i in range(n)]
            asks = chain.queries()
            ask = [i for i in range(n) if asks[i]]
            chain.set_chunks(ask, [chunk[i] for i in ask])
            live = list(range(n))
            actions(*chain.step(live, np.array([obs[i].joints.position for i in live])))
        return time.process_time() - t

    before = min(world_by_world() for _ in range(5)) / steps * 1e3
    after = min(together() for _ in range(5)) / steps * 1e3
    return before, after


def _gil() -> dict[str, tuple[float, float]]:
    """Per function: (one call, ms; the counting thread's longest pause while 5 ran, ms)."""
    import threading

    import mujoco

    spheres = ''.join(
        f'<body pos="{(i % 10) * 0.05} {(i // 10 % 10) * 0.05} {0.05 + (i // 100) * 0.05}">'
        '<freejoint/><geom size="0.03"/></body>' for i in range(1500))
    m = mujoco.MjModel.from_xml_string(
        f'<mujoco><worldbody><geom type="plane" size="5 5 .1"/>{spheres}</worldbody></mujoco>')
    d = mujoco.MjData(m)
    out = {}
    for fn in (mujoco.mj_step, mujoco.mj_forward):
        fn(m, d)
        t = time.perf_counter()
        fn(m, d)
        call = time.perf_counter() - t
        stop = threading.Event()
        gaps: list[float] = []

        def count(stop: threading.Event = stop, gaps: list[float] = gaps) -> None:
            last = time.perf_counter()
            while not stop.is_set():
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        thread = threading.Thread(target=count)
        thread.start()
        time.sleep(0.05)
        for _ in range(5):
            fn(m, d)
        stop.set()
        thread.join()
        out[fn.__name__] = (call * 1e3, max(gaps) * 1e3)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--worlds', type=int, nargs='+', default=[64, 256])
    parser.add_argument('--steps', type=int, default=40)
    parser.add_argument('--task', default='stack_cubes')
    parser.add_argument('--repeat', type=int, default=2)
    parser.add_argument('--chain-worlds', type=int, nargs='+', default=[64, 256, 1024])
    parser.add_argument('--chain-steps', type=int, default=64)
    parser.add_argument('--gil', action='store_true', help='check the GIL (see above)')
    args = parser.parse_args()

    from realm_ros.backends.mujoco import batch
    from realm_ros.backends.mujoco.batch import CpuStepper, run_batch
    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.sweep import comparable
    from realm_ros.core.types import EpisodeSpec
    from realm_ros.policies.scripted import ScriptedPolicy, infer_batch

    rec = Recorder('batch_host')
    batch.TIMER = time.process_time
    if args.gil:
        for name, (call, pause) in _gil().items():
            rec.figure(f'batch_host GIL: longest pause of a Python thread while {name} runs',
                       pause, 'ms', call_ms=call, released=pause < call / 2)
    for n in [w for w in args.chain_worlds if w > 0]:
        before, after = _chains(n, args.chain_steps)
        rec.figure(f'batch_host chain of {n} worlds, one BatchedChain: CPU ms per control step',
                   after, 'ms', baseline=before, baseline_label='standard_chain world by world',
                   per_world_us_before=before / n * 1e3, per_world_us_after=after / n * 1e3,
                   steps=args.chain_steps)
    template = MujocoWorld(WorldConfig(task=args.task, cameras=(), camera_rate_hz=0.0))
    for n in args.worlds:
        t = time.perf_counter()
        worlds = [copy.deepcopy(template) for _ in range(n)]
        build_s = time.perf_counter() - t
        specs = [EpisodeSpec(task=args.task, seed=k, max_steps=args.steps) for k in range(n)]
        best: dict[bool, dict[str, float]] = {False: {}, True: {}}
        records: list[list[dict]] = []
        for _ in range(args.repeat):
            for batched in (False, True):
                timing: dict[str, float] = {}
                steppers: list[CpuStepper] = []

                def factory(ws: list, steppers: list = steppers) -> CpuStepper:
                    steppers.append(CpuStepper(ws))
                    return steppers[-1]

                results = run_batch(worlds, [ScriptedPolicy() for _ in specs], specs,
                                    factory, infer_batch=infer_batch, batched=batched,
                                    timing=timing)
                records.append([comparable(r.to_record()) for r in results])
                timing['derived'] = steppers[0].timing['derived']
                for p in (*PHASES, 'stepper', 'derived'):
                    ms = timing.get(p, 0.0) / timing['steps'] * 1e3
                    best[batched][p] = min(best[batched].get(p, ms), ms)
        same = all(r == records[0] for r in records)
        host = {b: sum(best[b][p] for p in PHASES) for b in (False, True)}
        for batched in (False, True):
            label = 'array code' if batched else 'world by world'
            rec.figure(f'batch_host {n} worlds, {label}: host CPU ms per control step',
                       host[batched], 'ms', baseline=host[False] if batched else None,
                       baseline_label='world by world',
                       per_world_us=host[batched] / n * 1e3,
                       phases_ms={p: round(best[batched][p], 3) for p in PHASES},
                       stepper_ms=best[batched]['stepper'],
                       stepper_derived_ms=best[batched]['derived'], steps=args.steps,
                       worlds=n, repeat=args.repeat, records_same=same, build_s=build_s)
        for w in worlds:
            w.close()
    template.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
