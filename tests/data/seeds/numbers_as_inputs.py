"""A forward that takes Python numbers beside its tensor (KernelBench's 5_Matrix_scalar_multiplication takes
`A, s`), first: a float, which the compiled graph takes as a 0-d float64 tensor and reads with .item(), and an
int, a symbol of its own. Small (a translator test's problem)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, s: float, A: torch.Tensor, shift: int) -> torch.Tensor:
        return A * s + shift


M, N = 37, 45


def get_inputs():
    return [3.14, torch.rand(M, N), 7]


def get_init_inputs():
    return []
