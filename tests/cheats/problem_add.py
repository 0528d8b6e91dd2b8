"""Tiny elementwise problem: out = x + y on two fp32 vectors of 1000 elements."""

import torch
import torch.nn as nn

N = 1000


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(N), torch.randn(N)]


def get_init_inputs() -> list[object]:
    return []
