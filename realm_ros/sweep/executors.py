"""Where a sweep's cells run: one :class:`Executor` interface, three transports.

* :class:`InProcessExecutor`: the driver's own process (one runner per worker kind).
* :class:`ProcessExecutor`: N local worker processes (``spawn``), each holding a warm runner.
* :class:`~realm_ros.sweep.ray_executor.RayExecutor`: Ray actors on a cluster, each holding a
  warm runner; GPU batch workers are actors holding a GPU (``num_gpus=1``).

The unit of work is a :class:`Unit`: one cell for a CPU worker, a batch of cells for a GPU
batch worker (world ``mjx``). Workers only compute: they return records and never write. The
driver (:func:`realm_ros.sweep.driver.run_sweep`) alone writes the episode log, in
``on_done``. A worker lost with a unit in hand (its process killed, its Ray node gone) is
reported through ``on_retry`` and the unit is queued again for another worker; a unit is
handed to ``on_done`` once per successful run of it, and the driver writes a cell's record only
if the log does not have it yet, so nothing finished is lost or written twice.
"""

from __future__ import annotations

import abc
import collections
import dataclasses
import multiprocessing
import multiprocessing.connection
import traceback
from typing import Any, Callable, Mapping, Sequence

from realm_ros.core.errors import ConfigError, InfrastructureError, RealmError
from realm_ros.core.sweep import Cell
from realm_ros.sweep.runner import CellHook, Runner, make_runner

#: Worker kinds: ``cpu`` (:class:`~realm_ros.sweep.runner.CellRunner`, one cell per unit) and
#: ``gpu`` (:class:`~realm_ros.sweep.mjx.BatchRunner`, a batch of ``mjx`` cells per unit).
KINDS = ('cpu', 'gpu')


@dataclasses.dataclass(frozen=True)
class Unit:
    """Cells handed to one worker at once, and the kind of worker that runs them."""

    index: int
    cells: tuple[Cell, ...]
    kind: str = 'cpu'


#: ``on_done(unit, records)``: the unit ran; one record per cell, in order.
DoneCallback = Callable[[Unit, list[dict[str, Any]]], None]
#: ``on_retry(unit, reason)``: the unit's worker was lost; the unit is queued again.
RetryCallback = Callable[[Unit, str], None]


class WorkerError(RealmError):
    """A worker raised an error that is not a fault of the cluster (a bug, a bad setting):
    running the unit elsewhere would fail the same way, so the sweep stops (finished cells are
    kept)."""


class Executor(abc.ABC):
    """Runs units on workers and reports each result to the driver."""

    #: Short name for summaries (``in-process``, ``processes``, ``ray``).
    name: str = ''

    def __init__(self, hook: CellHook | None = None,
                 options: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        """``hook``: the per-cell :class:`CellHook` workers use; ``options``: per worker kind,
        the runner's keyword arguments (``{'gpu': {'batch': 1024}}``)."""
        self.hook = hook
        self.options = dict(options or {})

    @abc.abstractmethod
    def run(self, units: Sequence[Unit], on_done: DoneCallback,
            on_retry: RetryCallback | None = None) -> None:
        """Run every unit once to completion (retrying units whose worker was lost).

        Raises:
            WorkerError: a worker's runner raised (not a lost worker).
            ConfigError: a worker found the configuration bad.
        """

    def close(self) -> None:  # noqa: B027 - executors without resources need nothing
        """Stop the workers."""

    def __enter__(self) -> 'Executor':
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Scheduler:
    """The bookkeeping every transport shares: queues per worker kind, who holds what.

    A transport calls :meth:`assign` for idle workers, :meth:`finished` when a worker returns,
    and :meth:`lost` when a worker dies; :attr:`retried` counts re-queued units.
    """

    def __init__(self, units: Sequence[Unit]) -> None:
        self.queues: dict[str, collections.deque[Unit]] = {k: collections.deque() for k in KINDS}
        for unit in units:
            if unit.kind not in self.queues:
                raise ConfigError(f'unknown worker kind {unit.kind!r}; choose from {KINDS}')
            self.queues[unit.kind].append(unit)
        self.held: dict[Any, Unit] = {}
        self.retried = 0

    def kinds_needed(self) -> list[str]:
        """The worker kinds with units still to run."""
        return [k for k, q in self.queues.items() if q]

    def pending(self) -> bool:
        """Whether any unit is queued or held by a worker."""
        return any(self.queues.values()) or bool(self.held)

    def assign(self, worker: Any, kind: str) -> Unit | None:
        """Give ``worker`` (of ``kind``) the next unit of its kind, or None."""
        queue = self.queues[kind]
        if not queue:
            return None
        unit = queue.popleft()
        self.held[worker] = unit
        return unit

    def finished(self, worker: Any) -> Unit:
        """``worker`` returned its unit: forget it and return it."""
        return self.held.pop(worker)

    def lost(self, worker: Any) -> Unit | None:
        """``worker`` died: queue its unit again at the front and return it (None if idle)."""
        unit = self.held.pop(worker, None)
        if unit is not None:
            self.queues[unit.kind].appendleft(unit)
            self.retried += 1
        return unit


class InProcessExecutor(Executor):
    """Runs every unit in this process, one after the other (one runner per worker kind)."""

    name = 'in-process'

    def __init__(self, hook: CellHook | None = None,
                 options: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        super().__init__(hook, options)
        self._runners: dict[str, Runner] = {}

    def run(self, units: Sequence[Unit], on_done: DoneCallback,
            on_retry: RetryCallback | None = None) -> None:
        for unit in units:
            if unit.kind not in self._runners:
                self._runners[unit.kind] = make_runner(unit.kind, 0, self.hook,
                                                       self.options.get(unit.kind))
            on_done(unit, self._runners[unit.kind].run_cells(unit.cells))

    def close(self) -> None:
        for runner in self._runners.values():
            runner.close()
        self._runners.clear()


def _process_main(conn: Any, index: int, kind: str, hook: CellHook | None,
                  options: Mapping[str, Any] | None, log_dir: str | None = None) -> None:
    """A worker process: build a runner once, then run each unit it is sent until ``None``.

    ``log_dir``: the worker's stdout and stderr (Python's and C libraries') go to
    ``log_dir/sweep-worker-<index>.log`` instead of the console.
    """
    import os
    os.environ.setdefault('MUJOCO_GL', 'egl')
    if log_dir:
        _log_to_file(os.path.join(log_dir, f'sweep-worker-{index}.log'))
    runner: Runner | None = None
    failure: tuple[str, str] | None = None
    try:
        runner = make_runner(kind, index, hook, options)
    except RealmError as err:  # a missing package, a bad setting: said for the first unit
        failure = ('config', str(err))
    except Exception:  # noqa: BLE001 - sent to the driver, which stops the sweep
        failure = ('error', traceback.format_exc())
    try:
        while True:
            message = conn.recv()
            if message is None:
                return
            uid, cells = message
            if runner is None:
                conn.send((uid, *(failure or ('error', 'no runner'))))
                continue
            try:
                conn.send((uid, 'ok', runner.run_cells(cells)))
            except RealmError as err:  # not the cluster's fault: the driver stops the sweep
                conn.send((uid, 'config', str(err)))
            except Exception:  # noqa: BLE001 - sent to the driver, which stops the sweep
                conn.send((uid, 'error', traceback.format_exc()))
    except (EOFError, OSError, KeyboardInterrupt):
        return  # the driver went away
    finally:
        if runner is not None:
            runner.close()


def _log_to_file(path: str) -> None:
    """Point this process's file descriptors 1 and 2 (and sys.stdout/stderr) at ``path``."""
    import os
    import sys
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


@dataclasses.dataclass(eq=False)
class _Process:
    index: int
    kind: str
    process: Any
    conn: Any


class ProcessExecutor(Executor):
    """Runs units in local worker processes (``spawn``), each with a warm runner.

    Args:
        workers: CPU worker processes.
        gpu_workers: GPU batch worker processes (started only if there are ``gpu`` units).
        max_replacements: worker processes started to replace lost ones, at most.
        log_dir: a folder for each worker's console output (None: the console).
    """

    name = 'processes'

    def __init__(self, workers: int, gpu_workers: int = 1, hook: CellHook | None = None,
                 options: Mapping[str, Mapping[str, Any]] | None = None,
                 max_replacements: int | None = None, log_dir: str | None = None) -> None:
        super().__init__(hook, options)
        self.log_dir = log_dir
        if workers < 1 or gpu_workers < 1:
            raise ConfigError(f'--workers must be >= 1, got {workers}')
        self.counts = {'cpu': workers, 'gpu': gpu_workers}
        self.max_replacements = 4 * workers if max_replacements is None else max_replacements
        self._context = multiprocessing.get_context('spawn')
        self._procs: list[_Process] = []
        self._started = 0

    @property
    def pids(self) -> list[int]:
        """Process ids of the live workers (a test kills one)."""
        return [p.process.pid for p in self._procs if p.process.is_alive()]

    def _start(self, kind: str) -> _Process:
        parent, child = self._context.Pipe()
        process = self._context.Process(
            target=_process_main, args=(child, self._started, kind, self.hook,
                                        self.options.get(kind), self.log_dir),
            name=f'sweep-worker-{self._started}', daemon=True)
        process.start()
        child.close()
        proc = _Process(self._started, kind, process, parent)
        self._started += 1
        self._procs.append(proc)
        return proc

    def run(self, units: Sequence[Unit], on_done: DoneCallback,
            on_retry: RetryCallback | None = None) -> None:
        sched = Scheduler(units)
        for kind in sched.kinds_needed():
            alive = [p for p in self._procs if p.kind == kind]
            for _ in range(self.counts[kind] - len(alive)):
                self._start(kind)
        replacements = 0
        idle = list(self._procs)
        while sched.pending():
            for proc in list(idle):
                unit = sched.assign(proc, proc.kind)
                if unit is None:
                    continue
                idle.remove(proc)
                try:
                    proc.conn.send((unit.index, unit.cells))
                except OSError:  # it died between two units: its unit goes back to the queue
                    sched.lost(proc)
                    if on_retry is not None:
                        on_retry(unit, f'worker process {proc.process.pid} exited before it '
                                       'took its unit')
                    self._procs.remove(proc)
                    if replacements < self.max_replacements:
                        replacements += 1
                        idle.append(self._start(proc.kind))
            busy = [p for p in self._procs if p in sched.held]
            if not busy:
                if sched.pending():
                    raise InfrastructureError('no worker process left to run the sweep')
                break
            waitables = [p.conn for p in busy] + [p.process.sentinel for p in busy]
            ready = multiprocessing.connection.wait(waitables)
            for proc in busy:
                message = None
                if proc.conn in ready:
                    try:
                        message = proc.conn.recv()
                    except (EOFError, OSError):
                        message = None
                elif proc.process.sentinel not in ready:
                    continue
                if message is None:  # died with the unit in hand
                    unit = sched.lost(proc)
                    self._procs.remove(proc)
                    proc.process.join(timeout=5)
                    if unit is not None and on_retry is not None:
                        on_retry(unit, f'worker process {proc.process.pid} exited with code '
                                       f'{proc.process.exitcode}')
                    if replacements < self.max_replacements:
                        replacements += 1
                        idle.append(self._start(proc.kind))
                    continue
                unit = sched.finished(proc)
                _, status, payload = message
                if status == 'config':
                    raise ConfigError(payload)
                if status == 'error':
                    raise WorkerError(f'a sweep worker failed on {unit.cells[0].cell_id}:\n'
                                      f'{payload}')
                on_done(unit, payload)
                idle.append(proc)

    def close(self) -> None:
        for proc in self._procs:
            try:
                proc.conn.send(None)
            except (OSError, BrokenPipeError):
                pass
        for proc in self._procs:
            proc.process.join(timeout=10)
            if proc.process.is_alive():
                proc.process.kill()
                proc.process.join(timeout=5)
        self._procs.clear()


def make_units(cells: Sequence[Cell], batch: int = 1024) -> list[Unit]:
    """Return the units of ``cells``: one per CPU cell; ``mjx`` and ``warp`` cells in batches
    of up to ``batch`` per world and task (a batch worker groups them by scene geometry)."""
    from realm_ros.core.sweep import BATCH_WORLDS

    units: list[Unit] = []
    grouped: dict[tuple[str, str], list[Cell]] = {}
    for cell in cells:
        if cell.world in BATCH_WORLDS:
            grouped.setdefault((cell.world, cell.spec.task), []).append(cell)
        else:
            units.append(Unit(len(units), (cell,), 'cpu'))
    for members in grouped.values():
        for lo in range(0, len(members), batch):
            units.append(Unit(len(units), tuple(members[lo:lo + batch]), 'gpu'))
    return units
