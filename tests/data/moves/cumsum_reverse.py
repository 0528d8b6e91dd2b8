"""A cumulative sum along the last dim from the row's end (flip, cumsum, flip back), small and not a multiple of any
block (a move's tiny test problem)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x.flip(self.dim), dim=self.dim).flip(self.dim)


batch_size = 7
input_shape = (300,)
dim = 1


def get_inputs():
    return [torch.randn(batch_size, *input_shape)]


def get_init_inputs():
    return [dim]
