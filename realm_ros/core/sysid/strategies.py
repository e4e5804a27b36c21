"""The latency-profiled fit, one function over registered strategies.

:func:`profiled_fit` estimates the actuation latency and fits friction and armature with it
replayed, the same way every time (the profile rule of :mod:`.latency`), by one
:class:`FitStrategy` of :data:`STRATEGIES`:

* ``fast`` and ``full``: :func:`.latency.identify`'s two walks of the profile on the CPU.
* ``parallel``: :func:`.parallel.identify_parallel`, a CMA-ES at every latency at once.
* ``device``: the whole fit inside jitted MJX calls, the :class:`FitStrategy` that
  ``backends/mujoco/mjx_fit.py`` defines (``DEVICE``); registered here by its
  ``'module:attribute'`` target, imported when first asked for, so core never imports a
  backend.
* ``warp``: least squares at every latency in lockstep (:mod:`.lsq_batch`) on MuJoCo Warp,
  ``backends/mujoco/warp_rollout.py``'s ``WARP``, registered the same way.

Adding a strategy is one registration (docs/extending.md): a :class:`FitStrategy` whose
``run(request: FitRequest) -> IdentifyResult`` does the fit, passed to :func:`register` where
it is defined, or, for a backend's, its target added to :data:`STRATEGIES` here.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Callable, Sequence, Union

from realm_ros.core.errors import ConfigError, DataError
from realm_ros.core.registry import Registry
from realm_ros.core.sysid.data import Trajectory
from realm_ros.core.sysid.latency import (
    IdentifyResult,
    MakeEvaluator,
    ProfileOptions,
    identify,
)
from realm_ros.core.sysid.optimise import FitOptions, FitResult, Generation, fit
from realm_ros.core.sysid.parallel import identify_parallel
from realm_ros.core.sysid.space import ParamSpace

Progress = Callable[[str, Generation], None]


@dataclasses.dataclass(frozen=True)
class FitRequest:
    """What one latency-profiled fit is asked.

    Attributes:
        trajectories: the recorded runs fitted.
        options: the per-latency search (method, seed, generations, windows...).
        profile: the latency profile (physics rate, largest latency, the walk's budget).
        make_evaluator: ``latency_s -> BatchEvaluator``, the simulator of the host strategies
            (None for a strategy that brings its own, the device one).
        latencies: fit at these latencies only, s (one: a plain fit at a known latency);
            None: estimate it over :func:`~.latency.latency_candidates`.
        progress: called per generation with a label (which fit) and the generation.
        space: the searched parameters.
    """

    trajectories: Sequence[Trajectory]
    options: FitOptions = FitOptions()
    profile: ProfileOptions = ProfileOptions()
    make_evaluator: MakeEvaluator | None = None
    latencies: Sequence[float] | None = None
    progress: Progress | None = None
    space: ParamSpace = ParamSpace()

    def evaluator_factory(self, strategy: str) -> MakeEvaluator:
        """Return :attr:`make_evaluator`; a :class:`ConfigError` naming ``strategy`` without."""
        if self.make_evaluator is None:
            raise ConfigError(f'fit strategy {strategy!r} needs a simulator (make_evaluator)')
        return self.make_evaluator


Run = Callable[[FitRequest], IdentifyResult]


@dataclasses.dataclass(frozen=True)
class FitStrategy:
    """One way to run the latency-profiled fit.

    Attributes:
        name: its key in :data:`STRATEGIES`.
        run: ``run(request) -> IdentifyResult``.
        description: one line, for docs and errors; ``kind`` names the profile in the fit's
            ``source`` line (``realm-ros sysid fit`` prints it).
        methods: the :data:`~.optimise.METHODS` it runs (empty: every one).
        generations: ``generations(request) -> int``: the generations one fit's progress bar
            counts (None: ``request.options.generations``).
    """

    name: str
    run: Run
    description: str = ''
    kind: str = ''
    methods: tuple[str, ...] = ()
    generations: Callable[[FitRequest], int] | None = None

    def bar_total(self, request: FitRequest) -> int:
        """Generations of one fit, for a progress bar."""
        return self.generations(request) if self.generations else request.options.generations


#: Registered strategies by name: a :class:`FitStrategy`, or the ``'module:attribute'``
#: target of a backend's (imported by :func:`get` on first use, then replaced by it).
STRATEGIES: Registry[Union[FitStrategy, str]] = Registry('fit strategy', {
    'device': 'realm_ros.backends.mujoco.mjx_fit:DEVICE',
    'warp': 'realm_ros.backends.mujoco.warp_rollout:WARP',
})


def register(strategy: FitStrategy) -> FitStrategy:
    """Add ``strategy`` to :data:`STRATEGIES` (another strategy of that name is an error; its
    own target is replaced)."""
    STRATEGIES.add(strategy.name, strategy)
    return strategy


def get(name: str) -> FitStrategy:
    """Return the strategy ``name`` (importing a backend's module for a target).

    Raises:
        ConfigError: no strategy of that name (the choices named).
        BackendUnavailable: its backend cannot be imported here (the backend raises it).
    """
    strategy = STRATEGIES.lookup(name)
    if isinstance(strategy, str):
        module, _, attribute = strategy.partition(':')
        loaded = getattr(importlib.import_module(module), attribute)
        if not isinstance(loaded, FitStrategy) or loaded.name != name:
            raise ConfigError(f'fit strategy target {strategy!r} is not the FitStrategy {name!r}')
        STRATEGIES[name] = strategy = loaded
    return strategy


def profiled_fit(request: FitRequest, strategy: str = 'fast') -> IdentifyResult:
    """Run the latency-profiled fit of ``request`` by ``strategy`` (:data:`STRATEGIES`).

    Raises:
        ConfigError: an unknown strategy, or one that does not run ``request.options.method``.
        BackendUnavailable: the strategy's backend is not installed here.
    """
    chosen = get(strategy)
    if chosen.methods and request.options.method not in chosen.methods:
        raise ConfigError(f'fit strategy {strategy!r} runs {"/".join(chosen.methods)} only, '
                          f'not {request.options.method}')
    return chosen.run(request)


def profile_name(request: FitRequest) -> str:
    """The profile walk ``request`` asks for (``fast`` or ``full``)."""
    return request.profile.profile


def _fixed(request: FitRequest, make_evaluator: MakeEvaluator) -> IdentifyResult | None:
    """A plain fit at the one given latency (None when the latency is to be estimated)."""
    if request.latencies is None:
        return None
    if len(request.latencies) != 1:
        raise DataError(f'a {profile_name(request)} fit at given latencies takes exactly one, '
                        f'got {len(request.latencies)}')
    latency = float(request.latencies[0])
    progress = request.progress
    result: FitResult = fit(make_evaluator(latency), request.trajectories, request.options,
                            space=request.space,
                            progress=None if progress is None else lambda g: progress('fit', g))
    return IdentifyResult(fit=result, latency_s=latency, searches=[], profile={},
                          seconds=result.timing.get('total', 0.0))


def _walk(profile: str) -> Run:
    def run(request: FitRequest) -> IdentifyResult:
        make_evaluator = request.evaluator_factory(profile)
        fixed = _fixed(request, make_evaluator)
        if fixed is not None:
            return fixed
        return identify(make_evaluator, request.trajectories, request.options,
                        dataclasses.replace(request.profile, profile=profile),
                        progress=request.progress)
    return run


def _parallel(request: FitRequest) -> IdentifyResult:
    make_evaluator = request.evaluator_factory('parallel')
    if request.latencies is not None and len(request.latencies) == 1:
        fixed = _fixed(request, make_evaluator)
        assert fixed is not None
        return fixed
    return identify_parallel(make_evaluator, request.trajectories, request.options,
                             request.profile, latencies=request.latencies, space=request.space,
                             progress=request.progress)


register(FitStrategy('fast', _walk('fast'), 'a scout fit places the latency search; full fits '
                     'walk from the searched latency (CPU)', kind='fast profile'))
register(FitStrategy('full', _walk('full'), 'a fit from scratch at every latency visited (CPU)',
                     kind='full profile'))
register(FitStrategy('parallel', _parallel, 'a CMA-ES at every latency, all in one simulator '
                     'call per generation', kind='parallel profile', methods=('cmaes',)))
