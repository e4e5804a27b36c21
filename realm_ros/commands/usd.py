"""``realm-ros usd``: export the twin's scene for a task to USD authored for PhysX / Isaac Sim.

The stage comes from the compiled MuJoCo model the twin runs (``backends/usd_export.py``), so
MuJoCo and PhysX see one scene; it is validated before it is written.
"""

from __future__ import annotations

import argparse

from realm_ros.commands import positive_float
from realm_ros.core import robot


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Task, output file, physics rate."""
    parser.add_argument('--task', default='', help='REALM task (default: the empty table)')
    parser.add_argument('--out', required=True, help='output file, .usda (text) or .usd')
    parser.add_argument('--physics-hz', type=positive_float, default=robot.PHYSICS_HZ,
                        help='PhysX scene steps per second (default %(default)g, as the twin)')


def run(args: argparse.Namespace) -> int:
    """Export, validate, write; exit 1 if validation finds a problem (nothing is written)."""
    import pathlib

    from realm_ros.backends import usd_export
    from realm_ros.core import tasks
    from realm_ros.core.errors import ConfigError

    if args.task:
        tasks.get_task(args.task)
    out = pathlib.Path(args.out)
    if out.suffix not in ('.usda', '.usd', '.usdc'):
        raise ConfigError(f'--out must end in .usda, .usd or .usdc, got {out.name!r}')
    stage, layout = usd_export.export_model(
        usd_export.twin_model(args.task, args.physics_hz), args.physics_hz)
    problems = usd_export.validate_stage(stage)
    for problem in problems:
        print(f'invalid: {problem}')
    if problems:
        return 1
    out.parent.mkdir(parents=True, exist_ok=True)
    stage.GetRootLayer().Export(str(out))
    print(f'wrote {out}: {len(layout.rigid_bodies)} rigid bodies, '
          f'{len(layout.articulation_bases)} articulation(s), {len(layout.joints)} joints, '
          f'{len(layout.free_bodies)} free object(s); validated with usd-core + PhysX schemas')
    return 0
