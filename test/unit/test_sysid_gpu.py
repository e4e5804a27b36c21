"""The GPU sysid path (``--device gpu``) against the CPU one.

The input test is pure numpy and always runs. The MJX tests need ``mujoco-mjx`` and JAX (the
``gpu`` extra; JAX's CPU backend is enough) and skip without them; they run on the GPU machine
and wherever MJX installs (MJX 3.17 wants MuJoCo 3.17).
"""

import dataclasses

import numpy as np
import pytest
from twin_helpers import write_trajectory_bags

from realm_ros.backends.mujoco.rollout import TwinRollout
from realm_ros.core import robot, sysid
from realm_ros.core.config import DynamicsParams

TRUE = DynamicsParams(friction=(0.4, 0.6, 0.35, 0.5, 0.2, 0.25, 0.1),
                      armature=(0.3, 0.4, 0.2, 0.35, 0.12, 0.1, 0.06))


def _trajectories(n=2, duration=3.0):
    """Excitation targets with made-up measurements (the inputs do not depend on them)."""
    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        targets = sysid.excitation_trajectory(sysid.ExcitationSpec(duration_s=duration), i)
        k = len(targets)
        out.append(sysid.Trajectory(
            f't{i}', robot.RESET_Q + rng.normal(0, 0.01, 7), rng.normal(0, 0.1, 7), 0.2,
            targets, rng.uniform(0, 1, k), targets + rng.normal(0, 0.01, (k, 7)),
            rng.normal(0, 0.1, (k, 7)), 1 / 15))
    return out


def test_device_window_inputs_equal_the_cpu_rollouts_per_window_inputs():
    """window_inputs (sliced per trajectory, vectorised initial states) equals what
    TwinRollout prepares per window, for the fit's windows and a named subset."""
    from realm_ros.backends.mujoco.mjx_fit import window_inputs
    from realm_ros.backends.mujoco.mjx_rollout import split_controls

    cpu = TwinRollout()
    trajs = _trajectories()
    for length, names in ((3, None), (5, ['t1@10', 't0@0', 't0@25'])):
        got = window_inputs(cpu, trajs, length, names)
        pool = sysid.windows(trajs, length)
        if names is not None:
            pool = [next(w for w in pool if w.name == n) for n in names]
        assert got['qpos0'].shape[0] == len(pool)
        for i, w in enumerate(pool):
            state, targets, held = cpu._prepared(w)
            rows = np.vstack([held[None], targets])
            ctrl, pos, quat = split_controls(cpu, rows)
            nq, nv = cpu.model.nq, cpu.model.nv
            np.testing.assert_array_equal(got['qpos0'][i], state[1:1 + nq])
            np.testing.assert_array_equal(got['qvel0'][i], state[1 + nq:1 + nq + nv])
            np.testing.assert_allclose(got['ctrl'][i], ctrl, atol=1e-12)
            np.testing.assert_allclose(got['mpos'][i], pos, atol=1e-12)
            np.testing.assert_allclose(got['mquat'][i], quat, atol=1e-12)
            np.testing.assert_array_equal(got['measured'][i], w.measured)


def test_cma_constants_are_a_valid_separable_cma():
    from realm_ros.backends.mujoco.mjx_fit import cma_constants

    c = cma_constants(14, 16)
    assert c['mu'] == 8 and abs(c['w'].sum() - 1) < 1e-12 and np.all(np.diff(c['w']) < 0)
    assert 0 < c['c1'] + c['cmu'] <= 0.9 and 0 < c['cs'] < 1 and 0 < c['cc'] < 1
    assert 3.5 < c['chi'] < np.sqrt(14)


@pytest.fixture(scope='module')
def mjx_rollout():
    pytest.importorskip('jax')
    pytest.importorskip('mujoco.mjx')
    from realm_ros.backends.mujoco.mjx_fit import FIT_SOLVER
    from realm_ros.backends.mujoco.mjx_rollout import MjxRollout

    return MjxRollout(**FIT_SOLVER)


def test_mjx_rollout_equals_the_cpu_rollout(mjx_rollout):
    """The device fit's rollouts (latency applied on the device, the solver settings the fit
    uses) equal the CPU's within 1e-4 rad, and its loss the CPU loss within 0.1 %.

    MJX runs in float32: on these windows (random initial velocities, stick-slip at the
    friction) the difference reaches 6e-5 rad after 5 control steps with the default solver
    settings as with the fit's (the fit's residual is about 1.4 mrad RMS)."""
    import jax
    import jax.numpy as jnp

    from realm_ros.backends.mujoco.mjx_fit import DeviceFit, DeviceFitOptions

    trajs = _trajectories()
    lats = [0.0, 1 / 120, 0.0125]
    windows = sysid.windows(trajs, 5)[:6]
    fit = DeviceFit(mjx_rollout, trajs, DeviceFitOptions(window=3), lats, scoring=windows)
    space = sysid.ParamSpace()
    cands = [TRUE, space.from_unit(np.full(14, 0.3))]
    u = jnp.asarray(np.stack([[space.to_unit(p) for p in cands]] * len(lats)))
    q = np.asarray(jax.jit(fit.positions)(u, jnp.asarray(fit.delays), fit.scoring,
                                          jnp.arange(len(windows))))  # (L, C, W, K, 7)
    cpu = TwinRollout()
    for i, lat in enumerate(lats):
        ref = cpu.with_latency(lat).simulate(cands, windows)
        for w in range(len(windows)):
            np.testing.assert_allclose(q[i, :, w], ref[w], atol=1e-4, rtol=0)
    values = np.asarray(fit._score(u[:, 0], jnp.asarray(fit.delays), fit.scoring))
    steps = sum(w.steps for w in windows)
    expect = [sysid.loss(cpu.with_latency(lat).simulate([TRUE], windows), windows)[0] / steps
              for lat in lats]
    np.testing.assert_allclose(values, expect, rtol=1e-3)


def test_minibatches_never_draw_the_padding():
    """The pool is padded to a power of two; every minibatch holds distinct valid rows, and
    every valid row is drawn."""
    jax = pytest.importorskip('jax')
    from realm_ros.backends.mujoco.mjx_fit import sample_minibatch

    seen = set()
    for k in jax.random.split(jax.random.PRNGKey(0), 200):
        idx = np.asarray(sample_minibatch(k, 16, np.int32(11), 5))
        assert len(set(idx.tolist())) == 5 and idx.max() < 11
        seen.update(idx.tolist())
    assert seen == set(range(11))


def test_a_second_process_loads_the_exported_stages(mjx_rollout, tmp_path, monkeypatch):
    """The fit's traced stages are saved with jax.export; a fit that finds them (a later
    process: the per-process executables cleared here) loads them instead of tracing, and
    gives the same result; another schedule is exported anew."""
    from realm_ros.backends.mujoco import mjx_fit

    monkeypatch.setenv('REALM_ROS_MJX_EXPORT_DIR', str(tmp_path / 'exported'))
    trajs = _trajectories(2, 3.0)
    scoring = sysid.windows(trajs, 5)[:4]
    options = mjx_fit.DeviceFitOptions(window=2, popsize=4, minibatch_a=2, minibatch_b=2,
                                       generations_a=2, generations_b=2, keep=1,
                                       select_last=1)
    results = []
    for _ in range(2):
        mjx_fit._EXECUTABLES.clear()
        fit = mjx_fit.DeviceFit(mjx_rollout, trajs, options, [0.0, 1 / 120], scoring=scoring)
        results.append((fit.run(), dict(fit.exports)))
    (first, saved), (second, loaded) = results
    assert all(v.startswith('saved ') for v in saved.values()) and len(saved) == 3
    assert all(v.startswith('loaded ') for v in loaded.values()) and len(loaded) == 3
    assert len(list((tmp_path / 'exported').glob('*.jaxexport'))) == 3
    assert second.latency_s == first.latency_s
    np.testing.assert_allclose(second.fit.params.friction, first.fit.params.friction,
                               rtol=1e-6)
    mjx_fit._EXECUTABLES.clear()
    other = mjx_fit.DeviceFit(mjx_rollout, trajs, dataclasses.replace(options, popsize=5),
                              [0.0, 1 / 120], scoring=scoring)
    other.run()
    assert other.exports['phase_a'].startswith('saved ')


def test_fit_device_gpu_without_mjx_names_the_missing_packages(tmp_path, capsys):
    """``realm-ros sysid fit --device gpu`` on a machine without MJX: one clear error, exit 2,
    nothing written."""
    import importlib.util

    if importlib.util.find_spec('jax') is not None:
        pytest.skip('JAX is installed here: the device path would run')
    from realm_ros.cli import main

    bags = write_trajectory_bags(tmp_path, _trajectories(1))
    out = tmp_path / 'P.yaml'
    code = main(['sysid', 'fit', str(bags), '--out', str(out), '--holdout', '0',
                 '--device', 'gpu', '--engine', 'mjx', '--quiet'])
    assert code == 2
    assert 'mujoco-mjx' in capsys.readouterr().err
    assert not out.exists()


def test_fit_device_gpu_warp_without_a_gpu_says_so(tmp_path, capsys):
    """``realm-ros sysid fit --device gpu`` (MuJoCo Warp, the default engine) where there is no
    CUDA GPU or no mujoco-warp: one line naming what is missing, exit 2, nothing written."""
    try:
        import warp
        warp.config.quiet = True
        if warp.is_cuda_available():
            pytest.skip('a CUDA GPU is here: the Warp fit would run')
    except ImportError:
        pass
    from realm_ros.cli import main

    bags = write_trajectory_bags(tmp_path, _trajectories(1))
    out = tmp_path / 'P.yaml'
    code = main(['sysid', 'fit', str(bags), '--out', str(out), '--holdout', '0',
                 '--device', 'gpu', '--quiet'])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and ('mujoco-warp' in err or 'CUDA' in err), err
    assert not out.exists()
