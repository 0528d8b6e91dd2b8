"""Softmax over rows too long for registers: 512 rows of 393,216 fp32 on a GPU (small on the CPU)."""

import torch
import torch.nn as nn

rows = 512 if torch.cuda.is_available() else 3
dim = 393216 if torch.cuda.is_available() else 300


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(rows, dim) * 4]


def get_init_inputs():
    return []
