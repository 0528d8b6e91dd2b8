"""Tiny row sum: (8, 256) fp32, summed over the last dimension."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(8, 256)]


def get_init_inputs() -> list[object]:
    return []
