"""Data paths that go one way (issue 44).

Camera calibration: a ``cameras record`` bag comes in through ``io/recordings.py`` as a
``core.recording.Recording``; ``backends/mujoco/calibration.py`` fits it and
``commands/cameras_calibration.py`` passes paths, reading no bag itself. A sweep resolves its
task names to ``TaskDef`` once, when its config is made, and its plan passes those down.
"""

import ast
import pathlib

import pytest

from realm_ros.core import perturbations, tasks
from realm_ros.core.recording import Recording
from realm_ros.core.sweep import SweepConfig, plan_cells, skipped_cells

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / 'realm_ros'


def _imported(path: pathlib.Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out |= {node.module} | {f'{node.module}.{a.name}' for a in node.names}
    return out


def test_the_calibration_command_reads_no_bag_itself():
    imported = _imported(PACKAGE / 'commands' / 'cameras_calibration.py')
    assert 'realm_ros.io.recordings.load_recording' in imported
    assert not {m for m in imported if m.startswith('rosbags')}, imported
    # It writes the recording through io (BagWriter); it reads none itself.
    assert 'read_run' not in (PACKAGE / 'commands' / 'cameras_calibration.py').read_text()


def test_the_recording_record_lives_below_its_readers_and_users():
    from realm_ros.backends.mujoco import calibration
    from realm_ros.io import recordings
    assert calibration.Recording is Recording and recordings.Recording is Recording
    assert 'class Recording' not in (PACKAGE / 'backends/mujoco/calibration.py').read_text()


def test_a_bag_without_images_is_a_data_error(tmp_path):
    from realm_ros.core.errors import DataError
    from realm_ros.io.recordings import load_recording
    with pytest.raises(DataError, match='cannot read bag'):
        load_recording(tmp_path / 'missing')


def test_a_sweep_plans_from_task_defs_resolved_once(monkeypatch):
    config = SweepConfig(tasks=('pick_spoon', 'push_switch'),
                         perturbations=('Default', 'V-SC'), worlds=('mujoco', 'physx'))
    assert [t.name for t in config.task_defs] == ['pick_spoon', 'push_switch']
    want_cells, want_skipped = plan_cells(config), skipped_cells(config)
    # No name is looked up again after the edge: the registry could be gone.
    monkeypatch.setattr(tasks, 'TASKS', {})
    assert plan_cells(config) == want_cells and skipped_cells(config) == want_skipped
    assert want_skipped and want_skipped[0]['task'] == 'push_switch'
    assert perturbations.skip_reason(config.task_defs[1], 'V-SC') == want_skipped[0]['reason']
