"""Rounds to quarters of its detached input: a float output with no gradient (the reference has no backward)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.round(x.detach() * 4) / 4


def get_inputs():
    return [torch.randn(300)]


def get_init_inputs():
    return []
