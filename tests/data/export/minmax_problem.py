"""Two outputs from one input: each row's minimum and maximum (a tuple of tensors)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x.amin(dim=1), x.amax(dim=1)


def get_inputs():
    return [torch.randn(6, 48)]


def get_init_inputs():
    return []
