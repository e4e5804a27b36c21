"""Config and input validation (issue 15): bad fields, files and bags give one clear error.

Every config schema (the frozen dataclasses of ``core``, which YAML files and ROS parameters
both go through ``core.config.from_mapping``) takes each field set to wrong types and extreme
values: the result is a valid config or a ``ConfigError`` that names the field (and, for a
choice, the allowed values); never another exception. YAML files and bag directories are
fuzzed the same way, and the CLI turns every such error into one line, exit 2, no traceback.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import shutil
import subprocess

import numpy as np
import pytest
from rostest import BIN
import yaml

from realm_ros.core import config as cfg
from realm_ros.core.annotation import OperatorConfig
from realm_ros.core.errors import ConfigError, DataError
from realm_ros.core.evaluation import EvalConfig
from realm_ros.core.monitor import MonitorConfig
from realm_ros.core.recording import RecorderConfig
from realm_ros.io.bags import BagWriter, read_run

SCHEMAS = [cfg.WorldConfig, cfg.SafetyConfig, cfg.FrankaBridgeConfig, cfg.DigitalRealConfig,
           cfg.PolicyNodeConfig, cfg.DynamicsParams, cfg.DigitalRealDynamics, EvalConfig,
           RecorderConfig, MonitorConfig, OperatorConfig]
REQUIRED = {RecorderConfig: {'out_dir': '/tmp/x'}}
BAD_VALUES = ['', 'abc', None, True, -1, 0, 10**9, -1e300, math.nan, math.inf, [], [1.0],
              ['x', 'y'], [math.nan] * 7, {'a': 1}, 1.5, [1] * 100]


def test_every_schema_field_refuses_bad_values_naming_the_field():
    outcomes = {'refused': 0, 'accepted': 0}
    for schema in SCHEMAS:
        base = dict(REQUIRED.get(schema, {}))
        names = [f.name for f in dataclasses.fields(schema)]
        for name in names:
            for value in BAD_VALUES:
                data = {**base, name: value}
                try:
                    cfg.from_mapping(schema, data)
                except ConfigError as err:
                    outcomes['refused'] += 1
                    assert name in str(err), (schema.__name__, name, value, str(err))
                    choices = next(f for f in dataclasses.fields(schema)
                                   if f.name == name).metadata.get('choices')
                    if choices and isinstance(value, str):
                        assert all(repr(c) in str(err) or str(c) in str(err)
                                   for c in choices), str(err)
                else:
                    outcomes['accepted'] += 1
        # A field that does not exist is named, with the valid ones.
        with pytest.raises(ConfigError, match=r"unknown field\(s\) \['no_such_field'\]"):
            cfg.from_mapping(schema, {**base, 'no_such_field': 1})
    total = sum(outcomes.values())
    print(f'\nconfig fuzz: {total} bad field values over {len(SCHEMAS)} schemas: '
          f'{outcomes["refused"]} refused naming the field, {outcomes["accepted"]} legal')
    assert outcomes['refused'] > 0.7 * total


def test_mistyped_values_are_refused_before_use():
    with pytest.raises(ConfigError, match="field 'seed' must be an integer, got 'abc'"):
        cfg.from_mapping(cfg.WorldConfig, {'seed': 'abc'})
    with pytest.raises(ConfigError, match="field 'lockstep' must be true or false"):
        cfg.from_mapping(cfg.WorldConfig, {'lockstep': 'yes please'})
    with pytest.raises(ConfigError, match=r"field 'workspace_min'\[1\] must be a number"):
        cfg.from_mapping(cfg.SafetyConfig, {'workspace_min': [0.1, 'y', 0.0]})
    with pytest.raises(ConfigError, match="field 'tasks' must be a list"):
        cfg.from_mapping(EvalConfig, {'tasks': 'pick_spoon'})
    # Integers where numbers are expected are fine; lists become tuples.
    world = cfg.from_mapping(cfg.WorldConfig, {'control_hz': 15, 'cameras': ['wrist']})
    assert world.control_hz == 15.0 and world.cameras == ('wrist',)


ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_paired_eval_yaml_fuzz(tmp_path):
    """Mutated copies of config/paired_eval.yaml: each loads or names the bad field."""
    original = yaml.safe_load((ROOT / 'config' / 'paired_eval.yaml').read_text())
    params = original['/**']['ros__parameters']
    rng = np.random.default_rng(5)
    refused = 0
    cases = []
    for name in params:
        cases.append({**params, name: BAD_VALUES[rng.integers(len(BAD_VALUES))]})
        cases.append({k: v for k, v in params.items() if k != name})  # missing: default
    cases += [{**params, 'extra_field': 1}, {**params, 'max_steps': -5},
              {**params, 'real': 'gazebo'}, {**params, 'tasks': ['nope']}]
    for k, data in enumerate(cases):
        path = tmp_path / f'c{k}.yaml'
        path.write_text(yaml.safe_dump({'/**': {'ros__parameters': data}}))
        try:
            EvalConfig.from_yaml(path)
        except ConfigError as err:
            refused += 1
            assert str(path) in str(err)
            changed = set(data) ^ set(params) | {n for n in data if data[n] != params.get(n)}
            assert any(n in str(err) for n in changed) or 'unknown task' in str(err), str(err)
    for text in ('', ':::', '[1, 2]', '\x00\x01binary', 'a: [unclosed'):
        path = tmp_path / 'junk.yaml'
        path.write_text(text)
        try:
            EvalConfig.from_yaml(path)
        except ConfigError as err:
            assert str(path) in str(err) or 'EvalConfig' in str(err)
            refused += 1
    print(f'\nyaml fuzz: {len(cases) + 5} config files, {refused} refused with the field named')
    assert refused >= len(params)


def _bag(path, q_scale=1.0, topics=('/real/command', '/real/joint_states'), steps=20):
    with BagWriter(path) as bag:
        for k in range(steps):
            q = np.array([0.0, -0.6, 0.0, -2.5, 0.0, 1.9, 0.0]) * q_scale
            if topics[0]:
                bag.write_command(topics[0], k / 15, q)
            if topics[1]:
                bag.write_joint_state(topics[1], k / 15, q)
    return path


def test_bad_bag_directories_are_refused_with_the_reason(tmp_path):
    (tmp_path / 'empty').mkdir()
    cut = tmp_path / 'cut'
    _bag(tmp_path / 'good')
    shutil.copytree(tmp_path / 'good', cut)
    data = (cut / 'good.mcap').read_bytes()
    (cut / 'good.mcap').write_bytes(data[:len(data) // 3])
    cases = {
        'empty': (tmp_path / 'empty', 'cannot read bag'),
        'missing': (tmp_path / 'nope', 'cannot read bag'),
        'cut': (cut, 'cannot read bag'),
        'wrong topics': (_bag(tmp_path / 'topics', topics=('/real/cmd', '/real/js')),
                         'command'),
        'no states': (_bag(tmp_path / 'nostates', topics=('/real/command', '')),
                      'joint_states'),
        'degrees': (_bag(tmp_path / 'deg', q_scale=180 / np.pi), 'joint limits'),
    }
    for path, reason in cases.values():
        with pytest.raises(DataError, match=reason):
            read_run(path)
    print(f'\nbag fuzz: {len(cases)} bad bag directories refused with a reason')


@pytest.mark.parametrize('args, message', [
    (['paired-eval', '--out', '{tmp}/o', '--config', '{tmp}/bad.yaml'],
     "field 'max_steps' must be an integer"),
    (['paired-eval', '--out', '{tmp}/o', '--config', '{tmp}/nope.yaml'], 'cannot read'),
    (['paired-eval', '--out', '{tmp}/o', '--max-steps', '0'],
     '--max-steps: must be an integer >= 1'),
    (['paired-eval', '--out', '{tmp}/o', '--tasks', 'stack_cube'], '--tasks: unknown task'),
    (['sysid', 'record', '--out', '{tmp}/r', '--trajectories', '0'], '--trajectories'),
    (['sysid', 'eval', '{tmp}/deg'], 'joint limits'),
    (['sysid', 'fit', '{tmp}/empty', '--out', '{tmp}/p.yaml'], ''),
    # A missing input file is blamed on its flag (core.config.given_path), in every command.
    (['paired-eval', '--out', '{tmp}/o', '--sim-params', '{tmp}/nope.yaml'],
     '--sim-params: file not found'),
    (['sweep', '--out', '{tmp}/o', '--sim-params', '{tmp}/nope.yaml'],
     '--sim-params: file not found'),
    (['episode', '--task', 'push_switch', '--camera-rig', '{tmp}/nope.yaml'],
     '--camera-rig: file not found'),
    (['episode', '--task', 'push_switch', '--visual-match', '{tmp}/bad.yaml'],
     '--visual-match: folder not found'),
    (['demo', '--vision', '--out', '{tmp}/v', '--rig', '{tmp}/nope.yaml'],
     '--rig: file not found'),
    (['dataset', '--out', '{tmp}/d', '--world', 'digital_real', '--dynamics', '{tmp}/nope'],
     '--dynamics: file not found'),
    # An output path that cannot be written (here: below a file) is the path and why.
    (['ladder', '--jsonl', '{tmp}/bad.yaml/x.jsonl', '--tasks', 'push_switch', '--episodes',
      '1', '--max-steps', '2'], 'bad.yaml/x.jsonl: Not a directory'),
    (['gap', '--json', '{tmp}/bad.yaml/x.json', '--duration', '0.1'],
     'bad.yaml/x.json: Not a directory'),
    (['docs-params', '--out', '{tmp}/bad.yaml/p.md'], 'bad.yaml: File exists'),
    (['perturbations', '--task', 'push_switch', '--out', '{tmp}/p', '--size', '0'],
     "--size must be WxH in px (e.g. 320x180), got '0'"),
    (['episode', '--task', 'push_switch', '--image-size', '0x90'], '--image-size must be WxH'),
    # YAML that does not parse: where and what, in one line (PyYAML's own text is six).
    (['paired-eval', '--out', '{tmp}/o', '--config', '{tmp}/broken.yaml'],
     "broken.yaml is not valid YAML: line 2, column 1: expected ',' or ']'"),
    (['cameras', '--task', 'push_switch', '--out', '{tmp}/c', '--rig', '{tmp}/broken.yaml'],
     'broken.yaml is not valid YAML: line 2, column 1'),
])
def test_cli_reports_bad_input_in_one_line_without_traceback(tmp_path, args, message):
    (tmp_path / 'bad.yaml').write_text('max_steps: many\n')
    (tmp_path / 'broken.yaml').write_text('max_steps: [1, 2\n')
    (tmp_path / 'empty').mkdir()
    _bag(tmp_path / 'deg', q_scale=180 / np.pi)
    argv = [a.format(tmp=tmp_path) for a in args]
    proc = subprocess.run([str(BIN / 'realm-ros'), *argv], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert 'Traceback' not in proc.stderr, proc.stderr
    assert message in proc.stderr and proc.stderr.count('\n') <= 2, proc.stderr
    assert proc.stderr.strip().count('\n') == 0 or not message, proc.stderr  # one line


# Issue 48: every numeric flag is checked as the arguments are parsed (commands.number), on any
# device, before anything runs; --appearance is read where it has an effect and refused where it
# has none; a file a flag gave is blamed on the flag, not the config field it fills.

#: Numeric flags left a plain int/float, each with why.
PLAIN_NUMBERS = {('sysid', 'fit', '--holdout'): '-1 = 20 %',
                 ('train', '--val-episodes'): '-1 = the default split',
                 ('score', '--task-range'): 'a floor and a ceiling of either sign'}


def _numeric_flags():
    import argparse

    from realm_ros.cli import build_parser

    def walk(parser, path):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    yield from walk(child, (*path, name))
            elif action.option_strings and (action.type in (int, float)
                                            or hasattr(action.type, 'allowed')):
                yield path, action
    return list(walk(build_parser(), ()))


def test_every_numeric_flag_is_checked_when_parsed(capsys):
    from realm_ros.cli import build_parser
    checked = 0
    for path, action in _numeric_flags():
        flag = action.option_strings[-1]
        if action.type in (int, float):
            assert (*path, flag) in PLAIN_NUMBERS, f'{" ".join(path)} {flag}: plain {action.type}'
            continue
        for bad in ('abc', 'nan', 'inf', '-1', ''):
            with pytest.raises(SystemExit) as stop:
                build_parser().parse_args([*path, flag, bad])
            err = capsys.readouterr().err
            assert stop.value.code == 2 and err.count('\n') == 1, (path, flag, bad, err)
            assert f'argument {flag}: must be ' in err, err
        checked += 1
    print(f'\nnumeric flags checked when parsed: {checked}')
    assert checked >= 70


@pytest.mark.parametrize('argv, message', [
    # Parsed late or only on the GPU before: now refused on any --device.
    (['sweep', '--out', '{tmp}/o', '--solver-iterations', 'abc'],
     "argument --solver-iterations: must be N/M (e.g. 4/8), got 'abc'"),
    (['sweep', '--out', '{tmp}/o', '--solver-iterations', '4/0'],
     'argument --solver-iterations: must be > 0, got 0'),
    (['sweep', '--out', '{tmp}/o', '--batch', '0'], 'argument --batch: must be an integer >= 1'),
    (['sweep', '--out', '{tmp}/o', '--until-decided', '1.5'],
     "argument --until-decided: must be a probability in (0.5, 1), got '1.5'"),
    (['serve', '--port', '70000'], 'argument --port: must be a port in [0, 65535]'),
    (['episode', '--task', 'push_switch', '--seed', '-1'], 'argument --seed: must be an integer'),
    (['perturbations', '--task', 'push_switch', '--out', '{tmp}/o', '--camera', 'nope'],
     "argument --camera: invalid choice: 'nope'"),
])
def test_bad_numbers_and_choices_are_refused_when_parsed(tmp_path, capsys, argv, message):
    from realm_ros.cli import main
    with pytest.raises(SystemExit) as stop:
        main([a.format(tmp=tmp_path) for a in argv])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and message in err and err.count('\n') == 1, err
    assert not (tmp_path / 'o').exists()


@pytest.mark.parametrize('argv, message', [
    # The twin has no hidden look: the flag would do nothing, so it is refused (as dataset).
    (['episode', '--task', 'push_switch', '--appearance', '{tmp}/look.yaml'],
     "--appearance is the digital real's hidden look; --backend mujoco never reads it"),
    (['paired-eval', '--out', '{tmp}/o', '--real', 'franka', '--appearance', '{tmp}/look.yaml'],
     "--appearance is the digital real's hidden look; --real franka never reads it"),
    (['dataset', '--out', '{tmp}/o', '--world', 'twin', '--appearance', '{tmp}/look.yaml'],
     "--appearance and --dynamics are the digital real's"),
    # Where it is read, it is read now: a broken or foreign file is the flag's, before any run.
    (['episode', '--task', 'push_switch', '--backend', 'digital_real', '--appearance',
      '{tmp}/broken.yaml'], '--appearance: {tmp}/broken.yaml is not valid YAML: line 2'),
    (['episode', '--task', 'push_switch', '--backend', 'digital_real', '--appearance',
      '{tmp}/bad.yaml'], "--appearance: {tmp}/bad.yaml: unknown key(s) ['max_steps']"),
    (['episode', '--task', 'push_switch', '--backend', 'digital_real', '--appearance', '{tmp}'],
     '--appearance: file not found'),
    (['paired-eval', '--out', '{tmp}/o', '--appearance', '{tmp}/broken.yaml'],
     '--appearance: {tmp}/broken.yaml is not valid YAML'),
    (['dataset', '--out', '{tmp}/o', '--world', 'digital_real', '--appearance',
      '{tmp}/bad.yaml'], '--appearance: {tmp}/bad.yaml: unknown key(s)'),
    (['cameras', '--task', 'push_switch', '--out', '{tmp}/o', '--appearance', '{tmp}/bad.yaml'],
     '--appearance: {tmp}/bad.yaml: unknown key(s)'),
    # A rig file is the flag's (--rig, --camera-rig), not the camera_rig_file field's.
    (['episode', '--task', 'push_switch', '--camera-rig', '{tmp}/broken.yaml'],
     '--camera-rig: {tmp}/broken.yaml is not valid YAML'),
    (['episode', '--task', 'push_switch', '--camera-rig', '{tmp}/rig.yaml'],
     "--camera-rig: {tmp}/rig.yaml: unknown camera(s) ['nope']"),
    (['cameras', '--task', 'push_switch', '--out', '{tmp}/o', '--rig', '{tmp}/rig.yaml'],
     "--rig: {tmp}/rig.yaml: unknown camera(s) ['nope']"),
    (['cameras', 'calibrate', '{tmp}/empty', '--out', '{tmp}/o/r.yaml', '--rig', '{tmp}'],
     '--rig: file not found'),
    (['episode', '--task', 'push_switch', '--image-size', '8x8'],
     "--image-size: width and height must be in [16, 4096] px, got '8x8'"),
])
def test_file_flags_are_read_and_blamed_by_their_flag(tmp_path, capsys, argv, message):
    from realm_ros.cli import main
    (tmp_path / 'bad.yaml').write_text('max_steps: many\n')
    (tmp_path / 'broken.yaml').write_text('max_steps: [1, 2\n')
    (tmp_path / 'look.yaml').write_text((ROOT / 'config/appearance/lab_demo.yaml').read_text())
    (tmp_path / 'rig.yaml').write_text('cameras:\n  nope: {}\n')
    (tmp_path / 'empty').mkdir()
    assert main([a.format(tmp=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err
    line = message.format(tmp=tmp_path)
    assert line in err and err.count('\n') == 1 and 'camera_rig_file' not in err, err
    assert not (tmp_path / 'o').exists()  # refused before anything ran


@pytest.mark.parametrize('argv, message', [
    # '' is not "the current folder": pathlib would read it as '.', and a run would write there.
    (['paired-eval', '--out', '', '--tasks', 'push_switch'], 'argument --out: an empty path'),
    (['sweep', '--out', ''], 'argument --out: an empty path'),
    (['metrics', ''], 'argument csv: an empty path'),
    (['train', '--data', '', '--out', '{tmp}/o'], 'argument --data: an empty path'),
    (['arena', 'rank', ''], 'argument RUN_DIR: an empty path'),
])
def test_an_empty_path_is_refused_when_parsed(tmp_path, capsys, monkeypatch, argv, message):
    from realm_ros.cli import main
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main([a.format(tmp=tmp_path) for a in argv])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and message in err and err.count('\n') == 1, err
    assert not list(tmp_path.iterdir())  # nothing written where it was run


@pytest.mark.parametrize('flag', ['--video', '--record-actions'])
def test_an_output_file_that_is_a_folder_is_refused_before_the_episode(tmp_path, capsys, flag):
    from realm_ros.cli import main
    # Before: --video FOLDER ran the episode, then died in imageio with a traceback;
    # --record-actions FOLDER wrote FOLDER.npy beside it.
    assert main(['episode', '--task', 'push_switch', '--max-steps', '2', flag,
                 str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f'{flag}: {tmp_path} is a folder; name the file to write' in err
    assert err.count('\n') == 1 and not list(tmp_path.iterdir())
    assert not tmp_path.with_suffix('.npy').exists()


@pytest.mark.parametrize('argv, message', [
    # Identified parameters and hidden dynamics are read before the run, blamed on the flag.
    (['episode', '--task', 'push_switch', '--sim-params', '{tmp}/short.yaml'],
     '--sim-params: {tmp}/short.yaml: DynamicsParams.friction must have 7 values, got 2'),
    (['sweep', '--out', '{tmp}/o', '--sim-params', '{tmp}/short.yaml'],
     '--sim-params: {tmp}/short.yaml: DynamicsParams.friction must have 7 values'),
    (['paired-eval', '--out', '{tmp}/o', '--real-dynamics', '{tmp}/short.yaml'],
     '--real-dynamics: {tmp}/short.yaml: DigitalRealDynamics.friction must have 7 values'),
    (['dataset', '--out', '{tmp}/o', '--world', 'digital_real', '--dynamics',
      '{tmp}/short.yaml'], '--dynamics: {tmp}/short.yaml: DigitalRealDynamics.friction'),
    # Another flag that would do nothing where it was given, and a field named for its flag.
    (['episode', '--task', 'push_switch', '--backend', 'digital_real', '--visual-match',
      '{tmp}'], '--visual-match dresses the MuJoCo twin; --backend digital_real never reads'),
    (['episode', '--task', 'push_switch', '--policy-args', '{{bad'],
     '--policy-args is not valid JSON'),
])
def test_parameter_files_and_policy_args_are_blamed_on_their_flag(tmp_path, capsys, argv,
                                                                  message):
    from realm_ros.cli import main
    (tmp_path / 'short.yaml').write_text('friction: [1, 2]\n')
    assert main([a.format(tmp=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err
    assert message.format(tmp=tmp_path) in err and err.count('\n') == 1, err
    assert 'PolicyNodeConfig' not in err and not (tmp_path / 'o').exists()
