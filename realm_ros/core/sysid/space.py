"""The searched parameters: 14 numbers (friction and armature of joints 1..7) in a unit cube."""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from realm_ros.core.config import DynamicsParams


@dataclasses.dataclass(frozen=True)
class ParamSpace:
    """Bounds of the 14 searched parameters and their log-scaled unit-cube coordinates.

    Vector layout: ``[friction_1..7 (N m), armature_1..7 (kg m^2)]``. Coordinate ``u`` in
    [0, 1] maps to ``p = low * (high / low) ** u``.
    """

    friction_bounds: tuple[float, float] = (0.005, 3.0)
    armature_bounds: tuple[float, float] = (0.005, 1.5)

    @property
    def low(self) -> np.ndarray:
        return np.repeat([self.friction_bounds[0], self.armature_bounds[0]], 7)

    @property
    def high(self) -> np.ndarray:
        return np.repeat([self.friction_bounds[1], self.armature_bounds[1]], 7)

    def to_unit(self, params: DynamicsParams) -> np.ndarray:
        """Return the (14,) unit-cube coordinates of ``params`` (clipped into the bounds)."""
        p = np.clip(np.r_[params.friction, params.armature], self.low, self.high)
        return np.log(p / self.low) / np.log(self.high / self.low)

    def from_unit(self, u: np.ndarray, damping: Sequence[float] = (0.0,) * 7) -> DynamicsParams:
        """Return the :class:`DynamicsParams` at unit-cube coordinates ``u`` (14,)."""
        u = np.clip(np.asarray(u, dtype=float), 0.0, 1.0)
        p = self.low * (self.high / self.low) ** u
        return DynamicsParams(friction=tuple(p[:7]), armature=tuple(p[7:]),
                              damping=tuple(damping))
