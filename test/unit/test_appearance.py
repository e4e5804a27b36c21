"""The digital real's hidden appearance: schema, sensor model, applied to MuJoCo, real | twin."""

import dataclasses
import pathlib

import numpy as np
import pytest

from realm_ros import cli
from realm_ros.backends.digital_real import DigitalRealWorld
from realm_ros.backends.mujoco import looks
from realm_ros.backends.mujoco.world import MujocoWorld
from realm_ros.core import appearance
from realm_ros.core.config import WorldConfig
from realm_ros.core.errors import ConfigError
from realm_ros.core.types import Action, ActionMode, EpisodeSpec

ROOT = pathlib.Path(__file__).resolve().parents[2]
LAB = ROOT / 'config' / 'appearance' / 'lab_demo.yaml'
SMALL = {'camera_width': 64, 'camera_height': 36}


@pytest.mark.parametrize('text, message', [
    ('colour: 1\n', "unknown key(s) ['colour']"),
    ('materials: {table: {rgb: [2, 0, 0]}}\n', 'materials.table.rgb'),
    ('materials: {desk: {rgb: [1, 0, 0]}}\n', "unknown key(s) ['desk']"),
    ('materials: {table: {rgb: [1, 0, 0], texture: marble}}\n', "texture = 'marble'"),
    ('light: {direction: [0, 0, 1]}\n', 'light.direction must point down'),
    ('sensor: {jpeg_quality: 101}\n', 'sensor.jpeg_quality'),
    ('sensor: {gamma: 0}\n', 'sensor.gamma'),
    ('clutter: [{shape: cone, pos: [0, 0, 0], size: [1]}]\n', "clutter[0].shape = 'cone'"),
    ('cameras: {top: {position: [0, 0, 1]}}\n', "unknown key(s) ['top']"),
])
def test_bad_appearance_names_the_field(tmp_path, text, message):
    path = tmp_path / 'bad.yaml'
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        appearance.Appearance.from_yaml(path)
    assert message in str(err.value) and str(path) in str(err.value)


def test_lab_demo_reads_and_every_camera_gets_a_sensor():
    lab = appearance.Appearance.from_yaml(LAB)
    assert set(lab.cameras) == {'exterior_1', 'exterior_2'}
    assert set(lab.materials) == {'table', 'floor', 'walls', 'robot'}
    assert lab.light is not None and lab.light.shadows
    assert len(lab.clutter) >= 3
    assert lab.sensor('wrist').jpeg_quality == 85


def test_sensor_model_is_seeded_and_the_default_is_the_identity():
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (24, 40, 3), dtype=np.uint8)
    np.testing.assert_array_equal(appearance.SensorModel().apply(image, (1,)), image)
    sensor = appearance.Appearance.from_yaml(LAB).sensor('exterior_1')
    a, b, c = (sensor.apply(image, s) for s in ((1, 2), (1, 2), (1, 3)))
    np.testing.assert_array_equal(a, b)
    assert np.any(a != c)
    # Exposure and white balance: warmer and brighter; vignetting: darker corners than centre.
    flat = np.full((36, 64, 3), 120, np.uint8)
    out = dataclasses.replace(sensor, noise_std=0.0, jpeg_quality=0).apply(flat, (0,))
    assert out[18, 32, 0] > out[18, 32, 2] and out[18, 32, 1] > 120
    assert out[0, 0].mean() < out[18, 32].mean() - 10


def test_jpeg_like_compression_loses_detail_but_keeps_the_picture():
    rng = np.random.default_rng(1)
    smooth = np.repeat(np.linspace(0, 255, 48)[None, :, None], 32, 0).repeat(3, 2)
    image = np.clip(smooth + rng.normal(0, 12, smooth.shape), 0, 255).astype(np.uint8)
    out = appearance.jpeg_like(image, 50)
    err = np.abs(out.astype(float) - image).mean()
    assert 1.0 < err < 12.0
    assert np.abs(appearance.jpeg_like(image, 100).astype(float) - image).mean() < err


def test_colour_temperature_runs_from_warm_to_blue():
    warm, white, blue = (appearance.colour_temperature_rgb(k) for k in (2700, 6600, 12000))
    assert warm[0] == 1.0 and warm[2] < 0.6
    assert min(white) > 0.95
    assert blue[2] == 1.0 and blue[0] < 0.85


def test_camera_offsets_move_by_the_asked_amount():
    from realm_ros.backends.mujoco import camera_rig
    from realm_ros.backends.mujoco.calibration import CameraPose

    entry = {'position': [0.55, 0.85, 0.5], 'look_at': [0.45, 0.0, 0.26], 'fovy_deg': 68.0}
    moved = appearance.camera_offsets(entry, np.random.default_rng(3), 0.02, 1.5, 1.0)
    a = CameraPose.from_spec(camera_rig.camera_from_entry('exterior_1', entry, 'a'))
    b = CameraPose.from_spec(camera_rig.camera_from_entry('exterior_1', moved, 'b'))
    dp, da, df = a.error_to(b)
    assert dp == pytest.approx(0.02, abs=1e-5) and df == pytest.approx(1.0)
    assert 0.3 < da <= 1.6  # the look-at form drops the roll part of the turn


def _pair(task='put_green_block_in_bowl', **config):
    cfg = WorldConfig(task=task, **SMALL, **config)
    real = DigitalRealWorld(dataclasses.replace(cfg, backend='digital_real',
                                                appearance_file=str(LAB)))
    twin = MujocoWorld(cfg)
    return real, twin


def test_digital_real_looks_like_its_lab_and_the_twin_does_not_read_it():
    lab = appearance.Appearance.from_yaml(LAB)
    real, twin = _pair()
    also_twin = MujocoWorld(WorldConfig(task='put_green_block_in_bowl', **SMALL,
                                        appearance_file=str(LAB)))
    again = DigitalRealWorld(dataclasses.replace(real.config, appearance_file=str(LAB)))
    try:
        spec = EpisodeSpec(task='put_green_block_in_bowl', seed=2)
        images = [w.reset(spec).images for w in (real, twin, also_twin, again)]
        for name in ('exterior_1', 'exterior_2', 'wrist'):
            r, t, t2, r2 = (dict(i)[name] for i in images)
            np.testing.assert_array_equal(r, r2)       # same seed, same picture
            np.testing.assert_array_equal(t, t2)       # the twin ignores appearance_file
            assert np.abs(r.astype(float) - t).mean() > 8.0, name
        # True camera poses: the appearance's exterior cameras, the rig's wrist.
        for name, entry in lab.cameras.items():
            cam = real.model.camera(name).id
            np.testing.assert_allclose(real.model.cam_pos[cam], entry['position'], atol=1e-9)
            assert real.camera_fovy(name) == pytest.approx(entry['fovy_deg'])
            assert np.linalg.norm(real.model.cam_pos[cam] - twin.model.cam_pos[cam]) > 0.01
        wrist = real.model.camera('wrist').id
        np.testing.assert_allclose(real.model.cam_pos[wrist], twin.model.cam_pos[wrist])
        assert real.model.ngeom == twin.model.ngeom + len(lab.clutter)
        assert bool(real.model.light_castshadow[real.model.light('key').id])
    finally:
        for w in (real, twin, also_twin, again):
            w.close()


def test_appearance_leaves_the_physics_unchanged():
    cfg = WorldConfig(task='put_green_block_in_bowl', **SMALL)
    plain = MujocoWorld(cfg)
    dressed = MujocoWorld(cfg, look=looks.look_for(appearance_file=str(LAB)))
    try:
        spec = EpisodeSpec(task='put_green_block_in_bowl', seed=0)
        for world in (plain, dressed):
            world.reset(spec)
            target = world.joint_state().position + 0.2
            for _ in range(15):
                world.apply(Action(arm=target, gripper=0.5, mode=ActionMode.POSITION))
                world.step()
        np.testing.assert_array_equal(plain.data.qpos, dressed.data.qpos)
    finally:
        plain.close()
        dressed.close()


def test_cameras_sheet_shows_real_beside_twin(tmp_path, capsys):
    out = tmp_path / 'sheet'
    assert cli.main(['cameras', '--task', 'put_green_block_in_bowl', '--out', str(out),
                     '--image-size', '64x36', '--appearance', str(LAB)]) == 0
    import imageio.v2 as imageio

    sheet = imageio.imread(out / 'contact_sheet.png')
    assert sheet.shape[:2] == (36, 6 * 64)  # real | twin for each of three cameras
    assert (out / 'put_green_block_in_bowl_exterior_1_real.png').is_file()
    text = capsys.readouterr().out
    assert 'real' in text and 'twin' in text


def test_cameras_without_out_or_with_a_bad_appearance_exit_2(tmp_path, capsys):
    assert cli.main(['cameras']) == 2
    assert '--out is required' in capsys.readouterr().err
    bad = tmp_path / 'bad.yaml'
    bad.write_text('sensor: {gamma: -1}\n')
    assert cli.main(['cameras', '--task', 'put_green_block_in_bowl', '--out',
                     str(tmp_path / 's'), '--image-size', '32x18', '--appearance',
                     str(bad)]) == 2
    assert 'sensor.gamma' in capsys.readouterr().err


def test_appearance_reaches_the_digital_real_node_and_visual_match_the_twin():
    from realm_ros.core.config import DigitalRealConfig
    from realm_ros.core.evaluation import EvalConfig
    from realm_ros.graph import paired_eval_graph

    assert DigitalRealConfig(appearance_file='/a.yaml').world_config().appearance_file == \
        '/a.yaml'
    specs = paired_eval_graph(EvalConfig(real_appearance_file='/a.yaml',
                                         visual_match_dir='/m'), 'out')
    params = {(s.namespace, s.name): s.parameters for s in specs}
    robot = next(p for (ns, name), p in params.items() if name == 'digital_real')
    assert robot['appearance_file'] == '/a.yaml'
    sim = [p for (ns, name), p in params.items() if name == 'world' and
           p.get('backend') == 'mujoco']
    assert len(sim) == 1 and sim[0]['visual_match_dir'] == '/m'
    assert all('visual_match_dir' not in p for (ns, name), p in params.items()
               if name == 'world' and p.get('backend') == 'franka')
