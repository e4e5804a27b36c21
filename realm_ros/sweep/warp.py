"""The MuJoCo Warp batch worker of a sweep (world ``warp``) and its check against the CPU twin.

:func:`run_warp` runs cells (``core.sweep.Cell`` of any policy the Warp batch drives: the
``learned`` checkpoints, on the device, and the ``scripted`` ladder, on the host) as whole
episodes of N worlds in lockstep (``backends/mujoco/batch.run_batch`` with a
``warp_sweep.WarpStepper``): the worlds are the twin's (each cell's own seeded initial state
and perturbation, reset on the host as ``run_episode`` resets them), the cameras the policies
use are ray traced for every world at once, and every record is scored by the CPU's tracker
and referee. :class:`WarpBatchRunner` is the sweep worker ``realm-ros sweep --device gpu``
hosts for ``warp`` cells (:class:`GpuRunner` routes ``mjx`` cells to the MJX worker).

:class:`LearnedBatch` is one learned checkpoint on the device answering for every world that
asks for a chunk this step in one forward pass, on ``WarpStepper.render``'s images (resized
and padded on the device by :func:`resize_with_pad_torch`, as ``prepare_image`` does on the
host); each world holds a :class:`LearnedView` (its instruction) in the usual policy chain
(``ActionChunker``: chunks executed open loop, as on the CPU). :func:`make_infer_batch` is
``run_batch``'s ``infer_batch``: learned worlds per checkpoint, scripted worlds through
``policies.scripted.infer_batch``.

``sweep/compare_cpu.py`` checks a GPU run's records against the CPU twin (``--compare-cpu``).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any, Callable, Mapping, Sequence, cast

import numpy as np

from realm_ros.core import robot
from realm_ros.core.errors import ConfigError, InfrastructureError
from realm_ros.core.policy import Policy, PolicyNeeds
from realm_ros.core.sweep import Cell
from realm_ros.core.types import ActionChunk, ActionMode, EpisodeSpec, Observation

#: The policies a Warp batch drives (others run on the CPU twin: ``--device cpu``).
WARP_POLICIES = ('learned', 'scripted')

@dataclasses.dataclass
class WarpOptions:
    """How the Warp batch runs: worlds per batch, device, image size, solver capacities."""

    batch: int = 1024
    device: str = ''
    image_size: tuple[int, int] = (320, 180)
    nconmax: int = 96
    njmax: int = 512
    #: The key light's shadows: True, False or 'auto' (as the CPU twin's OpenGL on this machine:
    #: ``warp_sweep.twin_render``).
    shadows: bool | str = 'auto'
    #: Replay each control period as one captured CUDA graph (None: on CUDA devices).
    graph: bool | None = None
    #: The observations read Warp's own derived quantities (``WarpStepper`` ``hand_back``)
    #: instead of a host ``mj_forward`` per world.
    hand_back: bool = False
    #: A world whose episode ends takes the next cell at once (False: batches of ``batch``
    #: cells one after another, each stepped until its longest episode ends).
    refill: bool = True


def refuse_on_warp(cells: Sequence[Cell]) -> None:
    """Raise :class:`ConfigError` for cells the Warp batch cannot run: other policies, the
    perturbations that rebuild the scene per seed (each a model of its own), and image
    augmentations (host-side image appliers)."""
    from realm_ros.core import perturbations
    from realm_ros.sweep.mjx import GPU_REFUSED

    bad_policies = sorted({c.entry.policy for c in cells if c.entry.policy not in WARP_POLICIES})
    if bad_policies:
        raise ConfigError(f'--device gpu (MuJoCo Warp) runs {" and ".join(WARP_POLICIES)} '
                          f'policies, not {", ".join(bad_policies)}; run those with '
                          '--device cpu')
    image = {c.spec.perturbation for c in cells
             if perturbations.get(c.spec.perturbation).image is not None}
    scene = {c.spec.perturbation for c in cells if c.spec.perturbation in GPU_REFUSED}
    if image | scene:
        codes = ', '.join(sorted(image | scene))
        raise ConfigError(f'--device gpu (MuJoCo Warp) does not run {codes}'
                          ': scene rebuilds per seed and image augmentations run on the CPU '
                          'twin (--device cpu)')


def _world(cell: Cell, cameras: tuple[str, ...], size: tuple[int, int]) -> Any:
    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.core.config import WorldConfig

    # The host worlds are the CPU sweep's (make_sweep_world): cameras configured, so the model
    # is built with its visuals; their images are never read (the device renders them).
    config = WorldConfig(backend='mujoco', task=cell.spec.task, cameras=cameras,
                         camera_rate_hz=robot.CONTROL_HZ if cameras else 0.0,
                         camera_width=size[0], camera_height=size[1],
                         sim_params_file=cell.sim_params_file)
    return MujocoWorld(config)


class WarpBatchRunner:
    """A sweep worker for the ``warp`` world: one :func:`run_warp` per call, with the learned
    checkpoints kept loaded on the device between calls."""

    def __init__(self, **options: Any) -> None:
        from realm_ros.backends.mujoco.warp_sweep import import_warp

        import_warp()
        self.options = WarpOptions(**options)
        self._learned: dict[tuple, Any] = {}
        self.timing: dict[str, float] = {}

    def device(self) -> str:
        from realm_ros.backends.mujoco.warp_sweep import default_device

        if not self.options.device:
            self.options.device = default_device()
        return self.options.device

    def learned(self, args: Mapping[str, Any]) -> Any:
        """The shared :class:`LearnedBatch` of a learned entry's arguments."""
        args = {k: v for k, v in args.items() if k != 'device'}
        unknown = sorted(set(args) - {'path', 'horizon', 'prompt'})
        if unknown:
            raise ConfigError(f'learned policy: no setting {unknown} on the Warp batch')
        key = tuple(sorted(args.items()))
        if key not in self._learned:
            self._learned[key] = LearnedBatch(str(args.get('path', '')), self.device(),
                                              int(args.get('horizon', 8)),
                                              str(args.get('prompt', '')))
        return self._learned[key]

    def run_cells(self, cells: Sequence[Cell],
                  progress: Callable[[int], None] | None = None) -> list[dict]:
        """Run ``cells`` (world ``warp``); one record per cell, in order."""
        for c in cells:
            if c.world != 'warp':
                raise ConfigError(f'the Warp batch worker runs cells of world warp, got '
                                  f'{c.world!r}')
        records, timing = run_warp(cells, self, progress)
        self.timing = timing
        return records

    def close(self) -> None:
        self._learned.clear()


def run_warp(cells: Sequence[Cell], runner: WarpBatchRunner,
             progress: Callable[[int], None] | None = None
             ) -> tuple[list[dict], dict[str, float]]:
    """Run ``cells`` on MuJoCo Warp, grouped by world template (task and twin parameters) and
    executed chunk length, each group in up to ``runner.options.batch`` worlds; records in cell
    order and the timing summed.

    With ``options.refill`` (the default) a group's worlds take its cells one after another:
    a world whose episode ends is reset to the group's next cell and loaded into its slot of
    the batch (``run_batch``, ``WarpStepper.replace``) at the batch's next chunk boundary (every
    ``horizon`` steps: ``run_batch``'s ``align``, so that the worlds still ask for their chunks
    on the same steps and the cameras are rendered once per chunk), so the batch stays full
    until the cells run out. Without: batches of ``batch`` cells one after another, each
    stepped until its longest episode ends."""
    from realm_ros.backends.mujoco import warp_sweep
    from realm_ros.backends.mujoco.batch import run_batch
    from realm_ros.core.policy import make_policy

    refuse_on_warp(cells)
    opts = runner.options
    device = runner.device()
    cameras = tuple(c for c in warp_sweep.ALL_CAMERAS
                    if any(c in cell.cameras for cell in cells))
    inners, execute = [], []
    for i, cell in enumerate(cells):
        if cell.entry.policy == 'learned':
            inner = runner.learned(cell.entry.args).view(i)
        else:
            inner = make_policy('scripted', common={'seed': 0}, **dict(cell.entry.args))
        inners.append(inner)
        execute.append(cell.execute_horizon or inner.needs.horizon)
    groups: dict[tuple, list[int]] = {}
    for i, cell in enumerate(cells):
        groups.setdefault((cell.spec.task, cell.sim_params_file, execute[i]), []).append(i)
    timing: dict[str, float] = {'build_s': 0.0, 'groups': 0, 'world_steps': 0, 'sim_s': 0.0}
    records: list[Any] = [None] * len(cells)
    templates: list[Any] = []
    for (_, _, horizon), members in groups.items():
        t0 = time.perf_counter()
        templates.append(_world(cells[members[0]], cameras, opts.image_size))
        timing['build_s'] += time.perf_counter() - t0
        batches = ([members] if opts.refill else
                   [members[lo:lo + opts.batch] for lo in range(0, len(members), opts.batch)])
        for idx in batches:
            t0 = time.perf_counter()
            worlds = slot_worlds(templates[-1], min(opts.batch, len(idx)))
            timing['build_s'] += time.perf_counter() - t0
            steppers: list[warp_sweep.WarpStepper] = []

            def current(steppers: list = steppers) -> warp_sweep.WarpStepper | None:
                return steppers[-1] if steppers else None

            def factory(ws: Sequence[Any], steppers: list = steppers) -> Any:
                steppers.append(warp_sweep.WarpStepper(
                    ws, cameras, opts.image_size, device, opts.nconmax, opts.njmax,
                    opts.shadows, opts.graph, hand_back=opts.hand_back))
                return steppers[-1]

            def on_slot(e: int, k: int, idx: list[int] = idx) -> None:
                view = inners[idx[e]]  # a view reads its world's images: the batch's slot
                if isinstance(view, LearnedView):
                    view.index = k

            host: dict[str, float] = {}
            results = run_batch(
                worlds, [inners[i] for i in idx], [cells[i].spec for i in idx], factory,
                progress=progress, execute=horizon, infer_batch=make_infer_batch(current),
                timing=host, on_slot=on_slot, align=horizon)
            for name, value in host.items():
                timing[f'host_{name}'] = timing.get(f'host_{name}', 0.0) + value
            for k, i in enumerate(idx):
                records[i] = results[k].to_record()
                timing['world_steps'] += results[k].steps
                timing['sim_s'] += results[k].steps / robot.CONTROL_HZ
            for stepper in steppers:
                for name, value in stepper.timing.items():
                    timing[name] = timing.get(name, 0.0) + value
            timing['groups'] += 1
            for w in worlds:
                w.close()
    for batch in runner._learned.values():
        for name, value in batch.timing.items():
            timing[f'policy_{name}'] = timing.get(f'policy_{name}', 0.0) + value
            batch.timing[name] = 0
    for w in templates:
        w.close()
    return records, timing


def slot_worlds(template: Any, count: int) -> list[Any]:
    """``count`` worlds copied from ``template`` (``MujocoWorld.copy_for_reset``: new data, a
    fraction of a build), each with a model of its own, for :func:`run_batch` to reset to its
    episodes one after another."""
    return [template.copy_for_reset() for _ in range(count)]


@functools.lru_cache(maxsize=16)
def area_weights(src: int, dst: int) -> np.ndarray:
    """(dst, src) weights of shrinking ``src`` pixels to ``dst`` by area averaging, as OpenCV's
    ``INTER_AREA`` does for any factor: output pixel i averages the input interval
    [i s, (i + 1) s), s = src / dst, each input pixel weighted by its overlap with it. (Torch's
    ``area`` mode is an adaptive average pool: whole pixels in windows of floor/ceil width, which
    for 320 -> 128 differs from OpenCV by up to 36 grey levels at edges.)"""
    scale = src / dst
    weights = np.zeros((dst, src))
    for i in range(dst):
        lo, hi = i * scale, (i + 1) * scale
        for j in range(int(np.floor(lo)), min(src, int(np.ceil(hi)))):
            weights[i, j] = min(hi, j + 1) - max(lo, j)
    return weights / scale


def resize_with_pad_torch(images: Any, size: int) -> Any:
    """(B, H, W, 3) uint8 -> (B, 3, size, size) uint8: the device twin of ``prepare_image``
    (aspect kept, OpenCV's area averaging when shrinking (:func:`area_weights`, separable),
    linear when enlarging, zero bands centred)."""
    import torch
    import torch.nn.functional as F

    b, h, w, _ = images.shape
    ratio = max(w / size, h / size)
    new_h, new_w = max(1, int(h / ratio)), max(1, int(w / ratio))
    x = images.permute(0, 3, 1, 2).float()
    if new_h < h or new_w < w:
        # float32 sums, as OpenCV's own for uint8
        rows = torch.as_tensor(area_weights(h, new_h), dtype=torch.float32, device=x.device)
        cols = torch.as_tensor(area_weights(w, new_w), dtype=torch.float32, device=x.device)
        x = torch.einsum('oh,bchw,pw->bcop', rows, x, cols)
    elif (new_h, new_w) != (h, w):
        x = F.interpolate(x, size=(new_h, new_w), mode='bilinear', align_corners=False)
    x = x.round().clamp(0, 255).to(torch.uint8)
    out = torch.zeros((b, 3, size, size), dtype=torch.uint8, device=images.device)
    top, left = (size - new_h) // 2, (size - new_w) // 2
    out[:, :, top:top + new_h, left:left + new_w] = x
    return out


class LearnedBatch:
    """One learned-policy checkpoint on the device, answering for many worlds at once.

    ``view(i)`` is world i's :class:`Policy` (its own instruction); :meth:`infer` computes the
    chunks of the worlds that ask, from :meth:`WarpStepper.render`'s images.
    """

    def __init__(self, path: str, device: str, horizon: int = 8, prompt: str = '') -> None:
        from realm_ros.policies.learned import LearnedPolicy

        self.policy = LearnedPolicy(path=path, device=device, horizon=horizon,
                                    prompt=prompt)
        self.timing = {'infer': 0.0, 'calls': 0, 'queries': 0}

    def view(self, index: int) -> LearnedView:
        return LearnedView(self, index)

    def infer(self, views: Sequence[LearnedView], observations: Sequence[Observation],
              stepper: Any) -> list[ActionChunk]:
        """Return the chunks of ``views`` for ``observations`` (the images: the stepper's)."""
        import torch

        from realm_ros.policies.learned import decode, tokenize

        p = self.policy
        t = time.perf_counter()
        missing = [c for c in p.cameras if c not in stepper.cameras]
        if missing:
            raise ConfigError(f'the learned policy needs cameras {missing}; the Warp batch '
                              f'renders {list(stepper.cameras)}')
        index = torch.tensor([v.index for v in views], device=p.device)
        cams = [stepper.cameras.index(c) for c in p.cameras]
        images = stepper.render().to(p.device)[index][:, cams]  # (B, C, H, W, 3)
        b, c = images.shape[:2]
        prepared = resize_with_pad_torch(images.reshape((b * c,) + images.shape[2:]),
                                         p.image_size).view(b, c, 3, p.image_size, p.image_size)
        state = np.array([np.r_[o.joints.position, o.joints.gripper] for o in observations],
                         dtype=np.float32)
        tokens = [tokenize(o.instruction or v.instruction) for v, o in zip(views, observations)]
        try:
            with torch.inference_mode():
                img = prepared.float() / 255.0
                st = torch.from_numpy(state).to(p.device)
                tok = torch.tensor(tokens, device=p.device)
                norm = (st - p.stats['state_mean']) / p.stats['state_std']
                decoded = decode(p.model(img, norm, tok), st, p.stats)
                values = decoded.to('cpu', torch.float64).numpy()
        except RuntimeError as err:
            raise InfrastructureError(f'learned policy {p.label} failed: {err}') from err
        self.timing['infer'] += time.perf_counter() - t
        self.timing['calls'] += 1
        self.timing['queries'] += b
        if not np.all(np.isfinite(values)):
            raise InfrastructureError(f'learned policy {p.label} returned NaN or inf')
        return [ActionChunk(values[k], ActionMode.POSITION) for k in range(b)]


class LearnedView(Policy):
    """World ``index``'s handle on a shared :class:`LearnedBatch` (its own instruction)."""

    name = 'learned'

    def __init__(self, batch: LearnedBatch, index: int) -> None:
        self.batch = batch
        self.index = index
        self.instruction = ''

    @property
    def needs(self) -> PolicyNeeds:
        return self.batch.policy.needs

    @property
    def label(self) -> str:
        return self.batch.policy.label

    def reset(self, spec: EpisodeSpec) -> None:
        self.batch.policy.reset(spec)
        self.instruction = self.batch.policy._instruction

    def infer(self, obs: Observation) -> ActionChunk:
        raise ConfigError('LearnedView answers only in a batch (make_infer_batch)')


def make_infer_batch(stepper_ref: Callable[[], Any]
                     ) -> Callable[[Sequence[Policy], Sequence[Observation]], list[ActionChunk]]:
    """Return ``run_batch``'s ``infer_batch`` for a Warp batch: learned worlds in one forward
    pass per checkpoint on the device, scripted worlds through ``scripted.infer_batch``.
    ``stepper_ref()`` is the batch's stepper (built after the worlds' reset)."""

    def infer_batch(policies: Sequence[Policy],
                    observations: Sequence[Observation]) -> list[ActionChunk]:
        from realm_ros.policies.scripted import ScriptedPolicy
        from realm_ros.policies.scripted import infer_batch as scripted_batch

        stepper = stepper_ref()
        if stepper is None:
            raise ConfigError('infer_batch: the Warp stepper is not built yet')
        out: list[ActionChunk | None] = [None] * len(policies)
        learned: dict[int, list[int]] = {}
        scripted: list[int] = []
        for k, policy in enumerate(policies):
            if isinstance(policy, LearnedView):
                learned.setdefault(id(policy.batch), []).append(k)
            elif isinstance(policy, ScriptedPolicy):
                scripted.append(k)
            else:
                raise ConfigError(f'policy {policy.label!r}: the Warp batch runs learned and '
                                  'scripted policies')
        for members in learned.values():
            views = [cast(LearnedView, policies[k]) for k in members]
            chunks = views[0].batch.infer(views, [observations[k] for k in members], stepper)
            for k, chunk in zip(members, chunks):
                out[k] = chunk
        if scripted:
            chunks = scripted_batch([policies[k] for k in scripted],
                                    [observations[k] for k in scripted])
            for k, chunk in zip(scripted, chunks):
                out[k] = chunk
        return [c for c in out if c is not None]

    return infer_batch


class GpuRunner:
    """The ``gpu`` worker kind: ``mjx`` cells to the MJX batch worker, ``warp`` cells to the
    Warp one (the one the options name is built at once, the other on first use)."""

    def __init__(self, batch: int = 1024, iterations: int | None = None,
                 ls_iterations: int | None = None,
                 warp: Mapping[str, Any] | None = None) -> None:
        self.mjx_options: dict[str, Any] = {'batch': batch, 'iterations': iterations,
                                            'ls_iterations': ls_iterations}
        self.warp_options = {'batch': batch, **dict(warp or {})}
        self._runners: dict[str, Any] = {}
        # The worker the sweep's options name is built now, so a missing package is said once,
        # when the worker starts (not as a failing unit): Warp when the sweep has warp cells
        # (``warp`` options), else MJX.
        self._runner('warp' if warp is not None else 'mjx')

    def _runner(self, world: str) -> Any:
        if world not in self._runners:
            if world == 'warp':
                self._runners[world] = WarpBatchRunner(**self.warp_options)
            else:
                from realm_ros.sweep.mjx import BatchRunner
                self._runners[world] = BatchRunner(**self.mjx_options)
        return self._runners[world]

    def run_cells(self, cells: Sequence[Cell]) -> list[dict]:
        worlds = {c.world for c in cells}
        if len(worlds) != 1:
            raise ConfigError(f'a GPU unit holds one world, got {sorted(worlds)}')
        return self._runner(worlds.pop()).run_cells(cells)

    def close(self) -> None:
        for runner in self._runners.values():
            runner.close()
        self._runners.clear()


def require_warp() -> None:
    """Raise :class:`BackendUnavailable` naming the ``warp`` extra unless Warp imports."""
    from realm_ros.backends.mujoco.warp_sweep import warp_available
    from realm_ros.core.errors import BackendUnavailable

    if not warp_available():
        raise BackendUnavailable("--device gpu for learned policies needs mujoco-warp and "
                                 "warp-lang: pip install 'realm_ros[warp]'")
