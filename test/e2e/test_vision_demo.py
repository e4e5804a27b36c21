"""``realm-ros demo --vision`` end to end on a tiny configuration, and ``dataset --world``.

Real MuJoCo worlds (the digital real with its hidden appearance and dynamics, the twin), the
shipped real-trained checkpoints, 64x36 images, one seed and a few steps: the table's structure,
a column without its input reported as not available, resuming, and figures that come from the
episodes (the hidden appearance makes the image distance; without it the first frames agree;
the variant-aggregation column averages its variants' episodes).
"""

from __future__ import annotations

import json
import pathlib
import shutil

import numpy as np
import pytest

from realm_ros import cli
from realm_ros.core.errors import ConfigError
from realm_ros.programs import vision_demo

pytestmark = pytest.mark.slow

REPO = pathlib.Path(__file__).resolve().parents[2]
LADDER = [f'{s}=learned:path={REPO}/checkpoints/learned_real/{s}.pt' for s in ('early', 'final')]


LAB = str(REPO / 'config/appearance/lab_demo.yaml')


def _demo(out: pathlib.Path, appearance: str, variants: int = 2, seed: int = 0) -> int:
    return cli.main(['demo', '--vision', '--out', str(out), '--tasks', 'push_switch',
                     '--episodes-per-cell', '1', '--max-steps', '3', '--image-size', '64x36',
                     '--columns', 'raw,calibrated,variants', '--rig',
                     str(REPO / 'config/cameras/droid.yaml'), '--appearance', appearance,
                     '--variants', str(variants), '--seed', str(seed),
                     '--policies', *LADDER, '--quiet'])


def _rebuilt_demo(out: pathlib.Path, *extra: str) -> int:
    # A tiny calibration recording (refused without --weak-calibration); DROID's rig fits the
    # lab's cameras 2-3 cm off well enough for a rebuild (docs/visual-matching.md).
    return cli.main(['demo', '--vision', '--out', str(out), '--tasks', 'push_switch',
                     '--episodes-per-cell', '1', '--max-steps', '3', '--image-size', '64x36',
                     '--columns', 'raw,rebuilt', '--rig', str(REPO / 'config/cameras/droid.yaml'),
                     '--calibration-size', '160x90', '--calibration-poses', '6',
                     '--policies', *LADDER, '--quiet', *extra])


def _rows(folder: pathlib.Path) -> list[dict]:
    return [json.loads(x) for x in (folder / 'episodes.jsonl').read_text().splitlines()]


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp('vision')
    assert _demo(root / 'lab', LAB) == 0
    assert _demo(root / 'plain', 'none', variants=0) == 0
    return root


def test_table_structure_and_unavailable_column(runs):
    summary = json.loads((runs / 'lab' / 'summary.json').read_text())
    assert summary['policies'] == ['early', 'final']
    assert list(summary['columns']) == ['raw', 'calibrated', 'variants']
    plain = json.loads((runs / 'plain' / 'summary.json').read_text())['columns']['variants']
    assert plain['available'] is False
    assert plain['reason'] == 'not available (no variants asked (--variants 0))'
    for name in ('raw', 'calibrated', 'variants'):
        block = summary['columns'][name]['all']
        assert [p['policy'] for p in block['per_policy']] == ['early', 'final']
        assert set(block['agreement_ci']) == {'pearson_r', 'mmrv', 'mean_abs_gap'}
        assert 'pvalue' in block['per_policy'][0]['kruskal']
    table = (runs / 'lab' / 'table.md').read_text()
    for row in ('early: success / progression', 'Pearson r', 'MMRV', 'mean \\|gap\\|',
                'Kruskal-Wallis p', 'image distance exterior_1', 'image distance wrist'):
        assert row in table
    assert '(d) variant aggregation' in table and 'not available' not in table
    for name in ('contact_sheet.png', 'image_distance.png'):
        assert (runs / 'lab' / name).stat().st_size > 1000


def test_variant_aggregation_comes_from_its_episodes(runs):
    summary = json.loads((runs / 'lab' / 'summary.json').read_text())
    column = summary['columns']['variants']
    assert column['available'] is True and column['worlds'] == 2
    assert column['variants'] == ['variant_0', 'variant_1_background']
    rows = {(r['policy'], r['variant']): r for r in _rows(runs / 'lab')
            if r['column'] == 'variants'}
    assert sorted(rows) == [('early', 0), ('early', 1), ('final', 0), ('final', 1)]
    calibrated = {r['policy']: r for r in _rows(runs / 'lab') if r['column'] == 'calibrated'}
    for k, policy in enumerate(('early', 'final')):
        mine = [rows[(policy, v)] for v in (0, 1)]
        entry = column['all']['per_policy'][k]
        assert entry['sim_progress'] == pytest.approx(np.mean([r['progression'] for r in mine]))
        assert column['per_variant'][policy] == [r['progression'] for r in mine]
        # Variant 0 is the calibrated twin's own look; variant 1 repaints walls and floor.
        v0, v1 = (r['image_mae']['exterior_1'] for r in mine)
        assert v0 == pytest.approx(calibrated[policy]['image_mae']['exterior_1'])
        assert abs(v1 - v0) > 0.5
    # The column's image distance: per episode the mean over its variants, then over episodes.
    expected = np.mean([np.mean([rows[(p, v)]['image_mae']['exterior_1'] for v in (0, 1)])
                        for p in ('early', 'final')])
    assert column['image_mae']['exterior_1']['mean'] == pytest.approx(expected)
    assert column['image_mae']['exterior_1']['frames'] == 4


def test_more_variants_resume_and_other_variant_seed_refused(runs, tmp_path):
    folder = tmp_path / 'more'
    shutil.copytree(runs / 'lab', folder)
    before = _rows(folder)
    assert _demo(folder, LAB, variants=3) == 0
    after = _rows(folder)
    assert after[:len(before)] == before  # nothing run again
    assert sorted((r['column'], r['variant']) for r in after[len(before):]) == [
        ('variants', 2), ('variants', 2)]
    summary = json.loads((folder / 'summary.json').read_text())
    assert summary['columns']['variants']['worlds'] == 3
    # The variants' looks come from --seed: another seed on the same folder is refused.
    assert _demo(folder, LAB, variants=3, seed=1) == 2


def test_image_distance_comes_from_the_episodes(runs):
    def distance(folder: str) -> float:
        summary = json.loads((runs / folder / 'summary.json').read_text())
        return summary['columns']['raw']['image_mae']['exterior_1']['mean']

    # Without the hidden appearance the digital real draws the twin's first frame (same seed,
    # same initial state); lab_demo's cameras, materials, light and sensor make the gap.
    assert distance('plain') < 1.0
    assert distance('lab') > 10.0
    rows = _rows(runs / 'lab')
    assert {r['column'] for r in rows} == {'real', 'raw', 'calibrated', 'variants'}
    assert len(rows) == 2 * 5  # per policy: real, raw, calibrated, two variants
    kept = np.mean([r['image_mae']['exterior_1'] for r in rows if r['column'] == 'raw'])
    assert kept == pytest.approx(distance('lab'))


def test_resume_runs_nothing_twice(runs):
    before = (runs / 'lab' / 'episodes.jsonl').read_text()
    assert _demo(runs / 'lab', LAB) == 0
    assert (runs / 'lab' / 'episodes.jsonl').read_text() == before
    # Other settings on the same folder are refused, naming the field.
    assert cli.main(['demo', '--vision', '--out', str(runs / 'lab'), '--tasks', 'push_switch',
                     '--episodes-per-cell', '1', '--max-steps', '4', '--image-size', '64x36',
                     '--columns', 'raw', '--policies', *LADDER, '--quiet']) == 2


def test_columns_and_config_checked(tmp_path):
    assert vision_demo.column('c').name == 'matched'
    # (g): the rebuilt look with the identified parameters; available once rebuild.yaml is.
    inputs = vision_demo.Inputs(params_file='params.yaml', rebuild=str(tmp_path))
    base = vision_demo.VisionDemoConfig(tasks=('push_switch',), policies=('a=hold', 'b=hold'),
                                        episodes=1, max_steps=1, width=64, height=36
                                        ).base('push_switch')
    assert vision_demo.column('g').missing(inputs) == [vision_demo.REBUILD]
    (tmp_path / 'rebuild.yaml').write_text('{}\n')
    assert vision_demo.column('rebuilt_sysid').missing(inputs) == []
    (twin,) = vision_demo.column('g').worlds(base, inputs)
    assert (twin.config.visual_match_dir, twin.config.sim_params_file) == (
        str(tmp_path), 'params.yaml')
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


@pytest.fixture(scope='module')
def rebuilt(tmp_path_factory):
    out = tmp_path_factory.mktemp('rebuilt') / 'demo'
    assert _rebuilt_demo(out, '--weak-calibration') == 0
    return out


def test_the_pipeline_rebuilds_the_look_and_column_f_runs(rebuilt):
    made = rebuilt / 'calibration' / 'rebuild'
    assert (made / 'rebuild.yaml').is_file()
    assert json.loads((made / 'inputs.json').read_text())['recording']['poses'] == 6
    summary = json.loads((rebuilt / 'summary.json').read_text())['columns']
    assert summary['rebuilt']['available'] is True
    raw, ours = summary['raw']['image_mae'], summary['rebuilt']['image_mae']
    # Every camera, exterior_2 included (rendered for the first frame only); the rebuilt look
    # paints the lab's table into the wrist camera, which matching cannot.
    assert set(raw) == set(ours) == {'exterior_1', 'exterior_2', 'wrist'}
    assert ours['wrist']['mean'] < 0.5 * raw['wrist']['mean']
    assert ours['exterior_2']['mean'] < 0.5 * raw['exterior_2']['mean']
    # Split by region; the whole image's error is the pixel-weighted mean of the regions'.
    row = next(r for r in _rows(rebuilt) if r['column'] == 'rebuilt')
    for camera, split in row['image_mae_regions'].items():
        assert split['image'] == pytest.approx(row['image_mae'][camera])
        assert set(split) <= {'image', 'robot', 'objects', 'background'}
        assert min(split.values()) <= split['image'] <= max(split.values())
    assert 'image distance wrist background' in (rebuilt / 'table.md').read_text()
    assert set(summary['rebuilt']['image_mae_regions']) >= {
        'wrist robot', 'wrist background', 'exterior_2 robot'}


def test_rebuild_resumes_and_calibration_bounds_refused(rebuilt, capsys):
    stamp = (rebuilt / 'calibration' / 'rebuild' / 'rebuild.yaml').stat().st_mtime_ns
    before = (rebuilt / 'episodes.jsonl').read_text()
    assert _rebuilt_demo(rebuilt, '--weak-calibration') == 0
    assert (rebuilt / 'calibration' / 'rebuild' / 'rebuild.yaml').stat().st_mtime_ns == stamp
    assert (rebuilt / 'episodes.jsonl').read_text() == before
    capsys.readouterr()
    # Below 640x360 / 36 poses without --weak-calibration: one line naming both, exit 2.
    assert _rebuilt_demo(rebuilt) == 2
    err = capsys.readouterr().err.strip()
    assert '--calibration-size 160x90 --calibration-poses 6' in err and '640x360' in err
    assert len(err.splitlines()) == 1
    # Another recording on the same folder is refused (its rig, match, rebuild were not
    # made from it).
    assert _rebuilt_demo(rebuilt, '--weak-calibration', '--calibration-poses', '7') == 2
    assert 'recorded with other settings' in capsys.readouterr().err


def test_until_decided_allocates_the_real_side_and_resumes(tmp_path):
    """``--until-decided``: the digital real's episodes chosen by the rule (both rungs score 0
    in 3 steps, so nothing is decided and the budget, the fixed design's 6, is spent), the
    twin on the same starts; a run killed part-way resumes with the same command, every
    episode once."""
    out = tmp_path / 'decided'
    argv = ['demo', '--vision', '--out', str(out), '--tasks', 'push_switch',
            '--episodes-per-cell', '3', '--max-steps', '3', '--image-size', '64x36',
            '--columns', 'raw', '--rig', str(REPO / 'config/cameras/droid.yaml'),
            '--until-decided', '0.9', '--policies', *LADDER, '--quiet']
    assert cli.main(argv) == 0
    rows = _rows(out)
    starts = json.loads((out / 'summary.json').read_text())['allocated']['starts']
    real = sorted((r['task'], r['policy'], r['seed']) for r in rows if r['column'] == 'real')
    assert real == sorted(tuple(s) for s in starts) and len(real) == 6
    assert sorted((r['task'], r['policy'], r['seed']) for r in rows if r['column'] == 'raw') \
        == real
    assert "against the fixed design's 6" in (out / 'table.md').read_text()
    lines = (out / 'episodes.jsonl').read_text().splitlines()
    (out / 'episodes.jsonl').write_text('\n'.join(lines[:5]) + '\n{"cut by a ki')
    assert cli.main(argv) == 0
    again = []
    for line in (out / 'episodes.jsonl').read_text().splitlines():
        if line.startswith('{"cut'):
            continue  # the line the kill cut: skipped on reading, its episode run again
        again.append(json.loads(line))
    key = vision_demo.EpisodeStore.key
    assert sorted(map(key, again)) == sorted(map(key, rows)) and len(again) == len(rows)
    assert [r['progression'] for r in sorted(again, key=key)] == \
        [r['progression'] for r in sorted(rows, key=key)]
