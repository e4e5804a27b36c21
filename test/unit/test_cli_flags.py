"""One way to say each thing on the command line: a flag's error names the flag, lists take
spaces or commas in every command, a scripted skill is a number or a name in every spec, and
``episode --json`` records the rung."""

from __future__ import annotations

import json

import pytest

from realm_ros.cli import build_parser, main
from realm_ros.core.errors import ConfigError
from realm_ros.core.evaluation import PolicyEntry
from realm_ros.core.policy import policy_spec


def exit_code(argv: list[str]) -> int:
    """``main(argv)``'s exit status, argparse's refusal (SystemExit) included."""
    try:
        return main(argv)
    except SystemExit as stop:
        return int(stop.code or 0)


@pytest.mark.parametrize('argv, message', [
    (['--tasks', 'stack_cube'], "--tasks: unknown task 'stack_cube'"),
    # Numbers are refused as the arguments are parsed (commands.number), naming the flag too.
    (['--episodes-per-cell', '0'], "argument --episodes-per-cell: must be an integer >= 1, "
                                   "got '0'"),
    (['--intensity', '3'], "argument --intensity: must be a number in [0, 1], got '3'"),
    (['--intensity', 'nan'], "argument --intensity: must be a number in [0, 1], got 'nan'"),
    (['--perturbations', 'V-NOPE'], "--perturbations: unknown perturbation 'V-NOPE'"),
    (['--policies', 'scripted:great'], "--policies 'scripted:great': scripted policy skill"),
])
def test_a_bad_flag_is_blamed_on_the_flag_not_the_config_file(tmp_path, capsys, argv, message):
    assert exit_code(['paired-eval', '--out', str(tmp_path / 'o'), *argv]) == 2
    assert not (tmp_path / 'o').exists()  # refused before anything ran
    err = capsys.readouterr().err
    assert err.startswith(f'realm-ros paired-eval: error: {message}'), err
    assert 'paired_eval.yaml' not in err and err.count('\n') == 1


def test_the_config_file_is_blamed_for_its_own_fields(tmp_path, capsys):
    (tmp_path / 'bad.yaml').write_text('tasks: [stack_cube]\n')
    assert main(['paired-eval', '--out', str(tmp_path / 'o'), '--config',
                 str(tmp_path / 'bad.yaml')]) == 2
    assert f'{tmp_path / "bad.yaml"}: EvalConfig.tasks' in capsys.readouterr().err


@pytest.mark.parametrize('command', [['paired-eval', '--out', 'o'], ['sweep', '--out', 'o'],
                                     ['dataset', '--out', 'o'], ['ladder']])
def test_tasks_take_spaces_or_commas_in_every_command(command):
    parser = build_parser()
    spaced = parser.parse_args([*command, '--tasks', 'pick_spoon', 'push_switch', 'open_drawer'])
    commas = parser.parse_args([*command, '--tasks', 'pick_spoon,push_switch', 'open_drawer'])
    assert spaced.tasks == commas.tasks == ['pick_spoon', 'push_switch', 'open_drawer']
    assert parser.parse_args(command).tasks is None  # the command's default applies


def test_every_runner_reads_a_skill_by_name():
    assert policy_spec('scripted:good') == 'scripted-good=scripted:skill=good'
    assert policy_spec('good=scripted:good') == 'good=scripted:skill=good'
    for unchanged in ('scripted:2', 'scripted:skill=good', 'hold', 'pi=openpi:host=h,port=1'):
        assert policy_spec(unchanged) == unchanged
    entry = PolicyEntry.parse(policy_spec('good=scripted:good'))
    assert (entry.label, entry.policy, dict(entry.args)) == ('good', 'scripted', {'skill': 'good'})
    with pytest.raises(ConfigError, match="'hold:good': policy 'hold' has no setting 'skill'"):
        policy_spec('hold:good')


def test_sweep_takes_a_skill_by_name(tmp_path):
    from realm_ros.commands.sweep import build_config
    args = build_parser().parse_args(['sweep', '--out', str(tmp_path), '--policies',
                                      'good=scripted:good', 'scripted:poor', 'scripted:1'])
    config = build_config(args)
    labels = [PolicyEntry.parse(p).label for p in config.policies]
    assert labels == ['good', 'scripted-poor', 'scripted-1']


def test_episode_json_records_the_rung(capsys):
    assert main(['episode', '--task', 'push_switch', '--skill', 'good', '--max-steps', '2',
                 '--json']) == 0
    record = json.loads(capsys.readouterr().out)
    assert record['policy'] == 'scripted-good'


def test_a_value_argparse_refuses_is_one_line_too(capsys):
    with pytest.raises(SystemExit) as stop:
        main(['paired-eval', '--out', 'o', '--seed', '1.5'])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count('\n') == 1
    assert err.startswith("realm-ros paired-eval: error: argument --seed: must be an integer "
                          ">= 0, got '1.5'")


def _quiet_helps(parser, path=()):
    """Yield (command path, --quiet's help) for every (sub)command that takes --quiet."""
    import argparse
    for action in parser._actions:
        if '--quiet' in action.option_strings:
            yield ' '.join(path), action.help
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _quiet_helps(child, (*path, name))


def test_quiet_means_one_thing_in_every_command():
    """docs/cli.md: --quiet keeps the bar and the final table; one help text says so."""
    helps = dict(_quiet_helps(build_parser()))
    assert {'paired-eval', 'sweep', 'dataset', 'demo', 'sysid record', 'sysid fit'} <= set(helps)
    assert set(helps.values()) == {
        'only the progress bar and the final table (with the files written)'}, helps


@pytest.mark.parametrize('flags', [['--until-decided', '0.9'], ['--budget', '40'],
                                   ['--allocation', 'uniform'], ['--columns', 'raw'],
                                   ['--quiet'], ['--appearance', 'none']])
def test_the_vision_demos_flags_are_refused_without_vision(tmp_path, capsys, flags):
    """``make demo``'s sysid demo would ignore them: one line naming the flag, nothing run."""
    assert exit_code(['demo', '--out', str(tmp_path / 'o'), *flags]) == 2
    err = capsys.readouterr().err
    assert err == (f'realm-ros demo: error: {flags[0]} belongs to the vision demo: add --vision, '
                   f'or drop {flags[0]}\n')
    assert not (tmp_path / 'o').exists()


def test_episode_names_the_policy_flag_for_an_unknown_policy(capsys):
    assert exit_code(['episode', '--task', 'push_switch', '--policy', 'nope']) == 2
    err = capsys.readouterr().err
    assert "argument --policy: invalid choice: 'nope'" in err and err.count('\n') == 1
    assert "'scripted'" in err  # the registered names are listed
