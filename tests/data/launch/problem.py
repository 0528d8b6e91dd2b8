"""A launch-bound problem for the GPU tests: 72 tiny elementwise ops on 4096 floats.

Eager launches 72 kernels of a microsecond or two each, so its time is mostly launching;
torch.compile fuses them into one kernel, and a CUDA-graph replay of eager launches them all at once.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(24):
            x = torch.sin(x) * 0.5 + 0.1
        return x


def get_inputs():
    return [torch.randn(4096)]


def get_init_inputs():
    return []
