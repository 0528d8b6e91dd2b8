"""A long-K matmul: (16, 16384) @ (16384, 16) in fp32 on torch.rand (same-sign sums: PyTorch's own fp32 error
grows with K about as fast as a 16-bit product's)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


def get_inputs() -> list[torch.Tensor]:
    return [torch.rand(16, 16384), torch.rand(16384, 16)]


def get_init_inputs() -> list[object]:
    return []
