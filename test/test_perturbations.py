"""REALM perturbations as data, applied at reset in the twin deterministically."""

import numpy as np
import pytest

from realm_ros.backends.mujoco.world import MujocoWorld
from realm_ros.core import perturbations, tasks
from realm_ros.core.config import WorldConfig
from realm_ros.core.errors import ConfigError
from realm_ros.core.types import EpisodeSpec


def test_fifteen_codes_plus_default_with_realm_ids():
    assert sorted(p.id for p in perturbations.PERTURBATIONS.values()) == list(range(16))
    assert perturbations.by_id(13).code == 'VB-POSE'
    for code in perturbations.TWIN_SUPPORTED:
        assert code in perturbations.PERTURBATIONS


@pytest.mark.parametrize('task, code, message', [
    ('push_switch', 'B-HOBJ', 'incompatible with push tasks'),
    ('stack_cubes', 'SB-NOUN', 'incompatible with stack tasks'),
    ('open_drawer', 'VB-MOBJ', 'incompatible with open_drawer tasks'),
    ('pick_spoon', 'V-VIEW', "not supported by the MuJoCo twin; supported: ['Default'"),
    ('pick_spoon', 'X-FOO', 'unknown perturbation'),
])
def test_unsupported_or_incompatible_codes_raise_naming_the_supported(task, code, message):
    with pytest.raises(ConfigError, match=message.replace('[', r'\[').replace('(', r'\(')):
        perturbations.sample(task, code, 1.0, 0)


@pytest.mark.parametrize('code', [c for c in perturbations.TWIN_SUPPORTED if c != 'Default'])
def test_sampling_is_deterministic_and_intensity_zero_is_neutral(code):
    a = perturbations.sample('stack_cubes', code, 1.0, 5)
    assert a == perturbations.sample('stack_cubes', code, 1.0, 5)
    draws = [perturbations.sample('stack_cubes', code, 1.0, s) for s in range(10)]
    assert len({str(d) for d in draws}) > 1
    zero = perturbations.sample('stack_cubes', code, 0.0, 5)
    neutral = {'V-AUG': {'blur_sigma': 0.0, 'contrast': 1.0},
               'B-HOBJ': {'mass_scale': 1.0, 'joint_damping_scale': 1.0},
               'S-LANG': {'instruction': tasks.TASKS['stack_cubes'].instruction},
               'S-PROP': {'instruction': tasks.TASKS['stack_cubes'].instruction}}
    if code in neutral:
        assert zero == pytest.approx(neutral[code])


def test_realm_ranges():
    draws = [perturbations.sample('stack_cubes', 'B-HOBJ', 1.0, s)['mass_scale']
             for s in range(200)]
    assert 0.25 <= min(draws) < 0.4 and 2.8 < max(draws) <= 3.0
    aug = [perturbations.sample('stack_cubes', 'V-AUG', 1.0, s) for s in range(200)]
    assert max(a['blur_sigma'] for a in aug) <= 2.5
    assert 0.25 <= min(a['contrast'] for a in aug) and max(a['contrast'] for a in aug) <= 1.5


def test_augment_image_blur_and_contrast():
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (24, 32, 3), dtype=np.uint8)
    assert np.array_equal(perturbations.augment_image(image, 0.0, 1.0), image)
    blurred = perturbations.augment_image(image, 2.0, 1.0)
    assert blurred.shape == image.shape and blurred.dtype == np.uint8
    assert blurred.std() < 0.5 * image.std()
    assert abs(blurred.mean() - image.mean()) < 3
    flat = perturbations.augment_image(image, 0.0, 0.0)
    assert flat.std() < 1.0


@pytest.fixture(scope='module')
def world():
    w = MujocoWorld(WorldConfig(task='stack_cubes', cameras=('exterior_1',),
                                camera_width=64, camera_height=48))
    yield w
    w.close()


def test_light_and_hidden_mass_are_applied_from_pristine_each_reset(world):
    block = world.model.body('green_block').id
    mass0 = world.model.body_mass[block]
    dark = world.reset(EpisodeSpec(task='stack_cubes', seed=0)).images['exterior_1']
    params = perturbations.sample('stack_cubes', 'V-LIGHT', 1.0, 1)
    lit = world.reset(EpisodeSpec(task='stack_cubes', seed=1, perturbation='V-LIGHT'))
    assert (lit.images['exterior_1'].mean() > dark.mean()) == (params['light_scale'] > 1.0)
    assert abs(lit.images['exterior_1'].mean() - dark.mean()) > 3
    spec = EpisodeSpec(task='stack_cubes', seed=2, perturbation='B-HOBJ')
    scale = perturbations.sample('stack_cubes', 'B-HOBJ', 1.0, 2)['mass_scale']
    for _ in range(2):  # scaled once, never compounded
        world.reset(spec)
        assert world.model.body_mass[block] == pytest.approx(mass0 * scale)
    back = world.reset(EpisodeSpec(task='stack_cubes', seed=0))
    assert world.model.body_mass[block] == pytest.approx(mass0)
    assert np.array_equal(back.images['exterior_1'], dark)


def test_pose_language_and_image_augmentation(world):
    base = world.reset(EpisodeSpec(task='stack_cubes', seed=3))
    moved = world.reset(EpisodeSpec(task='stack_cubes', seed=3, perturbation='VB-POSE'))
    again = world.reset(EpisodeSpec(task='stack_cubes', seed=3, perturbation='VB-POSE'))
    p0 = np.array(base.privileged['objects']['green_block']['pos'])
    p1 = np.array(moved.privileged['objects']['green_block']['pos'])
    assert np.linalg.norm(p1 - p0) > 1e-3
    assert moved.privileged['objects'] == again.privileged['objects']
    lang = world.reset(EpisodeSpec(task='stack_cubes', seed=3, perturbation='S-LANG'))
    assert lang.instruction in tasks.TASKS['stack_cubes'].paraphrases['S-LANG']
    aug = world.reset(EpisodeSpec(task='stack_cubes', seed=3, perturbation='V-AUG'))
    params = perturbations.sample('stack_cubes', 'V-AUG', 1.0, 3)
    expected = perturbations.augment_image(base.images['exterior_1'], params['blur_sigma'],
                                           params['contrast'])
    assert np.array_equal(aug.images['exterior_1'], expected)
    with pytest.raises(ConfigError, match='not supported'):
        world.reset(EpisodeSpec(task='stack_cubes', seed=3, perturbation='V-VIEW'))
