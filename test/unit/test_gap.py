"""realm-ros gap: the twin-vs-digital-real tracking gap, and that identification closes it."""

import json

import numpy as np
import pytest

from realm_ros import cli
from realm_ros.commands import gap
from realm_ros.core import robot
from realm_ros.core.errors import CommandRejected


def test_gap_is_zero_when_the_digital_real_has_the_twins_dynamics(tmp_path):
    same = tmp_path / 'same.yaml'
    same.write_text('friction: [0, 0, 0, 0, 0, 0, 0]\n'
                    'armature: [0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]\n')
    result = gap.measure(str(same), duration_s=2.0)
    assert max(result['gap_default']) < 1e-9
    assert min(result['tracking_real']) > 1e-3  # the arm did move and lag its targets


def test_identification_closes_most_of_the_gap_on_the_default_digital_real(tmp_path, capsys):
    out = tmp_path / 'gap.json'
    assert cli.main(['gap', '--duration', '3', '--json', str(out)]) == 0
    result = json.loads(out.read_text())
    before, after = np.array(result['gap_default']), np.array(result['gap_identified'])
    assert np.all(before > 1e-3)  # hidden friction/armature are visible on every joint
    assert after.mean() < 0.5 * before.mean()
    # With the hidden latency too, only the joint-sensor noise (0.5 mrad) is left.
    assert np.mean(result['gap_identified_latency']) < 1.5 * result['noise_std']
    text = capsys.readouterr().out
    assert 'panda_joint7' in text and 'closes' in text


def test_excitation_trajectory_passes_the_safety_rules_and_a_fast_one_does_not():
    targets = gap.trajectory(10.0)
    np.testing.assert_allclose(targets[0], robot.RESET_Q, atol=0.05)
    gap.check_safe(targets)
    with pytest.raises(CommandRejected, match='velocity'):
        gap.check_safe(gap.trajectory(10.0, control_hz=3.0))


def test_gap_on_the_lab_arm_states_its_residual_structure_and_plots_it(tmp_path, capsys):
    """The structural digital real: even the twin with its own parameters and latency (C)
    stays above the 0.5 mrad noise floor, and the residual's structure is named."""
    from realm_ros.graph import share_path

    png = tmp_path / 'residual.png'
    lab = str(share_path('config/dynamics/lab_franka.yaml'))
    assert cli.main(['gap', '--dynamics', lab, '--duration', '4', '--plot', str(png)]) == 0
    text = capsys.readouterr().out
    assert 'above the noise floor after the fit' in text and 'follows sign(velocity)' in text
    assert png.stat().st_size > 20_000
    result = gap.measure(lab, duration_s=4.0)
    low = [ci[0] for ci in result['residual']['rmse_after_ci']]
    assert min(low) > 2 * result['noise_std']
