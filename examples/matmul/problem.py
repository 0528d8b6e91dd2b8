"""Square fp16 matrix multiply: compute-bound (2*N^3 FLOPs over 3*N^2 elements moved)."""

import torch
import torch.nn as nn

# 4096^3 on a GPU (tensor cores); 128^3 under Triton's CPU interpreter.
N = 4096 if torch.cuda.is_available() else 128


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(N, N, dtype=torch.float16), torch.randn(N, N, dtype=torch.float16)]


def get_init_inputs():
    return []


def get_extra_inputs():
    """Rectangular shapes that are no multiple of the tile sizes."""
    return [[torch.randn(50, 70, dtype=torch.float16), torch.randn(70, 30, dtype=torch.float16)]]
