"""``realm-ros demo --vision`` end to end on a tiny configuration, and ``dataset --world``.

Real MuJoCo worlds (the digital real with its hidden appearance and dynamics, the twin), the
shipped real-trained checkpoints, 64x36 images, one seed and a few steps: the table's structure,
a column without its input reported as not available, resuming, and figures that come from the
episodes (the hidden appearance makes the image distance; without it the first frames agree).
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from realm_ros import cli, vision_demo
from realm_ros.core.errors import ConfigError

pytestmark = pytest.mark.slow

REPO = pathlib.Path(__file__).resolve().parents[2]
LADDER = [f'{s}=learned:path={REPO}/checkpoints/learned_real/{s}.pt' for s in ('early', 'final')]


def _demo(out: pathlib.Path, appearance: str) -> int:
    return cli.main(['demo', '--vision', '--out', str(out), '--tasks', 'push_switch',
                     '--episodes-per-cell', '1', '--max-steps', '3', '--image-size', '64x36',
                     '--columns', 'raw,calibrated,variants', '--rig',
                     str(REPO / 'config/cameras/droid.yaml'), '--appearance', appearance,
                     '--policies', *LADDER, '--quiet'])


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp('vision')
    assert _demo(root / 'lab', str(REPO / 'config/appearance/lab_demo.yaml')) == 0
    assert _demo(root / 'plain', 'none') == 0
    return root


def test_table_structure_and_unavailable_column(runs):
    summary = json.loads((runs / 'lab' / 'summary.json').read_text())
    assert summary['policies'] == ['early', 'final']
    assert list(summary['columns']) == ['raw', 'calibrated', 'variants']
    variants = summary['columns']['variants']
    assert variants['available'] is False and variants['reason'].startswith('not available')
    for name in ('raw', 'calibrated'):
        block = summary['columns'][name]['all']
        assert [p['policy'] for p in block['per_policy']] == ['early', 'final']
        assert set(block['agreement_ci']) == {'pearson_r', 'mmrv', 'mean_abs_gap'}
        assert 'pvalue' in block['per_policy'][0]['kruskal']
    table = (runs / 'lab' / 'table.md').read_text()
    for row in ('early: success / progression', 'Pearson r', 'MMRV', 'mean abs gap',
                'Kruskal-Wallis p', 'image distance exterior_1', 'image distance wrist'):
        assert row in table
    assert 'not available (no variant source in this tree)' in table
    for name in ('contact_sheet.png', 'image_distance.png'):
        assert (runs / 'lab' / name).stat().st_size > 1000


def test_image_distance_comes_from_the_episodes(runs):
    def distance(folder: str) -> float:
        summary = json.loads((runs / folder / 'summary.json').read_text())
        return summary['columns']['raw']['image_mae']['exterior_1']['mean']

    # Without the hidden appearance the digital real draws the twin's first frame (same seed,
    # same initial state); lab_demo's cameras, materials, light and sensor make the gap.
    assert distance('plain') < 1.0
    assert distance('lab') > 10.0
    rows = [json.loads(x) for x in (runs / 'lab' / 'episodes.jsonl').read_text().splitlines()]
    assert {r['column'] for r in rows} == {'real', 'raw', 'calibrated'}
    assert len(rows) == 2 * 3
    kept = np.mean([r['image_mae']['exterior_1'] for r in rows if r['column'] == 'raw'])
    assert kept == pytest.approx(distance('lab'))


def test_resume_runs_nothing_twice(runs):
    before = (runs / 'lab' / 'episodes.jsonl').read_text()
    assert _demo(runs / 'lab', str(REPO / 'config/appearance/lab_demo.yaml')) == 0
    assert (runs / 'lab' / 'episodes.jsonl').read_text() == before
    # Other settings on the same folder are refused, naming the field.
    assert cli.main(['demo', '--vision', '--out', str(runs / 'lab'), '--tasks', 'push_switch',
                     '--episodes-per-cell', '1', '--max-steps', '4', '--image-size', '64x36',
                     '--columns', 'raw', '--policies', *LADDER, '--quiet']) == 2


def test_columns_and_config_checked():
    assert vision_demo.column('c').name == 'matched'
    with pytest.raises(ConfigError, match='--columns'):
        vision_demo.column('nope')
    with pytest.raises(ConfigError, match='two policies'):
        vision_demo.VisionDemoConfig(tasks=('push_switch',), policies=('a=hold',), episodes=1,
                                     max_steps=1, width=64, height=36)


def test_dataset_on_the_digital_real(tmp_path):
    from realm_ros.io.lerobot import iter_episodes

    frames = {}
    for world in ('twin', 'digital_real'):
        out = tmp_path / world
        assert cli.main(['dataset', '--world', world, '--out', str(out), '--tasks',
                         'push_switch', '--episodes', '1', '--max-steps', '12', '--image-size',
                         '64x36', '--noise', '0', '--keep-failures', '--quiet']) == 0
        settings = json.loads((out / 'meta' / 'realm_run.json').read_text())
        assert settings['world'] == world
        assert bool(settings['appearance']) == (world == 'digital_real')
        frames[world] = next(iter_episodes(out, ['exterior_1'])).images['exterior_1'][0]
    gap = np.abs(frames['twin'].astype(float) - frames['digital_real'].astype(float)).mean()
    assert gap > 10.0  # recorded with the lab's cameras and look, not the twin's


@pytest.mark.parametrize('argv, message', [
    (['--world', 'franka'], 'scripted expert needs privileged'),
    (['--world', 'franka', '--demonstrator', 'hold', '--noise', '0.01'], 'noise must be 0'),
    (['--world', 'twin', '--appearance', 'x.yaml'], "the digital real's"),
    (['--world', 'digital_real', '--appearance', 'missing.yaml'], 'file not found'),
])
def test_dataset_world_refusals(tmp_path, capsys, argv, message):
    assert cli.main(['dataset', '--out', str(tmp_path / 'd'), '--tasks', 'push_switch',
                     *argv]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / 'd').exists()
