"""Visual matching: robot and objects from simulation, every other pixel from the plate."""

import pathlib
import shutil

import imageio.v2 as imageio
import numpy as np
import pytest
import yaml

from realm_ros import cli
from realm_ros.backends.mujoco import visual_match
from realm_ros.backends.mujoco.render import FrameRenderer
from realm_ros.backends.mujoco.world import MujocoWorld
from realm_ros.core.config import WorldConfig
from realm_ros.core.errors import ConfigError
from realm_ros.core.types import EpisodeSpec

ROOT = pathlib.Path(__file__).resolve().parents[2]
TASK = 'put_green_block_in_bowl'
W, H = 80, 44
IDENTITY = [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0]]
SWAP_RB = [[0, 0, 1], [0, 1, 0], [1, 0, 0], [0, 0, 0]]
MAGENTA = (255, 0, 255)


def _match_dir(tmp_path, colour=IDENTITY, name='match'):
    folder = tmp_path / name
    folder.mkdir()
    shutil.copy(ROOT / 'config' / 'cameras' / 'droid.yaml', folder / 'rig.yaml')
    cams = {}
    for cam in ('exterior_1', 'exterior_2'):
        plate = np.zeros((H, W, 3), np.uint8)
        plate[:] = MAGENTA
        imageio.imwrite(folder / f'{cam}_plate.png', plate)
        cams[cam] = {'plate': f'{cam}_plate.png', 'colour': colour}
    cams['wrist'] = {'colour': colour}
    (folder / 'match.yaml').write_text(yaml.safe_dump({'size': [W, H], 'cameras': cams}))
    return folder


def _world(folder='', **kwargs):
    world = MujocoWorld(WorldConfig(task=TASK, camera_width=W, camera_height=H),
                        visual_match_dir=str(folder), **kwargs)
    return world


def _kept(world):
    renderer = FrameRenderer(world.model, W, H, shadows=False)
    try:
        segs = renderer.render(world.data, ('exterior_1', 'exterior_2'), segmentation=True)
    finally:
        renderer.close()
    keep = visual_match.kept_geoms(world.model)
    return {name: visual_match.seg_mask(seg, keep) for name, seg in segs.items()}


def test_composite_draws_robot_and_objects_from_sim_and_the_rest_from_the_plate(tmp_path):
    plain, matched, again = _world(), _world(_match_dir(tmp_path)), _world(tmp_path / 'match')
    try:
        spec = EpisodeSpec(task=TASK, seed=3)
        base, got, same = (dict(w.reset(spec).images) for w in (plain, matched, again))
        kept = _kept(plain)
        objects = visual_match.kept_geoms(plain.model) & ~visual_match.robot_geoms(plain.model)
        for name, keep in kept.items():
            assert 0.02 < keep.mean() < 0.6, name
            np.testing.assert_array_equal(got[name][keep], base[name][keep])
            assert np.all(got[name][~keep] == MAGENTA), name
            np.testing.assert_array_equal(got[name], same[name])  # same seed, same picture
        # The task's objects are among the simulated pixels of some exterior camera.
        renderer = FrameRenderer(plain.model, W, H, shadows=False)
        try:
            segs = renderer.render(plain.data, ('exterior_1', 'exterior_2'), segmentation=True)
        finally:
            renderer.close()
        assert sum(visual_match.seg_mask(s, objects).sum() for s in segs.values()) > 5
        # The wrist camera moves: colour matching only (identity here), no plate.
        np.testing.assert_array_equal(got['wrist'], base['wrist'])
        # The matched twin renders from the folder's rig.
        assert matched.look.calibrated.source.endswith('rig.yaml')
    finally:
        for w in (plain, matched, again):
            w.close()


def test_colour_transform_applies_to_simulated_pixels(tmp_path):
    plain, matched = _world(), _world(_match_dir(tmp_path, SWAP_RB))
    try:
        spec = EpisodeSpec(task=TASK, seed=3)
        base, got = (dict(w.reset(spec).images) for w in (plain, matched))
        renderer = FrameRenderer(plain.model, W, H, shadows=False)
        try:
            segs = renderer.render(plain.data, ('exterior_1', 'wrist'), segmentation=True)
        finally:
            renderer.close()
        robot = visual_match.robot_geoms(plain.model)
        for name in ('exterior_1', 'wrist'):
            arm = visual_match.seg_mask(segs[name], robot)
            assert arm.sum() > 20, name
            # The robot's pixels through the transform; the objects keep the twin's colours.
            np.testing.assert_allclose(got[name][arm].astype(int),
                                       base[name][arm][:, ::-1].astype(int), atol=1)
        keep = _kept(plain)['exterior_1'] & ~visual_match.seg_mask(segs['exterior_1'], robot)
        assert keep.sum() > 5
        np.testing.assert_array_equal(got['exterior_1'][keep], base['exterior_1'][keep])
        wrist_rest = ~visual_match.seg_mask(segs['wrist'], robot)
        np.testing.assert_array_equal(got['wrist'][wrist_rest], base['wrist'][wrist_rest])
    finally:
        plain.close()
        matched.close()


def test_v_light_on_a_matched_twin_changes_the_simulated_pixels_only(tmp_path):
    world = _world(_match_dir(tmp_path))
    try:
        default = dict(world.reset(EpisodeSpec(task=TASK, seed=3)).images)['exterior_1']
        keep = _kept(world)['exterior_1']
        lit = dict(world.reset(EpisodeSpec(task=TASK, seed=3, perturbation='V-LIGHT')).images)
        lit = lit['exterior_1']
        assert np.abs(lit[keep].astype(float) - default[keep]).mean() > 3.0
        np.testing.assert_array_equal(lit[~keep], default[~keep])
    finally:
        world.close()


def test_colour_fit_recovers_a_known_transform():
    # Colours spread over the whole cube pin every coefficient: the ridge toward the identity
    # (visual_match.COLOUR_RIDGE) moves them by under 0.02.
    rng = np.random.default_rng(0)
    sim = rng.uniform(0, 255, (500, 3))
    m = np.array([[0.9, 0.05, 0.0], [0.02, 0.85, 0.03], [0.0, 0.08, 0.8], [0.03, 0.02, 0.05]])
    real = np.clip((np.c_[sim / 255, np.ones(500)] @ m) * 255, 0, 255)
    np.testing.assert_allclose(visual_match.fit_colour(sim, real), m, atol=0.02)


@pytest.mark.parametrize('content, message', [
    (None, 'no match.yaml'),
    ({'cameras': {'exterior_1': {'colour': [1, 2]}}}, 'cameras.exterior_1.colour'),
    ({'cameras': {'exterior_1': {'colour': IDENTITY, 'plate': 'nope.png'}}}, 'cannot read plate'),
])
def test_bad_match_folder_names_what_is_wrong(tmp_path, content, message):
    shutil.copy(ROOT / 'config' / 'cameras' / 'droid.yaml', tmp_path / 'rig.yaml')
    if content is not None:
        (tmp_path / 'match.yaml').write_text(yaml.safe_dump(content))
    with pytest.raises(ConfigError, match=message):
        visual_match.VisualMatchLook.load(tmp_path)


def test_episode_takes_visual_match_and_refuses_a_missing_folder(tmp_path, capsys):
    folder = _match_dir(tmp_path)
    assert cli.main(['episode', '--task', TASK, '--max-steps', '3', '--visual-match',
                     str(folder), '--video', str(tmp_path / 'v.mp4'), '--image-size',
                     f'{W}x{H}', '--json']) == 0
    assert (tmp_path / 'v.mp4').stat().st_size > 0
    capsys.readouterr()
    assert cli.main(['episode', '--task', TASK, '--visual-match', str(tmp_path / 'nope')]) == 2
    assert 'folder not found' in capsys.readouterr().err


# -- variant aggregation (SIMPLER's VA) and the sweep's looked worlds ------------------------


def test_variants_change_one_axis_each_and_keep_the_physics():
    from realm_ros.core.appearance import VariantSet
    from realm_ros.core.evaluation import PolicyEntry
    from realm_ros.core.sweep import Cell
    from realm_ros.sweep.runner import make_looked_world

    variants = VariantSet(5, seed=3)
    assert [variants.axis(k) for k in range(5)] == ['', 'background', 'lighting', 'table',
                                                    'distractors']
    assert variants.mapping(4) == VariantSet(5, seed=3).mapping(4)
    assert variants.mapping(1) != VariantSet(5, seed=4).mapping(1)
    with pytest.raises(ConfigError, match='>= 1'):
        VariantSet(0)
    spec = EpisodeSpec(task=TASK, seed=2, max_steps=5)
    entry = PolicyEntry.parse('scripted:0')
    frames, qpos = {}, {}
    for k in range(5):
        world = make_looked_world(Cell(world=variants.name(k), entry=entry, spec=spec,
                                       cameras=('exterior_1',), variant=(k, 5, 3)))
        try:
            world.reset(spec)
            frames[k] = world.render()['exterior_1']
            qpos[k] = world.data.qpos.copy()
        finally:
            world.close()
    for k in range(1, 5):  # every variant looks different, moves the same
        changed = np.abs(frames[k].astype(int) - frames[0]).sum(-1) > 30
        assert changed.mean() > 0.003, variants.name(k)
        np.testing.assert_array_equal(qpos[k], qpos[0])


def test_variant_aggregation_averages_per_variant_scores():
    from realm_ros.core.appearance import VariantSet
    from realm_ros.sweep.variants import aggregate

    variants = VariantSet(3)

    def rec(policy, k, progression):
        return {'policy': policy, 'role': variants.name(k), 'progression': progression,
                'success': progression >= 1.0, 'outcome': 'success', 'pair_id': 'x'}

    records = [rec('a', 0, 1.0), rec('a', 1, 0.5), rec('a', 1, 0.0), rec('a', 2, 1.0),
               rec('b', 0, 0.2), rec('b', 1, 0.2), rec('b', 2, 0.2),
               {**rec('b', 2, 0.0), 'outcome': 'infra_failure'}]
    out = aggregate(records, variants, real={'a': 0.9, 'b': 0.1})
    a, b = out['per_policy']
    assert a['progress'] == pytest.approx((1.0 + 0.25 + 1.0) / 3)
    assert a['progress_spread'] == pytest.approx(0.75)
    assert b['progress'] == pytest.approx(0.2) and out['infra_failures'] == 1
    assert out['agreement']['mmrv'] == 0.0


@pytest.mark.slow
def test_sweep_runs_the_variants_world_and_paired_eval_va_on_a_small_plan(tmp_path):
    import json

    from realm_ros.core.appearance import VariantSet
    from realm_ros.core.evaluation import EvalConfig
    from realm_ros.sweep.variants import run_variant_aggregation

    out = tmp_path / 'sweep'
    assert cli.main(['sweep', '--out', str(out), '--tasks', TASK, '--policies', 'scripted:0',
                     '--episodes-per-cell', '2', '--max-steps', '15', '--worlds', 'mujoco',
                     'variants', '--twin-variants', '2', '--quiet']) == 0
    summary = json.loads((out / 'summary.json').read_text())
    assert summary['worlds'] == ['mujoco', 'variants']
    assert summary['per_world']['variants']['episodes'] == 2
    # The scripted ladder reads state, not pixels: the same scores on every look.
    assert (summary['per_world']['variants']['per_policy'][0]['progress']
            == summary['per_world']['mujoco']['per_policy'][0]['progress'])
    config = EvalConfig(tasks=(TASK,), policies=('scripted:0',), episodes_per_cell=1,
                        max_steps=15)
    section = run_variant_aggregation(config, VariantSet(2), tmp_path / 'pe')
    assert section['per_policy'][0]['variants'] == 2
    lines = (tmp_path / 'pe' / 'variants' / 'episodes.jsonl').read_text().splitlines()
    assert {json.loads(x)['role'] for x in lines} == {'variant_0', 'variant_1_background'}
    run_variant_aggregation(config, VariantSet(2), tmp_path / 'pe')  # resumes: nothing new
    assert len((tmp_path / 'pe' / 'variants' / 'episodes.jsonl').read_text().splitlines()) == 2
    # paired-eval's step after the pairs: the section in summary.json and the report, beside
    # the twin (here the pairs are variant 0's episodes in both roles).
    from realm_ros.commands.paired_eval import variant_aggregation
    from realm_ros.core.evaluation import summarize
    from realm_ros.programs.report import write_report

    first = json.loads(lines[0])
    pairs = [{**first, 'role': role, 'world': role} for role in ('real', 'sim')]
    summary = summarize(pairs)
    write_report(tmp_path / 'pe', summary)  # the evaluator's report, before the variants
    section = variant_aggregation(config, VariantSet(2), tmp_path / 'pe', summary, quiet=True)
    variant_aggregation(config, VariantSet(2), tmp_path / 'pe', summary, quiet=True)  # again
    written = json.loads((tmp_path / 'pe' / 'summary.json').read_text())
    assert written['variant_aggregation']['per_policy'] == section['per_policy']
    html = (tmp_path / 'pe' / 'report.html').read_text()
    assert html.count('<h2>Variant aggregation</h2>') == 1  # once, however often it runs
    assert html.index('Variant aggregation') < html.index('Bradley-Terry')
    assert cli.main(['sweep', '--out', str(tmp_path / 'bad'), '--worlds', 'matched']) == 2
