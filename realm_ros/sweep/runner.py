"""What a sweep worker does: run cells in warm worlds and return their records.

A :class:`CellRunner` keeps one world per (backend, cameras, twin parameters) and one policy
chain per (policy entry, server) for as long as it lives, and resets them between cells
(``run_episode`` resets the world and the policy from the cell's spec): building a MuJoCo world
costs about 0.4 s, a PhysX one 2.6 s, a checkpoint's load more. A warm world reset to a cell
gives the record a fresh one gives (``test_sweep.py`` checks it), so a cell is a deterministic
function of its :class:`~realm_ros.core.sweep.Cell` whatever ran before it on that worker.

Every executor (in-process, local processes, Ray actors) hosts a ``CellRunner`` or, for the
``mjx`` world, a :class:`~realm_ros.sweep.mjx.BatchRunner`; both take a list of cells
(:meth:`run_cells`) and return one record per cell, in order.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Protocol, Sequence

from realm_ros.core import robot
from realm_ros.core.episode import StepCallback, run_episode
from realm_ros.core.errors import ConfigError, InfrastructureError, RealmError
from realm_ros.core.policy import Policy, make_policy, standard_chain
from realm_ros.core.sweep import BATCH_WORLDS, Cell
from realm_ros.core.types import EpisodeOutcome, EpisodeResult
from realm_ros.core.world import World


class CellHook(Protocol):
    """Optional per-cell observer (episode videos, issue 30): sees every step, adds fields.

    ``begin`` returns the ``on_step`` callback for the cell's episode (or None);
    ``end`` returns extra record fields (a video path, ...), merged into the record.
    A hook must be picklable to travel to process and Ray workers.
    """

    def begin(self, cell: Cell) -> StepCallback | None:
        """Return the step callback for ``cell``'s episode, or None."""

    def end(self, cell: Cell, record: Mapping[str, Any]) -> Mapping[str, Any]:
        """Return extra fields for ``cell``'s record."""


class Runner(Protocol):
    """What an executor's worker hosts (a :class:`CellRunner`, a GPU ``BatchRunner``)."""

    def run_cells(self, cells: Sequence[Cell]) -> list[dict[str, Any]]:
        """Return one record per cell, in order."""

    def close(self) -> None:
        """Release worlds and policies."""


def server_for(cell: Cell, worker_index: int) -> tuple[str, int] | None:
    """Return the ``(host, port)`` of the policy server this worker uses for ``cell``: the
    worker's share of the cell's server list (worker i -> server i mod n), or None."""
    if not cell.servers:
        return None
    address = cell.servers[worker_index % len(cell.servers)]
    host, sep, port = address.rpartition(':')
    if not sep or not host or not port.isdigit():
        raise ConfigError(f'--servers: {address!r} is not host:port')
    return host, int(port)


class CellRunner:
    """Runs cells one at a time in warm worlds and warm policies.

    Args:
        worker_index: this worker's index (picks its policy server, :func:`server_for`).
        hook: optional :class:`CellHook` (videos); the record gains the fields it returns.
        world_factory: ``factory(backend, cameras, sim_params_file) -> World`` (default
            :func:`make_sweep_world`).
    """

    def __init__(self, worker_index: int = 0, hook: CellHook | None = None,
                 world_factory: Callable[[str, tuple[str, ...], str], World] | None = None
                 ) -> None:
        self.worker_index = worker_index
        self.hook = hook
        self._world_factory = world_factory or make_sweep_world
        self._worlds: dict[tuple, World] = {}
        self._policies: dict[tuple, Policy] = {}

    def world(self, cell: Cell) -> World:
        """Return the warm world for ``cell`` (built on first use)."""
        key = (cell.world, cell.cameras, cell.sim_params_file, cell.visual_match_dir,
               cell.variant)
        if key not in self._worlds:
            if cell.visual_match_dir or cell.variant:
                self._worlds[key] = make_looked_world(cell)
            else:
                self._worlds[key] = self._world_factory(cell.world, cell.cameras,
                                                        cell.sim_params_file)
        return self._worlds[key]

    def policy(self, cell: Cell) -> Policy:
        """Return the warm policy chain for ``cell`` (built on first use)."""
        server = server_for(cell, self.worker_index)
        key = (cell.entry.label, cell.entry.policy, tuple(sorted(cell.entry.args.items())),
               cell.execute_horizon, server)
        if key not in self._policies:
            self._policies[key] = build_policy(cell, server)
        return self._policies[key]

    def run(self, cell: Cell) -> dict[str, Any]:
        """Run ``cell``'s episode and return its record.

        A world or policy that cannot be built or answer (``InfrastructureError``: a policy
        server down) ends the cell as ``infra_failure``: recorded, never scored, retried by the
        next run. A bad configuration (``ConfigError``) propagates: it fails every cell alike.
        """
        if cell.world in BATCH_WORLDS:
            raise ConfigError(f'world {cell.world!r} runs in a GPU batch worker, not a CellRunner')
        try:
            world = self.world(cell)
            policy = self.policy(cell)
        except InfrastructureError as err:
            return infra_record(cell, str(err))
        on_step = self.hook.begin(cell) if self.hook is not None else None
        result = run_episode(world, policy, cell.spec, on_step=on_step)
        if result.outcome is EpisodeOutcome.INFRA_FAILURE:
            # A policy client that lost its server may hold a dead connection: build it anew.
            self._drop_policy(policy)
        record = result.to_record()
        if result.backend != cell.backend:
            raise ConfigError(f'world {cell.world!r} ran as backend {result.backend!r}')
        if cell.backend != cell.world:  # a looked twin: the record's role names the world
            record['role'] = record['world'] = cell.world
        if self.hook is not None:
            record.update(self.hook.end(cell, record))
        return record

    def run_cells(self, cells: Sequence[Cell]) -> list[dict[str, Any]]:
        """Run ``cells`` one after the other; one record per cell, in order."""
        return [self.run(c) for c in cells]

    def _drop_policy(self, policy: Policy) -> None:
        for key, value in list(self._policies.items()):
            if value is policy:
                del self._policies[key]
                _close_quietly(policy)

    def close(self) -> None:
        """Close every world and policy."""
        for thing in [*self._policies.values(), *self._worlds.values()]:
            _close_quietly(thing)
        self._policies.clear()
        self._worlds.clear()


def _close_quietly(thing: Any) -> None:
    try:
        thing.close()
    except (RealmError, OSError):
        pass  # closing a world or client that already lost its peer


def build_policy(cell: Cell, server: tuple[str, int] | None = None) -> Policy:
    """Return ``cell``'s policy in the standard chain, as ``policy_node`` builds it: the common
    settings each policy declares, the entry's own arguments, the server's address."""
    common: dict[str, Any] = {'seed': 0}
    if cell.execute_horizon:
        common['execute'] = cell.execute_horizon
    args = dict(cell.entry.args)
    if server is not None:
        args['host'], args['port'] = server
    inner = make_policy(cell.entry.policy, common=common, **args)
    return standard_chain(inner, execute=cell.execute_horizon or inner.needs.horizon)


def make_sweep_world(backend: str, cameras: tuple[str, ...], sim_params_file: str) -> World:
    """Return a world of ``backend`` rendering ``cameras`` (none: headless)."""
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.world import make_world

    config = WorldConfig(backend=backend, cameras=cameras,
                         camera_rate_hz=robot.CONTROL_HZ if cameras else 0.0,
                         sim_params_file=sim_params_file)
    return make_world(config)


def make_looked_world(cell: Cell, **config: Any) -> World:
    """Return the MuJoCo twin with ``cell``'s look: its visual match, or its variant of
    :class:`~realm_ros.core.appearance.VariantSet` (built here from (index, count, seed), so
    a worker on any machine dresses the same variant). ``config``: more
    :class:`~realm_ros.core.config.WorldConfig` fields (a sheet's camera size)."""
    from realm_ros.backends.mujoco.appearance import AppearanceLook
    from realm_ros.core.appearance import VariantSet
    from realm_ros.core.config import WorldConfig
    from realm_ros.core.world import make_world

    fields = {'camera_rate_hz': robot.CONTROL_HZ if cell.cameras else 0.0, **config}
    world_config = WorldConfig(backend='mujoco', cameras=cell.cameras,
                               sim_params_file=cell.sim_params_file,
                               visual_match_dir=cell.visual_match_dir, **fields)
    if not cell.variant:
        return make_world(world_config)
    index, count, seed = cell.variant
    return make_world(world_config,
                      look=AppearanceLook(VariantSet(count, seed).appearance(index)))


def infra_record(cell: Cell, error: str) -> dict[str, Any]:
    """Return the record of a cell that could not run (``infra_failure``, never scored)."""
    record = EpisodeResult(spec=cell.spec, outcome=EpisodeOutcome.INFRA_FAILURE, progression=0.0,
                         backend=cell.backend, error=error, sim_time_s=None).to_record()
    if cell.backend != cell.world:
        record['role'] = record['world'] = cell.world
    return record


def make_runner(kind: str, worker_index: int = 0, hook: CellHook | None = None,
                options: Mapping[str, Any] | None = None) -> Runner:
    """Return the runner a worker of ``kind`` hosts: ``cpu`` (:class:`CellRunner`) or ``gpu``
    (:class:`~realm_ros.sweep.warp.GpuRunner`: the MJX or MuJoCo Warp batch worker,
    ``options``: batch, solver iterations, ``warp``)."""
    if kind == 'gpu':
        from realm_ros.sweep.warp import GpuRunner
        return GpuRunner(**dict(options or {}))
    if kind != 'cpu':
        raise ConfigError(f'unknown worker kind {kind!r}; choose cpu or gpu')
    return CellRunner(worker_index, hook)
