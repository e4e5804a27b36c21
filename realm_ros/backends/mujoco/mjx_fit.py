"""The whole latency-profiled fit on a GPU: CMA-ES, minibatches and rollouts inside jitted
MJX/JAX calls, no host round trip per generation.

:func:`identify_on_device` is what ``realm-ros sysid fit --device gpu`` runs:

1. **Phase A**: an independent separable CMA-ES at every candidate latency
   (:func:`latency.latency_candidates`, 13 for 0..50 ms), all in one batch per generation,
   ``generations_a`` generations in one ``jax.lax.scan``.
2. **Selection**: the latency whose CMA-ES mean had the lowest minibatch loss over phase A's
   last ``select_last`` generations (every latency sees the same minibatches), and its
   neighbours: ``keep`` adjacent latencies.
3. **Phase B**: those CMA-ES continue (mean, step size, paths and diagonal covariance carried
   over) on larger minibatches for ``generations_b`` generations, again one scan.
4. **Scoring**: the profile rule of ``core/sysid/latency.py``: each kept latency's mean is
   scored at its own latency on the fixed windows (:func:`latency.scoring_windows`), the
   lowest wins.

The rollouts are :class:`MjxRollout`'s model (the CPU twin's arm-only model, same initial
states, same control rows from ``actuation.py``); the latency shift is applied on the device by
indexing each window's control rows (row ``(s - delay) // substeps + 1`` at physics step ``s``,
row 0 = the target in force before the window), which is :meth:`TwinRollout.controls`'s rule.

The CMA-ES is a separable CMA-ES (diagonal covariance, the CPU path's ``CMA_diagonal``) written
here from the published update rules (Hansen's tutorial "The CMA Evolution Strategy"; Ros and
Hansen 2008 for the separable learning rates), not the ``cma`` package: the CPU path's
generations are not reproduced bit for bit; ``bench/bench_sysid_gpu.py`` compares the
parameters with the CPU fit's. Candidates outside the unit cube are evaluated at the nearest
point inside it.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import os
import pathlib
import time
from typing import Callable, Sequence
import warnings

import numpy as np

from realm_ros.backends.mujoco.actuation import gripper_ctrl
from realm_ros.backends.mujoco.mjx_rollout import MjxRollout, pow2_bucket, split_controls
from realm_ros.backends.mujoco.rollout import TwinRollout
from realm_ros.core.config import check_minimums, check_step_size
from realm_ros.core.errors import ConfigError
from realm_ros.core.sysid import Trajectory
from realm_ros.core.sysid.data import window_pool
from realm_ros.core.sysid.latency import IdentifyResult, latency_candidates, scoring_windows
from realm_ros.core.sysid.optimise import FitResult, Generation
from realm_ros.core.sysid.space import ParamSpace
from realm_ros.core.sysid.strategies import FitRequest, FitStrategy, register

N_PARAMS = 14

#: Compiled phases per process (see :meth:`DeviceFit._compiled`).
_EXECUTABLES: dict = {}

#: The constraint solver's settings for the fit: MJX under ``vmap`` runs every iteration of
#: every world until the last one converges, so the caps set the cost of a step.
#: ``ls_iterations`` 8 instead of the CPU model's 50: 3.5 instead of 11.6 ms per step at 8,192
#: worlds, the same rollouts (max |dq| 9.3e-6 rad against the CPU); 4 is 3.8e-4 rad off.
#: ``iterations`` 4 instead of 100: 8 % less per step (1.39 instead of 1.51 ms at 2,048
#: worlds), max |dq| 2.0e-5 rad against the CPU (``bench/bench_sysid_gpu.py --step-profile``,
#: one H200; ``test/unit/test_sysid_gpu.py`` holds the fit's rollouts to 1e-4 rad).
FIT_SOLVER = {'iterations': 4, 'ls_iterations': 8}

#: XLA options that record a whole stage, its ``while`` loops and conditionals included (the
#: scans, MJX's solver loops), as CUDA graphs ("command buffers"). Off unless
#: ``REALM_ROS_MJX_GRAPHS=1``: on one H200 they made the fit slower (run 5.45 s instead of
#: 4.92 s; 3.69 instead of 3.40 ms per physics step at 8,192 worlds).
GPU_COMPILER_OPTIONS = {
    'xla_gpu_enable_command_buffer': 'FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CONDITIONAL,WHILE',
    'xla_gpu_graph_min_graph_size': 1,
}

#: Sources whose text is part of an exported stage's key (a change re-exports).
_SOURCES = ('mjx_fit.py', 'mjx_rollout.py', 'actuation.py', 'rollout.py', 'model.py')


@dataclasses.dataclass(frozen=True)
class DeviceFitOptions:
    """The GPU fit's schedule (see the module docstring).

    Attributes:
        window: control steps per window (multiple shooting from recorded states).
        popsize: CMA-ES candidates per latency and generation (the mean is simulated too).
        minibatch_a, minibatch_b: windows per generation in phases A and B.
        generations_a, generations_b: generations of phases A and B.
        keep: adjacent latencies refined in phase B.
        select_last: phase A generations averaged to select the latency.
        sigma0: initial step size, unit-cube units.
        seed: seeds minibatches and sampling.
    """

    window: int = 3
    popsize: int = 32
    minibatch_a: int = 8
    minibatch_b: int = 16
    generations_a: int = 20
    generations_b: int = 40
    keep: int = 3
    select_last: int = 4
    sigma0: float = 0.2
    seed: int = 0

    def __post_init__(self) -> None:
        check_minimums(self, {'window': 1, 'popsize': 4, 'minibatch_a': 1, 'minibatch_b': 1,
                              'generations_a': 1, 'generations_b': 0, 'keep': 1,
                              'select_last': 1})
        if self.select_last > self.generations_a:
            raise ConfigError('DeviceFitOptions.select_last must be <= generations_a')
        check_step_size(self)


def window_inputs(cpu: TwinRollout, trajectories: Sequence[Trajectory], length: int,
                  names: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """Return the numpy inputs of the windows of ``length`` steps (:func:`data.windows`, in its
    order; only those named ``names`` if given): initial ``qpos0``/``qvel0`` (W, n), control
    rows ``ctrl``/``mpos``/``mquat`` (W, length + 1, ...) with row 0 the target in force before
    the window, and ``measured`` (W, length, 7).

    The same values as :meth:`TwinRollout._prepared` per window (``test/unit/test_sysid.py`` checks
    it), computed once per trajectory: the control rows of a trajectory (one FK per target)
    are sliced, and the initial states are the model's ``qpos0`` with the arm and fingers set.
    """
    model, act = cpu.model, cpu.act
    pool = window_pool(trajectories, length)
    wanted = None if names is None else {n: i for i, n in enumerate(names)}
    qpos: list[np.ndarray] = []
    qvel: list[np.ndarray] = []
    rows: list[np.ndarray] = []
    measured: list[np.ndarray] = []
    order: list[int] = []
    for traj in trajectories:
        target0 = np.asarray(traj.target0)  # set by Trajectory.__post_init__, never None
        all_rows = cpu.control_rows(np.vstack([target0[None], traj.targets]),
                                    np.r_[traj.gripper0, traj.gripper])
        for start in range(0, traj.steps - length + 1, length):
            name = f'{traj.name}@{start}'
            if wanted is not None and name not in wanted:
                continue
            if start == 0:
                q0, dq0, g0 = traj.q0, traj.dq0, traj.gripper0
            else:
                q0, dq0 = traj.measured[start - 1], traj.measured_dq[start - 1]
                g0 = float(traj.gripper[start - 1])
            qp = model.qpos0.copy()
            qp[act.arm_qpos] = q0
            qp[act.finger_qpos] = gripper_ctrl(g0)
            qv = np.zeros(model.nv)
            qv[act.arm_dof] = dq0
            qpos.append(qp)
            qvel.append(qv)
            rows.append(all_rows[start:start + length + 1])
            measured.append(traj.measured[start:start + length])
            order.append(wanted[name] if wanted is not None else len(order))
    if not rows or (wanted is not None and len(order) != len(wanted)):
        raise ConfigError(f'the device fit found {len(rows)} of the windows of {length} steps '
                          f'it needs (trajectory names must be unique)')
    if wanted is None and len(rows) != len(pool):
        raise ConfigError('window_inputs and data.windows disagree on the windows')
    perm = np.argsort(order)
    ctrl, pos, quat = split_controls(cpu, np.stack(rows))
    return {'qpos0': np.stack(qpos)[perm], 'qvel0': np.stack(qvel)[perm], 'ctrl': ctrl[perm],
            'mpos': pos[perm], 'mquat': quat[perm], 'measured': np.stack(measured)[perm]}


def cma_constants(n: int, lam: int) -> dict:
    """Return the separable CMA-ES constants for dimension ``n`` and population ``lam``."""
    mu = lam // 2
    w = np.log(mu + 0.5) - np.log(np.arange(1, mu + 1))
    w = w / w.sum()
    mueff = 1.0 / float(np.sum(w ** 2))
    cs = (mueff + 2) / (n + mueff + 5)
    ds = 1 + 2 * max(0.0, math.sqrt((mueff - 1) / (n + 1)) - 1) + cs
    cc = (4 + mueff / n) / (n + 4 + 2 * mueff / n)
    c1 = 2 / ((n + 1.3) ** 2 + mueff)
    cmu = min(1 - c1, 2 * (mueff - 2 + 1 / mueff) / ((n + 2) ** 2 + mueff))
    # Separable CMA-ES learns the n variances (n+2)/3 times faster (Ros and Hansen 2008).
    scale = (n + 2) / 3
    c1, cmu = c1 * scale, cmu * scale
    if c1 + cmu > 0.9:
        c1, cmu = 0.9 * c1 / (c1 + cmu), 0.9 * cmu / (c1 + cmu)
    chi = math.sqrt(n) * (1 - 1 / (4 * n) + 1 / (21 * n ** 2))
    return dict(mu=mu, w=w, mueff=mueff, cs=cs, ds=ds, cc=cc, c1=c1, cmu=cmu, chi=chi, n=n)


def sample_minibatch(key, n_rows: int, n_valid, size: int):
    """Return ``size`` distinct indices drawn uniformly from ``range(n_valid)`` (a traced
    value) of ``n_rows`` (static) rows: the rows past ``n_valid`` are padding and sort last."""
    import jax
    import jax.numpy as jnp

    keys = jax.random.uniform(key, (n_rows,)) + (jnp.arange(n_rows) >= n_valid)
    return jnp.argsort(keys)[:size]


def compiler_options() -> dict | None:
    """Return the XLA options the fit's stages compile with (:data:`GPU_COMPILER_OPTIONS` on
    a GPU unless ``REALM_ROS_MJX_GRAPHS=0``; none on other backends)."""
    import jax

    if jax.default_backend() != 'gpu' or os.environ.get('REALM_ROS_MJX_GRAPHS', '0') != '1':
        return None
    return dict(GPU_COMPILER_OPTIONS)


def export_dir() -> pathlib.Path | None:
    """Return the folder of exported stages: ``$REALM_ROS_MJX_EXPORT_DIR``, else ``exported``
    in JAX's compilation cache folder (None when neither is set, or with
    ``REALM_ROS_MJX_EXPORT_DIR=off``)."""
    import jax

    path = os.environ.get('REALM_ROS_MJX_EXPORT_DIR')
    if path == 'off':
        return None
    if not path:
        cache = jax.config.jax_compilation_cache_dir
        if not cache:
            return None
        path = os.path.join(cache, 'exported')
    return pathlib.Path(path)


def _source_digest() -> str:
    here = pathlib.Path(__file__).parent
    h = hashlib.sha256()
    for name in _SOURCES:
        h.update((here / name).read_bytes())
    return h.hexdigest()


class DeviceFit:
    """The windows of one fit on the device, and the jitted phases (see the module docstring).

    Shapes that stay fixed (latencies, popsize, minibatch, window) make one compiled function
    per phase; with JAX's persistent compilation cache a later process reuses them.
    """

    def __init__(self, rollout: MjxRollout, trajectories: Sequence[Trajectory],
                 options: DeviceFitOptions, latencies: Sequence[float],
                 space: ParamSpace = ParamSpace(), scoring: Sequence[Trajectory] | None = None
                 ) -> None:
        import jax
        import jax.numpy as jnp

        self.jax, self.jnp = jax, jnp
        self.rollout = rollout
        self.options = options
        self.space = space
        self.latencies = list(latencies)
        self.timing: dict[str, float] = {}
        #: Per stage: where its traced computation came from (``loaded``/``saved`` PATH,
        #: ``off``, ``failed: ...``); stages compiled earlier in the process are absent.
        self.exports: dict[str, str] = {}
        t = time.perf_counter()
        cpu = rollout.cpu
        self.delays = np.array([cpu.with_latency(lat).delay_steps for lat in self.latencies])
        pool = window_inputs(cpu, trajectories, options.window)
        self.n_pool = int(pool['qpos0'].shape[0])
        # Pad the pool to a power of two (repeating the last window; minibatches never draw
        # the padding), so datasets of similar size share one compiled (and exported) stage.
        n_pad = pow2_bucket(self.n_pool) - self.n_pool
        pool = {k: np.concatenate([v, np.repeat(v[-1:], n_pad, axis=0)]) for k, v in
                pool.items()}
        self.pool = self._put(pool)
        if scoring is None:
            scoring = scoring_windows(trajectories, seed=options.seed)
        self.scoring = self._put(window_inputs(cpu, trajectories, scoring[0].steps,
                                               [w.name for w in scoring]))
        self.timing['prepare'] = time.perf_counter() - t
        self.log_low = jnp.asarray(np.log(space.low))
        self.log_span = jnp.asarray(np.log(space.high / space.low))
        self.consts = cma_constants(N_PARAMS, options.popsize)
        self._score = jax.jit(self._score_impl)  # the tests call it directly

    # -- inputs -----------------------------------------------------------------------------

    def _put(self, arrays: dict) -> dict:
        return {k: self.jnp.asarray(v) for k, v in arrays.items()}

    # -- rollouts ---------------------------------------------------------------------------

    def _world(self, fric, arm, delay, qpos0, qvel0, ctrl, mpos, mquat):
        """One window: (K + 1, ...) control rows, the latency shift applied per physics step;
        returns (K, 7) arm positions, one per control step."""
        jax, jnp = self.jax, self.jnp
        mjx = self.rollout._mjx
        sub = self.rollout.substeps
        mx = self.rollout.mx
        dof = self.rollout.cpu.act.arm_dof
        qadr = self.rollout.cpu.act.arm_qpos
        m = mx.replace(dof_frictionloss=mx.dof_frictionloss.at[dof].set(fric),
                       dof_armature=mx.dof_armature.at[dof].set(arm))
        d = mjx.make_data(m).replace(qpos=qpos0, qvel=qvel0)
        n_steps = (ctrl.shape[0] - 1) * sub

        def step(d, s):
            r = jnp.where(s >= delay, (s - delay) // sub + 1, 0)
            d = mjx.step(m, d.replace(ctrl=ctrl[r], mocap_pos=mpos[r], mocap_quat=mquat[r]))
            return d, d.qpos[qadr]

        _, qs = jax.lax.scan(step, d, jnp.arange(n_steps))
        return qs[sub - 1::sub]

    def positions(self, u, delays, data, idx):
        """u: (L, C, 14) unit coordinates, delays (L,) physics steps, idx (B,) window indices;
        returns the (L, C, B, K, 7) simulated arm positions, rad."""
        jax, jnp = self.jax, self.jnp
        p = jnp.exp(self.log_low + jnp.clip(u, 0.0, 1.0) * self.log_span)
        fric, arm = p[..., :7], p[..., 7:]
        args = [data[k][idx] for k in ('qpos0', 'qvel0', 'ctrl', 'mpos', 'mquat')]
        per_window = jax.vmap(self._world, in_axes=(None, None, None, 0, 0, 0, 0, 0))
        per_cand = jax.vmap(per_window, in_axes=(0, 0, None, None, None, None, None, None))
        per_lat = jax.vmap(per_cand, in_axes=(0, 0, 0, None, None, None, None, None))
        return per_lat(fric, arm, delays, *args)

    def _simulate(self, u, delays, data, idx):
        """Return the (L, C) loss per window step (rad^2) of :meth:`positions`."""
        jnp = self.jnp
        q = self.positions(u, delays, data, idx)
        err = jnp.sum((q - data['measured'][idx][None, None]) ** 2, axis=(2, 3, 4))
        return err / (idx.shape[0] * data['measured'].shape[1])

    # -- CMA-ES -----------------------------------------------------------------------------

    def initial_state(self, n_lat: int) -> dict:
        jnp = self.jnp
        return {'mean': jnp.full((n_lat, N_PARAMS), 0.5),
                'sigma': jnp.full((n_lat,), self.options.sigma0),
                'C': jnp.ones((n_lat, N_PARAMS)), 'ps': jnp.zeros((n_lat, N_PARAMS)),
                'pc': jnp.zeros((n_lat, N_PARAMS)), 'gen': jnp.zeros((n_lat,))}

    def _tell(self, st, z, values):
        """One separable CMA-ES update of one latency's state from (P, n) normal samples z
        (the candidates were mean + sigma * sqrt(C) * z) and their (P,) losses."""
        jnp = self.jnp
        c = self.consts
        w = jnp.asarray(c['w'])
        order = jnp.argsort(values)[:c['mu']]
        zs = z[order]
        ys = jnp.sqrt(st['C']) * zs
        yw, zw = w @ ys, w @ zs
        gen = st['gen'] + 1
        mean = st['mean'] + st['sigma'] * yw
        ps = (1 - c['cs']) * st['ps'] + math.sqrt(c['cs'] * (2 - c['cs']) * c['mueff']) * zw
        norm_ps = jnp.linalg.norm(ps)
        hs = (norm_ps / jnp.sqrt(1 - (1 - c['cs']) ** (2 * gen))
              < (1.4 + 2 / (c['n'] + 1)) * c['chi']).astype(mean.dtype)
        pc = (1 - c['cc']) * st['pc'] + hs * math.sqrt(c['cc'] * (2 - c['cc']) * c['mueff']) * yw
        cov = ((1 - c['c1'] - c['cmu']) * st['C']
               + c['c1'] * (pc ** 2 + (1 - hs) * c['cc'] * (2 - c['cc']) * st['C'])
               + c['cmu'] * (w @ ys ** 2))
        sigma = st['sigma'] * jnp.exp((c['cs'] / c['ds']) * (norm_ps / c['chi'] - 1))
        return {'mean': mean, 'sigma': sigma, 'C': cov, 'ps': ps, 'pc': pc, 'gen': gen}

    def _phase_impl(self, state, key, delays, data, n_valid, generations: int,
                    minibatch: int):
        """``generations`` CMA-ES generations at every latency of ``state`` (leading axis),
        one shared minibatch per generation, drawn without replacement from the first
        ``n_valid`` windows of ``data`` (the rest is padding); returns the state and (G, L, 5)
        history rows (best, median, mean's loss, step size, max sqrt(C))."""
        jax, jnp = self.jax, self.jnp
        pop = self.options.popsize
        n_lat = delays.shape[0]
        n_rows = int(data['qpos0'].shape[0])

        def generation(st, k):
            k_idx, k_z = jax.random.split(k)
            idx = sample_minibatch(k_idx, n_rows, n_valid, minibatch)
            z = jax.random.normal(k_z, (n_lat, pop, N_PARAMS))
            x = st['mean'][:, None] + (st['sigma'][:, None, None]
                                       * jnp.sqrt(st['C'])[:, None] * z)
            u = jnp.concatenate([x, st['mean'][:, None]], axis=1)
            values = self._simulate(u, delays, data, idx)  # (L, P + 1)
            new = jax.vmap(self._tell)(st, z, values[:, :pop])
            row = jnp.stack([values[:, :pop].min(1), jnp.median(values[:, :pop], 1),
                             values[:, pop], st['sigma'],
                             jnp.sqrt(st['C'].max(1))], axis=1)
            return new, row

        return jax.lax.scan(generation, state, jax.random.split(key, generations))

    def _score_impl(self, mean, delays, data):
        idx = self.jnp.arange(data['qpos0'].shape[0])
        return self._simulate(mean[:, None], delays, data, idx)[:, 0]

    # -- compiled once per process ---------------------------------------------------------

    def _compiled(self, stage: str, fn: Callable, args: tuple, **static):
        """Run ``fn(*args, **static)`` compiled; the executable is kept per process (keyed by
        the model, the schedule's constants and the argument shapes), so a second fit in the
        same process neither traces nor compiles.

        Across processes: the traced stage is exported (``jax.export``) to :func:`export_dir`
        under a key of everything that shapes it (the sources, the model, the solver, the
        schedule, the argument shapes, the JAX and MuJoCo versions, the device), so a later
        process loads it instead of tracing MJX again; XLA's compilation is reused from
        JAX's persistent compilation cache. Timed apart from the run: ``<stage>.trace``
        (tracing and lowering, or loading the export) and ``<stage>.compile`` (XLA, or
        loading it from the persistent cache)."""
        jax = self.jax
        shapes = tuple((str(k), tuple(v.shape), str(v.dtype)) for k, v in
                       jax.tree_util.tree_flatten_with_path(args)[0])
        key = (id(self.rollout), stage, self.options.popsize, tuple(self.space.low),
               tuple(self.space.high), tuple(sorted(static.items())), shapes)
        entry = _EXECUTABLES.get(key)
        if entry is None or entry[0] is not self.rollout:
            t = time.perf_counter()
            call = self._exported_call(stage, functools.partial(fn, **static), args, key)
            lowered = jax.jit(call).lower(*args)
            t1 = time.perf_counter()
            entry = (self.rollout, lowered.compile(compiler_options()))
            self.timing[f'{stage}.trace'] = t1 - t
            self.timing[f'{stage}.compile'] = time.perf_counter() - t1
            _EXECUTABLES[key] = entry
        t = time.perf_counter()
        out = jax.block_until_ready(entry[1](*args))
        self.timing[f'{stage}.run'] = time.perf_counter() - t
        return out

    def _exported_call(self, stage: str, fn: Callable, args: tuple, key: tuple) -> Callable:
        """Return ``fn`` as an exported stage's ``call`` (loaded from :func:`export_dir` when
        a matching one is there, else exported and saved), or ``fn`` itself where exporting
        is off or fails (the stage then traces in every process)."""
        from jax import export
        import mujoco

        folder = export_dir()
        if folder is None:
            self.exports[stage] = 'off'
            return fn
        model = self.rollout.model
        h = hashlib.sha256(repr((key[1:], self.rollout.solver, self.jax.__version__,
                                 mujoco.__version__, self.jax.devices()[0].device_kind,
                                 _source_digest())).encode())
        for array in (model.body_mass, model.body_inertia, model.dof_damping,
                      model.actuator_gainprm, model.actuator_biasprm, model.jnt_range,
                      model.opt.timestep):
            h.update(np.ascontiguousarray(array).tobytes())
        path = folder / f'{stage}-{h.hexdigest()[:24]}.jaxexport'
        if path.exists():
            try:
                call = export.deserialize(bytearray(path.read_bytes())).call
                self.exports[stage] = f'loaded {path}'
                return call
            except Exception as err:  # a stale or damaged file: export again
                warnings.warn(f'could not load {path} ({err}); exporting it again',
                              stacklevel=2)
        try:
            exported = export.export(self.jax.jit(fn))(*args)
            blob = exported.serialize()
        except Exception as err:  # e.g. a custom call JAX does not export
            warnings.warn(f'could not export the {stage} stage ({err}); it traces per process',
                          stacklevel=2)
            self.exports[stage] = f'failed: {err}'
            return fn
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix('.tmp')
        tmp.write_bytes(blob)
        tmp.replace(path)
        self.exports[stage] = f'saved {path} ({len(blob) / 1e6:.1f} MB)'
        return exported.call

    # -- the fit ----------------------------------------------------------------------------

    def run(self, progress: Callable[[str, Generation], None] | None = None) -> IdentifyResult:
        """Phase A, selection, phase B, scoring. :attr:`timing`: seconds per stage (``phase_a``,
        ``phase_b``, ``score``, ``total``) and their parts: ``trace`` (tracing and lowering)
        and ``compile`` (XLA, or loading it from the persistent cache), both only the first
        time a shape is seen in this process, and ``run`` (the device computation)."""
        jax, jnp = self.jax, self.jnp
        opt = self.options
        t_start = time.perf_counter()
        key_a, key_b = jax.random.split(jax.random.PRNGKey(opt.seed))
        n_lat = len(self.latencies)
        n_pool = self.n_pool
        n_valid = jnp.asarray(n_pool, dtype=jnp.int32)
        t = time.perf_counter()
        state, hist_a = self._compiled(
            'phase_a', self._phase_impl, (self.initial_state(n_lat), key_a,
                                          jnp.asarray(self.delays), self.pool, n_valid),
            generations=opt.generations_a, minibatch=min(opt.minibatch_a, n_pool))
        hist_a = np.asarray(hist_a)  # (G, L, 5)
        self.timing['phase_a'] = time.perf_counter() - t
        # Selection: the mean's loss over the last generations (same minibatches for all).
        level = hist_a[-opt.select_last:, :, 2].mean(0)
        best = int(np.argmin(level))
        keep = min(opt.keep, n_lat)
        first = min(max(best - keep // 2, 0), n_lat - keep)
        kept = list(range(first, first + keep))
        t = time.perf_counter()
        sub = jax.tree_util.tree_map(lambda a: a[np.array(kept)], state)
        delays = jnp.asarray(self.delays[kept])
        if opt.generations_b > 0:
            sub, hist_b = self._compiled(
                'phase_b', self._phase_impl, (sub, key_b, delays, self.pool, n_valid),
                generations=opt.generations_b, minibatch=min(opt.minibatch_b, n_pool))
            hist_b = np.asarray(hist_b)
        else:
            hist_b = np.zeros((0, keep, 5))
        self.timing['phase_b'] = time.perf_counter() - t
        t = time.perf_counter()
        mean = jnp.clip(sub['mean'], 0.0, 1.0)
        scores = np.asarray(self._compiled('score', self._score_impl,
                                           (mean, delays, self.scoring)))
        self.timing['score'] = time.perf_counter() - t
        means = np.asarray(mean)
        winner = int(np.argmin(scores))
        total = time.perf_counter() - t_start
        histories = []
        for j, lat_index in enumerate(kept):
            rows = np.concatenate([hist_a[:, lat_index], hist_b[:, j]])
            histories.append([(g, (g + 1) * opt.popsize, float(r[0]), float(r[1]), float(r[2]),
                               total) for g, r in enumerate(rows)])
        if progress is not None:
            for j, lat_index in enumerate(kept):
                label = f'{1e3 * self.latencies[lat_index]:.1f} ms'
                rows = np.concatenate([hist_a[:, lat_index], hist_b[:, j]])
                for g, r in enumerate(rows):
                    progress(label, Generation(g, (g + 1) * opt.popsize, float(r[0]),
                                               float(r[1]), float(r[2]), total, float(r[3]),
                                               self.space.from_unit(means[j])))
        self.timing['total'] = total
        for part in ('trace', 'compile', 'run'):
            self.timing[part] = sum(v for k, v in self.timing.items() if k.endswith(f'.{part}'))
        self.phase_a_levels = {lat: float(v) for lat, v in zip(self.latencies, level)}
        params = self.space.from_unit(means[winner])
        gens = opt.generations_a + opt.generations_b
        fit = FitResult(params=params, history=histories[winner],
                        stop_reason=f'{gens} generations ({opt.generations_a} at every latency, '
                                    f'{opt.generations_b} at {keep})',
                        timing=dict(self.timing))
        lat_kept = [self.latencies[i] for i in kept]
        return IdentifyResult(
            fit=fit, latency_s=lat_kept[winner], searches=[],
            profile={lat: float(s) for lat, s in zip(lat_kept, scores)},
            fit_log=([(lat, opt.generations_a, False, total) for lat in self.latencies]
                     + [(lat, opt.generations_b, True, total) for lat in lat_kept]),
            seconds=total)


def identify_on_device(rollout: MjxRollout, trajectories: Sequence[Trajectory],
                       options: DeviceFitOptions | None = None, max_latency_s: float = 0.05,
                       progress: Callable[[str, Generation], None] | None = None
                       ) -> tuple[IdentifyResult, dict[str, float]]:
    """Estimate the latency and fit friction and armature on the GPU (module docstring);
    return the result and the timing per stage, s."""
    options = options or DeviceFitOptions()
    lats = latency_candidates(rollout.cpu.physics_hz, max_latency_s)
    fit = DeviceFit(rollout, trajectories, options, lats)
    result = fit.run(progress)
    return result, dict(fit.timing)



def fit_on_device(trajectories: Sequence[Trajectory], seed: int = 0,
                  latencies: Sequence[float] | None = None, max_latency_s: float = 0.05,
                  progress: Callable[[str, Generation], None] | None = None) -> IdentifyResult:
    """The whole latency-profiled fit on the GPU (module docstring), its timing in
    ``notes`` and, when the latency was estimated, where from in ``source``.

    Args:
        latencies: fit at these latencies, s (None: every candidate up to ``max_latency_s``).
        seed: seeds the minibatches and the sampling (:class:`DeviceFitOptions`).

    Compiled functions persist in JAX's compilation cache (``$JAX_COMPILATION_CACHE_DIR``,
    else ``~/.cache/realm_ros/jax``).

    Raises:
        BackendUnavailable: no ``mujoco-mjx`` / ``jax`` here.
    """
    from realm_ros.backends.mujoco.mjx_rollout import enable_compilation_cache

    t = time.perf_counter()
    rollout = MjxRollout(**FIT_SOLVER)  # BackendUnavailable without mujoco-mjx / jax
    model_s = time.perf_counter() - t
    cache = enable_compilation_cache()  # before the first compilation
    options = DeviceFitOptions(seed=seed)
    estimated = latencies is None
    lats = (latency_candidates(rollout.cpu.physics_hz, max_latency_s) if latencies is None
            else [float(v) for v in latencies])
    fit = DeviceFit(rollout, trajectories, options, lats)
    ident = fit.run(progress=progress)
    tm = fit.timing
    host = tm['total'] - tm['trace'] - tm['compile'] - tm['run']
    ident.notes.append(
        f'device fit: {tm["total"]:.2f} s = tracing {tm["trace"]:.2f} s + XLA compilation or '
        f'cache load {tm["compile"]:.2f} s + device run {tm["run"]:.2f} s (phase A '
        f'{tm.get("phase_a.run", 0):.2f}, phase B {tm.get("phase_b.run", 0):.2f}, scoring '
        f'{tm.get("score.run", 0):.2f}) + host {host:.2f} s; '
        f'before it: model to the device {model_s:.2f} s, windows {tm["prepare"]:.2f} s; '
        f'compilation cache {cache}')
    if fit.exports:
        states = sorted({v.split(' ')[0].rstrip(':') for v in fit.exports.values()})
        ident.notes.append(f'traced stages ({", ".join(fit.exports)}): {"/".join(states)} '
                           f'(jax.export; tracing is skipped when loaded)')
    if estimated:
        ident.source = (f'estimated (parallel profile on the GPU: {len(lats)} latencies x '
                        f'{options.generations_a} generations, {options.keep} x '
                        f'{options.generations_b})')
    return ident


def _device_run(request: FitRequest) -> IdentifyResult:
    return fit_on_device(request.trajectories, request.options.seed, request.latencies,
                         request.profile.max_latency_s, request.progress)


def _device_generations(request: FitRequest) -> int:
    options = DeviceFitOptions(seed=request.options.seed)
    return options.generations_a + options.generations_b


#: The device strategy of ``core.sysid.strategies`` (its ``STRATEGIES`` names this target).
DEVICE = register(FitStrategy(
    'device', _device_run, 'the whole fit in jitted MuJoCo MJX calls on a GPU',
    kind='parallel profile on the GPU', methods=('cmaes',), generations=_device_generations))
