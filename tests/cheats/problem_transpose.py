"""Transpose: out = x.T materialised, fp32 (48, 80). (A data-movement problem in KernelBench form.)"""

import torch
import torch.nn as nn

ROWS, COLS = 48, 80


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.t().contiguous()


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(ROWS, COLS)]


def get_init_inputs() -> list[object]:
    return []
