"""``realm-ros docs-params``: write docs/parameters.md from the config schemas.

Every node parameter and config-file key is a field of a frozen dataclass with its description
(``realm_ros.core.config.field``); ``ros/params.py`` declares those fields as ROS parameters.
This command renders the same fields as Markdown tables, so the reference cannot drift from the
code: ``test/unit/test_docs.py`` fails when the committed file differs from what this writes.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import pathlib
from typing import Any

from realm_ros.core.config import field_default

DEFAULT_OUT = 'docs/parameters.md'


@dataclasses.dataclass(frozen=True)
class Schema:
    """One config dataclass as a node or a file uses it."""

    target: str          #: ``module:Class``
    prefix: str = ''     #: parameter-name prefix (``franka.``, ``safety.``)
    when: str = ''       #: condition under which the node declares these


@dataclasses.dataclass(frozen=True)
class Section:
    """A node (or a YAML file) and the schemas behind its parameters (or keys)."""

    title: str
    intro: str
    schemas: tuple[Schema, ...]
    extra: tuple[tuple[str, str, str, str], ...] = ()  #: (name, type, default, meaning)


EPISODE_SPEC = ('episode_spec', 'string', "''", 'JSON `EpisodeSpec`, declared by the node '
                'itself (see its module docstring)')

SECTIONS: tuple[Section, ...] = (
    Section('world_node', 'One world (twin, digital real, or the bridge to a real arm) behind '
            'the shared interface ([interface.md](interface.md)). Example: '
            '`config/world.yaml`.',
            (Schema('realm_ros.core.config:WorldConfig'),
             Schema('realm_ros.core.config:FrankaBridgeConfig', 'franka.', 'backend franka'),
             Schema('realm_ros.core.config:SafetyConfig', 'safety.', 'backend franka')),
            (EPISODE_SPEC,)),
    Section('digital_real', 'The digital real behind a franka_ros2-shaped interface '
            '([digital-real.md](digital-real.md)). Example: `config/digital_real.yaml`.',
            (Schema('realm_ros.core.config:DigitalRealConfig'),), (EPISODE_SPEC,)),
    Section('policy_node', 'Hosts one policy for one world ([policies.md](policies.md)).',
            (Schema('realm_ros.core.config:PolicyNodeConfig'),)),
    Section('evaluator_node', 'Drives paired episodes over ROS ([evaluation.md](evaluation.md)).'
            ' The `EvalConfig` part is also the `--config` YAML of `realm-ros paired-eval` '
            '(`config/paired_eval.yaml`), whose flags override it.',
            (Schema('realm_ros.core.evaluation:EvalConfig'),
             Schema('realm_ros.nodes.evaluator_node:EvaluatorConfig'))),
    Section('recorder_node', "Records one world's topics to rosbag2/MCAP ([sysid.md](sysid.md))."
            ' Example: `config/recorder.yaml`.',
            (Schema('realm_ros.core.recording:RecorderConfig'),)),
    Section('monitor_node', 'Markers and live real-vs-sim divergence for RViz ([lab.md](lab.md)).'
            ' Example: `config/monitor.yaml`.',
            (Schema('realm_ros.core.monitor:MonitorConfig'),), (EPISODE_SPEC,)),
    Section('operator_node', 'Stage annotation of real episodes by a person '
            '([lab.md](lab.md)). Example: `config/operator.yaml`.',
            (Schema('realm_ros.core.annotation:OperatorConfig'),), (EPISODE_SPEC,)),
    Section('Digital-real dynamics file', 'Keys of `digital_real --dynamics FILE` / '
            '`dynamics_file` (default `realm_ros/data/digital_real_dynamics.yaml`; '
            '[digital-real.md](digital-real.md)). Unknown keys are an error.',
            (Schema('realm_ros.core.config:DigitalRealDynamics'),)),
    Section('Twin parameters file', 'Keys of `sim_params_file` / `--sim-params`, written by '
            '`realm-ros sysid fit` ([sysid.md](sysid.md)); an optional `latency_s` (s, in '
            '[0, 0.5]) is replayed by the twin.',
            (Schema('realm_ros.core.config:DynamicsParams'),)),
)


def _load(target: str) -> type:
    module_name, class_name = target.split(':')
    return getattr(importlib.import_module(module_name), class_name)


def _type_name(default: Any) -> str:
    if isinstance(default, tuple):
        inner = type(default[0]).__name__ if default else 'str'
        return f'{_TYPES.get(inner, inner)}[]'
    return _TYPES.get(type(default).__name__, type(default).__name__)


_TYPES = {'str': 'string', 'float': 'double', 'int': 'integer', 'bool': 'bool'}


def _value(default: Any) -> str:
    if isinstance(default, tuple):
        return '`[' + ', '.join(_value(v).strip('`') for v in default) + ']`'
    if isinstance(default, bool):
        return f'`{str(default).lower()}`'
    if isinstance(default, str):
        return f"`'{default}'`" if not default else f'`{default}`'
    return f'`{default!r}`'


def _cell(text: str) -> str:
    return (text.replace('|', '\\|').replace('\n', ' ').replace('<', '&lt;')
            .replace('>', '&gt;'))


def _rows(schema: Schema) -> list[str]:
    cls = _load(schema.target)
    rows = []
    for f in dataclasses.fields(cls):
        default = field_default(f)
        text = f.metadata.get('help', '')
        choices = f.metadata.get('choices')
        if choices:
            text += ' (one of: ' + ', '.join(_value(c) for c in choices) + ')'
        if schema.when:
            text += f' [{schema.when}]'
        rows.append(f'| `{schema.prefix}{f.name}` | {_type_name(default)} | {_value(default)} '
                    f'| {_cell(text)} |')
    return rows


def render() -> str:
    """Return the whole of docs/parameters.md."""
    out = [
        '# Parameters',
        '',
        '<!-- Generated by `realm-ros docs-params` from the config dataclasses; do not edit. '
        'test/unit/test_docs.py checks it. -->',
        '',
        'Every node parameter below is declared with its description, so '
        '`ros2 param describe <node> <name>` prints the same text. A bad value stops the node '
        'at start-up (exit code 2) with a message naming the field. Regenerate this page after '
        'changing a config dataclass: `realm-ros docs-params`.',
        '',
    ]
    for section in SECTIONS:
        schemas = ', '.join(f'`{s.target.replace(":", ".")}`' for s in section.schemas)
        out += [f'## {section.title}', '', section.intro, '', f'Schema: {schemas}.', '',
                '| name | type | default | meaning |', '|---|---|---|---|']
        for schema in section.schemas:
            out += _rows(schema)
        for name, kind, default, text in section.extra:
            out.append(f'| `{name}` | {kind} | `{default}` | {_cell(text)} |')
        out.append('')
    return '\n'.join(out)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Output file and a check-only mode."""
    parser.add_argument('--out', default=DEFAULT_OUT,
                        help=f'file to write (default: {DEFAULT_OUT})')
    parser.add_argument('--check', action='store_true',
                        help='only compare with --out; exit 1 if it is out of date')


def run(args: argparse.Namespace) -> int:
    """Write the page, or with ``--check`` say whether the committed one is current."""
    path = pathlib.Path(args.out)
    text = render()
    if args.check:
        if not path.is_file() or path.read_text() != text:
            print(f'out of date: {path} (run: realm-ros docs-params --out {args.out})')
            return 1
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    print(f'wrote {path}')
    return 0
