"""The GPU sweep's MJX stepper (``mjx_sweep.py``) against CPU MuJoCo.

Needs ``mujoco-mjx`` and JAX (the ``gpu`` extra; JAX's CPU backend is enough) and skips without
them; MJX 3.17 wants MuJoCo 3.17. On JAX's CPU backend the scene's first call compiles for
minutes, so the episode test is short (a few control steps of two worlds).
"""

import numpy as np
import pytest

pytest.importorskip('jax')
mjx = pytest.importorskip('mujoco.mjx')

from realm_ros.backends.mujoco import mjx_sweep  # noqa: E402
from realm_ros.backends.mujoco.batch import CpuStepper, run_batch  # noqa: E402
from realm_ros.backends.mujoco.world import MujocoWorld  # noqa: E402
from realm_ros.core.config import WorldConfig  # noqa: E402
from realm_ros.core.errors import ConfigError  # noqa: E402
from realm_ros.core.types import EpisodeSpec  # noqa: E402
from realm_ros.policies.scripted import ScriptedPolicy, infer_batch  # noqa: E402


def _world(task):
    return MujocoWorld(WorldConfig(task=task, cameras=(), camera_rate_hz=0.0))


def test_mjx_model_runs_the_supported_tasks_and_names_what_it_refuses():
    import mujoco

    m = mjx_sweep.mjx_model(_world('stack_cubes').model, 8, 16)
    assert m.opt.cone == mujoco.mjtCone.mjCONE_PYRAMIDAL
    assert m.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    assert (m.opt.iterations, m.opt.ls_iterations) == (8, 16)
    arm = [g for g in range(m.ngeom)
           if m.body(m.geom_bodyid[g]).name.startswith(mjx_sweep.ARM_BODY_PREFIXES)]
    assert mujoco.mjtGeom.mjGEOM_CYLINDER not in m.geom_type[arm]
    assert mjx_sweep.unsupported_pairs(m) == []
    mjx.put_model(m)
    for task, part in (('rotate_mug', 'mug'), ('push_switch', 'switch'),
                       ('pick_spoon', 'ELLIPSOID')):
        with pytest.raises(ConfigError, match=part):
            mjx_sweep.check_model(mjx_sweep.mjx_model(_world(task).model), task)


def test_mjx_episodes_follow_cpu_mujoco_on_the_same_model():
    """Two worlds (Default and B-HOBJ, whose masses are per-world fields) for a few control
    steps: MJX's joint trajectories follow CPU MuJoCo's on the same (mjx_model) model to
    float32 precision, the records have the CPU path's shape, and the compiled function is
    reused (no second compilation)."""
    specs = [EpisodeSpec(task='stack_cubes', seed=s, perturbation=c, max_steps=3)
             for s, c in ((0, 'Default'), (1, 'B-HOBJ'))]
    steppers = []

    def mjx_factory(worlds):
        steppers.append(mjx_sweep.MjxStepper(worlds, 8, 16))
        return steppers[-1]

    runs = []
    for factory in (mjx_factory, lambda ws: CpuStepper(ws, mjx_sweep.mjx_model)):
        traj = [[] for _ in specs]
        results = run_batch([_world('stack_cubes') for _ in specs],
                            [ScriptedPolicy() for _ in specs], specs, factory,
                            on_step=lambda i, k, o, traj=traj: traj[i].append(
                                o.joints.position), infer_batch=infer_batch)
        runs.append((results, np.array(traj)))
    (gpu, q_gpu), (cpu, q_cpu) = runs
    assert steppers[0].varying == ['body_inertia', 'body_mass']
    assert steppers[0]._fn._cache_size() == 1
    assert q_gpu.shape == q_cpu.shape == (2, 3, 7)
    assert np.max(np.abs(q_gpu - q_cpu)) < 1e-4
    for g, c in zip(gpu, cpu):
        rg, rc = g.to_record(), c.to_record()
        assert rg['backend'] == 'mjx' and set(rg) == set(rc)
        assert (rg['steps'], rg['progression']) == (rc['steps'], rc['progression'])
