"""torch.max over dim 1, returned as PyTorch's (values, indices) named tuple."""
import torch
import torch.nn as nn

M, N = 45, 130


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor):
        return torch.max(x, dim=1)


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []
