"""docs/cli.md and the README's commands against the real ``realm-ros`` argparse parsers.

docs/cli.md: every subcommand has a row; every command a row shows exists, every flag it names
is one of that command's options, and every choice it lists (``a\\|b``) is one the option takes.
README: every ``realm-ros ...`` command of its shell blocks parses with the real parser.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import pathlib
import re
import shlex

import pytest

from realm_ros.cli import build_parser
from realm_ros.commands import task_names

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope='module')
def parser():
    return build_parser()


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return {name: child for action in parser._actions
            if isinstance(action, argparse._SubParsersAction)
            for name, child in action.choices.items()}


def _walk(parser, words):
    """The parser of ``realm-ros WORDS...`` and the words it took as (sub)commands."""
    path = []
    for word in words:
        children = _subcommands(parser)
        if word not in children:
            break
        parser = children[word]
        path.append(word)
    return parser, path


def _all_commands(parser, prefix=()):
    for name, child in _subcommands(parser).items():
        yield (*prefix, name)
        yield from _all_commands(child, (*prefix, name))


def _rows():
    """(command text, line) of the first code span of every table row of docs/cli.md."""
    for number, line in enumerate((ROOT / 'docs' / 'cli.md').read_text().splitlines(), 1):
        if line.startswith('| `realm-ros'):
            for span in re.findall(r'`(realm-ros [^`]*)`', line.split(' | ')[0]):
                yield span, number


def test_every_row_names_a_command_and_only_its_options(parser):
    rows = list(_rows())
    assert len(rows) > 30
    for text, number in rows:
        words = text.split()[1:]
        child, path = _walk(parser, words)
        assert path, f'docs/cli.md:{number}: {text!r} names no realm-ros command'
        options = child._option_string_actions
        for flag in re.findall(r'(?<![\w-])(--[a-z][a-z0-9-]*)', text):
            assert flag in options, f'docs/cli.md:{number}: {" ".join(path)} has no {flag}'
        for flag, listed in re.findall(r'\[(--[a-z0-9-]+) ([a-z0-9_.]+(?:\\\|[a-z0-9_.]+)+)\]',
                                       text):
            choices = options[flag].choices
            if choices is not None:
                wrong = set(listed.split('\\|')) - set(choices)
                assert not wrong, f'docs/cli.md:{number}: {flag} takes no {sorted(wrong)}'


def test_every_command_has_a_row(parser):
    documented = set()
    for text, _ in _rows():
        documented.add(tuple(_walk(parser, text.split()[1:])[1]))
    missing = [' '.join(c) for c in _all_commands(parser)
               if c not in documented and not any(d[:len(c)] == c for d in documented)]
    assert missing == []


def _readme_commands():
    """Each ``realm-ros ...`` command of the README's bash blocks, continuation lines joined."""
    text = (ROOT / 'README.md').read_text()
    for block in re.findall(r'```bash\n(.*?)```', text, flags=re.S):
        joined = re.sub(r'\\\n\s*', ' ', block)
        for line in joined.splitlines():
            line = line.split(' #')[0].strip()
            if 'realm-ros ' in line and not line.startswith('#'):
                yield line[line.index('realm-ros '):]


def test_every_readme_command_parses(parser):
    commands = list(_readme_commands())
    assert len(commands) >= 8
    for command in commands:
        words = shlex.split(command)[1:]
        errors = io.StringIO()
        with contextlib.redirect_stderr(errors):
            try:
                args = parser.parse_args(words)
            except SystemExit:
                pytest.fail(f'README: {command}\n{errors.getvalue()}')
        # The names a parser cannot check: tasks.
        named = [*(getattr(args, 'tasks', None) or []), getattr(args, 'task', None)]
        if any(named):
            task_names([t for t in named if t], [])


def test_readme_examples_write_into_an_ignored_folder():
    """The "Try one piece" commands write under out/, which .gitignore ignores."""
    assert 'out/' in (ROOT / '.gitignore').read_text().split()
    text = (ROOT / 'README.md').read_text()
    piece = text.split('## Try one piece', 1)[1].split('\n## ', 1)[0]
    outputs = re.findall(r'--(?:out|video) (\S+)', piece)
    assert outputs and all(path.startswith('out/') for path in outputs), outputs


def test_serve_offers_only_what_it_serves(parser):
    from realm_ros.commands.serve import PRIVILEGED, served_policies
    from realm_ros.core.policy import POLICIES, policy_needs

    child, _ = _walk(parser, ['serve'])
    offered = child._option_string_actions['--policy'].help
    assert offered.startswith(f'registered policy to serve: {", ".join(served_policies())} (')
    assert set(served_policies()) | set(PRIVILEGED) == set(POLICIES)
    for name in PRIVILEGED:
        assert policy_needs(name).privileged
    assert not policy_needs('hold').privileged
