"""Soak the franka bridge against the digital real in accelerated (lockstep) time, with faults.

Run: ``python bench/soak_digital_real.py [--episodes 40] [--max-steps 150] [--fault-rate 0.3]
[--cameras] [--out DIR]``. ``test/nodes/test_franka_safety.py`` runs a short version.

What runs: a ``digital_real`` process (FR3, lockstep, franka_msgs served: the generated types of
``test/helpers/ros_interfaces.py``) behind :class:`DigitalRealBridgeWorld` with
``franka.digital_real_reflexes`` (its FrankaRobotState watched as a real arm's), every episode
:func:`realm_ros.core.episode.run_episode` with a fuzzing policy (small moves, targets exactly at
joint limits, some jumps), recorded in an :class:`EpisodeLog` as ``paired-eval`` records them.
Injected per episode with probability ``--fault-rate``, at a random step: a joint reflex
(``digital_real/trigger_reflex``), a lost state message (``drop_next_state``: a communication
error), a camera stall (``stall_cameras``, with ``--cameras``). On every step, with no fault:
dropped commands (no command for 1-10 steps: the watchdog holds) and bursts (3 commands before
one step: the last counts). After a fault the operator (this script) confirms the recovery;
infrastructure failures are re-run (as a ``paired-eval`` re-run does) until every episode has a
scored record.

Checked on every step: the measured joints inside the arm's limits, the measured TCP inside the
workspace box (+0.02 m), every applied target at least the position margin inside the limits.
Figures: hours simulated, episodes, faults, retries, records lost (planned minus scored), limit
and workspace violations, printed as JSON. Every step with the measured TCP outside the exact box
is counted (``steps_outside_box``, ``worst_workspace_excursion``) and the worst eight are kept
with the target's TCP, the episode, the step and the planned fault (``workspace_events``);
``progress.json`` in the output folder has the figures so far after every run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import pathlib
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Iterator

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
NS = '/soak'
FAULTS = ('reflex', 'comm', 'camera')
SERVICES = {'reflex': 'digital_real/trigger_reflex', 'comm': 'digital_real/drop_next_state',
            'camera': 'digital_real/stall_cameras'}


@contextlib.contextmanager
def digital_real(log_path: pathlib.Path, cameras: bool) -> Iterator[subprocess.Popen]:
    """Run the digital real (lockstep FR3) as a process; stop it at the end."""
    exe = pathlib.Path(sys.executable).parent / 'digital_real'
    args = [str(exe), '--ros-args', '-r', f'__ns:={NS}', '-p', 'arm_id:=fr3',
            '-p', 'lockstep:=true', '-p', 'gripper:=franka_hand']
    if cameras:
        args += ['-p', 'cameras:=[wrist]', '-p', 'camera_width:=64', '-p', 'camera_height:=48']
    with open(log_path, 'w') as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        try:
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


class Injector:
    """A node of its own that calls the digital real's fault-injection services."""

    def __init__(self) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from std_srvs.srv import Trigger

        self._rclpy = rclpy
        self._trigger = Trigger
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('soak_injector', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()
        self._clients = {kind: self.node.create_client(Trigger, f'{NS}/{name}')
                         for kind, name in SERVICES.items()}

    def inject(self, kind: str) -> None:
        client = self._clients[kind]
        if not client.wait_for_service(timeout_sec=10):
            raise RuntimeError(f'{NS}/{SERVICES[kind]} not available')
        done = threading.Event()
        future = client.call_async(self._trigger.Request())
        future.add_done_callback(lambda _: done.set())
        if not done.wait(10):
            raise RuntimeError(f'{SERVICES[kind]} did not answer')

    def close(self) -> None:
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        self._rclpy.try_shutdown(context=self.context)


class FuzzPolicy:
    """Small smooth moves around the start, targets exactly at a joint's limit, some jumps."""

    name = 'soak_fuzz'

    def __init__(self, seed: int) -> None:
        self._seed = seed
        self._rng = np.random.default_rng(seed)

    @property
    def needs(self) -> Any:
        from realm_ros.core.policy import PolicyNeeds
        return PolicyNeeds()

    def reset(self, spec: Any) -> None:
        self._rng = np.random.default_rng([self._seed, spec.seed])
        self._goal = None

    def observe(self, obs: Any) -> None:
        del obs

    def infer(self, obs: Any) -> Any:
        from realm_ros.core import robot
        from realm_ros.core.types import Action
        q = obs.joints.position
        case = self._rng.random()
        if self._goal is None or case < 0.05:
            self._goal = q + self._rng.normal(0, 0.15, 7)
        if case < 0.1:  # a valid target exactly at one joint's limit
            j = int(self._rng.integers(7))
            self._goal = q.copy()
            self._goal[j] = robot.JOINT_UPPER[j] if self._rng.random() < 0.5 \
                else robot.JOINT_LOWER[j]
        elif case < 0.13:  # a jump anywhere inside the limits
            self._goal = self._rng.uniform(robot.JOINT_LOWER, robot.JOINT_UPPER)
        step = np.clip(self._goal - q, -0.1, 0.1)
        target = np.clip(q + step, robot.JOINT_LOWER, robot.JOINT_UPPER)
        return [Action(arm=target, gripper=float(self._rng.random() < 0.3))]


class SoakWorld:
    """What world_node does around a world: refused commands hold, no command = no apply;
    plus the soak's dropped and bursty commands and the per-step checks."""

    def __init__(self, world: Any, rng: np.random.Generator, stats: dict[str, Any]) -> None:
        self.world = world
        self._rng = rng
        self._stats = stats
        self._silent = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.world, name)

    def reset(self, spec: Any) -> Any:
        self._silent = 0
        return self.world.reset(spec)

    def apply(self, action: Any) -> Any:
        from realm_ros.core.errors import CommandRejected
        from realm_ros.core.types import Action
        if self._silent:
            self._silent -= 1
            return action
        draw = self._rng.random()
        if draw < 0.03:  # dropped commands: nothing for 1-10 steps
            self._silent = int(self._rng.integers(1, 11))
            self._stats['dropped_commands'] += self._silent
            return action
        burst = [action]
        if draw < 0.06:  # a burst: two stale commands, then this one
            q = self.world.observe(render=False).joints.position
            burst = [Action(arm=q + self._rng.normal(0, 0.03, 7), gripper=action.gripper)
                     for _ in range(2)] + [action]
            self._stats['bursts'] += 1
        applied = action
        for a in burst:
            try:
                applied = self.world.apply(a)
                margin = self.world.safety_config.position_margin_rad
                arm = self.world.arm
                if np.any(applied.arm < arm.lower + margin - 1e-9) or np.any(
                        applied.arm > arm.upper - margin + 1e-9):
                    self._stats['target_violations'] += 1
            except CommandRejected:
                self._stats['refused_commands'] += 1
        return applied


def _check_step(world: Any, obs: Any, stats: dict[str, Any],
                context: dict[str, Any] | None = None) -> None:
    from realm_ros.core.safety import tcp_position
    q = obs.joints.position
    arm = world.arm
    if np.any(q < arm.lower) or np.any(q > arm.upper):
        stats['limit_violations'] += 1
        stats['worst_limit_excursion'] = max(stats['worst_limit_excursion'], float(np.max(
            np.maximum(arm.lower - q, q - arm.upper))))
    cfg = world.safety_config
    box_min, box_max = np.array(cfg.workspace_min), np.array(cfg.workspace_max)
    tcp = tcp_position(q, cfg.tcp_offset_m)
    excursion = float(np.max(np.maximum(box_min - tcp, tcp - box_max)))
    if excursion > 0.0:
        # Where and why: the measured TCP against the TCP of the target in force.
        target_tcp = tcp_position(world._target_q, cfg.tcp_offset_m)
        event = {'excursion_m': round(excursion, 4), 'tcp': np.round(tcp, 4).tolist(),
                 'target_tcp': np.round(target_tcp, 4).tolist(),
                 'q': np.round(q, 4).tolist(), **(context or {})}
        events = stats.setdefault('workspace_events', [])
        events.append(event)
        events.sort(key=lambda e: -e['excursion_m'])
        del events[8:]
        stats['steps_outside_box'] = stats.get('steps_outside_box', 0) + 1
    stats['worst_workspace_excursion'] = max(stats.get('worst_workspace_excursion', 0.0),
                                             excursion)
    if excursion > 0.02:
        stats['workspace_violations'] += 1
    stats['steps'] += 1


def run_soak(out: pathlib.Path, episodes: int = 20, max_steps: int = 100, seed: int = 0,
             fault_rate: float = 0.3, cameras: bool = False, max_passes: int = 20,
             step_timeout_s: float = 2.0, log: Any = print) -> dict[str, Any]:
    """Run the soak (see the module docstring) in ``out``; return its figures."""
    sys.path.insert(0, str(ROOT / 'test' / 'helpers'))
    import ros_interfaces
    ros_interfaces.activate()

    from realm_ros.backends.franka import make_bridge_world
    from realm_ros.core.config import FrankaBridgeConfig, SafetyConfig, WorldConfig
    from realm_ros.core.episode import run_episode
    from realm_ros.core.evaluation import EpisodeLog
    from realm_ros.core.types import EpisodeSpec

    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    stats: dict[str, Any] = {k: 0 for k in (
        'steps', 'dropped_commands', 'bursts', 'refused_commands', 'target_violations',
        'limit_violations', 'workspace_violations', 'recoveries')}
    stats['worst_limit_excursion'] = 0.0
    faults = {k: 0 for k in FAULTS}
    kinds = FAULTS if cameras else FAULTS[:2]
    specs = [EpisodeSpec(task='empty', seed=i, max_steps=max_steps, pair_id=f'soak-{i:04d}')
             for i in range(episodes)]
    episode_log = EpisodeLog(out / 'episodes.jsonl')
    started = time.monotonic()
    with digital_real(out / 'digital_real.log', cameras) as proc:
        injector = Injector()
        config = WorldConfig(backend='franka', lockstep=True,
                             cameras=('wrist',) if cameras else (),
                             camera_rate_hz=15.0 if cameras else 0.0)
        # Shaped as a real arm's trajectory (the digital real's default is one point per step).
        world = make_bridge_world(config, bridge=FrankaBridgeConfig(
            arm_id='fr3', gripper='width_topic', namespace=NS, digital_real=True,
            digital_real_reflexes=True, step_timeout_s=step_timeout_s),
            safety=SafetyConfig(shape_trajectory='always'))
        soak = SoakWorld(world, rng, stats)
        policy = FuzzPolicy(seed)
        passes = 0
        try:
            while passes < max_passes:
                todo = [s for s in specs if not episode_log.done(s.pair_id, 'real')]
                if not todo:
                    break
                passes += 1
                for spec in todo:
                    fault_at = int(rng.integers(1, max_steps)) if rng.random() < fault_rate \
                        else -1
                    kind = str(rng.choice(kinds))

                    def on_step(step: int, obs: Any, action: Any, progress: Any,
                                fault_at: int = fault_at, kind: str = kind,
                                pair_id: str = spec.pair_id) -> None:
                        del action, progress
                        _check_step(world, obs, stats, {
                            'pair_id': pair_id, 'step': step, 'fault': kind,
                            'fault_at': fault_at})
                        if step == fault_at:
                            faults[kind] += 1
                            injector.inject(kind)

                    result = run_episode(soak, policy, spec, on_step=on_step)
                    record = result.to_record()
                    record['role'] = 'real'
                    episode_log.append(record)
                    # Progress, so a long soak can be looked at while it runs.
                    (out / 'progress.json').write_text(json.dumps(
                        {'runs': len(episode_log.records), 'faults': faults, **stats}))
                    if result.outcome.value == 'infra_failure':
                        # The operator looks at the arm and confirms; motion may resume.
                        if not world.recover(confirm=lambda question: True):
                            raise RuntimeError('recovery refused')
                        stats['recoveries'] += 1
                    if proc.poll() is not None:
                        raise RuntimeError('digital_real died')
        finally:
            world.close()
            injector.close()
    records = EpisodeLog(out / 'episodes.jsonl')
    scored = {r['pair_id'] for r in records.records if r.get('outcome') != 'infra_failure'}
    infra = [r for r in records.records if r.get('outcome') == 'infra_failure']
    figures = {
        'hours_simulated': round(sum(float(r.get('sim_time_s') or 0.0)
                                     for r in records.records) / 3600.0, 4),
        'wall_s': round(time.monotonic() - started, 1),
        'episodes_planned': episodes, 'episode_runs': len(records.records),
        'faults_injected': dict(faults), 'infra_failures': len(infra),
        'retries': len(records.records) - len({r['pair_id'] for r in records.records}),
        'passes': passes,
        # Lost: a planned episode with no record at all (every run is written, even a failed
        # one); unfinished: only infrastructure failures so far (the next re-run retries it).
        'records_lost': len({s.pair_id for s in specs} - {r['pair_id'] for r in records.records}),
        'unfinished': episodes - len(scored & {s.pair_id for s in specs}),
        'unreadable_lines': records.skipped_lines,
        'infra_reasons': sorted({str(r.get('error', ''))[:60] for r in infra}),
        **stats,
    }
    (out / 'soak.json').write_text(json.dumps(figures, indent=1))
    log(json.dumps(figures, indent=1))
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--episodes', type=int, default=40)
    parser.add_argument('--max-steps', type=int, default=150)
    parser.add_argument('--fault-rate', type=float, default=0.3)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--step-timeout-s', type=float, default=2.0,
                        help='franka.step_timeout_s: how long a lost state message is waited for')
    parser.add_argument('--cameras', action='store_true', help='render the wrist camera (and '
                        'inject camera stalls)')
    parser.add_argument('--out', default='', help='output folder (default: a temporary one)')
    args = parser.parse_args()
    out = pathlib.Path(args.out or tempfile.mkdtemp(prefix='realm_soak_'))
    figures = run_soak(out, args.episodes, args.max_steps, args.seed, args.fault_rate,
                       args.cameras, step_timeout_s=args.step_timeout_s)
    bad = figures['records_lost'] or figures['unfinished'] or figures['limit_violations'] or \
        figures['workspace_violations'] or figures['target_violations']
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
