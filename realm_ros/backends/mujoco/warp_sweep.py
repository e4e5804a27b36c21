"""Whole-episode sweeps on MuJoCo Warp: N twin worlds stepped, rendered and driven in one batch.

:class:`WarpStepper` is a :class:`~realm_ros.backends.mujoco.batch.Stepper`: the worlds of one
group (same scene structure, :func:`~realm_ros.backends.mujoco.mjx_sweep.structure_key`) share
one MuJoCo Warp model, whose fields that differ between worlds (B-HOBJ's masses and damping,
V-LIGHT's lights, V-VIEW's cameras, ...) get a per-world leading dimension (``put_model``'s
``batch_sizes``); one call integrates every world's control period (``physics_hz /
control_hz`` = 16 physics steps at 15 Hz) from the control rows the host computed
(:meth:`MujocoWorld.period_controls`: the latency queue and the target-frame mocap are the
CPU twin's), and hands back the state before the period's last physics step and after it
(:meth:`MujocoWorld.load_step` rebuilds ``mj_step``'s data from them on the host, where the
task's privileged state, the progress tracker and the referee run in the same code as
:func:`~realm_ros.core.episode.run_episode`). On CUDA the period's physics steps replay as one
captured graph; on the CPU device (tests) they are launched one by one.

:meth:`WarpStepper.render` draws the cameras the policies use for every world at once with
MuJoCo Warp's ray tracer (``create_render_context`` / ``refit_bvh`` / ``render``) and returns
them as a torch tensor on the same device (``wp.to_torch``: no copy), where
``sweep/warp.py``'s ``LearnedBatch`` runs the learned checkpoint on them for every world that
asks for a chunk this step, in one forward pass.

The model is the twin's own (elliptic cones, the scene's integrator, cylinders and ellipsoids,
friction and armature): MuJoCo Warp 4.0 implements all of them, unlike MJX 3.17
(``mjx_sweep.py``). What differs from the CPU twin: float32, Warp's solver and collision
(the same algorithms, not the same floating-point sums), and the pictures (a ray tracer, not
OpenGL: no reflections, no mipmaps, area resizing on the device). :func:`twin_render` and
:func:`coplanar_decals` map what can be mapped (the key light's shadows as the twin's OpenGL
draws them on this machine, decals out of their frames). ``bench/bench_warp_images.py``
measures the pictures alone, ``bench/bench_warp_physics.py`` the physics alone, and the sweep's
``--compare-cpu`` and ``bench/bench_sweep_warp.py`` the episodes (docs/performance.md).

Needs ``mujoco-warp`` and ``warp-lang`` (and torch for learned policies); imported only for
``--device gpu``.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from realm_ros.backends.mujoco.batch import Rows, State
from realm_ros.backends.mujoco.derived import FIELDS, Derived
from realm_ros.backends.mujoco.mjx_sweep import structure_key
from realm_ros.backends.mujoco.world import MujocoWorld
from realm_ros.core.errors import BackendUnavailable, ConfigError, InfrastructureError

#: The cameras of a three-camera sweep (the DROID rig's), in the renderer's order.
ALL_CAMERAS = ('exterior_1', 'exterior_2', 'wrist')


#: ``create_render_context`` options of the sweep's cameras (measured against the CPU twin's
#: OpenGL by ``bench/bench_warp_images.py``; docs/performance.md).
#: ``shadow_light_fraction`` 0: a point in the key light's shadow gets none of its light, as in
#: MuJoCo's OpenGL shadow pass (Warp's default 0.3 leaves it 30 %).
TWIN_RENDER: dict[str, Any] = {'shadow_light_fraction': 0.0}

#: MuJoCo Warp's contact type bit of a constraint contact (``ContactType.CONSTRAINT``, in its
#: ``_src/types.py``, not exported): the rows ``MjData.contact`` would hold.
CONTACT_CONSTRAINT = 1

#: How far (m) :func:`coplanar_decals` brings a decal out of the face it lies in.
DECAL_NUDGE = 5e-4


def coplanar_decals(model: Any, data: Any) -> dict[int, np.ndarray]:
    """Return ``{geom: world offset}`` for the visual boxes of the world body whose face lies
    in the plane of a larger box's face in the same direction, inside it (the room's window in
    its frame, the whiteboard in its frame): OpenGL's depth test draws such coplanar faces as
    z-fighting, mostly the smaller box (the window bright in the CPU twin's pictures), while a
    ray tracer picks one of them for every ray (Warp: the frame, a grey window in exterior_2).
    Each such box is brought out by :data:`DECAL_NUDGE` along its face's normal, in Warp's copy
    only (``WarpStepper``): no collision geom moves (``contype == conaffinity == 0`` only)."""
    boxes = [g for g in range(model.ngeom)
             if model.geom_type[g] == 6 and model.geom_bodyid[g] == 0
             and model.geom_contype[g] == 0 and model.geom_conaffinity[g] == 0]
    out: dict[int, np.ndarray] = {}
    for a in boxes:
        for b in boxes:
            if a == b or not np.allclose(data.geom_xmat[a], data.geom_xmat[b], atol=1e-9):
                continue
            rot = data.geom_xmat[b].reshape(3, 3)
            rel = rot.T @ (data.geom_xpos[a] - data.geom_xpos[b])
            sa, sb = model.geom_size[a], model.geom_size[b]
            if not np.all(sa <= sb) or np.all(sa == sb):
                continue
            k = int(np.argmin(sa))  # a decal is thin along its face's normal
            others = [j for j in range(3) if j != k]
            if not np.all(np.abs(rel[others]) + sa[others] <= sb[others] + 1e-9):
                continue
            for sign in (-1.0, 1.0):
                if abs(rel[k] + sign * sa[k] - sign * sb[k]) < 1e-7:
                    out[a] = out.get(a, np.zeros(3)) + sign * DECAL_NUDGE * rot[:, k]
    return {g: v for g, v in out.items() if np.any(v)}


def twin_render(worlds: Sequence[MujocoWorld], device: str,
                shadows: bool | str = 'auto') -> dict[str, Any]:
    """Return the ``create_render_context`` options that draw like the CPU twin's OpenGL would
    on this machine (:data:`TWIN_RENDER` and the rig's passes, ``bench_warp_images.py``'s
    figures in docs/performance.md): ``use_shadows`` as the rig's ``shadows`` (``shadows``
    overrides it unless ``'auto'``), whose ``'auto'`` draws them on a GPU and not on a software
    rasteriser, so on when Warp runs on CUDA and off on its CPU device; ``samples_per_pixel``
    from the rig's multisampling (``antialias`` n -> about sqrt(n) per axis; 0: one sample,
    since supersampling against OpenGL without multisampling makes the difference larger)."""
    rig = worlds[0]._rig
    option = rig.shadows if shadows == 'auto' else shadows
    on = device.startswith('cuda') if option == 'auto' else bool(option)
    samples = int(round(float(rig.antialias) ** 0.5)) if rig.antialias else 1
    return {**TWIN_RENDER, 'use_shadows': on, 'samples_per_pixel': max(samples, 1)}


def import_warp() -> tuple[Any, Any]:
    """Return ``(warp, mujoco_warp)`` or raise :class:`BackendUnavailable` naming them."""
    try:
        import mujoco_warp as mjw
        import warp as wp
    except ImportError as err:
        raise BackendUnavailable(
            "--device gpu on MuJoCo Warp needs 'mujoco-warp' and 'warp-lang' "
            "(pip install 'realm_ros[warp]'; an NVIDIA GPU for speed)") from err
    # No banner, no line per kernel module loaded (Warp prints them at its INFO level).
    wp.config.quiet = True  # type: ignore[attr-defined]  # warp.config's names are dynamic
    if hasattr(wp, 'LOG_WARNING'):
        wp.config.log_level = wp.LOG_WARNING
    wp.init()
    return wp, mjw


def warp_available() -> bool:
    """Whether mujoco_warp and warp import (without initialising them)."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ('warp', 'mujoco_warp'))


def default_device() -> str:
    """``cuda:0`` when Warp sees a GPU, else ``cpu``."""
    wp, _ = import_warp()
    return 'cuda:0' if wp.get_cuda_device_count() > 0 else 'cpu'


def warp_model_fields(mjw: Any) -> dict[str, bool]:
    """The MuJoCo Warp model's array fields, each with whether it can hold a value per world."""
    import dataclasses

    out: dict[str, bool] = {}
    for f in dataclasses.fields(mjw.Model):
        shape = getattr(f.type, 'shape', None)
        if isinstance(shape, tuple):
            out[f.name] = shape[:1] == ('*',)
    return out


def _host_array(model: Any, name: str) -> np.ndarray | None:
    """``model``'s field ``name`` where it is a numeric array Warp may hold, else None."""
    value = getattr(model, name, None)
    if not isinstance(value, np.ndarray) or value.dtype == object or not value.size:
        return None
    return value


def batched_fields(worlds: Sequence[MujocoWorld], mjw: Any) -> dict[str, np.ndarray]:
    """Return the MuJoCo Warp model fields whose values differ between ``worlds``, stacked
    (N, ...). Fields Warp does not hold only matter to the host, where each world keeps its own
    model (``load_step``).

    Raises:
        ConfigError: a differing field MuJoCo Warp holds shared (not batchable per world).
    """
    models = [w.model for w in worlds]
    out: dict[str, np.ndarray] = {}
    shared: list[str] = []
    for name, batchable in warp_model_fields(mjw).items():
        first = _host_array(models[0], name)
        if first is None:
            continue
        arrays = [np.asarray(getattr(m, name)) for m in models]
        if all(np.array_equal(a, first) for a in arrays[1:]):
            continue
        if batchable:
            out[name] = np.stack(arrays)
        else:
            shared.append(name)
    if shared:
        raise ConfigError(f'--device gpu (MuJoCo Warp): fields that differ between the worlds '
                          f'of one batch are shared in MuJoCo Warp: {sorted(shared)}; run these '
                          'cells with --device cpu')
    return out


#: The derived quantities a render reads (and the hand-back's static geoms), written from the
#: host worlds' ``mj_forward`` by :meth:`WarpStepper.load_poses` and :meth:`WarpStepper.replace`.
POSE_FIELDS = ('geom_xpos', 'geom_xmat', 'xpos', 'xquat', 'xmat', 'xipos', 'ximat', 'cam_xpos',
               'cam_xmat', 'light_xpos', 'light_xdir')


class WarpStepper:
    """One MuJoCo Warp batch of same-structure worlds (see the module docstring).

    Args:
        worlds: reset :class:`MujocoWorld` s with equal :func:`structure_key`.
        cameras: cameras :meth:`render` draws (empty: no render context).
        image_size: (width, height) of each camera, px.
        device: Warp device (``cuda:0``, ``cpu``; None: :func:`default_device`).
        nconmax, njmax: contacts and constraint rows allocated per world.
        shadows: the key light's shadows: True, False or ``'auto'`` (:func:`twin_render`:
            as the CPU twin's OpenGL on this machine).
        render_options: ``create_render_context`` options over :func:`twin_render`'s.
        decals: bring coplanar decals out of their frames (:func:`coplanar_decals`).
        forward: run Warp's ``forward`` on the initial state (False: the poses the renderer
            needs come from the host worlds alone, no physics kernels compiled: for
            pictures-only comparisons, ``bench/bench_warp_images.py``).
        hand_back: after each period, download the derived quantities the observations read
            (``derived.py``: Warp's own poses, contacts and actuator forces of the state before
            the period's last physics step, float32) as :attr:`derived`, so no world runs a
            host ``mj_forward``; False (the default): each world rebuilds them on the host from
            the downloaded float32 state, as before (docs/performance.md: the agreement with
            the CPU twin was measured that way; the hand-back's is not measured on a GPU).
    """

    name = 'warp'

    def __init__(self, worlds: Sequence[MujocoWorld], cameras: Sequence[str] = (),
                 image_size: tuple[int, int] = (320, 180), device: str | None = None,
                 nconmax: int = 96, njmax: int = 512, shadows: bool | str = 'auto',
                 graph: bool | None = None, render_options: dict[str, Any] | None = None,
                 forward: bool = True, decals: bool = True, hand_back: bool = False) -> None:
        wp, mjw = import_warp()
        self.hand_back = hand_back
        #: After :meth:`step` with ``hand_back``: ``batch.Stepper.derived``; else None.
        self.derived: Derived | None = None
        self.wp, self.mjw = wp, mjw
        if len({structure_key(w) for w in worlds}) != 1:
            raise ConfigError('WarpStepper: the worlds of one batch must share their scene '
                              'structure (group cells by structure_key)')
        self.device = device or default_device()
        self.timing = {'compile': 0.0, 'physics': 0.0, 'render': 0.0, 'transfer': 0.0,
                       'calls': 0, 'renders': 0}
        base = worlds[0].model
        self.n = n = len(worlds)
        self.substeps = worlds[0]._substeps
        self.cameras = tuple(cameras)
        self.image_size = (int(image_size[0]), int(image_size[1]))
        t0 = time.perf_counter()
        with wp.ScopedDevice(self.device):
            fields = batched_fields(worlds, mjw)
            self.varying = sorted(fields)
            # the Warp-held fields every world of this batch shares: a world loaded later
            # (replace) must have the same values
            self._shared = {name: np.array(value) for name in warp_model_fields(mjw)
                            if name not in fields
                            and (value := _host_array(base, name)) is not None}
            self.m = mjw.put_model(base, batch_sizes={k: n for k in fields})
            for name, values in fields.items():
                target = getattr(self.m, name)
                ref = target.numpy()
                target.assign(values.astype(ref.dtype).reshape(ref.shape))
            self.d = mjw.make_data(base, nworld=n, nconmax=nconmax, njmax=njmax)
            d = self.d
            dtype = np.float32
            d.qpos.assign(np.stack([w.data.qpos for w in worlds]).astype(dtype))
            d.qvel.assign(np.stack([w.data.qvel for w in worlds]).astype(dtype))
            d.time.assign(np.array([w.data.time for w in worlds], dtype=dtype))
            d.ctrl.assign(np.stack([w.data.ctrl for w in worlds]).astype(dtype))
            if base.na:
                d.act.assign(np.stack([w.data.act for w in worlds]).astype(dtype))
            self.nm = base.nmocap
            if self.nm:
                d.mocap_pos.assign(np.stack([w.data.mocap_pos for w in worlds]).astype(dtype))
                d.mocap_quat.assign(np.stack([w.data.mocap_quat for w in worlds]).astype(dtype))
            self._decals = coplanar_decals(base, worlds[0].data) if decals else {}
            self.load_poses(worlds)
            s = self.substeps
            self._ctrl = wp.zeros((s, n, base.nu), dtype=float)
            self._mpos = wp.zeros((s, n, max(self.nm, 1)), dtype=wp.vec3)
            self._mquat = wp.zeros((s, n, max(self.nm, 1)), dtype=wp.quat)
            self._before_q = wp.zeros_like(d.qpos)
            self._before_v = wp.zeros_like(d.qvel)
            self._before_t = wp.zeros_like(d.time)
            self.naconmax = int(d.naconmax) if hasattr(d, 'naconmax') else nconmax * n
            self.njmax = njmax
            self._base, self._nconmax = base, nconmax
            # Derived quantities of the initial state (body poses for the first render), as
            # MujocoWorld.reset's mj_forward gives the CPU twin.
            if forward:
                mjw.forward(self.m, d)
            self.rc = None
            if self.cameras:
                options = {**twin_render(worlds, self.device, shadows),
                           **(render_options or {})}
                self.render_options = options
                self.rc = mjw.create_render_context(
                    base, nworld=n, cam_res=self.image_size, render_rgb=True,
                    render_depth=False, cam_active=list(self.cameras), **options)
                adr = self.rc.rgb_adr.numpy()
                self._rgb_adr = [int(adr[i]) for i in range(len(self.cameras))]
            wp.synchronize()
        self.timing['setup'] = time.perf_counter() - t0
        self._graph: Any = None
        self._use_graph = (self.device.startswith('cuda') if graph is None else graph)
        self._torch_images: Any = None

    def load_poses(self, worlds: Sequence[MujocoWorld]) -> None:
        """Write each world's poses (bodies, geoms, cameras, lights: its host ``mj_forward``'s)
        into this batch's data, the coplanar decals brought out as at construction.

        MuJoCo Warp computes the poses of geoms welded to the world once, in make_data, from
        the model it is given (world 0's), and never again: a static body placed per world
        (push_switch's panel: body_pos batched) would collide and render where world 0 has it
        (on the H200 the learned policy then reached for world 0's panel and ended within 0.25
        progression of its CPU episode in 1 of 16 cells). Called again on a batch built with
        ``forward=False``, it draws the host worlds' current states (pictures without Warp's
        physics: ``bench/bench_twin_passes.py --pictures warp``)."""
        if len(worlds) != self.n:
            raise ConfigError(f'WarpStepper.load_poses: {len(worlds)} worlds for a batch of '
                              f'{self.n}')
        with self.wp.ScopedDevice(self.device):
            for name, values in self._poses(worlds).items():
                getattr(self.d, name).assign(values)
        self._torch_images = None

    def _poses(self, worlds: Sequence[MujocoWorld]) -> dict[str, np.ndarray]:
        """:data:`POSE_FIELDS` of ``worlds`` stacked as this batch's data holds them (float32;
        MuJoCo's (.., 9) rotation rows as Warp's mat33), the decals brought out."""
        out = {}
        for name in POSE_FIELDS:
            if not getattr(self.d, name).size:
                continue
            values = np.stack([getattr(w.data, name) for w in worlds]).astype(np.float32)
            if name.endswith('mat'):  # MuJoCo's (n, 9) rows -> Warp's mat33
                values = values.reshape(len(worlds), -1, 3, 3)
            if name == 'geom_xpos':
                for g, offset in self._decals.items():
                    values[:, g] += offset
            out[name] = values
        return out

    def replace(self, slot: int, world: MujocoWorld) -> bool:
        """Load ``world``, just reset to a new episode, into world ``slot`` (``Stepper.replace``):
        its batched model fields, its state (the solver's warm start cleared, as a new batch
        starts) and its poses for the next render. False, nothing written, where its model
        differs from the batch's in a field this batch holds once for every world (the
        episode then runs in a batch of its own)."""
        t = time.perf_counter()
        model = world.model
        for name, value in self._shared.items():
            if not np.array_equal(getattr(model, name), value):
                return False
        dtype = np.float32
        d = world.data
        rows: list[tuple[Any, np.ndarray]] = [
            (getattr(self.m, name), np.asarray(getattr(model, name)))
            for name in self.varying]
        state = {'qpos': d.qpos, 'qvel': d.qvel, 'time': np.array([d.time]), 'ctrl': d.ctrl,
                 'qacc_warmstart': np.zeros_like(d.qvel)}
        if self._base.na:
            state['act'] = d.act
        if self.nm:
            state.update(mocap_pos=d.mocap_pos, mocap_quat=d.mocap_quat)
        rows += [(getattr(self.d, name), values) for name, values in state.items()]
        rows += [(getattr(self.d, name), values[0])
                 for name, values in self._poses([world]).items()]
        with self.wp.ScopedDevice(self.device):
            for target, values in rows:
                if target.shape[0] != self.n:
                    raise ConfigError(f'WarpStepper.replace: a field of shape {target.shape} '
                                      f'is not per world in a batch of {self.n}')
                row = target[slot:slot + 1]
                row.assign(np.ascontiguousarray(values, dtype=dtype).reshape(
                    self._row_shape(row)))
        self._torch_images = None
        self.timing['replace'] = self.timing.get('replace', 0.0) + time.perf_counter() - t
        return True

    @staticmethod
    def _row_shape(row: Any) -> tuple[int, ...]:
        """The numpy shape of a one-world Warp row (vector and matrix types' own dims too)."""
        inner = tuple(getattr(row.dtype, '_shape_', ()))
        return tuple(row.shape) + inner

    # -- physics ---------------------------------------------------------------------------

    def _period(self, d: Any = None) -> None:
        wp, mjw = self.wp, self.mjw
        d = self.d if d is None else d
        s = self.substeps
        for k in range(s):
            wp.copy(d.ctrl, self._ctrl[k])
            if self.nm:
                wp.copy(d.mocap_pos, self._mpos[k])
                wp.copy(d.mocap_quat, self._mquat[k])
            if k == s - 1:
                wp.copy(self._before_q, d.qpos)
                wp.copy(self._before_v, d.qvel)
                wp.copy(self._before_t, d.time)
            mjw.step(self.m, d)

    def _capture(self) -> None:
        """Capture the period's physics steps as a CUDA graph. MuJoCo Warp builds some kernels
        at their first call, which cannot happen inside a capture: one uncaptured period runs
        first, on a scratch copy of the data (the worlds' own state must not advance)."""
        wp, mjw = self.wp, self.mjw
        scratch = mjw.make_data(self._base, nworld=self.n, nconmax=self._nconmax,
                                njmax=self.njmax)
        for name in ('qpos', 'qvel', 'time', 'ctrl', 'mocap_pos', 'mocap_quat', 'act'):
            src = getattr(self.d, name, None)
            if src is not None and src.size:
                wp.copy(getattr(scratch, name), src)
        self._period(scratch)
        wp.synchronize()
        del scratch
        with wp.ScopedCapture() as capture:
            self._period()
        self._graph = capture.graph

    def step(self, rows: Sequence[Rows]) -> list[tuple[State, State]]:
        """Integrate one control period of every world (``batch.Stepper``)."""
        wp = self.wp
        t = time.perf_counter()
        ctrl = np.stack([r[0] for r in rows]).transpose(1, 0, 2)
        with wp.ScopedDevice(self.device):
            self._ctrl.assign(np.ascontiguousarray(ctrl, dtype=np.float32))
            if self.nm:
                self._mpos.assign(np.ascontiguousarray(
                    np.stack([r[1] for r in rows]).transpose(1, 0, 2, 3), dtype=np.float32))
                self._mquat.assign(np.ascontiguousarray(
                    np.stack([r[2] for r in rows]).transpose(1, 0, 2, 3), dtype=np.float32))
            t1 = time.perf_counter()
            first = self.timing['calls'] == 0
            if self._use_graph:
                if self._graph is None:
                    self._capture()
                wp.capture_launch(self._graph)
            else:
                self._period()
            wp.synchronize()
            t2 = time.perf_counter()
            q1, v1, s1 = self.d.qpos.numpy(), self.d.qvel.numpy(), self.d.time.numpy()
            q0, v0, s0 = (self._before_q.numpy(), self._before_v.numpy(),
                          self._before_t.numpy())
            self._check_capacity()
            self.derived = self._download_derived() if self.hand_back else None
        t3 = time.perf_counter()
        self.timing['transfer'] += (t1 - t) + (t3 - t2)
        self.timing['compile' if first else 'physics'] += t2 - t1
        self.timing['calls'] += 1
        q0, v0, q1, v1 = (a.astype(float) for a in (q0, v0, q1, v1))
        self._torch_images = None
        return [((q0[i], v0[i], float(s0[i])), (q1[i], v1[i], float(s1[i])))
                for i in range(self.n)]

    def _download_derived(self) -> Derived:
        """Every world's :data:`derived.FIELDS` ((N, ...) float64 from Warp's float32; ``xmat``
        and ``site_xmat`` as MuJoCo's (.., 9) rows) and its contacts' geom pairs (Warp keeps
        all worlds' contacts in one list with their world's index: grouped per world here, in
        Warp's order within a world)."""
        d, n = self.d, self.n
        arrays: dict[str, np.ndarray | list[np.ndarray]] = {}
        for name in FIELDS:
            values = getattr(d, name).numpy().astype(float)
            arrays[name] = values.reshape(n, values.shape[1], 9) if name.endswith('xmat') \
                else values
        count = min(int(d.nacon.numpy()[0]), self.naconmax)
        # The constraint solver's contacts (MjData.contact's), not collision sensors' rows.
        kept = (d.contact.type.numpy()[:count] & CONTACT_CONSTRAINT) != 0
        geom = d.contact.geom.numpy()[:count].reshape(count, 2)[kept].astype(np.int32)
        world = d.contact.worldid.numpy()[:count][kept].astype(int)
        order = np.argsort(world, kind='stable')
        bounds = np.cumsum(np.bincount(world, minlength=n))[:-1]
        return Derived(arrays, list(np.split(geom[order], bounds)))

    def _check_capacity(self) -> None:
        """Raise InfrastructureError if a world overflowed its contact or constraint rows."""
        d = self.d
        nacon = int(d.nacon.numpy()[0]) if hasattr(d, 'nacon') else 0
        if nacon > self.naconmax:
            raise InfrastructureError(f'MuJoCo Warp: {nacon} contacts overflow the '
                                      f'{self.naconmax} allocated (raise nconmax)')
        if hasattr(d, 'nefc'):
            nefc = int(np.max(d.nefc.numpy()))
            if nefc > self.njmax:
                raise InfrastructureError(f'MuJoCo Warp: {nefc} constraint rows overflow the '
                                          f'{self.njmax} allocated per world (raise njmax)')

    # -- cameras ---------------------------------------------------------------------------

    def render(self) -> Any:
        """Return every world's images of the current state: a torch uint8 tensor
        (N, cameras, H, W, 3) RGB on this stepper's device (rendered once per state)."""
        if self.rc is None:
            raise ConfigError('WarpStepper.render: the stepper was built without cameras')
        if self._torch_images is not None:
            return self._torch_images
        import torch

        wp, mjw = self.wp, self.mjw
        t = time.perf_counter()
        with wp.ScopedDevice(self.device):
            mjw.refit_bvh(self.m, self.d, self.rc)
            mjw.render(self.m, self.d, self.rc)
            wp.synchronize()
            packed = wp.to_torch(self.rc.rgb_data)  # (N, pixels) packed ARGB, no copy
        w, h = self.image_size
        raw = packed.view(torch.uint8).view(self.n, -1, 4)  # little endian: B, G, R, A
        cams = [raw[:, a:a + w * h, :3].flip(-1).reshape(self.n, h, w, 3)
                for a in self._rgb_adr]
        self._torch_images = torch.stack(cams, dim=1)
        self.timing['renders'] += 1
        self.timing['render'] += time.perf_counter() - t
        return self._torch_images

    def host_images(self, index: int) -> dict[str, np.ndarray]:
        """World ``index``'s images of the current state as (H, W, 3) uint8 arrays."""
        images = self.render()[index].cpu().numpy()
        return {c: images[k] for k, c in enumerate(self.cameras)}
