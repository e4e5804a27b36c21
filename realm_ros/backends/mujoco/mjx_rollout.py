"""Batched twin rollouts on a GPU through MuJoCo MJX on JAX: every (latency, candidate, window)
of a generation in one jitted call.

The inputs are exactly :class:`TwinRollout`'s (same arm-only model, same initial states, same
per-physics-step control rows from ``actuation.py``, same latency shift); only the integration
runs in MJX: ``jax.vmap`` over latencies, candidates and windows, ``jax.lax.scan`` over the
physics steps, float32 unless ``jax_enable_x64`` is on. Differences from the CPU path: MJX's
solver (its own iteration and tolerance handling) and float32; ``bench/bench_sysid_gpu.py``
measures both against the CPU rollouts.

Deviations from the CPU model, none changes the arm's dynamics: the friction cone is
pyramidal (elliptic cones crash MJX 3.17 under JAX 0.11; the arm-only model has contacts
disabled, so no cone is ever used); the arm's frictionloss is nonzero when the model is put on
the device (MJX fixes at ``put_model`` which dofs have friction rows; the candidates' values
replace it); and the batch is padded to power-of-two sizes so that generations reuse one
compiled function.

Needs ``mujoco-mjx`` (and ``jax`` with a GPU backend); imported only by ``--device gpu``.
"""

from __future__ import annotations

import copy
import time
from typing import Sequence

import numpy as np

from realm_ros.backends.mujoco.rollout import TwinRollout
from realm_ros.core import robot
from realm_ros.core.config import DynamicsParams
from realm_ros.core.errors import BackendUnavailable
from realm_ros.core.sysid import BatchEvaluator, Trajectory


def pow2_bucket(n: int) -> int:
    """Return the power of two >= n (batch sizes that share one compiled function)."""
    return 1 << max(0, int(n - 1).bit_length())


def enable_compilation_cache(path: str | None = None) -> str:
    """Turn on JAX's persistent compilation cache (``path``, else ``$JAX_COMPILATION_CACHE_DIR``,
    else ``~/.cache/realm_ros/jax``) so that a second process skips XLA compilation; return
    the folder."""
    import os

    import jax

    path = path or os.environ.get('JAX_COMPILATION_CACHE_DIR') or os.path.join(
        os.path.expanduser('~'), '.cache', 'realm_ros', 'jax')
    os.makedirs(path, exist_ok=True)
    jax.config.update('jax_compilation_cache_dir', path)
    jax.config.update('jax_persistent_cache_min_compile_time_secs', 0.0)
    jax.config.update('jax_persistent_cache_min_entry_size_bytes', -1)
    return path


def split_controls(cpu: TwinRollout, controls: np.ndarray) -> tuple[np.ndarray, ...]:
    """Split ``CONTROL_SPEC`` rows (..., ncontrol) into (ctrl, mocap_pos, mocap_quat)."""
    m = cpu.model
    nu, nm = m.nu, m.nmocap
    ctrl = controls[..., :nu]
    pos = controls[..., nu:nu + 3 * nm].reshape(controls.shape[:-1] + (nm, 3))
    quat = controls[..., nu + 3 * nm:nu + 7 * nm].reshape(controls.shape[:-1] + (nm, 4))
    return ctrl, pos, quat


class MjxRollout(BatchEvaluator):
    """The twin's batched rollouts in MJX; :meth:`simulate_groups` batches several latencies."""

    def __init__(self, physics_hz: float = robot.PHYSICS_HZ, control_hz: float = robot.CONTROL_HZ,
                 latency_s: float = 0.0, iterations: int | None = None,
                 ls_iterations: int | None = None) -> None:
        """Put the arm-only model on the device.

        Args:
            iterations, ls_iterations: the constraint solver's Newton and line-search
                iterations (None: the CPU model's, 100 and 50). Under ``vmap`` MJX runs every
                line-search iteration for every world whatever converged, so these set the
                cost of a step; ``bench/bench_sysid_gpu.py --step-profile`` measures the
                rollouts against the CPU's for each setting.
        """
        try:
            import jax
            from mujoco import mjx
        except ImportError as err:
            raise BackendUnavailable('--device gpu needs the "mujoco-mjx" and "jax" packages '
                                     '(pip install mujoco-mjx; jax with CUDA)') from err
        import mujoco

        self._jax = jax
        self.cpu = TwinRollout(physics_hz, control_hz, nthread=1, latency_s=latency_s)
        self.substeps = self.cpu.substeps
        self.latency_s = float(latency_s)
        model = copy.copy(self.cpu.model)
        model.opt.cone = mujoco.mjtCone.mjCONE_PYRAMIDAL
        # put_model decides once, from the values it sees, which dofs get frictionloss
        # constraint rows; the twin's default friction is 0, so mark the arm's dofs (every
        # candidate has friction > 0: ParamSpace's lower bound is 5e-3 N m).
        model.dof_frictionloss[self.cpu.act.arm_dof] = 1.0
        if iterations is not None:
            model.opt.iterations = int(iterations)
        if ls_iterations is not None:
            model.opt.ls_iterations = int(ls_iterations)
        self.solver = {'iterations': int(model.opt.iterations),
                       'ls_iterations': int(model.opt.ls_iterations)}
        self.model = model
        self.mx = mjx.put_model(model)
        self._mjx = mjx
        self._fn = jax.jit(self._batched)
        self._siblings: dict[float, MjxRollout] = {self.latency_s: self}
        self.timing = {'rollout': 0.0, 'fk_precompute': 0.0, 'models': 0.0, 'compile': 0.0}
        self._shapes: set = set()

    def with_latency(self, latency_s: float) -> MjxRollout:
        """Return an evaluator replaying ``latency_s`` that shares the compiled function."""
        sibling = self._siblings.get(float(latency_s))
        if sibling is None:
            sibling = copy.copy(self)
            sibling.latency_s = float(latency_s)
            sibling.cpu = self.cpu.with_latency(latency_s)
            self._siblings[sibling.latency_s] = sibling
        return sibling

    # -- the jitted rollout -----------------------------------------------------------------

    def _one(self, fric, arm, qpos0, qvel0, ctrl, mpos, mquat):
        """One rollout: (S, ...) controls from (qpos0, qvel0); returns (K, 7) arm positions."""
        jax, mjx = self._jax, self._mjx
        dof = self.cpu.act.arm_dof
        m = self.mx.replace(dof_frictionloss=self.mx.dof_frictionloss.at[dof].set(fric),
                            dof_armature=self.mx.dof_armature.at[dof].set(arm))
        d = mjx.make_data(m).replace(qpos=qpos0, qvel=qvel0)
        qadr = self.cpu.act.arm_qpos

        def step(d, u):
            c, p, q = u
            d = mjx.step(m, d.replace(ctrl=c, mocap_pos=p, mocap_quat=q))
            return d, d.qpos[qadr]

        _, qs = jax.lax.scan(step, d, (ctrl, mpos, mquat))
        return qs[self.substeps - 1::self.substeps]

    def _batched(self, fric, arm, qpos0, qvel0, ctrl, mpos, mquat):
        """fric, arm: (L, C, 7); qpos0, qvel0: (W, n); ctrl, mpos, mquat: (L, W, S, ...)."""
        vmap = self._jax.vmap
        per_window = vmap(self._one, in_axes=(None, None, 0, 0, 0, 0, 0))
        per_candidate = vmap(per_window, in_axes=(0, 0, None, None, None, None, None))
        per_latency = vmap(per_candidate, in_axes=(0, 0, None, None, 0, 0, 0))
        return per_latency(fric, arm, qpos0, qvel0, ctrl, mpos, mquat)

    # -- BatchEvaluator ---------------------------------------------------------------------

    def simulate(self, params: Sequence[DynamicsParams],
                 trajectories: Sequence[Trajectory]) -> list[np.ndarray]:
        return self.simulate_groups([(self.latency_s, params)], trajectories)[0]

    def simulate_groups(self, groups, trajectories: Sequence[Trajectory]) -> list[list]:
        """Return per (latency s, candidates) group the per-window (P, K, 7) positions."""
        args = self.inputs(groups, trajectories)
        shape = tuple(a.shape for a in args)
        t = time.perf_counter()
        out = np.asarray(self._fn(*args))  # (L, C, W, K_max, 7)
        elapsed = time.perf_counter() - t
        if shape in self._shapes:
            self.timing['rollout'] += elapsed
        else:  # the first call of a shape compiles
            self._shapes.add(shape)
            self.timing['compile'] += elapsed
        return [[out[i, :len(params), w, :traj.steps] for w, traj in enumerate(trajectories)]
                for i, (_, params) in enumerate(groups)]

    def inputs(self, groups, trajectories: Sequence[Trajectory]) -> list:
        """Return the jitted function's device arrays for ``groups`` on ``trajectories``:
        (fric, arm) (L, C, 7), (qpos0, qvel0) (W, n), (ctrl, mocap_pos, mocap_quat)
        (L, W, S, ...); candidates and windows padded to powers of two."""
        jnp = self._jax.numpy
        n_l = len(groups)
        n_c = pow2_bucket(max(len(p) for _, p in groups))
        n_w = pow2_bucket(len(trajectories))
        nq, nv = self.cpu.model.nq, self.cpu.model.nv
        fric = np.zeros((n_l, n_c, 7))
        arm = np.full((n_l, n_c, 7), 0.1)
        ctrl: np.ndarray | None = None
        init: np.ndarray | None = None
        for i, (lat, params) in enumerate(groups):
            for j in range(n_c):
                p = params[min(j, len(params) - 1)]  # padding repeats the last candidate
                fric[i, j], arm[i, j] = p.friction, p.armature
            evaluator = self.cpu.with_latency(lat)
            state, rows = evaluator.batch_inputs(trajectories)
            if ctrl is None:
                ctrl = np.empty((n_l, n_w) + rows.shape[1:])
                init = np.empty((n_w, state.shape[1]))
                init[:len(state)], init[len(state):] = state, state[-1]
            ctrl[i, :len(rows)], ctrl[i, len(rows):] = rows, rows[-1]
        assert ctrl is not None and init is not None  # groups is not empty
        c, p, q = split_controls(self.cpu, ctrl)
        qpos0, qvel0 = init[:, 1:1 + nq], init[:, 1 + nq:1 + nq + nv]
        return [jnp.asarray(a) for a in (fric, arm, qpos0, qvel0, c, p, q)]
