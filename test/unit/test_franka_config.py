"""Shipped franka configuration files agree with the code that reads or generates them."""

import pathlib

import mujoco
import numpy as np
import yaml

from realm_ros.backends.mujoco import model as mjcf
from realm_ros.commands import franka_config
from realm_ros.core import control, robot
from realm_ros.core.config import (
    DigitalRealConfig,
    FrankaBridgeConfig,
    SafetyConfig,
    WorldConfig,
    from_mapping,
)

CONFIG = pathlib.Path(__file__).resolve().parents[2] / 'config'


def _params(name):
    return yaml.safe_load((CONFIG / name).read_text())['/**']['ros__parameters']


def test_controller_yamls_are_the_generated_ones_and_use_no_kilted_removed_keys():
    for arm_id in ('fr3', 'fer'):
        text = (CONFIG / f'franka_controllers_{arm_id}.yaml').read_text()
        assert text == franka_config.render(arm_id)
        params = yaml.safe_load(text)['joint_trajectory_controller']['ros__parameters']
        assert params['joints'] == [f'{arm_id}_joint{i}' for i in range(1, 8)]
        assert 'open_loop_control' not in text and 'i_clamp' not in text


def test_digital_real_and_bridge_yaml_are_valid_configs():
    robot = _params('digital_real.yaml')
    robot.pop('episode_spec')
    assert from_mapping(DigitalRealConfig, robot) == DigitalRealConfig()
    bridge = _params('franka_bridge.yaml')
    from_mapping(FrankaBridgeConfig, bridge.pop('franka'))
    from_mapping(SafetyConfig, bridge.pop('safety'))
    from_mapping(WorldConfig, bridge)


def test_flange_jacobian_and_joint_gains_match_the_twin():
    m = mujoco.MjModel.from_xml_string(mjcf.build_mjcf())
    d = mujoco.MjData(m)
    rng = np.random.default_rng(3)
    for q in [robot.RESET_Q, *rng.uniform(robot.JOINT_LOWER, robot.JOINT_UPPER, (5, 7))]:
        d.qpos[:7] = q
        mujoco.mj_forward(m, d)
        jac = np.zeros((6, m.nv))
        mujoco.mj_jacSite(m, d, jac[:3], jac[3:], m.site('ee').id)
        np.testing.assert_allclose(robot.flange_jacobian(q), jac[:, :7], atol=1e-9)
    kp, kd = control.joint_space_gains(robot.RESET_Q)
    assert np.all(kp > robot.KQ) and np.all(kd >= robot.KQD)
    np.testing.assert_allclose(kp[6], robot.KQ[6] + robot.KX[5], atol=1e-6)  # wrist about z
