"""System identification: excitation safety, parameter mapping, batched twin rollouts, the fit."""

import dataclasses

import numpy as np
import pytest
from twin_helpers import arm_run

from realm_ros.backends.mujoco.rollout import TwinRollout
from realm_ros.backends.mujoco.world import MujocoWorld
from realm_ros.core import robot, sysid
from realm_ros.core.config import DynamicsParams, WorldConfig
from realm_ros.core.errors import ConfigError, DataError
from realm_ros.core.types import Action, ActionMode, EpisodeSpec

TRUE = DynamicsParams(friction=(0.4, 0.6, 0.35, 0.5, 0.2, 0.25, 0.1),
                      armature=(0.3, 0.4, 0.2, 0.35, 0.12, 0.1, 0.06))


@pytest.mark.parametrize('seed', range(4))
def test_excitation_is_safe_and_excites_every_joint(seed):
    spec = sysid.ExcitationSpec(duration_s=10.0)
    q = sysid.excitation_trajectory(spec, seed)
    assert q.shape == (150, 7)
    np.testing.assert_allclose(q[-1], robot.RESET_Q, atol=1e-12)  # ends at rest at the reset pose
    np.testing.assert_allclose(q[0], robot.RESET_Q, atol=0.01)  # fades in from it
    assert np.all(q >= robot.JOINT_LOWER + spec.limit_margin)
    assert np.all(q <= robot.JOINT_UPPER - spec.limit_margin)
    speed = np.abs(np.diff(q, axis=0)) * 15.0
    assert np.all(speed <= spec.velocity_fraction * robot.VELOCITY_LIMIT + 1e-9)
    assert np.all(np.ptp(q, axis=0) > 0.1)  # every joint moves at least 0.1 rad peak to peak
    for row in q[::5]:
        flange, tip = sysid.end_effector_points(row)
        assert spec.workspace.contains(flange) and spec.workspace.contains(tip)
    assert sysid.check_trajectory(q, spec) is None
    far = q.copy()
    far[70, 1] = robot.JOINT_UPPER[1]
    assert 'joint limit' in sysid.check_trajectory(far, spec)


@pytest.mark.parametrize('arm_id', ['fr3', 'panda'])
def test_excitation_keeps_to_the_limits_of_the_arm_the_cli_names(arm_id):
    """``sysid record --arm-id`` reaches the excitation: FR3 and Panda limits differ on every
    joint (FR3's joint 6 cannot go below 0.5445 rad, the Panda's to -0.0175)."""
    from realm_ros import cli
    from realm_ros.commands.sysid.record import excitation_plans

    args = cli.build_parser().parse_args(['sysid', 'record', '--out', 'unused', '--arm-id',
                                          arm_id, '--trajectories', '2', '--duration', '8'])
    arm = robot.arm_spec(arm_id)
    spec = sysid.ExcitationSpec(duration_s=8.0, arm_id=arm_id)
    for i, q in enumerate(excitation_plans(args)):
        np.testing.assert_array_equal(q, sysid.excitation_trajectory(spec, i))
        assert np.all(q >= arm.lower + spec.limit_margin)
        assert np.all(q <= arm.upper - spec.limit_margin)
        speed = np.abs(np.diff(q, axis=0)) * spec.control_hz
        assert np.all(speed <= spec.velocity_fraction * arm.velocity + 1e-9)
        assert np.all(speed <= np.asarray(spec.tracking_speed) + 1e-9)
    # A target inside the Panda's range but below FR3's joint 6 limit.
    low_wrist = robot.RESET_Q.copy()
    low_wrist[5] = 0.3
    verdict = sysid.check_trajectory(low_wrist[None], spec, low_wrist)
    assert (verdict is not None and 'joint limit' in verdict) == (arm_id == 'fr3')
    with pytest.raises(ConfigError, match="arm_id 'ur5'"):
        sysid.ExcitationSpec(arm_id='ur5')


def test_excitation_refuses_an_impossible_workspace():
    spec = sysid.ExcitationSpec(workspace=sysid.Workspace(low=(0.0, 0.0, 0.0),
                                                          high=(0.1, 0.1, 0.1)))
    with pytest.raises(ConfigError, match='no safe excitation'):
        sysid.excitation_trajectory(spec, 0)


def test_param_space_round_trip_and_bounds():
    space = sysid.ParamSpace()
    u = space.to_unit(TRUE)
    assert u.shape == (14,) and np.all((u > 0) & (u < 1))
    back = space.from_unit(u)
    np.testing.assert_allclose(back.friction, TRUE.friction, rtol=1e-12)
    np.testing.assert_allclose(back.armature, TRUE.armature, rtol=1e-12)
    # Log scale: halfway in u is the geometric mean of the bounds.
    mid = space.from_unit(np.full(14, 0.5))
    assert mid.friction[0] == pytest.approx(np.sqrt(0.005 * 3.0))
    low = space.from_unit(np.full(14, -3.0))  # clipped into the bounds
    assert low.friction[0] == pytest.approx(0.005)


def _trajectory(targets, measured, dq, name='t'):
    return sysid.Trajectory(name, robot.RESET_Q.copy(), np.zeros(7), 0.0, targets,
                            np.zeros(len(targets)), measured, dq, 1 / 15)


def test_batched_rollout_equals_mujoco_world_stepping():
    targets = sysid.excitation_trajectory(sysid.ExcitationSpec(duration_s=3.0), 5)
    q, dq = arm_run(TRUE, targets)
    traj = _trajectory(targets, q, dq)
    rollout = TwinRollout(nthread=2)
    other = DynamicsParams(friction=(0.05,) * 7, armature=(0.5,) * 7)
    sim = rollout.simulate([other, TRUE, DynamicsParams()], [traj])
    assert sim[0].shape == (3, 45, 7)
    np.testing.assert_allclose(sim[0][1], q, atol=1e-9, rtol=0)
    assert np.abs(sim[0][0] - q).max() > 1e-3  # the parameters matter
    # A window started mid-run from the recorded arm state continues the same trajectory, up
    # to what the arm state does not carry (finger motion, solver warm start): < 1 urad.
    window = sysid.windows([traj], 15)[1]
    np.testing.assert_allclose(rollout.simulate([TRUE], [window])[0][0], q[15:30], atol=1e-6)


def test_windows_and_loss():
    targets = np.tile(robot.RESET_Q, (40, 1))
    measured = targets + 0.01
    traj = _trajectory(targets, measured, np.zeros((40, 7)))
    parts = sysid.windows([traj], 15)
    assert [p.steps for p in parts] == [15, 15]
    np.testing.assert_allclose(parts[1].q0, measured[14])
    sim = [np.stack([measured, targets])]
    np.testing.assert_allclose(sysid.loss(sim, [traj]), [0.0, 40 * 7 * 1e-4])
    with pytest.raises(DataError, match='measured contains NaN'):
        _trajectory(targets, np.full((40, 7), np.nan), np.zeros((40, 7)))


@pytest.mark.parametrize('method', ['cmaes', 'anneal'])
def test_small_fit_converges(method):
    rollout = TwinRollout(nthread=2)
    targets = sysid.excitation_trajectory(sysid.ExcitationSpec(duration_s=4.0), 0)
    q, dq = arm_run(TRUE, targets)  # the "real" arm: the twin with TRUE dynamics
    trajs = [_trajectory(targets, q, dq, 'small')]
    # Start 40 % off on every parameter (alternating up and down) and fit whole trajectories
    # (a deterministic objective): a local convergence test that runs in seconds. README's
    # demo starts from the centre of the box and uses minibatches of windows.
    factors = np.where(np.arange(7) % 2, 0.6, 1.4)
    start = DynamicsParams(friction=tuple(np.array(TRUE.friction) * factors),
                           armature=tuple(np.array(TRUE.armature) / factors))
    before = sysid.loss(rollout.simulate([start], trajs), trajs)[0]
    result = sysid.fit(rollout, trajs, method=method, seed=1, generations=12, popsize=6,
                       minibatch=1, window=0, sigma0=0.08, initial=start)
    after = sysid.loss(rollout.simulate([result.params], trajs), trajs)[0]
    # Annealing (the baseline) is slower per evaluation; it must still clearly improve.
    assert after < {'cmaes': 0.25, 'anneal': 0.5}[method] * before, (before, after)
    assert len(result.history) == 12
    assert result.timing['simulate'] > 0
    with pytest.raises(ConfigError, match='unknown sysid method'):
        sysid.fit(rollout, trajs, method='grid')


def test_rollout_with_latency_equals_mujoco_world_with_latency():
    targets = sysid.excitation_trajectory(sysid.ExcitationSpec(duration_s=3.0), 2)
    q, dq = arm_run(TRUE, targets, latency_s=0.0125)  # 3 physics steps at 240 Hz
    traj = _trajectory(targets, q, dq)
    delayed = TwinRollout(latency_s=0.0125).simulate([TRUE], [traj])[0][0]
    np.testing.assert_allclose(delayed, q, atol=1e-9, rtol=0)
    assert np.abs(TwinRollout().simulate([TRUE], [traj])[0][0] - q).max() > 1e-4


def test_twin_loads_identified_params_file(tmp_path):
    import argparse

    from realm_ros.commands.sysid import write_params
    path = tmp_path / 'params.yaml'
    args = argparse.Namespace(method='cmaes', seed=0)
    write_params(path, TRUE, 0.0, 'given', [tmp_path], args)
    world = MujocoWorld(WorldConfig(cameras=(), camera_rate_hz=0.0, sim_params_file=str(path)))
    np.testing.assert_allclose(world.dynamics().friction, TRUE.friction)
    np.testing.assert_allclose(world.dynamics().armature, TRUE.armature)
    world.reset(EpisodeSpec(task='empty'))  # survives a reset
    np.testing.assert_allclose(world.dynamics().armature, TRUE.armature)


def test_sysid_eval_command_scores_a_params_file_on_bags(tmp_path, capsys):
    import pathlib

    from realm_ros.cli import main
    from realm_ros.io import bags
    targets = sysid.excitation_trajectory(sysid.ExcitationSpec(duration_s=3.0), 7)
    q, dq = arm_run(TRUE, targets)
    t = np.arange(len(targets) + 1) / 15.0
    run = bags.RunData(
        path=pathlib.Path('x'), command_t=t[:-1], command_q=targets,
        command_gripper=np.zeros(len(targets)), state_t=t,
        state_q=np.vstack([robot.RESET_Q, q]), state_dq=np.vstack([np.zeros(7), dq]),
        state_effort=np.zeros((len(t), 7)), state_gripper=np.zeros(len(t)))
    bags.write_run(tmp_path / 'bags' / 'traj_000', run)
    (tmp_path / 'true.yaml').write_text(
        f'friction: {list(TRUE.friction)}\narmature: {list(TRUE.armature)}\n')
    assert main(['sysid', 'eval', str(tmp_path / 'bags'), '--params',
                 str(tmp_path / 'true.yaml')]) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    assert float(line.split('mean')[1]) < 1e-5, line
    assert main(['sysid', 'eval', str(tmp_path / 'bags')]) == 0
    assert float(capsys.readouterr().out.split('mean')[1]) > 1.0  # defaults: > 1 mrad
    assert main(['sysid', 'eval', str(tmp_path / 'nothing')]) == 2  # DataError -> exit 2


def test_latency_search_recovers_a_known_delay():
    """Data from a twin that delays targets by 3 physics steps: the whole-step search finds it
    exactly at the true friction/armature and also at a model with 30 % too much friction (what
    a latency-free fit gives, where sysid.identify searches first); at the twin's defaults
    (no friction) it errs long, which is why identify does not search there."""
    trajs = []
    for seed in (2, 3):
        targets = sysid.excitation_trajectory(sysid.ExcitationSpec(duration_s=3.0), seed)
        q, dq = arm_run(TRUE, targets, latency_s=0.0125)
        trajs.append(_trajectory(targets, q, dq, f's{seed}'))
    rollouts = {}

    def make(latency_s):
        return rollouts.setdefault(latency_s, TwinRollout(latency_s=latency_s))

    assert sysid.latency_candidates(240.0, 0.02) == [0.0] + [k / 240 for k in range(2, 7)]
    exact = sysid.estimate_latency(make, trajs, TRUE, max_latency_s=0.025)
    assert exact.latency_s == pytest.approx(0.0125) and exact.delay_steps == 2
    assert len(exact.losses) == len(exact.candidates_s) == 7
    assert min(exact.losses) < 1e-12 < sorted(exact.losses)[1]  # a clear, exact minimum
    sticky = DynamicsParams(friction=tuple(1.3 * np.array(TRUE.friction)), armature=TRUE.armature)
    est = sysid.estimate_latency(make, trajs, sticky, max_latency_s=0.025, max_windows=6)
    assert est.latency_s == pytest.approx(0.0125), est.losses
    biased = sysid.estimate_latency(make, trajs, DynamicsParams(), max_latency_s=0.025)
    assert biased.latency_s > 0.0125, biased.losses


def test_params_file_latency_round_trip_drives_the_twin(tmp_path):
    """PARAMS.yaml with latency_s: DynamicsParams ignores it, the twin replays it."""
    import argparse

    from realm_ros.commands.sysid import write_params
    from realm_ros.core.config import sim_params_latency
    path = tmp_path / 'params.yaml'
    write_params(path, TRUE, 0.0125, 'estimated', [tmp_path],
                 argparse.Namespace(method='cmaes', seed=0))
    assert sim_params_latency(path) == pytest.approx(0.0125)
    assert DynamicsParams.from_yaml(path).friction == pytest.approx(TRUE.friction)
    targets = sysid.excitation_trajectory(sysid.ExcitationSpec(duration_s=3.0), 2)[:20]
    expected, _ = arm_run(TRUE, targets, latency_s=0.0125)
    world = MujocoWorld(WorldConfig(cameras=(), camera_rate_hz=0.0, sim_params_file=str(path)))
    assert world.latency_s == pytest.approx(0.0125)
    world.reset(EpisodeSpec(task='empty'))
    got = []
    for row in targets:
        world.apply(Action(arm=row, gripper=0.0, mode=ActionMode.POSITION))
        world.step()
        got.append(world.data.qpos[world._arm_qpos].copy())
    np.testing.assert_allclose(got, expected, atol=1e-12, rtol=0)
    old_style = tmp_path / 'old.yaml'  # no latency_s key: no delay, as before
    old_style.write_text(f'friction: {list(TRUE.friction)}\narmature: {list(TRUE.armature)}\n')
    assert MujocoWorld(WorldConfig(cameras=(), camera_rate_hz=0.0,
                                   sim_params_file=str(old_style))).latency_s == 0.0
    bad = tmp_path / 'bad.yaml'
    bad.write_text(old_style.read_text() + 'latency_s: -1\n')
    with pytest.raises(ConfigError, match='latency_s must be a number in'):
        MujocoWorld(WorldConfig(cameras=(), camera_rate_hz=0.0, sim_params_file=str(bad)))


@pytest.mark.parametrize('seed', [0, 1010])
def test_excitation_passes_the_bridge_safety_rules(seed):
    """Every excitation target passes the franka bridge's default SafetyMonitor (limits with
    margin, velocity, workspace), judged against the previous target as the measured state."""
    from realm_ros.core.config import SafetyConfig
    from realm_ros.core.safety import SafetyMonitor
    monitor = SafetyMonitor(SafetyConfig(), 1 / 15)
    q = sysid.excitation_trajectory(sysid.ExcitationSpec(duration_s=10.0), seed)
    previous = robot.RESET_Q.copy()
    for row in q:
        monitor.check(row, previous, previous, 0.0)
        previous = row


# -- fast paths against the simple ones -------------------------------------------------------

def _delayed_data(latency_s=0.0125, seeds=(2, 3), duration=3.0):
    trajs = []
    for seed in seeds:
        targets = sysid.excitation_trajectory(sysid.ExcitationSpec(duration_s=duration), seed)
        q, dq = arm_run(TRUE, targets, latency_s=latency_s)
        trajs.append(_trajectory(targets, q, dq, f's{seed}'))
    return trajs


def test_latency_siblings_share_the_precompute_and_equal_fresh_rollouts():
    trajs = _delayed_data()
    base = TwinRollout()
    sibling = base.with_latency(0.0125)
    assert base.with_latency(0.0125) is sibling and sibling.delay_steps == 2
    got = sibling.simulate([TRUE], trajs)
    fresh = TwinRollout(latency_s=0.0125).simulate([TRUE], trajs)
    for a, b in zip(got, fresh):
        np.testing.assert_array_equal(a, b)
    assert sysid.loss(got, trajs)[0] < 1e-12  # replays the data exactly
    fk = base.timing['fk_precompute']
    base.with_latency(0.0).simulate([TRUE], trajs)  # no new FK: rows are shared
    assert base.timing['fk_precompute'] == fk


def test_pending_targets_follow_the_latency_rule():
    from realm_ros.backends.mujoco.actuation import PendingTargets, delay_steps
    assert [delay_steps(k / 240, 240.0) for k in range(4)] == [0, 0, 1, 2]
    pending = PendingTargets(2)
    pending.push(np.ones(7), 0.0)
    assert pending.due() is None and pending.due() is None
    q, g = pending.due()  # acts from the third physics step on
    assert q[0] == 1.0 and not pending


@pytest.mark.slow
def test_fast_latency_profile_matches_the_full_profile():
    """The fast profile (scout, one fit, warm-started neighbours; default ProfileOptions) finds
    the same latency as the simple path (a full fit from scratch per latency), a fit as good
    by the profile's own score and the same parameters within tolerance, in fewer
    generations. A small problem (3 trajectories x 4 s, 40 generations), so the weakly excited
    parameters are loose for both paths: compared by the median; bench/bench_sysid.py compares
    every parameter on 20 trajectories x 10 s (docs/performance.md)."""
    trajs = _delayed_data(seeds=(2, 3, 4), duration=4.0)
    base = TwinRollout()
    options = sysid.FitOptions(seed=0, generations=40, popsize=8, minibatch=6, window=15)
    full = sysid.identify(base.with_latency, trajs, options,
                          sysid.ProfileOptions(profile='full', max_latency_s=0.025))
    fast = sysid.identify(base.with_latency, trajs, options,
                          sysid.ProfileOptions(max_latency_s=0.025))
    assert full.latency_s == fast.latency_s == pytest.approx(0.0125)
    assert fast.generations < full.generations, (fast.fit_log, full.fit_log)
    assert fast.profile[fast.latency_s] < 1.5 * full.profile[full.latency_s]
    a = np.r_[full.fit.params.friction, full.fit.params.armature]
    b = np.r_[fast.fit.params.friction, fast.fit.params.armature]
    assert np.median(np.abs(b / a - 1)) < 0.15, (a, b)
    truth = np.r_[TRUE.friction, TRUE.armature]
    assert np.median(np.abs(b / truth - 1)) < 0.15, b / truth


def test_parallel_profile_per_latency_equals_the_sequential_fit():
    """identify_parallel (the GPU path's loop) on the CPU: at each latency exactly the
    generations of sysid.fit, and the best latency by the profile rule."""
    from realm_ros.core.sysid.parallel import identify_parallel, simulate_groups
    trajs = _delayed_data()
    base = TwinRollout()
    options = sysid.FitOptions(seed=3, generations=6, popsize=6, minibatch=4, window=15)
    lats = [0.0, 0.0125]
    par = identify_parallel(base.with_latency, trajs, options, latencies=lats)
    for lat in lats:
        seq = sysid.fit(base.with_latency(lat), trajs, options)
        if lat == par.latency_s:
            assert par.fit.params == seq.params
            assert [r[:5] for r in par.fit.history] == [r[:5] for r in seq.history]
    pool = sysid.scoring_windows(trajs)
    sims = simulate_groups(base.with_latency, [(lat, [TRUE]) for lat in lats], pool)
    right, wrong = sysid.loss(sims[1], pool)[0], sysid.loss(sims[0], pool)[0]
    assert right < 1e-10 and wrong > 1e4 * right, (right, wrong)  # the truth at its latency
    assert set(par.profile) == set(lats)


def test_mjx_inputs_split_the_control_rows_as_the_twin_writes_them():
    """The GPU path's inputs (pure numpy, no JAX needed): control rows split into ctrl and
    mocap pose equal what MujocoWorld writes for the same target."""
    import mujoco

    from realm_ros.backends.mujoco.mjx_rollout import pow2_bucket, split_controls
    cpu = TwinRollout()
    targets = sysid.excitation_trajectory(sysid.ExcitationSpec(duration_s=3.0), 1)[:5]
    rows = cpu.control_rows(targets, np.full(5, 0.3))
    ctrl, pos, quat = split_controls(cpu, rows[None])
    data = mujoco.MjData(cpu.model)
    cpu.act.write_target(data, targets[4], 0.3)
    np.testing.assert_allclose(ctrl[0, 4], data.ctrl)
    np.testing.assert_allclose(pos[0, 4], data.mocap_pos)
    np.testing.assert_allclose(quat[0, 4], data.mocap_quat)
    assert [pow2_bucket(n) for n in (1, 2, 3, 12, 13, 64, 65)] == [1, 2, 4, 16, 16, 64, 128]


# -- one latency-profiled fit, by strategy (core/sysid/strategies.py) ------------------------

def _small_request(**changes):
    trajs = _delayed_data(seeds=(2,), duration=3.0)
    options = sysid.FitOptions(method='cmaes', seed=1, generations=3, popsize=4, minibatch=3,
                               window=15)
    base = TwinRollout()
    fields = {'make_evaluator': base.with_latency, **changes}
    return sysid.FitRequest(trajs, options, sysid.ProfileOptions(max_latency_s=1 / 240),
                            **fields), base


def test_profiled_fit_runs_each_host_strategy_as_its_function():
    """profiled_fit('fast' | 'full' | 'parallel') is identify's walk / identify_parallel, the
    same fit for the same request; one given latency is a plain sysid.fit."""
    from realm_ros.core.sysid.parallel import identify_parallel
    request, base = _small_request()
    for name in ('fast', 'full'):
        got = sysid.profiled_fit(request, name)
        want = sysid.identify(base.with_latency, request.trajectories, request.options,
                              sysid.ProfileOptions(profile=name, max_latency_s=1 / 240))
        assert (got.latency_s, got.fit.params, got.profile) == \
            (want.latency_s, want.fit.params, want.profile)
    got = sysid.profiled_fit(request, 'parallel')
    want = identify_parallel(base.with_latency, request.trajectories, request.options,
                             request.profile)
    assert (got.latency_s, got.fit.params) == (want.latency_s, want.fit.params)
    fixed = sysid.profiled_fit(dataclasses.replace(request, latencies=[1 / 240]), 'full')
    plain = sysid.fit(base.with_latency(1 / 240), request.trajectories, request.options)
    assert fixed.latency_s == 1 / 240 and fixed.fit.params == plain.params and not fixed.profile


def test_profiled_fit_refuses_what_a_strategy_cannot_do():
    request, _ = _small_request()
    with pytest.raises(ConfigError, match='unknown fit strategy .*device'):
        sysid.profiled_fit(request, 'nope')
    with pytest.raises(ConfigError, match='cmaes only, not lm'):
        sysid.profiled_fit(dataclasses.replace(
            request, options=dataclasses.replace(request.options, method='lm')), 'parallel')
    with pytest.raises(ConfigError, match='needs a simulator'):
        sysid.profiled_fit(dataclasses.replace(request, make_evaluator=None), 'fast')
    with pytest.raises(DataError, match='exactly one, got 2'):
        sysid.profiled_fit(dataclasses.replace(request, latencies=[0.0, 0.01]), 'fast')


def test_device_strategy_is_the_backends_own_loaded_by_name():
    """Core names the device strategy by target only (no backend import in core); asking for it
    loads mjx_fit's DEVICE, which refuses with one line where JAX is missing."""
    from realm_ros.backends.mujoco import mjx_fit
    from realm_ros.core.errors import BackendUnavailable
    strategy = sysid.fit_strategy('device')
    assert strategy is mjx_fit.DEVICE and strategy.methods == ('cmaes',)
    request, _ = _small_request(make_evaluator=None)
    assert strategy.bar_total(request) == 60  # DeviceFitOptions' 20 + 40 generations
    try:
        import jax  # noqa: F401
    except ImportError:
        with pytest.raises(BackendUnavailable, match='mujoco-mjx'):
            sysid.profiled_fit(request, 'device')

@pytest.mark.parametrize('arm_id', ['fr3', 'fer'])
def test_excitation_stays_below_libfranka_acceleration_and_jerk_limits_over_seeds(arm_id):
    """With rate_fraction 0.6, what the bridge's shaper (safety.rate_limit_scale 0.8) has to
    follow stays below 0.6 x libfranka's limits for the arm (FR3 10 rad/s^2 / 5000 rad/s^3 on every
    joint; the Panda per joint): before, FR3 joint 7 reached 9.2 rad/s^2, the Panda's joint 2
    7.7 rad/s^2 (libfranka's 7.5), and the shaper clipped the chirps."""
    from realm_ros.core import motion
    from realm_ros.core.sysid.excitation import target_rates
    spec = sysid.ExcitationSpec(duration_s=10.0, arm_id=arm_id, rate_fraction=0.6)
    acc_limit = motion.FR3_MAX_ACCELERATION if arm_id == 'fr3' else motion.FER_MAX_ACCELERATION
    jerk_limit = motion.FR3_MAX_JERK if arm_id == 'fr3' else motion.FER_MAX_JERK
    worst_acc = np.zeros(7)
    worst_jerk = np.zeros(7)
    for seed in range(40):
        q = sysid.excitation_trajectory(spec, seed)
        _, acc, jerk = target_rates(q, spec.control_hz)
        worst_acc = np.maximum(worst_acc, acc.max(0))
        worst_jerk = np.maximum(worst_jerk, jerk.max(0))
    print(f'{arm_id}: max acceleration / libfranka {np.round(worst_acc / acc_limit, 3)}, '
          f'jerk / libfranka {np.round(worst_jerk / jerk_limit, 4)}')
    assert np.all(worst_acc <= spec.rate_fraction * acc_limit + 1e-9)
    assert np.all(worst_jerk <= spec.rate_fraction * jerk_limit + 1e-9)
    assert np.all(worst_acc > 0.3 * spec.rate_fraction * acc_limit)  # still excites
    # The same trajectory against half the acceleration cap: refused, naming the rule.
    q = sysid.excitation_trajectory(spec, 0)
    verdict = sysid.check_trajectory(q, dataclasses.replace(spec, rate_fraction=0.3))
    assert verdict is not None and 'acceleration' in verdict


def _refusals(targets, spec, latency_s=0.008):
    """Run ``targets`` on the demo's heavy-friction arm (config/dynamics/sysid_demo.yaml's
    friction, armature and latency) through the bridge's SafetyMonitor as the bridge does
    (target k+1 against target k in force and the state measured after it); return the
    refusals."""
    from realm_ros.core.errors import CommandRejected
    from realm_ros.core.safety import SafetyMonitor
    monitor = SafetyMonitor(spec.safety, 1 / robot.CONTROL_HZ, robot.arm_spec(spec.arm_id))
    q, _ = arm_run(TRUE, targets, latency_s=latency_s)
    refused = []
    for k in range(1, len(targets)):
        try:
            monitor.check(targets[k], targets[k - 1], q[k - 1], 0.0)
        except CommandRejected as err:
            refused.append(f'step {k}: {err}')
    return refused


def test_excitation_plans_against_the_bridges_workspace_look_ahead():
    """make demo's excitation (5 x 8 s, seeds 0-4, FR3) on the demo's heavy-friction arm: the
    bridge's workspace look-ahead never holds a target, with the acceleration cap
    (rate_fraction 0.6, the default) or without it. Planned blind (the target's TCP only, no
    cap: the excitation before issue 26), seed 3 loses a target at step 61 as it did in
    make demo (the TCP lags 0.109 m and its look-ahead would cross the box's x wall)."""
    spec = sysid.ExcitationSpec(duration_s=8.0, arm_id='fr3')
    for rate_fraction in (0.6, None):
        planned = dataclasses.replace(spec, rate_fraction=rate_fraction)
        for seed in range(5):
            targets = sysid.excitation_trajectory(planned, seed)
            assert sysid.check_trajectory(targets, planned) is None
            assert not _refusals(targets, spec), (rate_fraction, seed)
    blind = dataclasses.replace(spec, lag_s=0.0, lookahead_margin_m=0.0, rate_fraction=None,
                                safety=dataclasses.replace(spec.safety, workspace_lookahead=0))
    refused = _refusals(sysid.excitation_trajectory(blind, 3), spec)
    assert refused and all('overshoot the workspace box' in r for r in refused), refused


def test_excitation_keeps_to_a_lab_worlds_safety_box(tmp_path):
    """A lab's world_node parameter file narrows the box: the excitation keeps inside it."""
    from realm_ros.core import safety
    from realm_ros.core.config import safety_from_params_file
    from realm_ros.core.sysid.excitation import predicted_lookahead
    path = tmp_path / 'world.yaml'
    head = '/**:\n  ros__parameters:\n    safety:\n'
    path.write_text(head + '      workspace_max: [1.0, 0.25, 1.0]\n')
    box = safety_from_params_file(path)
    assert box.workspace_max == (1.0, 0.25, 1.0)
    spec = sysid.ExcitationSpec(duration_s=8.0, arm_id='fr3', safety=box)
    for seed in range(3):
        _, ahead = predicted_lookahead(
            sysid.excitation_trajectory(spec, seed), spec)
        assert np.all(safety.box_excess(ahead, box) <= -spec.lookahead_margin_m + 1e-12)
    path.write_text(head + '      workspace_maxx: [1, 1, 1]\n')
    with pytest.raises(ConfigError, match='workspace_maxx'):
        safety_from_params_file(path)
