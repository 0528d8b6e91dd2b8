"""Elementwise x / y, fp32 (32, 40); y has exact zeros, so the output holds +inf and -inf."""

import torch
import torch.nn as nn

ROWS, COLS = 32, 40


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x / y


def get_inputs():
    x = torch.randn(ROWS, COLS)
    y = torch.randn(ROWS, COLS)
    y.view(-1)[::9] = 0.0
    return [x, y]


def get_init_inputs():
    return []
