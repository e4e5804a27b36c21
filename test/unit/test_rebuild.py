"""The rebuilt look (``cameras rebuild``): textures on the twin's planes, the key light from the
arm's shadow, every camera closer to the lab's picture, and bad input named."""

import pathlib

import mujoco
import numpy as np
import pytest
import yaml

from realm_ros import cli
from realm_ros.backends.mujoco import rebuild, rebuilding, visual_match
from realm_ros.core.appearance import Appearance
from realm_ros.core.recording import Recording
from realm_ros.io.recordings import load_recording

ROOT = pathlib.Path(__file__).resolve().parents[2]
LAB = ROOT / 'config' / 'appearance' / 'lab_demo.yaml'


def test_surface_texels_follow_mujocos_plane_mapping():
    """Row 0 of a plane's texture lies at its +y edge, column 0 at -x (what ``texels`` and the
    look's ray casting assume)."""
    surface = rebuild.Surface('t', 'wall', (0.0, 0.0, 0.0), (1, 0, 0), (0, 1, 0), (0.5, 0.25))
    xml = f"""<mujoco><visual><headlight ambient="1 1 1" diffuse="0 0 0"/></visual><asset>
      <texture name="rebuilt_t" type="2d" builtin="flat" rgb1="1 1 1" width="100"
               height="50"/>
      <material name="rebuilt_t" texture="rebuilt_t" texrepeat="1 1" texuniform="false"/>
      </asset><default><default class="visual"><geom/></default></default><worldbody>
      {surface.xml()}<camera name="c" pos="0 0 2" xyaxes="1 0 0 0 1 0" fovy="30"/>
      </worldbody></mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    rows, cols = surface.shape
    texture = np.zeros((rows, cols, 3), np.uint8)
    texture[: rows // 2, : cols // 2] = (255, 0, 0)   # row 0 side, column 0 side: red
    texture[rows // 2:, cols // 2:] = (0, 0, 255)
    adr = int(model.tex_adr[0])
    model.tex_data[adr:adr + texture.size] = texture.reshape(-1)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    with mujoco.Renderer(model, 200, 200) as renderer:
        renderer.update_scene(data, 'c')
        image = renderer.render()
    texels = surface.texels().reshape(rows, cols, 3)
    assert texels[0, 0, 0] < 0 < texels[0, 0, 1]  # -x, +y
    # Image up is +y, right is +x: red top-left, blue bottom-right.
    assert image[70, 50, 0] > 200 > image[70, 50, 2]
    assert image[130, 150, 2] > 200 > image[130, 150, 0]


def test_colour_fit_is_well_conditioned_on_nearly_grey_pixels():
    """A white arm's pixels span one colour direction: plain least squares made red and green
    rows equal and coefficients of -2.5 to 7.9; the ridge keeps the map near the identity there
    and never does worse than no transform on pixels it was not fitted on."""
    rng = np.random.default_rng(1)
    grey = rng.uniform(40, 230, (4000, 1))
    sim = np.clip(grey + rng.normal(0, 0.2, (4000, 3)), 0, 255)
    real = np.clip(sim * [1.05, 0.98, 0.9] + 6 + rng.normal(0, 4, (4000, 3)), 0, 255)
    m = visual_match.fit_colour(sim, real)
    plain, *_ = np.linalg.lstsq(np.c_[sim / 255, np.ones(len(sim))], real / 255, rcond=None)
    assert np.abs(plain[:3] - np.eye(3)).max() > 0.3  # the plain fit wanders off
    assert np.abs(m[:3] - np.eye(3)).max() < 0.1
    # A saturated colour (an object) goes where the true map takes it, not where the plain
    # fit extrapolates (it clipped this green to 0, 255, 29).
    green = visual_match.apply_colour(np.array([[[30, 200, 40]]], np.uint8), m)[0, 0]
    np.testing.assert_allclose(green, [30 * 1.05 + 6, 200 * 0.98 + 6, 40 * 0.9 + 6], atol=8)
    held = np.clip(rng.uniform(40, 230, (500, 1)) + rng.normal(0, 1.5, (500, 3)), 0, 255)
    truth = np.clip(held * [1.05, 0.98, 0.9] + 6, 0, 255)
    fitted = np.abs(visual_match.apply_colour(held[None].astype(np.uint8), m)[0] - truth).mean()
    assert fitted < np.abs(held - truth).mean()


def test_colour_fit_falls_back_to_identity_when_nothing_is_to_gain():
    rng = np.random.default_rng(2)
    sim = rng.uniform(0, 255, (300, 3))
    real = np.clip(sim + rng.normal(0, 8, sim.shape), 0, 255)
    m = visual_match.fit_colour(sim, real)
    assert np.abs(m - np.vstack([np.eye(3), np.zeros((1, 3))])).max() < 0.05


@pytest.fixture(scope='module')
def small(tmp_path_factory):
    """A `cameras record` bag of lab_demo (320x180, 8 poses) and the lab's true cameras as the
    calibrated rig (calibrating takes minutes; test_calibration holds calibration to its
    bounds), rebuilt."""
    folder = tmp_path_factory.mktemp('rebuild')
    bag = folder / 'bag'
    assert cli.main(['cameras', 'record', '--appearance', str(LAB), '--out', str(bag),
                     '--image-size', '320x180', '--poses', '8']) == 0
    rig = yaml.safe_load((ROOT / 'config' / 'cameras' / 'droid.yaml').read_text())
    for name, entry in Appearance.from_yaml(LAB).cameras.items():
        rig['cameras'][name] = {'parent': 'world', **entry}
    rig_file = folder / 'rig.yaml'
    rig_file.write_text(yaml.safe_dump(rig))
    out = folder / 'rebuilt'
    assert cli.main(['cameras', 'rebuild', str(bag), '--rig', str(rig_file), '--out',
                     str(out)]) == 0
    return bag, rig_file, out


def test_rebuild_finds_the_light_and_brings_every_camera_closer(small):
    import sys

    sys.path.insert(0, str(ROOT / 'bench'))
    from bench_visual_match import image_distances

    from realm_ros.backends.mujoco.looks import look_for

    bag, rig_file, out = small
    assert (out / 'match.yaml').is_file()  # what --visual-match checks for
    assert isinstance(look_for(visual_match_dir=str(out)), rebuild.RebuiltLook)
    content = yaml.safe_load((out / 'rebuild.yaml').read_text())
    assert content['surfaces']['table']['unseen_fraction'] < 0.1
    light = content['light']
    assert light['estimated']
    # lab_demo's key light: direction (0.35, -0.3, -1) onto the table's centre from 1.8 m up.
    truth = np.array([0.45 - 0.35 * 1.8, 0.3 * 1.8, 1.8])
    assert np.linalg.norm(np.asarray(light['position']) - truth) < 0.3
    assert 3800 <= light['colour_temperature_k'] <= 6500  # lab_demo: 4800 K
    frames, _ = image_distances(str(LAB), {'rebuilt': str(out)}, 'put_green_block_in_bowl',
                                [0], (160, 90))
    for camera, bound in (('wrist', 0.5), ('exterior_1', 0.3), ('exterior_2', 0.3)):
        raw = frames[(camera, 'twin', 'image')][0]
        rebuilt = frames[(camera, 'rebuilt', 'image')][0]
        assert rebuilt < bound * raw, (camera, raw, rebuilt)
    assert frames[('wrist', 'rebuilt', 'background')][0] < 0.5 * frames[
        ('wrist', 'twin', 'background')][0]


def test_rebuild_names_bad_input(small, tmp_path, capsys):
    bag, rig_file, _ = small
    assert cli.main(['cameras', 'rebuild', str(bag), '--out', str(tmp_path / 'a')]) == 2
    assert 'no --rig' in capsys.readouterr().err
    far = yaml.safe_load(rig_file.read_text())
    far['cameras']['exterior_1'].update(position=[0.3, 0.6, 0.7])
    far['cameras']['exterior_2'].update(position=[0.8, -0.6, 0.35])
    far_file = tmp_path / 'far.yaml'
    far_file.write_text(yaml.safe_dump(far))
    assert cli.main(['cameras', 'rebuild', str(bag), '--rig', str(far_file), '--out',
                     str(tmp_path / 'b')]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if 'error' in line]
    assert len(errors) == 1 and 'does not fit' in errors[0] and 'exterior_1' in errors[0]


def test_an_arm_that_never_moved_leaves_the_table_unseen_and_says_so(small, tmp_path):
    bag, rig_file, out = small
    moving = yaml.safe_load((out / 'rebuild.yaml').read_text())['surfaces']['table']
    recording = load_recording(bag)
    still = Recording(recording.q[[0, 0]], recording.gripper[[0, 0]],
                      {c: v[[0, 0]] for c, v in recording.images.items()}, recording.path)
    content = rebuilding.build_rebuild(still, str(rig_file), tmp_path / 'c', log=lambda line: None)
    unseen = content['surfaces']['table']['unseen_beyond_base']
    assert unseen > max(rebuild.WARN_UNSEEN, 1.5 * moving['unseen_beyond_base'])
    assert any(f'{unseen:.1%} of the table top' in line for line in rebuilding.warnings(content))


def test_calibrate_warns_on_a_recording_below_its_bounds():
    from realm_ros.commands.cameras_calibration import small_recording

    assert small_recording((640, 360), 36) == ''
    line = small_recording((160, 90), 16)
    assert '160x90 with 16 poses' in line and '640x360 and 36 poses' in line
