"""REALM's tasks in the twin: rubric on constructed states, scenes, scripted ladder, episodes."""

import copy
import json
import math

import numpy as np
import pytest
from twin_helpers import world_per_task

from realm_ros.backends.mujoco.world import MujocoWorld
from realm_ros.core import skills, tasks
from realm_ros.core.config import WorldConfig
from realm_ros.core.episode import run_episode
from realm_ros.core.errors import ConfigError, DataError, InfrastructureError
from realm_ros.core.policy import Policy
from realm_ros.core.types import STEPS_AFTER_SUCCESS, EpisodeOutcome, EpisodeSpec
from realm_ros.policies.scripted import ScriptedPolicy

UP = [1.0, 0.0, 0.0, 0.0]


def _state(obj='green_block', target='bowl', pos=(0.5, 0.0, 0.02), finger=(0.3, 0.0, 0.3),
           contacts=(False, False, False), finger_q=(0.0425, 0.0425), quat=UP,
           on_top=(), inside=(), joint=None, initial_joint=None, toggled=False):
    """Build a privileged-state dict with the keys documented in core/tasks.py."""
    objects = {obj: {'pos': list(pos), 'quat': list(quat)}}
    initial = {obj: {'pos': [0.5, 0.0, 0.02], 'quat': UP}}
    if target and target != obj:
        objects[target] = {'pos': [0.5, 0.2, 0.0], 'quat': UP}
        initial[target] = dict(objects[target])
    state = {
        'objects': objects, 'initial': initial,
        'fingers': {'left': list(finger), 'right': list(finger)},
        'finger_q': list(finger_q), 'finger_open': 0.0425,
        'contacts': {obj: dict(zip(('left', 'right', 'robot'), contacts))},
        'on_top': {obj: list(on_top)}, 'inside': {obj: list(inside)},
        'joints': {}, 'initial_joints': {}, 'toggled': {obj: toggled}, 'reach_point': {},
    }
    if joint is not None:
        state['joints'][obj] = {'q': joint, 'lower': 0.0, 'upper': 0.25}
        state['initial_joints'][obj] = {'q': initial_joint, 'lower': 0.0, 'upper': 0.25}
        state['reach_point'][obj] = list(pos)
    return state


GRASPED = dict(finger=(0.5, 0.0, 0.03), contacts=(True, True, True), finger_q=(0.02, 0.02))


def _score(task, states, rule='realm_code'):
    tracker = tasks.ProgressTracker(task, drawer_rule=rule)
    return [tracker.update(s, i) for i, s in enumerate(states)]


def test_put_stages_in_order_and_sticky_after_drop():
    far = _state()
    reach = _state(finger=(0.5, 0.05, 0.08))
    grasp = _state(**GRASPED)
    lifted = _state(pos=(0.5, 0.06, 0.05), **GRASPED)
    close = _state(pos=(0.5, 0.15, 0.1), **GRASPED)
    dropped = _state(pos=(0.5, 0.35, 0.02))  # fell beside the bowl, released
    progress = _score('put_green_block_in_bowl', [far, reach, grasp, lifted, close, dropped])
    assert [p.progression for p in progress] == [0.0, 0.2, 0.4, 0.6, 0.8, 0.8]
    assert progress[-1].met == (True, True, True, True, False)
    assert progress[-1].max_progression == 0.8
    placed = _state(pos=(0.5, 0.2, 0.02), inside=('bowl',), on_top=('bowl',))
    assert _score('put_green_block_in_bowl', [reach, grasp, lifted, close, placed])[-1] \
        .progression == 1.0
    # Inside the bowl but still grasped is not placed.
    held = _state(pos=(0.5, 0.2, 0.02), inside=('bowl',), **GRASPED)
    assert _score('put_green_block_in_bowl', [reach, grasp, lifted, close, held])[-1] \
        .progression == 0.8


def test_later_stage_never_counts_before_an_earlier_one():
    # Object lifted and in the bowl, but never grasped: only REACH (the finger is near).
    flying = _state(pos=(0.5, 0.2, 0.03), finger=(0.5, 0.15, 0.05), inside=('bowl',))
    progress = _score('put_green_block_in_bowl', [flying])[0]
    assert progress.met == (True, False, False, False, False)
    preds = tasks.stage_predicates('put_green_block_in_bowl', flying)
    assert preds['PLACE_INTO'] and preds['MOVE_CLOSE'] and not preds['GRASP']
    # Later met stages count once the earlier ones are met, in the same step.
    grasp_lift = _state(pos=(0.5, 0.08, 0.05), **GRASPED)
    assert _score('put_green_block_in_bowl', [grasp_lift])[0].progression == 0.6


def test_grasp_needs_both_fingers_and_a_closing_gripper():
    one = _state('spoon', '', finger=(0.5, 0, 0.03), contacts=(True, False, True),
                 finger_q=(0.02, 0.02))
    wide_open = _state('spoon', '', finger=(0.5, 0, 0.03), contacts=(True, True, True))
    assert _score('pick_spoon', [one])[0].progression == pytest.approx(1 / 3)
    assert _score('pick_spoon', [wide_open])[0].progression == pytest.approx(1 / 3)


def test_reach_by_distance_threshold_or_touch():
    def reach(**kw):
        return tasks.stage_predicates('pick_spoon', _state('spoon', '', **kw))['REACH']
    assert not reach(finger=(0.5, 0.0, 0.121))
    assert reach(finger=(0.5, 0.0, 0.119))
    assert reach(contacts=(False, False, True))


def test_pick_lift_large_thresholds_and_drop_keeps_stage():
    kw = dict(obj='spoon', target='', **GRASPED)
    up_small = _state(pos=(0.5, 0.0, 0.02 + 0.07), **kw)     # rose 0.07 < 0.075
    up_large = _state(pos=(0.5, 0.0, 0.02 + 0.11), **kw)     # rose and moved 0.11
    fell = _state('spoon', '', pos=(0.6, 0.0, 0.02))
    p = _score('pick_spoon', [_state('spoon', '', **GRASPED), up_small])
    assert p[-1].progression == pytest.approx(2 / 3)
    p = _score('pick_spoon', [_state('spoon', '', **GRASPED), up_large, fell])
    assert [x.progression for x in p] == pytest.approx([2 / 3, 1.0, 1.0])


def test_rotated_threshold():
    def yaw(a):
        return [math.cos(a / 2), 0.0, 0.0, math.sin(a / 2)]
    grasp = _state('mug', '', **GRASPED)
    assert _score('rotate_mug', [grasp, _state('mug', '', quat=yaw(1.05), **GRASPED)])[-1] \
        .progression == pytest.approx(2 / 3)
    assert _score('rotate_mug', [grasp, _state('mug', '', quat=yaw(1.15))])[-1] \
        .progression == 1.0
    assert skills.rotation_angle(UP, yaw(-1.2)) == pytest.approx(1.2)


def test_rotated_counts_only_the_z_component_as_realm_does():
    """REALM's check_rotated: |rotvec(R_now R_init^-1)[2]| > 1.1 ("Z axis rotation only")."""
    tipped = [math.cos(math.pi / 4), math.sin(math.pi / 4), 0.0, 0.0]  # 90 deg about x
    grasp = _state('marker', '', **GRASPED)
    p = _score('rotate_marker', [grasp, _state('marker', '', quat=tipped, **GRASPED)])
    assert p[-1].progression == pytest.approx(2 / 3)  # the total angle (1.57) would count
    assert skills.rotation_angle(UP, tipped) > skills.ROTATED_ANGLE
    yawed = [math.cos(-0.6), 0.0, 0.0, math.sin(-0.6)]  # -1.2 rad about z
    assert _score('rotate_marker', [grasp, _state('marker', '', quat=yawed)])[-1] \
        .progression == 1.0
    # Against scipy's Rotation, which REALM's helper uses (x, y, z, w order there).
    from scipy.spatial.transform import Rotation
    for k in range(5):
        a, b = Rotation.random(random_state=k), Rotation.random(random_state=k + 10)
        expected = (b * a.inv()).as_rotvec()
        got = skills.relative_rotvec(np.roll(a.as_quat(), 1), np.roll(b.as_quat(), 1))
        assert got == pytest.approx(expected, abs=1e-9)


def test_open_drawer_touch_and_move_is_touching_in_realms_code_strict_optional():
    """REALM: delta = initial - current < 0.025 holds on a closed drawer: touching suffices."""
    touch = _state('top_drawer', '', finger=(0.5, 0, 0.02), contacts=(False, False, True),
                   joint=0.0, initial_joint=0.0)
    assert _score('open_drawer', [touch])[0].progression == pytest.approx(0.4)
    assert _score('open_drawer', [touch], rule='strict')[0].progression == pytest.approx(0.2)
    moved = _state('top_drawer', '', finger=(0.5, 0, 0.02), contacts=(False, False, True),
                   joint=0.01, initial_joint=0.0)  # openness 0.04 > 0.025
    assert _score('open_drawer', [moved], rule='strict')[0].progression == pytest.approx(0.4)
    # close_drawer: openness must fall by more than 0.025 in both rules.
    still = _state('top_drawer', '', finger=(0.5, 0, 0.02), contacts=(False, False, True),
                   joint=0.25, initial_joint=0.25)
    assert _score('close_drawer', [still])[0].progression == pytest.approx(0.2)
    with pytest.raises(ConfigError, match='drawer_rule'):
        tasks.ProgressTracker('open_drawer', drawer_rule='paper')


def test_reset_poses_are_realms_task_yamls_and_the_twin_follows_them():
    assert tasks.TASKS['open_drawer'].reset_q == (0.0, -0.628, 0.0, -2.512, -0.75, 1.884, 0.0)
    assert tasks.TASKS['pick_spoon'].reset_q[0] == pytest.approx(-0.11952213)
    assert tasks.TASKS['pick_water_bottle'].reset_q == pytest.approx(
        (0, -math.pi / 5, 0, -4 * math.pi / 5, 0, 3 * math.pi / 5, 0))
    assert len({t.reset_q for t in tasks.TASKS.values()}) == 9  # the drawers share one
    world = MujocoWorld(WorldConfig(task='rotate_mug', cameras=()))
    try:
        for task in ('rotate_mug', 'open_drawer', 'push_switch'):
            obs = world.reset(EpisodeSpec(task=task, seed=1))
            assert obs.joints.position == pytest.approx(tasks.TASKS[task].reset_q, abs=1e-9)
    finally:
        world.close()


def test_stack_needs_on_top_not_inside():
    kw = dict(obj='green_block', target='yellow_block')
    states = [_state(**kw, **GRASPED), _state(**kw, pos=(0.5, 0.1, 0.08), **GRASPED),
              _state(**kw, pos=(0.5, 0.2, 0.07), inside=('yellow_block',))]
    assert _score('stack_cubes', states)[-1].progression == 0.8
    states[-1] = _state(**kw, pos=(0.5, 0.2, 0.07), on_top=('yellow_block',))
    assert _score('stack_cubes', states)[-1].progression == 1.0


def test_push_touch_then_toggle():
    kw = dict(obj='light_switch', target='')
    toggled_untouched = _state(**kw, toggled=True)
    assert _score('push_switch', [toggled_untouched])[0].progression == 0.0
    touch = _state(**kw, finger=(0.5, 0, 0.05), contacts=(False, False, True))
    p = _score('push_switch', [touch, _state(**kw, finger=(0.5, 0, 0.05),
                                             contacts=(False, False, True), toggled=True)])
    assert [x.progression for x in p] == pytest.approx([2 / 3, 1.0])


@pytest.mark.parametrize('task, start, qs, expected', [
    # openness = q / 0.25: thresholds 0.025 moved, 0.125, 0.65, 0.95
    ('open_drawer', 0.0, [0.005, 0.03, 0.16, 0.235, 0.24], [0.4, 0.4, 0.6, 0.8, 1.0]),
    ('open_drawer', 0.0, [0.03, 0.2, 0.0], [0.4, 0.8, 0.8]),
    # close: 0.875, 0.35, 0.05
    ('close_drawer', 0.25, [0.245, 0.2, 0.08, 0.01], [0.2, 0.6, 0.8, 1.0]),
])
def test_drawer_openness_thresholds(task, start, qs, expected):
    states = [_state('top_drawer', '', finger=(0.5, 0, 0.02), contacts=(False, False, True),
                     joint=q, initial_joint=start) for q in qs]
    assert [p.max_progression for p in _score(task, states)] == pytest.approx(expected)


def test_touch_and_move_needs_touch_and_the_task_direction():
    moved_untouched = _state('top_drawer', '', finger=(0.5, 0, 0.02), joint=0.1,
                             initial_joint=0.0)
    assert _score('open_drawer', [moved_untouched])[0].progression == 0.2
    wrong_way = _state('top_drawer', '', finger=(0.5, 0, 0.02), contacts=(False, False, True),
                       joint=0.1, initial_joint=0.25)
    assert _score('open_drawer', [wrong_way])[0].progression == 0.2


def test_state_without_the_object_is_a_data_error():
    with pytest.raises(DataError, match='spoon'):
        tasks.ProgressTracker('pick_spoon').update(_state())


def test_unknown_task_names_valid_ones():
    with pytest.raises(ConfigError, match='choose one of'):
        tasks.get_task('fold_laundry')


# -- scenes --------------------------------------------------------------------------------

@pytest.fixture(scope='module')
def worlds():
    yield from world_per_task(
        lambda task: MujocoWorld(WorldConfig(task=task, camera_rate_hz=0, cameras=())))


@pytest.mark.parametrize('task', sorted(tasks.TASKS))
def test_scene_loads_samples_deterministically_and_reports_state(worlds, task):
    world = worlds(task)
    obs = world.reset(EpisodeSpec(task=task, seed=3))
    state = obs.privileged
    assert obs.instruction == tasks.TASKS[task].instruction
    for key in ('objects', 'initial', 'fingers', 'tcp', 'finger_q', 'finger_open', 'contacts',
                'on_top', 'inside', 'joints', 'initial_joints', 'toggled', 'reach_point'):
        assert key in state, key
    json.dumps(state)  # JSON-ready for the privileged_state topic
    assert tasks.TASKS[task].obj in state['objects']
    scene = world._scene
    a = scene.sample_initial_state(np.random.default_rng(3))
    assert a == scene.sample_initial_state(np.random.default_rng(3))
    assert a != scene.sample_initial_state(np.random.default_rng(4))
    # Objects rest on the table: a second of holding still moves nothing.
    for _ in range(15):
        obs = world.step()
    for name, pose in obs.privileged['objects'].items():
        np.testing.assert_allclose(pose['pos'], state['initial'][name]['pos'], atol=2e-3)
    assert tasks.ProgressTracker(task).update(obs.privileged).progression == 0.0
    # Object bodies are scaled by the digital real's hidden mass/friction (naming contract).
    for name in state['objects']:
        assert not name.startswith(('panda_', 'gripper', 'left_', 'right_'))


def test_digital_real_scales_scene_object_masses():
    from realm_ros.backends.digital_real import DigitalRealWorld
    from realm_ros.core.config import DigitalRealDynamics
    config = WorldConfig(backend='digital_real', task='stack_cubes', camera_rate_hz=0, cameras=())
    real = DigitalRealWorld(config, hidden=DigitalRealDynamics(object_mass_scale=2.0))
    twin = MujocoWorld(config)
    body = twin.model.body('green_block').id
    assert real.model.body_mass[body] == pytest.approx(2 * twin.model.body_mass[body])
    real.close()
    twin.close()


# -- scripted ladder and the episode loop -------------------------------------------------

@pytest.mark.parametrize('task', sorted(tasks.TASKS))
def test_expert_solves_every_task(worlds, task):
    for seed in (0, 1):
        result = run_episode(worlds(task), ScriptedPolicy(skill='expert'),
                             EpisodeSpec(task=task, seed=seed, max_steps=300))
        assert result.success, (seed, result.stages_reached)
        assert result.outcome is EpisodeOutcome.SUCCESS


@pytest.mark.slow
def test_ladder_is_ordered_on_a_fixed_set(worlds):
    means = []
    for skill in range(4):
        scores = [run_episode(worlds(task), ScriptedPolicy(skill=skill),
                              EpisodeSpec(task=task, seed=seed, max_steps=250)).progression
                  for task in ('stack_cubes', 'push_switch') for seed in range(3)]
        means.append(float(np.mean(scores)))
    assert means[0] == 1.0
    assert means[0] >= means[1] >= means[2] >= means[3]
    assert means[0] - means[3] > 0.4, means


def test_episode_stops_15_steps_after_success_and_is_deterministic(worlds):
    steps = []

    def on_step(step, obs, action, progress):
        steps.append(progress.max_progression)

    spec = EpisodeSpec(task='push_switch', seed=2, max_steps=300)
    first = run_episode(worlds('push_switch'), ScriptedPolicy(skill=0), spec, on_step)
    success_at = steps.index(1.0) + 1
    assert first.steps == success_at + STEPS_AFTER_SUCCESS
    again = run_episode(worlds('push_switch'), ScriptedPolicy(skill=0), spec)
    assert again.to_record() | {'wall_time_s': 0} == first.to_record() | {'wall_time_s': 0}


def test_episode_times_out_at_max_steps(worlds):
    result = run_episode(worlds('open_drawer'), ScriptedPolicy(skill=0),
                         EpisodeSpec(task='open_drawer', seed=0, max_steps=20))
    assert result.steps == 20 and result.outcome is EpisodeOutcome.TIMEOUT
    assert result.progression < 1.0


def test_infrastructure_error_is_recorded_not_scored(worlds):
    class Down(Policy):
        name = 'down'

        def infer(self, obs):
            raise InfrastructureError('policy server at localhost:8000 is not answering')

    result = run_episode(worlds('push_switch'), Down(), EpisodeSpec(task='push_switch'))
    assert result.outcome is EpisodeOutcome.INFRA_FAILURE
    assert 'not answering' in result.error


def test_skill_names_and_bad_skill():
    assert ScriptedPolicy(skill='poor').level == 3
    assert ScriptedPolicy(skill='2').level == 2
    with pytest.raises(ConfigError, match='expert'):
        ScriptedPolicy(skill='godlike')


def test_initial_state_in_spec_is_used_verbatim(worlds):
    world = worlds('stack_cubes')
    state = copy.deepcopy(world._scene.sample_initial_state(np.random.default_rng(9)))
    obs = world.reset(EpisodeSpec(task='stack_cubes', seed=0, initial_state=state))
    np.testing.assert_allclose(obs.privileged['objects']['green_block']['pos'],
                               state['objects']['green_block'][:3], atol=1e-9)


def test_episode_command_prints_stages_and_writes_video(tmp_path, capsys):
    from realm_ros import cli
    video = tmp_path / 'ep.mp4'
    code = cli.main(['episode', '--task', 'push_switch', '--skill', 'expert', '--seed', '1',
                     '--max-steps', '30', '--video', str(video)])
    out = capsys.readouterr().out
    assert code == 0
    assert '[x] REACH' in out and '[ ] TOGGLED_ON' in out and 'progression' in out
    import imageio.v2 as imageio
    frames = imageio.mimread(str(video))
    assert len(frames) == 30 and frames[0].shape == (180, 320, 3)
    with pytest.raises(SystemExit) as stop:  # refused as the arguments are parsed
        cli.main(['episode', '--task', 'push_switch', '--max-steps', '0'])
    assert stop.value.code == 2


def test_recorded_actions_replay_to_the_same_score(tmp_path, capsys):
    from realm_ros import cli
    record = tmp_path / 'actions.npy'
    args = ['episode', '--task', 'stack_cubes', '--seed', '2', '--max-steps', '200', '--json']
    assert cli.main(args + ['--skill', 'good', '--record-actions', str(record)]) == 0
    first = json.loads(capsys.readouterr().out)
    assert np.load(record).shape == (first['steps'], 8)
    assert cli.main(args + ['--policy', 'replay', '--policy-args',
                            json.dumps({'path': str(record)})]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert replayed['stages_reached'] == first['stages_reached']
    assert replayed['progression'] == first['progression']
    bad = tmp_path / 'bad.json'
    bad.write_text('{"actions": [[1, 2, 3]]}')
    from realm_ros.policies.replay import ReplayPolicy
    with pytest.raises(ConfigError, match=r'\(N, 8\)'):
        ReplayPolicy(path=str(bad))


def test_unstable_physics_ends_as_infrastructure_failure(worlds):
    world = worlds('pick_spoon')

    def kick(step, obs, action, progress):
        if step == 3:  # a blow-up: MuJoCo resets the state and its clock
            world.data.qvel[:] = 1e30

    result = run_episode(world, ScriptedPolicy(skill=0),
                         EpisodeSpec(task='pick_spoon', seed=0, max_steps=50), kick)
    assert result.outcome is EpisodeOutcome.INFRA_FAILURE
    assert 'unstable' in result.error and result.steps == 4
