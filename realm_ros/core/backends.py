"""World backends, one registered record each: every list, choice and branch on them reads it.

A backend is a :class:`Backend`: its name, whether it stands for the real arm in a pair or is a
simulated twin, the ``'module:Class'`` target that builds its :class:`~realm_ros.core.world.World`
(imported only when chosen, so the MuJoCo install never needs Isaac Sim) and what it can do
(cameras, lockstep, GPU engines, a sysid evaluator, perturbations applied in its scene or told
to an operator, how a pair reaches it). The CLI's choices (``--backend``, ``--real``,
``--sim``), ``WorldConfig.backend`` and ``EvalConfig.real`` / ``.sim``, the launch files'
choices, ``graph.paired_eval_graph``'s real side and the docs' parameter table all read
:data:`BACKENDS` through :func:`names` and :func:`get`; nothing else spells the list.

Adding a backend is one registration (docs/extending.md, "A world backend"): a ``World``
subclass in ``backends/``, and its :class:`Backend` passed to :func:`register` (or added to
:data:`BACKENDS` below, for one the package ships). This module imports nothing of the package
but its errors, so ``core.config`` can validate against it.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterator, Sequence, overload

from realm_ros.core.registry import Registry


@dataclasses.dataclass(frozen=True)
class Backend:
    """One world backend.

    Attributes:
        name: its key in :data:`BACKENDS` (``--backend``, ``WorldConfig.backend``).
        real: it stands for the real arm in a pair (``--real``: the arm, or the digital real);
            False: a simulated twin (``--sim``).
        target: ``'module:Class'`` (or a factory) building its World from a ``WorldConfig``.
        description: one line, for help texts and docs.
        cameras: it renders or publishes camera images.
        lockstep: it can step once per command on its own sim clock (lockstep); False: it runs
            in wall time (a real arm).
        standalone: it runs in one process without a ROS graph (``realm-ros episode``).
        gpu_engines: batched engines of it on a GPU (sweeps, the device fit), e.g. MJX.
        sweep: ``realm-ros sweep`` runs cells in it.
        looks: it can be dressed with another look (visual matching, variant aggregation).
        sysid: ``'module:function'`` of ``function(device, threads) -> (latency_s ->
            BatchEvaluator)``, the simulator the sysid fit replays; '' = it cannot be fitted.
        sysid_method: the fit's default method on it (``lm``, ``cmaes``).
        perturbations: how a REALM perturbation reaches it: ``'scene'`` (applied in its
            simulated scene, by its appliers) or ``'operator'`` (a person is told what to
            change by hand).
        scene_sampler: ``'module:function(task, seed) -> initial_state'`` drawing a task's
            initial state ('' = it has none; the paired evaluation draws from the twin's).
        perturbed_state: ``'module:function(spec, params) -> initial_state'``: the scene state a
            perturbation gives a spec, so an operator sets it up ('' = none).
        via: in a pair, the backend ``world_node`` runs in its place ('' = itself): the
            digital real is reached through the franka bridge, exactly as a lab's arm.
        robot_node: in a pair, the node (executable) serving the robot side of the bridge
            ('' = none: an arm's own franka_ros2 graph).
        bridge: it is the bridge to franka_ros2 (takes ``arm_id`` and ``gripper``).
        privileged: it has simulator-only state (object poses) a scripted policy may read.
        operator_scored: a person marks its episodes' stages (``operator_node``).
        hidden: it reads the digital real's hidden dynamics and appearance files.
        not_run: why the release ships it but has never run it ('' = it runs); ``make_world``
            refuses it unless ``REALM_ROS_TRY_NOT_RUN`` names it.
    """

    name: str
    real: bool
    target: str
    description: str = ''
    cameras: bool = True
    lockstep: bool = True
    standalone: bool = True
    gpu_engines: tuple[str, ...] = ()
    sweep: bool = False
    looks: bool = False
    sysid: str = ''
    sysid_method: str = 'cmaes'
    perturbations: str = 'scene'
    scene_sampler: str = ''
    perturbed_state: str = ''
    via: str = ''
    robot_node: str = ''
    bridge: bool = False
    privileged: bool = True
    operator_scored: bool = False
    hidden: bool = False
    not_run: str = ''

    @property
    def pair_backend(self) -> str:
        """The backend ``world_node`` runs for this world in a pair (:attr:`via` or itself)."""
        return self.via or self.name


_ISAAC_NOT_RUN = (
    'the Isaac Sim world (realm_ros/backends/isaac) has NOT been run: Isaac Sim needs '
    'an RTX GPU, which the project has not had. Its calls are checked against Isaac '
    "Sim 6.2's published API and it shares scene, controller and parameters with the "
    'PhysX twin that does run (backend physx). To try it on an RTX machine with Isaac '
    'Sim 6.x: REALM_ROS_TRY_NOT_RUN=isaac realm-ros episode --backend isaac --task '
    'stack_cubes (realm-ros doctor checks the install). Otherwise use backend physx '
    'or mujoco.')

#: The registered backends by name, in the order choices list them (twins first).
BACKENDS: Registry[Backend] = Registry('world backend', {b.name: b for b in (
    Backend('mujoco', real=False, target='realm_ros.backends.mujoco.world:MujocoWorld',
            description='the MuJoCo twin', gpu_engines=('mjx', 'warp'), sweep=True,
            looks=True, sysid='realm_ros.backends.mujoco.evaluators:evaluators',
            sysid_method='lm',
            scene_sampler='realm_ros.backends.mujoco.world:sample_initial_state',
            perturbed_state='realm_ros.backends.mujoco.perturb:perturbed_initial_state'),
    Backend('physx', real=False, target='realm_ros.backends.physx.world:PhysxWorld',
            description='the twin on kit-less PhysX', sweep=True,
            sysid='realm_ros.backends.physx.rollout:evaluators'),
    Backend('isaac', real=False, target='realm_ros.backends.isaac:IsaacWorld',
            description='Isaac Sim (not run)', not_run=_ISAAC_NOT_RUN),
    Backend('digital_real', real=True,
            target='realm_ros.backends.digital_real:DigitalRealWorld',
            description='the digital real physics (the simulated stand-in for the arm)',
            via='franka', robot_node='digital_real', hidden=True),
    Backend('franka', real=True, target='realm_ros.backends.franka:make_bridge_world',
            description='the arm through franka_ros2 (the bridge)', lockstep=False,
            standalone=False, perturbations='operator', bridge=True, privileged=False,
            operator_scored=True),
)})


def register(backend: Backend) -> Backend:
    """Add ``backend`` to :data:`BACKENDS` (another backend of that name is an error)."""
    return BACKENDS.add(backend.name, backend)


def get(name: str) -> Backend:
    """Return backend ``name``; a :class:`ConfigError` listing the backends for another."""
    return BACKENDS.lookup(name)


class Names(Sequence[str]):
    """The names of the registered backends that pass a test, read live from :data:`BACKENDS`.

    Used as argparse and dataclass-field ``choices``: a backend registered after the parser or
    the schema was built is a choice all the same.
    """

    def __init__(self, keep: Callable[[Backend], bool] = lambda b: True) -> None:
        self._keep = keep

    def _names(self) -> list[str]:
        return [name for name, b in BACKENDS.items() if self._keep(b)]

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __repr__(self) -> str:
        return repr(tuple(self._names()))


def names(keep: Callable[[Backend], bool] = lambda b: True) -> Names:
    """Return the live names of the backends ``keep`` accepts (all by default)."""
    return Names(keep)


#: The choices of ``--real`` / ``EvalConfig.real``: backends standing for the arm.
REAL = names(lambda b: b.real)
#: The choices of ``--sim`` / ``EvalConfig.sim``: the simulated twins.
SIM = names(lambda b: not b.real)
#: Backends that run in one process (``realm-ros episode --backend``).
STANDALONE = names(lambda b: b.standalone)
#: Real backends a sysid recording or a camera recording can drive.
RECORDABLE = REAL
#: Twins the sysid fit can replay.
FITTABLE = names(lambda b: bool(b.sysid))
#: Twins ``realm-ros sweep`` runs cells in.
SWEEPABLE = names(lambda b: b.sweep)


def gpu_engines() -> tuple[str, ...]:
    """Every registered backend's GPU engines (``mjx``, ``warp``), in registry order."""
    return tuple(e for b in BACKENDS.values() for e in b.gpu_engines)
