"""Test helpers shared by the twins' tests: an import that skips, a world cache per task.

The PhysX backend needs ``ovphysx`` (the ``physx`` extra, installed by ``make setup``); a machine
without it (no AVX, glibc < 2.35) skips those tests with the import error as the reason.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest


def import_or_skip(name: str) -> Any:
    """Import module ``name``; skip the test (with the error) if it cannot be imported here."""
    try:
        return pytest.importorskip(name)
    except pytest.skip.Exception:
        raise
    except Exception as err:  # noqa: BLE001 - a broken binary install is a skip with reason
        pytest.skip(f'{name} cannot be imported here: {err}')


def world_per_task(make: Callable[[str], Any]) -> Iterator[Callable[[str], Any]]:
    """Yield ``get(task)``: the world ``make(task)`` built once per task; all closed after.

    For a module-scoped fixture: ``yield from world_per_task(lambda task: SomeWorld(...))``.
    """
    cache: dict[str, Any] = {}

    def get(task: str) -> Any:
        if task not in cache:
            cache[task] = make(task)
        return cache[task]

    yield get
    for world in cache.values():
        world.close()
