"""Swish (x * sigmoid(x)), elementwise: one read and one write per element."""

import torch
import torch.nn as nn

# 64 M elements (256 MiB each way) on a GPU; 16 K under Triton's CPU interpreter.
n_elements = (1 << 26) if torch.cuda.is_available() else (1 << 14)


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x)


def get_inputs():
    return [torch.randn(n_elements)]


def get_init_inputs():
    return []


def get_extra_inputs():
    """A length that is no multiple of any block size: the tail must be masked."""
    return [[torch.randn(1000)], [torch.randn(4099)]]
