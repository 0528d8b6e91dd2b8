"""A tiny elementwise problem for tests: out = x + 2 * y, fp32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + 2 * y


def get_inputs():
    return [torch.randn(4096), torch.randn(4096)]


def get_init_inputs():
    return []


def get_extra_inputs():
    return [[torch.randn(1000), torch.randn(1000)]]
