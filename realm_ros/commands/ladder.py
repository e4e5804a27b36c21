"""``realm-ros ladder``: success rate and mean progression of each scripted rung, per task.

Runs ``--episodes`` seeds (0..N-1) per task and rung in the MuJoCo twin without ROS (and without
cameras unless ``--cameras``) and prints a Markdown table; the README's ladder table comes from
this command.
"""

from __future__ import annotations

import argparse
import json

from realm_ros.commands import (
    add_list_argument,
    non_negative_int,
    positive_int,
    task_names,
)
from realm_ros.core import robot, tasks
from realm_ros.core.errors import ConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Episodes, tasks, rungs, steps."""
    parser.add_argument('--episodes', type=positive_int, default=10,
                        help='seeds per task and rung')
    add_list_argument(parser, '--tasks', 'tasks (default: all ten)', 'TASK')
    add_list_argument(parser, '--skills', 'rungs, 0..3 or expert, good, sloppy, poor (default: '
                      'all four)', 'SKILL')
    parser.add_argument('--max-steps', type=positive_int, default=400,
                        help='control steps per episode')
    parser.add_argument('--jsonl', default='', help='also write one record per episode here')
    parser.add_argument('--cameras', action='store_true',
                        help='render the three DROID cameras every step, as a vision policy '
                             'would need (the scripted rungs do not look at them)')
    parser.add_argument('--execute-horizon', type=non_negative_int, default=0,
                        help="actions executed open loop per chunk (0 = the policy's own, 8)")


def run(args: argparse.Namespace) -> int:
    """Print the ladder table."""
    from realm_ros.core.config import CAMERA_NAMES, WorldConfig
    from realm_ros.core.episode import run_episode
    from realm_ros.core.policy import standard_chain
    from realm_ros.core.types import EpisodeSpec
    from realm_ros.core.world import make_world
    from realm_ros.policies.scripted import SKILL_NAMES, SKILLS, ScriptedPolicy, skill_level

    names = task_names(args.tasks, list(tasks.TASKS))
    try:
        levels = [skill_level(s) for s in args.skills or SKILL_NAMES]
    except ConfigError as err:
        raise ConfigError(f'--skills: {err}') from None
    rows: dict[str, dict[int, tuple[float, float]]] = {}
    out = open(args.jsonl, 'w') if args.jsonl else None
    try:
        for name in names:
            cameras = CAMERA_NAMES if args.cameras else ()
            world = make_world(WorldConfig(task=name, cameras=cameras,
                                           camera_rate_hz=robot.CONTROL_HZ if cameras else 0.0))
            rows[name] = {}
            for level in levels:
                # Wrapped as every runner wraps policies (policy_node, paired-eval, episode).
                inner = ScriptedPolicy(skill=level, execute=args.execute_horizon or 8)
                policy = standard_chain(inner, execute=inner.needs.horizon)
                results = [run_episode(world, policy, EpisodeSpec(
                    task=name, seed=seed, policy=policy.label, max_steps=args.max_steps))
                    for seed in range(args.episodes)]
                if out is not None:
                    for r in results:
                        out.write(json.dumps(r.to_record()) + '\n')
                rows[name][level] = (
                    sum(r.success for r in results) / len(results),
                    sum(r.progression for r in results) / len(results))
            world.close()
    finally:
        if out is not None:
            out.close()
    header = ' | '.join(f'{SKILLS[lv].name} ({lv})' for lv in levels)
    print(f'success rate / mean progression over {args.episodes} seeds per cell '
          f'(max {args.max_steps} steps)\n')
    print(f'| task | {header} |')
    print('|---|' + '---|' * len(levels))
    for name in names:
        cells = ' | '.join(f'{rows[name][lv][0]:.2f} / {rows[name][lv][1]:.2f}' for lv in levels)
        print(f'| {name} | {cells} |')
    mean = ' | '.join(
        f'{sum(rows[n][lv][0] for n in names) / len(names):.2f} / '
        f'{sum(rows[n][lv][1] for n in names) / len(names):.2f}' for lv in levels)
    print(f'| **mean** | {mean} |')
    return 0
