"""argmax down a strided dim (the columns structure), small odd sizes (a move's tiny test problem)."""

import torch
import torch.nn as nn

B, N, INNER = 3, 37, 21


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=1)


def get_inputs():
    return [torch.randn(B, N, INNER)]


def get_init_inputs():
    return []
