"""Broadcasting add: (8, 1, 40) + (6, 1) -> (8, 6, 40)."""
import torch
import torch.nn as nn

A, B, C = 8, 6, 40


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y


def get_inputs():
    return [torch.randn(A, 1, C), torch.randn(B, 1)]


def get_init_inputs():
    return []
