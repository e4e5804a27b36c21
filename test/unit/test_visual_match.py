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
    rng = np.random.default_rng(0)
    sim = rng.uniform(0, 255, (500, 3))
    m = np.array([[0.9, 0.05, 0.0], [0.02, 0.85, 0.03], [0.0, 0.08, 0.8], [0.03, 0.02, 0.05]])
    real = np.clip((np.c_[sim / 255, np.ones(500)] @ m) * 255, 0, 255)
    np.testing.assert_allclose(visual_match.fit_colour(sim, real), m, atol=1e-6)


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
