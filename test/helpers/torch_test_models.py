"""Tiny torch modules for the torch policy tests (importable as 'torch_test_models:Class')."""

import torch
from torch import nn


class TinyChunkNet(nn.Module):
    """state (1, 8) -> (1, horizon, 8): the state plus a learned per-step offset."""

    def __init__(self, horizon: int = 4) -> None:
        super().__init__()
        self.offset = nn.Parameter(torch.zeros(horizon, 8))

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        return state[:, None, :] + self.offset[None]


class ImageMeanNet(nn.Module):
    """(state, images) -> (1, 8): hold the arm, gripper = mean brightness of camera 0."""

    def forward(self, state: torch.Tensor, images: torch.Tensor) -> torch.Tensor:
        out = state.clone()
        out[:, 7] = images[:, 0].mean(dim=(1, 2, 3))
        return out
