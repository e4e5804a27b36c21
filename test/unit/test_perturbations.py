"""REALM's fifteen perturbations: ranges, determinism, what each changes (and nothing else),
the same change in the twin and the digital real, skipped incompatible pairs."""

import math

import cv2
import numpy as np
import pytest

from realm_ros.backends.digital_real import DigitalRealWorld
from realm_ros.backends.mujoco.world import MujocoWorld
from realm_ros.core import perturbations, tasks
from realm_ros.core.config import WorldConfig
from realm_ros.core.errors import ConfigError
from realm_ros.core.types import EpisodeSpec

CODES = [c for c in perturbations.PERTURBATIONS if c != 'Default']


def test_fifteen_codes_plus_default_with_realm_ids_all_applied():
    assert sorted(p.id for p in perturbations.PERTURBATIONS.values()) == list(range(16))
    assert perturbations.by_id(13).code == 'VB-POSE'
    assert set(perturbations.TWIN_SUPPORTED) == set(perturbations.PERTURBATIONS)


@pytest.mark.parametrize('task, code, message', [
    ('push_switch', 'B-HOBJ', 'incompatible with push tasks'),
    ('stack_cubes', 'SB-NOUN', 'incompatible with stack tasks'),
    ('open_drawer', 'VB-MOBJ', 'incompatible with open_drawer tasks'),
    ('pick_spoon', 'X-FOO', 'unknown perturbation'),
])
def test_incompatible_or_unknown_codes_raise_with_the_reason(task, code, message):
    with pytest.raises(ConfigError, match=message):
        perturbations.sample(task, code, 1.0, 0)


def test_realm_incompatibilities_are_the_skip_list():
    skipped = {(t, c) for t in tasks.TASKS for c in perturbations.PERTURBATIONS
               if perturbations.skip_reason(t, c)}
    expected = {(t, c) for t, d in tasks.TASKS.items()
                for c in perturbations.incompatible().get(d.skill, ())}
    assert skipped == expected
    assert len(skipped) == 6 + 1 + 2 * 2


@pytest.mark.parametrize('code', CODES)
def test_sampling_is_deterministic_and_intensity_zero_is_neutral(code):
    task = 'put_green_block_in_bowl'
    assert perturbations.sample(task, code, 1.0, 5) == perturbations.sample(task, code, 1.0, 5)
    draws = {str(perturbations.sample(task, code, 1.0, s)) for s in range(12)}
    assert len(draws) > 1
    zero = perturbations.sample(task, code, 0.0, 5)
    if code == 'V-AUG':
        assert zero['blur_sigma'] == 0.0 and zero['contrast'] == 1.0
    elif code == 'V-VIEW':
        assert zero['camera_offset'] == [0.0, 0.0, 0.0] and zero['camera_yaw'] == 0.0
    elif code == 'V-LIGHT':
        assert zero['light_scale'] == 1.0 and zero['light_rgb'] == [1.0, 1.0, 1.0]
        assert zero['light_rgbs'] == [[1.0, 1.0, 1.0]] * perturbations.LIGHTS
    elif code == 'B-HOBJ':
        assert zero['mass_scale'] == 1.0 and zero['damping_scale'] == 1.0
    elif code == 'VB-MOBJ':
        assert zero['scale'] == [1.0, 1.0, 1.0]
    elif code.startswith('S-'):
        assert zero['instruction'] == tasks.TASKS[task].instruction
    elif code == 'VB-POSE':
        assert zero['shift'] == 0.0 and zero['yaw_std'] == 0.0
    else:
        assert zero == {}


def test_ranges_equal_realms():
    t = 'put_green_block_in_bowl'
    n = 400
    aug = [perturbations.sample(t, 'V-AUG', 1.0, s) for s in range(n)]
    sig = [a['blur_sigma'] for a in aug]
    con = [a['contrast'] for a in aug]
    assert 0.0 <= min(sig) < 0.1 and 2.4 < max(sig) <= 2.5
    assert 0.25 <= min(con) < 0.3 and 1.45 < max(con) <= 1.5
    view = [perturbations.sample(t, 'V-VIEW', 1.0, s) for s in range(n)]
    offs = np.array([v['camera_offset'] for v in view])
    assert np.all(np.abs(offs) <= 0.2) and np.abs(offs).max() > 0.19
    for key in ('camera_pitch', 'camera_yaw'):
        vals = np.array([v[key] for v in view])
        assert np.all(np.abs(vals) <= 0.2) and np.abs(vals).max() > 0.19
    light = [perturbations.sample(t, 'V-LIGHT', 1.0, s) for s in range(n)]
    level = np.array([v['light_scale'] for v in light]) * 250000
    assert 20000 <= level.min() < 40000 and 730000 < level.max() <= 750000
    rgb = np.array([v['light_rgbs'] for v in light]).reshape(-1, 3) * 255
    assert np.allclose(rgb.mean(axis=0), [255 - 15 * 0.4, 214, 170], atol=3)
    assert np.allclose(rgb[:, 1:].std(axis=0), 15, atol=1.5)
    assert len({tuple(c) for c in light[0]['light_rgbs']}) == perturbations.LIGHTS
    hobj = [perturbations.sample(t, 'B-HOBJ', 1.0, s) for s in range(n)]
    mass = [h['mass_scale'] for h in hobj]
    assert 0.25 <= min(mass) < 0.3 and 2.9 < max(mass) <= 3.0
    for key in ('effort_scale', 'stiffness_scale', 'damping_scale'):
        logs = np.log([h[key] for h in hobj])
        assert np.all(np.abs(logs) <= 1.0) and np.abs(logs).max() > 0.95
    morph = np.array([perturbations.sample(t, 'VB-MOBJ', 1.0, s)['scale'] for s in range(n)])
    assert np.all((morph >= 0.5) & (morph <= 1.5)) and np.all(morph.prod(axis=1) <= 1.5)
    pose = perturbations.sample(t, 'VB-POSE', 1.0, 0)
    assert pose['yaw_std'] == 3.14
    assert perturbations.REALM_RANGES['VB-POSE']['drawer_yaw'] == (0.0, 0.57)


def test_v_aug_is_realms_gain_and_blur_scales_with_resolution():
    flat = np.full((18, 32, 3), 100, np.uint8)
    # REALM: pixel * alpha (a gain), not a contrast about the mean (which would keep 100).
    assert np.all(perturbations.augment_image(flat, 0.0, 1.5) == 150)
    assert np.all(perturbations.augment_image(flat, 0.0, 0.25) == 25)
    # sigma 2.5 px at 1280x720 is 0.625 px at 320x180: the same as cv2 at that sigma.
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (180, 320, 3), dtype=np.uint8)
    ours = perturbations.augment_image(image, 2.5, 1.0)
    k = int(0.625 * 4 + 1) | 1
    ref = cv2.GaussianBlur(image.astype(np.float32), (k, k), 0.625).astype(np.uint8)
    assert np.abs(ours.astype(int) - ref.astype(int)).max() <= 1
    full = perturbations.augment_image(np.repeat(np.repeat(image, 4, 0), 4, 1), 2.5, 1.0)
    assert full.shape == (720, 1280, 3)


def test_sb_noun_and_sb_vrb_change_the_scored_rubric():
    noun = perturbations.scored_task('open_drawer', 'SB-NOUN', 1.0, 0)
    params = perturbations.sample('open_drawer', 'SB-NOUN', 1.0, 0)
    assert noun.obj == params['drawer'] and params['drawer'] in noun.instruction.replace(
        ' ', '_')
    seeds = {perturbations.sample('open_drawer', 'SB-NOUN', 1.0, s)['drawer'] for s in range(20)}
    assert seeds == {'top_drawer', 'middle_drawer'}
    for seed in range(10):
        vrb = perturbations.scored_task('pick_spoon', 'SB-VRB', 1.0, seed)
        assert vrb.skill in ('put', 'rotate', 'stack')
        assert vrb.stages == tasks.SKILL_STAGES[vrb.skill]
        assert vrb.obj == 'spoon'
        if vrb.skill in ('put', 'stack'):
            assert vrb.target == 'receiver'
    pick = perturbations.scored_task('pick_spoon', 'SB-NOUN', 1.0, 0)
    assert pick.obj == 'noun_object' and 'spoon' not in pick.instruction


def test_operator_is_told_what_to_change_by_hand():
    for code in ('V-VIEW', 'V-SC', 'V-LIGHT', 'B-HOBJ', 'VB-POSE', 'VB-MOBJ', 'VSB-NOBJ'):
        params = perturbations.sample('pick_spoon', code, 1.0, 1)
        lines = perturbations.operator_instructions('pick_spoon', code, params)
        assert lines and all(isinstance(x, str) and x for x in lines)
    assert perturbations.operator_instructions('pick_spoon', 'S-LANG', {'instruction': 'x'}) \
        == []


# -- applied in the twin ----------------------------------------------------------------------

def _fingerprint(world, obs):
    m = world.model
    objects = {n: np.round(np.r_[v['pos'], v['quat']], 6).tolist()
               for n, v in obs.privileged['objects'].items()}
    return {
        'instruction': obs.instruction,
        'objects': objects,
        'joints': {n: round(v['q'], 6) for n, v in obs.privileged['joints'].items()},
        'geometry': (m.ngeom, np.round(m.geom_size, 6).tolist(), m.nbody),
        'mass': np.round(m.body_mass, 9).tolist(),
        'damping': np.round(m.dof_damping, 9).tolist(),
        'light': np.round(m.light_diffuse, 6).tolist(),
        'camera': np.round(np.c_[m.cam_pos, m.cam_quat], 6).tolist(),
        'arm': np.round(obs.joints.position, 6).tolist(),
    }


#: What each code may change (beyond the image): everything else must stay as in Default.
EXPECTED = {
    'V-AUG': set(), 'V-VIEW': {'camera'}, 'V-SC': {'objects', 'geometry', 'mass', 'damping'},
    'V-LIGHT': {'light'}, 'S-PROP': {'instruction'}, 'S-LANG': {'instruction'},
    'S-MO': {'instruction'}, 'S-AFF': {'instruction'}, 'S-INT': {'instruction'},
    'B-HOBJ': {'mass'}, 'SB-NOUN': {'instruction', 'objects', 'geometry', 'mass', 'damping'},
    'SB-VRB': {'instruction', 'objects', 'geometry', 'mass', 'damping'},
    'VB-POSE': {'objects'}, 'VB-MOBJ': {'objects', 'geometry', 'mass'},
    'VSB-NOBJ': {'instruction', 'objects', 'geometry', 'mass'},
}


@pytest.fixture(scope='module')
def worlds(tmp_path_factory):
    # Shadows on whatever the renderer: SB-NOUN's added object is out of exterior_1's view and
    # shows only by its shadow (the rig's default, auto, turns shadows off on llvmpipe).
    rig = tmp_path_factory.mktemp('rig') / 'shadows.yaml'
    rig.write_text('cameras: {}\nrender: {shadows: true, reflections: true}\n')
    config = WorldConfig(task='put_green_block_in_bowl', cameras=('exterior_1',),
                         camera_width=64, camera_height=36, camera_rig_file=str(rig))
    twin, real = MujocoWorld(config), DigitalRealWorld(config)
    yield twin, real
    twin.close()
    real.close()


@pytest.mark.parametrize('code', CODES)
def test_each_perturbation_changes_what_it_should_and_nothing_else(worlds, code):
    twin, _ = worlds
    task = 'put_green_block_in_bowl'
    base_obs = twin.reset(EpisodeSpec(task=task, seed=4))
    base, base_image = _fingerprint(twin, base_obs), base_obs.images['exterior_1']
    obs = twin.reset(EpisodeSpec(task=task, seed=4, perturbation=code))
    after = _fingerprint(twin, obs)
    changed = {k for k in base if after[k] != base[k]}
    allowed = EXPECTED[code]
    assert changed <= allowed, f'{code} changed {changed - allowed} too'
    must = {'V-VIEW': {'camera'}, 'V-LIGHT': {'light'}, 'B-HOBJ': {'mass'},
            'VB-POSE': {'objects'}, 'V-SC': {'geometry'}, 'VB-MOBJ': {'geometry'},
            'VSB-NOBJ': {'geometry', 'instruction'}, 'SB-NOUN': {'instruction'},
            'SB-VRB': {'instruction'}}.get(code, {'instruction'} if code.startswith('S-')
                                             else set())
    assert must <= changed, f'{code} did not change {must - changed}'
    if code.startswith('V') or 'geometry' in changed:
        assert not np.array_equal(obs.images['exterior_1'], base_image)
    else:
        assert np.array_equal(obs.images['exterior_1'], base_image)
    # Back to Default: everything restored.
    again = twin.reset(EpisodeSpec(task=task, seed=4))
    assert _fingerprint(twin, again) == base


@pytest.mark.parametrize('code', CODES)
def test_same_seed_same_change_in_twin_and_digital_real(worlds, code):
    twin, real = worlds
    spec = EpisodeSpec(task='put_green_block_in_bowl', seed=7, perturbation=code)
    a, b = twin.reset(spec), real.reset(spec)
    fa, fb = _fingerprint(twin, a), _fingerprint(real, b)
    # The digital real hides its own object masses, arm damping and joint sensor noise.
    for key in ('instruction', 'objects', 'joints', 'geometry', 'light', 'camera'):
        assert fa[key] == fb[key], key
    assert twin.perturbation == real.perturbation
    assert a.images['exterior_1'].shape == b.images['exterior_1'].shape


def test_b_hobj_scales_only_the_main_object_never_the_fingers():
    world = MujocoWorld(WorldConfig(task='open_drawer', cameras=()))
    try:
        m = world.model
        world.reset(EpisodeSpec(task='open_drawer', seed=0))
        mass0, damp0, stiff0 = m.body_mass.copy(), m.dof_damping.copy(), m.jnt_stiffness.copy()
        params = perturbations.sample('open_drawer', 'B-HOBJ', 1.0, 3)
        world.reset(EpisodeSpec(task='open_drawer', seed=3, perturbation='B-HOBJ'))
        drawer = m.body('top_drawer').id
        slide = m.joint('top_drawer_slide')
        expect = min(mass0[drawer] * params['mass_scale'], 2.0)
        assert m.body_mass[drawer] == pytest.approx(expect)
        assert m.dof_damping[slide.dofadr[0]] == pytest.approx(
            damp0[slide.dofadr[0]] * params['damping_scale'])
        changed_bodies = set(np.flatnonzero(~np.isclose(m.body_mass, mass0)))
        assert changed_bodies == {drawer}
        changed_dofs = set(np.flatnonzero(~np.isclose(m.dof_damping, damp0)))
        assert changed_dofs == {slide.dofadr[0]}
        for finger in ('left_finger_joint', 'right_finger_joint'):
            dof = m.joint(finger).dofadr[0]
            assert m.dof_damping[dof] == damp0[dof]
        assert np.array_equal(m.jnt_stiffness[:slide.id], stiff0[:slide.id])
    finally:
        world.close()


@pytest.mark.parametrize('task', ['stack_cubes', 'put_banana_into_box'])
def test_vb_pose_moves_only_the_main_object(task):
    world = MujocoWorld(WorldConfig(task=task, cameras=()))
    try:
        for seed in range(3):
            base = world.reset(EpisodeSpec(task=task, seed=seed)).privileged['objects']
            moved = world.reset(EpisodeSpec(task=task, seed=seed, perturbation='VB-POSE'))
            moved = moved.privileged['objects']
            main = tasks.TASKS[task].obj
            assert moved[main]['pos'] != base[main]['pos']
            for name in base:
                if name != main:
                    assert moved[name] == base[name]
    finally:
        world.close()


def test_vb_pose_drawer_yaw_and_switch_ranges():
    from realm_ros.backends.mujoco import perturb, scenes
    drawer = scenes.make_scene('open_drawer')
    switch = scenes.make_scene('push_switch')
    rng = np.random.default_rng(0)
    for seed in range(60):
        params = perturbations.sample('open_drawer', 'VB-POSE', 1.0, seed)
        state = drawer.sample_initial_state(rng)
        yaw = perturb.perturb_state(drawer, state, 'VB-POSE', params)['fixtures']['cabinet'][2]
        assert 0.0 <= yaw <= 0.57
        state = switch.sample_initial_state(rng)
        params = perturbations.sample('push_switch', 'VB-POSE', 1.0, seed)
        out = perturb.perturb_state(switch, state, 'VB-POSE', params)['fixtures']
        dx = out['light_switch'][0] - state['fixtures']['light_switch'][0]
        dy = out['light_switch'][1] - state['fixtures']['light_switch'][1]
        assert abs(dx) <= 0.15 and abs(dy) <= 0.075


def test_sb_noun_drawer_retargets_the_scored_drawer_in_the_twin():
    seed = next(s for s in range(20) if perturbations.sample(
        'close_drawer', 'SB-NOUN', 1.0, s)['drawer'] == 'middle_drawer')
    world = MujocoWorld(WorldConfig(task='close_drawer', cameras=()))
    try:
        obs = world.reset(EpisodeSpec(task='close_drawer', seed=seed, perturbation='SB-NOUN'))
        joints = obs.privileged['joints']
        assert joints['middle_drawer']['q'] > 0.2 and joints['top_drawer']['q'] < 0.01
        assert obs.instruction == 'close the middle drawer'
        from realm_ros.core.episode import make_tracker
        spec = EpisodeSpec(task='close_drawer', seed=seed, perturbation='SB-NOUN')
        assert make_tracker('close_drawer', spec).task.obj == 'middle_drawer'
    finally:
        world.close()


def test_object_set_ships_procedural_and_pybullet_data_meshes():
    from realm_ros.backends.mujoco import objects
    sources = {o.source for o in perturbations.OBJECTS.values()}
    assert sources == {'procedural', 'pybullet_data'}
    for name, obj in perturbations.OBJECTS.items():
        built = objects.build(name, prefix=name)
        assert max(built.extents) == pytest.approx(obj.size, rel=0.35), name
        if obj.source == 'pybullet_data':
            assert 'pybullet_data' in built.assets
    geoms, _, s = objects.morph(
        '<geom type="box" size="0.02 0.02 0.02" mass="0.1"/>', '', [1.5, 0.5, 1.0],
        (0.02, 0.175), 'x')
    assert 'size="0.03 0.01 0.02"' in geoms and 'mass="0.075"' in geoms
    assert math.isclose(float(np.prod(s)), 0.75)


def test_perturbations_command_writes_an_image_per_code_and_a_sheet(tmp_path):
    from realm_ros.commands.perturbations import render_all
    result = render_all('push_switch', tmp_path, seed=1, size=(96, 54), settle=2)
    assert list(result) == sorted(perturbations.PERTURBATIONS,
                                  key=lambda c: perturbations.PERTURBATIONS[c].id)
    skipped = {c for c, e in result.items() if 'skipped' in e}
    assert skipped == set(perturbations.incompatible()['push'])
    for code, entry in result.items():
        if code in skipped:
            assert 'incompatible with push' in entry['skipped']
        else:
            assert (tmp_path / entry['image']).stat().st_size > 0
    assert result['S-AFF']['instruction'] in tasks.TASKS['push_switch'].paraphrases['S-AFF']
    assert (tmp_path / 'contact_sheet.png').stat().st_size > 10_000
    assert (tmp_path / 'perturbations.json').exists()


@pytest.fixture(scope='module')
def drawer_world():
    w = MujocoWorld(WorldConfig(task='close_drawer', cameras=('exterior_1',), camera_width=64,
                                camera_height=36))
    yield w
    w.close()


DRAWER_CODES = [c for c in CODES if not perturbations.skip_reason('close_drawer', c)]


@pytest.mark.parametrize('code', DRAWER_CODES)
def test_each_perturbation_on_an_articulated_task_changes_only_what_it_should(drawer_world,
                                                                             code):
    task, seed = 'close_drawer', 1
    base_obs = drawer_world.reset(EpisodeSpec(task=task, seed=seed))
    base, base_image = _fingerprint(drawer_world, base_obs), base_obs.images['exterior_1']
    obs = drawer_world.reset(EpisodeSpec(task=task, seed=seed, perturbation=code))
    after = _fingerprint(drawer_world, obs)
    changed = {k for k in base if after[k] != base[k]}
    allowed = dict(EXPECTED, **{'B-HOBJ': {'mass', 'damping'},
                                'SB-NOUN': {'instruction', 'joints'},
                                'VSB-NOBJ': {'geometry'}})[code]
    assert changed <= allowed, f'{code} changed {changed - allowed} too'
    params = perturbations.sample(task, code, 1.0, seed)
    must = {'V-VIEW': {'camera'}, 'V-LIGHT': {'light'}, 'B-HOBJ': {'mass', 'damping'},
            'VB-POSE': {'objects'}, 'V-SC': {'geometry', 'objects'},
            'SB-NOUN': ({'instruction', 'joints'} if params.get('drawer') == 'middle_drawer'
                        else set())}.get(code, {'instruction'} if code.startswith('S-')
                                         else set())
    assert must <= changed, f'{code} did not change {must - changed}'
    if code.startswith('V'):
        assert not np.array_equal(obs.images['exterior_1'], base_image)
    assert _fingerprint(drawer_world, drawer_world.reset(EpisodeSpec(task=task, seed=seed))) \
        == base


def test_task_bound_codes_on_the_empty_table_raise_naming_the_tasks():
    assert perturbations.sample('', 'V-LIGHT', 1.0, 0)['light_scale'] > 0
    with pytest.raises(ConfigError, match='needs a REALM task'):
        perturbations.sample('', 'S-LANG', 1.0, 0)
