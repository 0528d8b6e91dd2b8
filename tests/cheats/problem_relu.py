"""ReLU on a (16, 300) fp32 tensor."""
import torch
import torch.nn as nn

ROWS, COLS = 16, 300


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
