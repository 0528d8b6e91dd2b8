"""Tiny matmul: (32, 32) @ (32, 32) in fp32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(32, 32), torch.randn(32, 32)]


def get_init_inputs() -> list[object]:
    return []
