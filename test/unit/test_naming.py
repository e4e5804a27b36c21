"""One name for the digital real (issue 14): ``digital_real`` everywhere, the old spellings
(``fake``, ``fake_franka``, ``FakeFrankaConfig``, ``config/fake_franka.yaml``,
``fake_franka_params_file``) still accepted, each with one deprecation line naming the new one.
"""

from __future__ import annotations

import dataclasses
import subprocess

import pytest
from rostest import BIN

from realm_ros.core import config as cfg
from realm_ros.core.evaluation import EvalConfig


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch):
    """Each test sees the first use of an old spelling (the line is printed once per process)."""
    monkeypatch.setattr(cfg, '_WARNED', set())


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if 'deprecated' in line]


def test_old_backend_name_is_the_digital_real_with_one_deprecation_line(capsys):
    assert cfg.WorldConfig(backend='fake').backend == 'digital_real'
    assert cfg.from_mapping(cfg.WorldConfig, {'backend': 'fake'}).backend == 'digital_real'
    assert cfg.WorldConfig(backend='digital_real').backend == 'digital_real'
    (line,) = _lines(capsys.readouterr().err)
    assert "'fake'" in line and "use 'digital_real'" in line and 'backend' in line
    # The new name is the only one offered; a wrong name still lists the choices.
    with pytest.raises(cfg.ConfigError, match="'digital_real'"):
        cfg.WorldConfig(backend='fake_arm')


def test_old_real_world_name_in_an_evaluation(capsys):
    assert EvalConfig(real='fake').real == 'digital_real'
    assert EvalConfig().real == 'digital_real'
    (line,) = _lines(capsys.readouterr().err)
    assert "real 'fake' is deprecated; use 'digital_real'" in line


def test_new_names_print_nothing(capsys):
    cfg.WorldConfig(backend='digital_real')
    EvalConfig(real='digital_real')
    cfg.DigitalRealConfig()
    assert capsys.readouterr().err == ''


def test_fake_franka_config_is_the_digital_real_config(capsys):
    from realm_ros.core.config import FakeFrankaConfig
    assert FakeFrankaConfig is cfg.DigitalRealConfig
    (line,) = _lines(capsys.readouterr().err)
    assert "'FakeFrankaConfig'" in line and "'DigitalRealConfig'" in line
    with pytest.raises(AttributeError):
        cfg.NoSuchConfig  # noqa: B018


@pytest.mark.parametrize('argv, flag', [
    (['episode', '--backend', 'fake', '--task', 'stack_cubes'], 'backend'),
    (['sysid', 'record', '--backend', 'fake', '--out', 'bags'], 'backend'),
    (['paired-eval', '--real', 'fake', '--out', 'eval'], 'real'),
])
def test_cli_flags_accept_the_old_value(argv, flag, capsys):
    from realm_ros.cli import build_parser
    args = build_parser().parse_args(argv)
    assert getattr(args, flag) == 'digital_real'
    (line,) = _lines(capsys.readouterr().err)
    assert f"--{flag} 'fake' is deprecated; use 'digital_real'" in line


def test_cli_flags_refuse_other_values(capsys):
    from realm_ros.cli import build_parser
    with pytest.raises(SystemExit):
        build_parser().parse_args(['sysid', 'record', '--backend', 'sim', '--out', 'bags'])
    assert "invalid choice: 'sim'" in capsys.readouterr().err


def test_old_parameter_file_name_finds_the_renamed_file(tmp_path, capsys):
    from realm_ros.graph import digital_real_params_file
    from realm_ros.nodes.digital_real_node import _renamed_params_files
    (tmp_path / 'digital_real.yaml').write_text('/**: {ros__parameters: {}}\n')
    old, new = str(tmp_path / 'fake_franka.yaml'), str(tmp_path / 'digital_real.yaml')
    assert cfg.renamed_file(new, 'x') == new
    assert cfg.renamed_file(str(tmp_path / 'other.yaml'), 'x') == str(tmp_path / 'other.yaml')
    assert capsys.readouterr().err == ''
    # The node's --params-file, and the launch arguments (new name, then the old one).
    assert _renamed_params_files(['digital_real', '--ros-args', '--params-file', old]) == [
        'digital_real', '--ros-args', '--params-file', new]
    assert digital_real_params_file(old) == new
    assert digital_real_params_file(new, old_path=old) == new
    err = capsys.readouterr().err
    assert len(_lines(err)) == 3, err  # file via --params-file, via the launch argument, its name
    assert "fake_franka_params_file' is deprecated; use 'digital_real_params_file'" in err


def test_old_executable_runs_the_digital_real(tmp_path):
    """``fake_franka`` is the same node: one deprecation line, then its own error and exit 2."""
    bad = tmp_path / 'dyn.yaml'
    bad.write_text('friction: [0.1, 0.2]\n')
    proc = subprocess.run([str(BIN / 'fake_franka'), '--dynamics', str(bad)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    (line,) = _lines(proc.stderr)
    assert "executable 'fake_franka' is deprecated; use 'digital_real'" in line
    assert 'DigitalRealDynamics.friction must have 7 values' in proc.stderr


def test_launch_files_accept_the_old_values():
    """``real_backend:=fake`` / ``backend:=fake`` pass launch's own choice check."""
    import ast
    import pathlib

    from launchchoices import launch_choices
    root = pathlib.Path(__file__).resolve().parents[2] / 'launch'
    for name, arg in (('paired_eval.launch.py', 'real_backend'), ('world.launch.py', 'backend')):
        tree = ast.parse((root / name).read_text())
        (call,) = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
                   and getattr(n.func, 'id', '') == 'DeclareLaunchArgument'
                   and n.args and getattr(n.args[0], 'value', None) == arg]
        choices = next(launch_choices(k.value, ast.literal_eval) for k in call.keywords
                       if k.arg == 'choices')
        assert {'digital_real', 'fake'} <= set(choices), (name, choices)


def test_digital_real_dynamics_extends_the_twins_parameters():
    """Declared once: the per-joint fields are DynamicsParams', checked and named the same."""
    hidden = cfg.DigitalRealDynamics(friction=(0.1,) * 7, latency_s=0.008)
    assert isinstance(hidden, cfg.DynamicsParams)
    assert hidden.joint_params() == cfg.DynamicsParams(friction=(0.1,) * 7)
    assert hidden.to_dict()['latency_s'] == 0.008 and hidden.to_dict()['friction'] == [0.1] * 7
    with pytest.raises(cfg.ConfigError, match=r'^DigitalRealDynamics\.armature must have 7'):
        cfg.DigitalRealDynamics(armature=(0.1,) * 6)
    with pytest.raises(cfg.ConfigError, match=r'DigitalRealDynamics\.latency_s must be a number '
                                              r'in \[0.0, 0.5\], got 0.6'):
        cfg.DigitalRealDynamics(latency_s=0.6)


def test_world_and_digital_real_share_their_physics_fields():
    shared = {f.name for f in dataclasses.fields(cfg.SimulationConfig)}
    for schema in (cfg.WorldConfig, cfg.DigitalRealConfig):
        assert shared <= {f.name for f in dataclasses.fields(schema)}
    assert cfg.WorldConfig().cameras == cfg.CAMERA_NAMES and cfg.DigitalRealConfig().cameras == ()
    world = cfg.DigitalRealConfig(control_hz=10.0, physics_hz=200.0, task='stack_cubes',
                                  cameras=('wrist',)).world_config()
    assert (world.backend, world.control_hz, world.physics_hz, world.task, world.cameras) == (
        'digital_real', 10.0, 200.0, 'stack_cubes', ('wrist',))
    assert cfg.DigitalRealConfig().world_config().camera_rate_hz == 0.0  # no cameras, no images
    for schema in (cfg.WorldConfig, cfg.DigitalRealConfig):
        with pytest.raises(cfg.ConfigError, match=rf'{schema.__name__}\.physics_hz must be a '):
            schema(physics_hz=100.0)
        with pytest.raises(cfg.ConfigError, match=rf'{schema.__name__}\.control_hz must be a '
                                                  r'number in \(0.0, 1000.0\]'):
            schema(control_hz=0.0)
    with pytest.raises(cfg.ConfigError, match=r'DigitalRealConfig\.camera_rate_hz .* Hz'):
        cfg.DigitalRealConfig(cameras=('wrist',), camera_rate_hz=0.0)
