"""Per-request latency bookkeeping for remote and local policies."""

from __future__ import annotations

import collections
import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True, slots=True)
class LatencyStats:
    """Summary of the last ``count`` request latencies, milliseconds."""

    count: int
    p50_ms: float
    p99_ms: float
    mean_ms: float
    max_ms: float

    def __str__(self) -> str:
        return (f'{self.count} requests: p50 {self.p50_ms:.2f} ms, p99 {self.p99_ms:.2f} ms, '
                f'max {self.max_ms:.2f} ms')


class LatencyRecorder:
    """Keeps the most recent ``window`` latencies (ms) and summarises them."""

    def __init__(self, window: int = 10_000) -> None:
        self._samples: collections.deque[float] = collections.deque(maxlen=window)

    def add(self, ms: float) -> None:
        """Record one latency, milliseconds."""
        self._samples.append(float(ms))

    def clear(self) -> None:
        """Forget every sample."""
        self._samples.clear()

    @property
    def samples(self) -> list[float]:
        """The recorded latencies, oldest first, ms."""
        return list(self._samples)

    def stats(self) -> LatencyStats:
        """Return p50/p99/mean/max; all NaN (count 0) before the first request."""
        if not self._samples:
            nan = float('nan')
            return LatencyStats(0, nan, nan, nan, nan)
        values = np.asarray(self._samples)
        p50, p99 = np.percentile(values, [50, 99])
        return LatencyStats(len(values), float(p50), float(p99), float(values.mean()),
                            float(values.max()))
