"""The digital real's structural effects (issue 38): each field validated, each effect doing
what docs/digital-real.md says, absent = the parameter-only digital real, and an arm the twin's
best fit cannot copy down to the sensor noise."""

import dataclasses
import pathlib

import numpy as np
import pytest

from realm_ros.core import robot, sysid
from realm_ros.core.config import DigitalRealDynamics, DynamicsParams, WorldConfig
from realm_ros.core.errors import ConfigError
from realm_ros.core.types import Action, ActionMode, EpisodeSpec

ROOT = pathlib.Path(__file__).resolve().parents[2]
LAB = ROOT / 'config' / 'dynamics' / 'lab_franka.yaml'
PARAM_ONLY = ROOT / 'config' / 'dynamics' / 'sysid_demo.yaml'
CONFIG = WorldConfig(cameras=(), camera_rate_hz=0.0)


@pytest.mark.parametrize('key, value, message', [
    ('torque_filter_hz', -1.0, r'torque_filter_hz must be a number in \[0.0, 1000.0\] Hz'),
    ('torque_rate_limit', 1e9, r'torque_rate_limit must be a number in .* N m/s'),
    ('encoder_resolution', 0.5, r'encoder_resolution must be .* rad, got 0.5'),
    ('latency_jitter_s', 0.2, r'latency_jitter_s must be a number in \[0.0, 0.1\] s'),
    ('joint_stiffness', [10.0] * 7, r'joint_stiffness\[0\] must be in .* \(N m/rad\)'),
    ('joint_stiffness', [1e4] * 6, r'joint_stiffness must be \[\] or 7 values \(N m/rad\)'),
    ('friction_sigmoid_phi2', [0.0] * 7, r'friction_sigmoid_phi2\[0\] .* \(s/rad\), got 0.0'),
    ('contact_solref', [0.02, 50.0], r'contact_solref\[1\] must be in \[0.1, 10.0\]'),
    ('contact_solimp', [0.9, 0.95, 0.5, 0.5, 2.0], r'contact_solimp\[2\] .* \(-, -, m, -, -\)'),
])
def test_each_structural_field_refuses_out_of_range_values_naming_its_unit(key, value, message):
    with pytest.raises(ConfigError, match=message):
        DigitalRealDynamics(**{key: value})


def test_sigmoid_friction_needs_all_three_parameters():
    with pytest.raises(ConfigError, match='phi1/2/3 must be given together'):
        DigitalRealDynamics(friction_sigmoid_phi1=[0.5] * 7)


def test_bad_structural_field_in_a_file_is_one_line_and_exit_2(tmp_path):
    import subprocess
    import sys

    bad = tmp_path / 'bad.yaml'
    bad.write_text('torque_filter_hz: -5\n')
    proc = subprocess.run([sys.executable, '-m', 'realm_ros.cli', 'gap', '--dynamics', str(bad)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and 'Hz' in lines[0] and 'torque_filter_hz' in lines[0], proc.stderr


def _world(hidden):
    from realm_ros.backends.digital_real import DigitalRealWorld
    return DigitalRealWorld(CONFIG, hidden=hidden)


def _run(world, targets, seed=0, velocities=None):
    world.reset(EpisodeSpec(task='empty', seed=seed))
    out = []
    for row in targets:
        world.apply(Action(arm=row, gripper=0.0, mode=ActionMode.POSITION))
        joints = world.step().joints
        out.append(joints.position)
        if velocities is not None:
            velocities.append(joints.velocity)
    return np.array(out)


def _targets(duration=3.0, seed=2):
    return sysid.excitation_trajectory(sysid.ExcitationSpec(duration_s=duration), seed)


def test_gaz_friction_is_zero_at_rest_asymmetric_and_saturating():
    from realm_ros.backends.digital_real import StructuralEffects

    hidden = DigitalRealDynamics.from_yaml(LAB)
    effects = StructuralEffects(hidden, robot.PHYSICS_HZ)
    assert np.allclose(effects.friction(np.zeros(7)), 0.0)
    fast, back = effects.friction(np.full(7, 5.0)), effects.friction(np.full(7, -5.0))
    phi1 = np.array(hidden.friction_sigmoid_phi1)
    # Each direction saturates near its Coulomb level; the sum of both is phi1 (hand case).
    assert np.allclose(fast - back, phi1, rtol=0.03)
    assert np.all(fast > 0) and np.all(back < 0)
    assert not np.allclose(fast, -back, rtol=0.02)  # asymmetric: phi3 != 0


def test_without_structural_fields_the_digital_real_steps_as_before():
    """A parameter-only file: no hook acts, the run equals the twin with its parameters."""
    from realm_ros.backends.mujoco.world import MujocoWorld

    hidden = dataclasses.replace(DigitalRealDynamics.from_yaml(PARAM_ONLY), joint_noise_std=0.0)
    assert not hidden.structural
    targets = _targets(2.5)
    twin = MujocoWorld(CONFIG, dynamics=hidden.joint_params(), latency_s=hidden.latency_s)
    assert np.array_equal(_run(_world(hidden), targets), _run(twin, targets))


def test_each_structural_effect_changes_the_motion_and_encoders_quantise():
    base = dataclasses.replace(DigitalRealDynamics.from_yaml(PARAM_ONLY), joint_noise_std=0.0)
    lab = DigitalRealDynamics.from_yaml(LAB)
    targets = _targets(2.5)
    reference = _run(_world(base), targets)
    for keys in (('friction_sigmoid_phi1', 'friction_sigmoid_phi2', 'friction_sigmoid_phi3'),
                 ('joint_stiffness',), ('torque_filter_hz', 'torque_rate_limit'),
                 ('latency_jitter_s',)):
        hidden = dataclasses.replace(base, **{k: getattr(lab, k) for k in keys})
        diff = np.abs(_run(_world(hidden), targets) - reference).max()
        assert 1e-5 < diff < 0.05, (keys, diff)
    res = 1e-3
    q = _run(_world(dataclasses.replace(base, encoder_resolution=res)), targets)
    assert np.allclose(q / res, np.round(q / res), atol=1e-6)


def test_compliance_sags_the_held_arm_by_the_gravity_torque_over_the_stiffness():
    base = dataclasses.replace(DigitalRealDynamics.from_yaml(PARAM_ONLY), joint_noise_std=0.0,
                               latency_s=0.0)
    hold = np.tile(robot.RESET_Q, (30, 1))
    rigid = _run(_world(base), hold)[-1]
    soft_world = _world(dataclasses.replace(base, joint_stiffness=(2000.0,) * 7))
    soft = _run(soft_world, hold)[-1]
    gravity = soft_world.data.qfrc_gravcomp[soft_world._arm_dof]
    sag = soft - rigid
    # The joint with the largest gravity load sags most, against gravity's compensation, by
    # about its load / stiffness (the other joints' sag shifts the load by some %).
    j = int(np.argmax(np.abs(gravity)))
    assert np.argmax(np.abs(sag)) == j
    assert 1e-4 < abs(sag[j]) <= abs(gravity[j]) / 2000.0 * 1.2, (sag, gravity)
    assert np.sign(sag[j]) == -np.sign(gravity[j])


def test_contact_softness_is_written_on_object_geoms_only():
    from realm_ros.backends.digital_real import DigitalRealWorld

    hidden = DigitalRealDynamics.from_yaml(LAB)
    world = DigitalRealWorld(dataclasses.replace(CONFIG, task='pick_spoon'), hidden=hidden)
    objects = world.object_geoms()
    assert len(objects)
    assert np.allclose(world.model.geom_solref[objects], hidden.contact_solref)
    others = np.setdiff1d(np.arange(world.model.ngeom), objects)
    assert not np.any(np.all(np.isclose(world.model.geom_solref[others],
                                        hidden.contact_solref), axis=1))


def _recorded(hidden, seeds, duration):
    trajs = []
    for seed in seeds:
        targets = _targets(duration, seed)
        dq: list = []
        q = _run(_world(hidden), targets, seed, dq)
        trajs.append(sysid.Trajectory(f's{seed}', robot.RESET_Q.copy(), np.zeros(7), 0.0,
                                      targets, np.zeros(len(targets)), q, np.array(dq),
                                      1 / 15))
    return trajs


@pytest.mark.parametrize('dynamics, structural', [(PARAM_ONLY, False), (LAB, True)])
def test_the_twins_best_fit_reaches_the_noise_floor_only_on_a_parameter_only_arm(
        dynamics, structural):
    """Least squares with the true latency given, on 2 trajectories, judged on a held-out one:
    a parameter-only digital real is copied to the 0.5 mrad sensor noise; the lab arm is not
    (its residual stays well above the floor), so this fails if it were the twin with other
    numbers."""
    from realm_ros.backends.mujoco.rollout import TwinRollout

    hidden = DigitalRealDynamics.from_yaml(dynamics)
    train = _recorded(hidden, (2, 3), 3.0)
    held = _recorded(hidden, (5,), 3.0)
    rollout = TwinRollout(latency_s=hidden.latency_s)
    result = sysid.fit(rollout, train, method='lm', window=15, lm_windows=0, generations=12)
    sims = rollout.simulate([DynamicsParams(), result.params], held)
    before = sysid.joint_rmse(sims, held, 0).mean()
    after = sysid.joint_rmse(sims, held, 1).mean()
    floor = hidden.joint_noise_std
    print(f'held-out RMSE {1e3 * before:.2f} -> {1e3 * after:.2f} mrad')
    assert after < before / 3, (before, after)
    if structural:
        assert after > 3 * floor, (after, floor)
    else:
        assert after < 1.3 * floor, (after, floor)
