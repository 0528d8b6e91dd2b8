"""A model that doubles its input in place: every call on the same inputs gives another answer, so a
baseline must be judged on fresh inputs, as a candidate is."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.mul_(2.0)
        return x + 1.0


def get_inputs():
    return [torch.randn(4096)]


def get_init_inputs():
    return []
