"""Benchmark the MuJoCo twin: physics and control steps per second, with and without cameras.

Run: ``make bench`` (or ``.venv/bin/python bench/bench_twin.py``). Prints a table; the README
quotes it with the machine it was measured on.

The ``node step`` case is what ``world_node`` and ``digital_real`` do per lockstep step with
three cameras: ``step()`` and then ``observe()`` / ``render()`` for the publishers. A twin that
renders every frame once costs one render per step there; one that renders in both calls, two.
Run it against an older tree (``PYTHONPATH=old/tree``) for a before/after comparison.
"""

from __future__ import annotations

import os

# Single-threaded BLAS: the matrices are tiny (IK, 6x6 solves), and on a shared CPU BLAS
# threads spin and multiply the cost (measured: 71 ms per 6x6 solve at load 20).
os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')

import argparse
import pathlib
import sys
import tempfile
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from benchlib import Recorder  # noqa: E402

from realm_ros.backends.mujoco.world import MujocoWorld
from realm_ros.core import robot
from realm_ros.core.config import WorldConfig
from realm_ros.core.types import Action, EpisodeSpec


def _observe(world: MujocoWorld, render: bool) -> None:
    """Observe as world_node does when it publishes: read every image (rendered on read)."""
    obs = world.observe(render=render)
    for name in obs.images:
        obs.images[name].shape  # noqa: B018 - the read renders


def _trajectory(k: int) -> Action:
    """A smooth joint-space motion that keeps the arm busy (and the solver working)."""
    phase = k / 15.0
    offset = 0.3 * np.sin(phase * np.array([0.7, 0.9, 1.1, 0.5, 1.3, 0.8, 1.7]))
    offset[3] *= 0.5
    return Action(np.clip(robot.RESET_Q + offset, robot.JOINT_LOWER, robot.JOINT_UPPER),
                  float(np.sin(phase) > 0))


def bench(config: WorldConfig, steps: int, task: str = '') -> dict[str, Any]:
    """Run ``steps`` control steps and return rates."""
    world = MujocoWorld(config)
    world.reset(EpisodeSpec(task=task or 'empty'))
    render = config.camera_rate_hz > 0
    _observe(world, render)  # warm up the renderer
    start = time.perf_counter()
    sim_start = world.time
    for k in range(steps):
        world.apply(_trajectory(k))
        world.step_physics(config.substeps)
        _observe(world, render)
    wall = time.perf_counter() - start
    sim = world.time - sim_start
    renderer = world._renderer
    passes = ('none' if renderer is None else
              f'shadows {"on" if renderer.shadows else "off"}, reflections '
              f'{"on" if renderer.reflections else "off"}, GL {renderer.gl_renderer or "?"}')
    world.close()
    return {
        'passes': passes,
        'control_steps_per_s': steps / wall,
        'physics_steps_per_s': steps * config.substeps / wall,
        'sim_to_wall': sim / wall,
    }


def bench_node_step(steps: int, task: str = 'pick_spoon', **config: object) -> float:
    """Return ms per lockstep world_node step with three 320x180 cameras (step + observe)."""
    world = MujocoWorld(WorldConfig(task=task, **config))
    world.reset(EpisodeSpec(task=task))
    _observe(world, True)  # warm up the renderer
    start = time.perf_counter()
    for k in range(steps):
        world.apply(_trajectory(k))
        world.step()
        _observe(world, True)
    wall = time.perf_counter() - start
    world.close()
    return wall / steps * 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--steps', type=int, default=450, help='control steps per case')
    parser.add_argument('--physics-hz', type=float, default=robot.PHYSICS_HZ)
    parser.add_argument('--rig', default='',
                        help='camera rig YAML (its render section: shadows, antialias)')
    parser.add_argument('--no-cameras', action='store_true', help='headless only')
    args = parser.parse_args()
    rec = Recorder('twin')
    print(f'[twin] MUJOCO_GL={os.environ.get("MUJOCO_GL", "egl")}')
    # The cameras side by side: the rig's default render passes (shadows and reflections
    # 'auto': off on a software renderer) and both forced on (the default before).
    full = pathlib.Path(tempfile.mkdtemp(prefix='bench_twin_')) / 'full.yaml'
    full.write_text('cameras: {}\nrender: {shadows: true, reflections: true}\n')
    rig = {'camera_rig_file': args.rig} if args.rig else {}
    camera_steps = max(30, args.steps // 10)
    cases = [
        ('headless', WorldConfig(physics_hz=args.physics_hz, camera_rate_hz=0), args.steps),
        ('3 cameras 320x180', WorldConfig(physics_hz=args.physics_hz, **rig), camera_steps),
        ('3 cameras 320x180, shadows + reflections on',
         WorldConfig(physics_hz=args.physics_hz, camera_rig_file=str(full)), camera_steps),
    ]
    print(f'{"case":<44} {"physics steps/s":>16} {"control steps/s":>16} {"sim/wall":>9}')
    rates = {}
    for label, config, steps in cases[:1] if args.no_cameras else cases:
        r = rates[label] = bench(config, steps)
        print(f'{label:<44} {r["physics_steps_per_s"]:>16,.0f} '
              f'{r["control_steps_per_s"]:>16,.1f} {r["sim_to_wall"]:>9.2f}', flush=True)
    for label, r in rates.items():
        if label == 'headless':
            rec.figure(f'twin stepping, {label}, simulated / wall time', r['sim_to_wall'], 'x',
                       1.0, 'real time', '>= 50x real time (2 cores)',
                       physics_steps_per_s=r['physics_steps_per_s'],
                       control_steps_per_s=r['control_steps_per_s'], steps=args.steps)
        elif label == '3 cameras 320x180':
            base = rates['3 cameras 320x180, shadows + reflections on']
            rec.figure(f'twin stepping, {label} (rig default render passes: {r["passes"]}), '
                       f'simulated / wall time', r['sim_to_wall'], 'x', base['sim_to_wall'],
                       'the same with shadows and reflections on', '>= 2x real time',
                       physics_steps_per_s=r['physics_steps_per_s'],
                       control_steps_per_s=r['control_steps_per_s'], steps=camera_steps)
    if not args.no_cameras:
        ms = bench_node_step(max(15, args.steps // 30),
                             **({'camera_rig_file': args.rig} if args.rig else {}))
        print(f'{"node step 3 cameras":<20} {"":>16} {1000.0 / ms:>16,.1f} {"":>9}  '
              f'({ms:.0f} ms per world_node lockstep step, pick_spoon)')
    print(f'(physics {args.physics_hz:g} Hz, control 15 Hz = '
          f'{int(args.physics_hz / 15)} physics steps per control step)')


if __name__ == '__main__':
    main()
