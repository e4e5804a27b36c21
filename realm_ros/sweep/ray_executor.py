"""The sweep on a Ray cluster: one actor per worker, each holding a warm runner.

``--ray`` follows ``ray.init``'s conventions: no address starts a local Ray (or joins the
cluster ``RAY_ADDRESS`` names), ``auto`` joins the cluster this machine is part of, and
``HOST:PORT`` / ``ray://HOST:PORT`` joins that one. Every node must have realm_ros installed
(``pip install 'realm_ros[ray]'``, or the same image): actors import it there.

Workers are actors (``num_cpus=1``; GPU batch workers ``num_gpus=1``) that build their
runner once and reset it between cells. The driver hands each actor one unit at a time and
waits on all of them with ``ray.wait``. An actor lost with a unit in hand (its process killed,
its node gone: ``RayActorError``) has its unit queued again for another actor and a
replacement actor started wherever Ray finds room; the replacement is given work only once it
has answered ``ready`` (so a replacement Ray cannot place never holds a unit). An exception
raised inside a runner (``RayTaskError``) is not a lost worker: it stops the sweep, as it would
in process. Ray's own retries are off (``max_restarts=0``, ``max_task_retries=0``): every retry
is the driver's, counted and reported.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Mapping, Sequence

from realm_ros import console
from realm_ros.core.errors import (
    BackendUnavailable,
    ConfigError,
    InfrastructureError,
    RealmError,
)
from realm_ros.sweep.executors import (
    DoneCallback,
    Executor,
    RetryCallback,
    Scheduler,
    Unit,
    WorkerError,
)
from realm_ros.sweep.runner import CellHook, make_runner

#: Seconds without any answer before the driver says it is waiting (a cluster without room).
WAIT_NOTE_S = 60.0


class SweepWorker:
    """A Ray actor's body: one warm runner of ``kind``."""

    def __init__(self, index: int, kind: str, hook: CellHook | None,
                 options: Mapping[str, Any] | None) -> None:
        os.environ.setdefault('MUJOCO_GL', 'egl')
        # A runner that cannot be built (a package missing on this node) is reported by
        # ready() as the sweep's error; raised here it would look like a lost actor.
        self.runner: Any = None
        self.failure: Exception | None = None
        try:
            self.runner = make_runner(kind, index, hook, options)
        except Exception as err:  # noqa: BLE001 - re-raised by ready()
            self.failure = err

    def ready(self) -> tuple[str, int]:
        """Return (node id, process id): the actor is up and its runner built."""
        import ray
        if self.failure is not None:
            raise self.failure
        return ray.get_runtime_context().get_node_id(), os.getpid()

    def run_cells(self, cells: Sequence[Any]) -> list[dict]:
        """Run a unit's cells; one record per cell."""
        if self.failure is not None:
            raise self.failure
        return self.runner.run_cells(cells)


def import_ray(address: str | None = None) -> Any:
    """Return the ``ray`` module, or raise :class:`BackendUnavailable` naming the extra.

    Without an address (and no ``RAY_ADDRESS``) Ray starts a cluster of this machine only:
    its processes then bind 127.0.0.1 (Ray's one-machine switch, read at import).
    """
    if not address and not os.environ.get('RAY_ADDRESS') and 'ray' not in sys.modules:
        os.environ.setdefault('RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER', '0')
    try:
        import ray
    except ImportError:
        raise BackendUnavailable("--ray needs Ray: pip install 'realm_ros[ray]' (or "
                                 "ray>=2.40)") from None
    return ray


class RayExecutor(Executor):
    """Runs units on Ray actors.

    Args:
        address: ``None`` or '' (a local Ray, or ``RAY_ADDRESS``), ``auto``, or an address.
        workers: CPU worker actors (default: the cluster's CPUs).
        gpu_workers: GPU batch worker actors, one GPU each (started only for ``gpu`` units).
        max_replacements: actors started to replace lost ones, at most (default 4 x workers).
        init_kwargs: more ``ray.init`` arguments (a test's ``num_cpus``).
    """

    name = 'ray'

    def __init__(self, address: str | None = None, workers: int | None = None,
                 gpu_workers: int = 1, hook: CellHook | None = None,
                 options: Mapping[str, Mapping[str, Any]] | None = None,
                 max_replacements: int | None = None,
                 init_kwargs: Mapping[str, Any] | None = None) -> None:
        super().__init__(hook, options)
        self.ray = ray = import_ray(address)
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            try:
                # Workers' lines stay in Ray's session logs unless asked for (sweep --verbose).
                ray.init(address=address or None, include_dashboard=False,
                         **{'log_to_driver': False, **dict(init_kwargs or {})})
            except ConnectionError as err:
                raise InfrastructureError(f'--ray {address or ""}: cannot reach a Ray cluster: '
                                          f'{err}') from None
        cpus = int(ray.cluster_resources().get('CPU', 1))
        self.counts = {'cpu': workers or max(1, cpus), 'gpu': gpu_workers}
        if min(self.counts.values()) < 1:
            raise ConfigError(f'--workers must be >= 1, got {workers}')
        self.max_replacements = (4 * self.counts['cpu'] if max_replacements is None
                                 else max_replacements)
        self._actors: dict[Any, str] = {}  # actor -> kind
        self._ready: dict[Any, Any] = {}  # actor -> ready ref (until it answers)
        self._started = 0
        #: Where each actor came up: actor -> (node id, pid).
        self.placement: dict[Any, tuple[str, int]] = {}

    @property
    def address(self) -> str:
        """The address of the cluster this executor runs on."""
        return str(self.ray.get_runtime_context().gcs_address)

    def _start(self, kind: str) -> Any:
        resources = {'num_cpus': 1} if kind == 'cpu' else {'num_cpus': 1, 'num_gpus': 1}
        actor_class = self.ray.remote(max_restarts=0, max_task_retries=0,
                                      **resources)(SweepWorker)
        actor = actor_class.remote(self._started, kind, self.hook, self.options.get(kind))
        self._started += 1
        self._actors[actor] = kind
        self._ready[actor] = actor.ready.remote()
        return actor

    def warm_up(self, kind: str = 'cpu', timeout_s: float = 300.0) -> dict[Any, tuple[str, int]]:
        """Start the workers of ``kind`` and wait until each has built its runner; return
        where each came up (actor -> (node id, pid))."""
        have = sum(1 for k in self._actors.values() if k == kind)
        for _ in range(self.counts[kind] - have):
            self._start(kind)
        from ray.exceptions import RayTaskError

        for actor, ref in list(self._ready.items()):
            try:
                self.placement[actor] = self.ray.get(ref, timeout=timeout_s)
            except RayTaskError as err:
                raise _worker_error(err, 'starting a worker') from None
            del self._ready[actor]
        return dict(self.placement)

    def run(self, units: Sequence[Unit], on_done: DoneCallback,
            on_retry: RetryCallback | None = None) -> None:
        ray = self.ray
        from ray.exceptions import RayActorError, RayError, RayTaskError

        sched = Scheduler(units)
        for kind in sched.kinds_needed():
            have = sum(1 for k in self._actors.values() if k == kind)
            for _ in range(self.counts[kind] - have):
                self._start(kind)
        idle = [a for a in self._actors if a not in self._ready]
        inflight: dict[Any, Any] = {}  # ref -> actor
        replacements = 0
        last_answer = time.monotonic()

        def replace(actor: Any) -> None:
            nonlocal replacements
            kind = self._actors.pop(actor)
            self._ready.pop(actor, None)
            self.placement.pop(actor, None)
            if replacements < self.max_replacements:
                replacements += 1
                self._start(kind)

        while sched.pending():
            for actor in list(idle):
                unit = sched.assign(actor, self._actors[actor])
                if unit is not None:
                    idle.remove(actor)
                    inflight[actor.run_cells.remote(list(unit.cells))] = actor
            waiting = {ref: actor for actor, ref in self._ready.items()}
            refs = list(inflight) + list(waiting)
            if not refs:
                raise InfrastructureError('no Ray worker left to run the sweep (every actor '
                                          'was lost and no replacement is allowed)')
            done, _ = ray.wait(refs, num_returns=1, timeout=WAIT_NOTE_S)
            if not done:
                if time.monotonic() - last_answer > WAIT_NOTE_S:
                    console.line(f'sweep: waiting for Ray ({len(inflight)} unit(s) running, '
                                 f'{len(waiting)} worker(s) starting)')
                continue
            last_answer = time.monotonic()
            ref = done[0]
            if ref in waiting:
                actor = waiting[ref]
                try:
                    self.placement[actor] = ray.get(ref)
                    del self._ready[actor]
                    idle.append(actor)
                except RayActorError:
                    replace(actor)  # never came up: try another
                except RayTaskError as err:
                    raise _worker_error(err, 'starting a worker') from None
                continue
            actor = inflight.pop(ref)
            try:
                records = ray.get(ref)
            except RayTaskError as err:
                unit = sched.finished(actor)
                raise _worker_error(err, unit.cells[0].cell_id) from None
            except RayActorError as err:
                unit = sched.lost(actor)
                replace(actor)
                if unit is not None and on_retry is not None:
                    on_retry(unit, f'Ray worker lost ({type(err).__name__}): '
                                   f'{str(err).splitlines()[0] if str(err) else ""}')
                continue
            except RayError as err:  # an object lost with its node: same as a lost worker
                unit = sched.lost(actor)
                replace(actor)
                if unit is not None and on_retry is not None:
                    on_retry(unit, f'Ray result lost ({type(err).__name__})')
                continue
            on_done(sched.finished(actor), records)
            idle.append(actor)

    def close(self) -> None:
        for actor in list(self._actors):
            try:
                self.ray.kill(actor)
            except Exception:  # noqa: BLE001 - an actor already gone with its node
                pass
        self._actors.clear()
        self._ready.clear()
        if self._owns_ray:
            self.ray.shutdown()


def _worker_error(err: Any, where: str) -> Exception:
    """The sweep's error for a runner's exception on a worker: a RealmError (a bad setting, a
    package missing there) as one line naming it; anything else with its traceback."""
    cause = err.as_instanceof_cause() if hasattr(err, 'as_instanceof_cause') else err
    if isinstance(cause, RealmError):
        line = str(cause).strip().splitlines()[-1]
        return ConfigError(line.split(': ', 1)[1] if line.startswith(
            type(cause).__module__.split('.')[0]) and ': ' in line else line)
    return WorkerError(f'a sweep worker failed on {where}: {err}')
