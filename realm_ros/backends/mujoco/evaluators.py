"""The MuJoCo twin's simulator for the sysid fit (``Backend.sysid`` in ``core/backends.py``)."""

from __future__ import annotations

from typing import Callable

from realm_ros.core.sysid import BatchEvaluator


def evaluators(device: str, threads: int) -> Callable[[float], BatchEvaluator]:
    """Return ``latency_s -> evaluator`` (one model per latency, shared caches) on the CPU
    (``threads`` threads) or, ``device`` gpu, in MJX."""
    if device == 'gpu':
        from realm_ros.backends.mujoco.mjx_rollout import MjxRollout
        return MjxRollout().with_latency
    from realm_ros.backends.mujoco.rollout import TwinRollout
    return TwinRollout(nthread=threads).with_latency
