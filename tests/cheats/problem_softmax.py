"""Tiny row softmax: (8, 64) fp32 rows, softmax over the last dimension."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(8, 64)]


def get_init_inputs() -> list[object]:
    return []
