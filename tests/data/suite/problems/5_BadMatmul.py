"""A broken problem: its own reference raises (a (64, 32) by (64, 32) matrix product)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


def get_inputs():
    return [torch.randn(64, 32), torch.randn(64, 32)]


def get_init_inputs():
    return []
