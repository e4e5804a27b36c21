"""The sweep's driver: plan what is left, hand it to an executor, write every record once.

The driver alone writes ``episodes.jsonl`` (the crash-safe
:class:`~realm_ros.core.evaluation.EpisodeLog`: one fsynced line per finished cell) and
``sweep_events.jsonl`` (one line per retry: a lost worker, a cell run again after an
infrastructure failure of an earlier run), so a driver killed at any point loses nothing
finished and a re-run on any machine that sees the folder runs only what is missing.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import time
from typing import Any, Callable, Mapping, Sequence

from realm_ros.core import provenance
from realm_ros.core.evaluation import EpisodeLog
from realm_ros.core.sweep import FLAGS, Cell, settings_of
from realm_ros.core.types import record_role
from realm_ros.sweep.executors import Executor, Unit, make_units

EPISODES = 'episodes.jsonl'
EVENTS = 'sweep_events.jsonl'


@dataclasses.dataclass
class SweepRun:
    """What one run of the driver did."""

    planned: int = 0
    resumed: int = 0  # found done in the log and skipped
    changed: int = 0  # run again: their records were made with other settings
    ran: int = 0  # records written by this run
    infra_failures: int = 0  # of those, infrastructure failures (retried by the next run)
    after_infra_failure: int = 0  # cells re-run because an earlier run ended them so
    worker_lost: int = 0  # units re-queued because their worker was lost
    duplicates: int = 0  # results for cells already written (ignored)
    steps: int = 0  # control steps of the cells this run wrote
    wall_s: float = 0.0
    executor: str = ''

    def as_dict(self) -> dict[str, Any]:
        """Return the run as a plain dict (``summary.json``'s ``run``)."""
        return dataclasses.asdict(self)


class EventLog:
    """Append-only ``sweep_events.jsonl``: what was retried, and why."""

    def __init__(self, path: str | pathlib.Path) -> None:
        self.path = pathlib.Path(path)
        self.events: list[dict[str, Any]] = []
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    self.events.append(json.loads(line))
                except json.JSONDecodeError:
                    continue  # a line cut by a crash

    def append(self, event: Mapping[str, Any]) -> None:
        """Write one event line (flushed)."""
        with open(self.path, 'a') as handle:
            handle.write(json.dumps({'time': time.time(), **event}, sort_keys=True) + '\n')
        self.events.append(dict(event))

    def totals(self) -> dict[str, Any]:
        """Counts over every run: cells re-queued after a lost worker, cells re-run after an
        infrastructure failure; and which cells (``<kind>_cells``)."""
        out: dict[str, Any] = {'worker_lost': 0, 'after_infra_failure': 0,
                               'worker_lost_cells': [], 'after_infra_failure_cells': []}
        for e in self.events:
            kind = e.get('event')
            if kind in ('worker_lost', 'after_infra_failure'):
                out[kind] += len(e.get('cells', ()))
                out[f'{kind}_cells'] += list(e.get('cells', ()))
        return out


def open_log(cells: Sequence[Cell], out_dir: str | pathlib.Path, rerun_changed: bool = False
             ) -> tuple[EpisodeLog, list[provenance.Changed]]:
    """Open ``out_dir``'s episode log for ``cells``: each new record carries what made it, and
    records made with other settings are refused, or forgotten with ``rerun_changed`` (their
    cells run again; :func:`realm_ros.core.provenance.reconcile`)."""
    made_by = settings_of(cells)
    log = EpisodeLog(pathlib.Path(out_dir) / EPISODES, made_by=made_by)
    changed = provenance.reconcile(log, made_by, rerun_changed, str(out_dir), FLAGS)
    return log, changed


def run_sweep(cells: Sequence[Cell], executor: Executor, out_dir: str | pathlib.Path,
              batch: int = 1024, progress: Callable[[int], None] | None = None,
              on_record: Callable[[Cell, Mapping[str, Any]], None] | None = None,
              rerun_changed: bool = False) -> tuple[SweepRun, EpisodeLog]:
    """Run the cells of ``cells`` the log in ``out_dir`` does not have yet on ``executor``.

    Args:
        batch: cells per unit of a GPU batch worker (``mjx`` world).
        progress: told ``n`` after every n cells written.
        on_record: called after each record is durable (a test kills a node from here).
        rerun_changed: cells whose records were made with other settings run again (else
            such a folder is refused: :func:`open_log`).

    Returns:
        What this run did, and the episode log (every record, old and new).
    """
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    log, changed = open_log(cells, out, rerun_changed)
    events = EventLog(out / EVENTS)
    run = SweepRun(planned=len(cells), executor=executor.name, changed=len(changed))
    failed_before = {(r['pair_id'], record_role(r)) for r in log.records
                     if r.get('outcome') == 'infra_failure'}
    todo = [c for c in cells if not log.done(*c.key)]
    run.resumed = len(cells) - len(todo)
    if progress is not None and run.resumed:
        progress(run.resumed)
    again = [c.cell_id for c in todo if c.key in failed_before]
    if again:
        run.after_infra_failure = len(again)
        events.append({'event': 'after_infra_failure', 'cells': again})
    by_key = {c.key: c for c in todo}
    written: set[tuple[str, str]] = set()

    def on_done(unit: Unit, records: list[dict[str, Any]]) -> None:
        for cell, record in zip(unit.cells, records):
            if cell.key in written or log.done(*cell.key):
                run.duplicates += 1
                continue
            log.append(record)
            written.add(cell.key)
            run.ran += 1
            run.steps += int(record.get('steps', 0))
            if record.get('outcome') == 'infra_failure':
                run.infra_failures += 1
            if on_record is not None:
                on_record(cell, record)
        if progress is not None:
            progress(len(records))

    def on_retry(unit: Unit, reason: str) -> None:
        run.worker_lost += len(unit.cells)
        events.append({'event': 'worker_lost', 'reason': reason,
                       'cells': [c.cell_id for c in unit.cells]})

    start = time.perf_counter()
    executor.run(make_units(list(by_key.values()), batch), on_done, on_retry)
    run.wall_s = time.perf_counter() - start
    return run, log
