"""lerobot_server.py's one table of where LeRobot keeps each piece of its inference, for the
releases it knows (0.4: ``lerobot.utils.control_utils.predict_action``; 0.6:
``lerobot.common.control_utils.predict_action``), checked on stand-in modules: no lerobot here.
The real 0.4.4 runs in test/e2e/test_lerobot_served.py; 0.6.1 ran on the H200 machine
(docs/learned-policy.md, section 5)."""

import pathlib
import sys
import types

import pytest

from realm_ros.policies import lerobot_server as server

SHARED = {'lerobot.configs.policies': 'PreTrainedConfig',
          'lerobot.policies.factory': ('get_policy_class', 'make_pre_post_processors'),
          'lerobot.policies.utils': ('prepare_observation_for_inference', 'populate_queues')}


def install(monkeypatch, layout):
    """Stand-in lerobot: ``layout`` maps a module to the names it defines."""
    monkeypatch.setitem(sys.modules, 'lerobot', types.ModuleType('lerobot'))
    for name in [m for m in list(sys.modules) if m.startswith('lerobot.')]:
        monkeypatch.delitem(sys.modules, name)
    made = {}
    for module, names in layout.items():
        mod = types.ModuleType(module)
        for attr in (names,) if isinstance(names, str) else names:
            made[(module, attr)] = object()
            setattr(mod, attr, made[(module, attr)])
        monkeypatch.setitem(sys.modules, module, mod)
    return made


@pytest.mark.parametrize('module', ['lerobot.common.control_utils',   # 0.6
                                    'lerobot.utils.control_utils'])   # 0.4
def test_each_release_finds_its_predict_action(monkeypatch, module):
    made = install(monkeypatch, {**SHARED, module: 'predict_action'})
    api = server.lerobot_api()
    assert api['predict_action'] is made[(module, 'predict_action')]
    assert api['get_policy_class'] is made[('lerobot.policies.factory', 'get_policy_class')]


def test_another_release_is_one_line_naming_what_is_missing(monkeypatch):
    install(monkeypatch, dict(SHARED))  # no predict_action anywhere
    with pytest.raises(server.LeRobotAPIError) as err:
        server.lerobot_api()
    text = str(err.value)
    assert '\n' not in text
    assert 'lerobot.common.control_utils.predict_action' in text
    assert 'lerobot.utils.control_utils.predict_action' in text
    assert '0.4 and 0.6' in text


LINE = 'lerobot 9.9 has no x.y; the server knows lerobot 0.4 and 0.6'


def test_the_server_exits_2_with_that_line(monkeypatch, capsys):
    def refuse(*args, **kwargs):
        raise server.LeRobotAPIError(LINE)

    monkeypatch.setattr(server, 'LeRobotRunner', refuse)
    assert server.main(['--checkpoint', 'ck']) == 2
    err = capsys.readouterr().err
    assert err.strip() == f'lerobot_server: {LINE}'


@pytest.mark.parametrize('version, flag', [('0.4.4', '--eval_freq=0'),
                                           ('0.6.1', '--env_eval_freq=0')])
def test_lerobot_act_names_the_eval_flag_of_the_release(tmp_path, version, flag):
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / 'bench'))
    try:
        import lerobot_act
    finally:
        sys.path.pop(0)
    python = tmp_path / 'python'
    python.write_text(f'#!/bin/sh\necho {version}\n')
    python.chmod(0o755)
    assert lerobot_act.eval_off(str(python)) == flag


@pytest.mark.parametrize('config, plan', [
    ({'type': 'act', 'chunk_size': 100, 'n_action_steps': 100}, (100, 100, 1)),
    ({'type': 'act', 'chunk_size': 10, 'n_action_steps': 8}, (10, 8, 1)),
    # LeRobot 0.4.4's DiffusionConfig defaults; num_inference_steps does not change the plan
    ({'type': 'diffusion', 'n_obs_steps': 2, 'horizon': 16, 'n_action_steps': 8,
      'num_inference_steps': 10}, (8, 8, 2)),
    ({'type': 'diffusion', 'n_obs_steps': 1, 'horizon': 8, 'n_action_steps': 8}, (8, 8, 1)),
])
def test_the_plan_is_read_from_the_config_fields(config, plan):
    got = server.action_plan(config)
    assert (got['chunk'], got['execute'], got['history']) == plan
