"""Softmax along dim=-1 of fp16 (24, 200)."""
import torch
import torch.nn as nn

ROWS, COLS = 24, 200


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(ROWS, COLS, dtype=torch.float16) * 3]


def get_init_inputs():
    return []
