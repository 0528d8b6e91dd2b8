"""fp16 matmul with B transposed, small, rows of whole 16-byte units but no multiple of any tile (a move's tiny
test problem: the TMA template's descriptors describe its operands)."""

import torch
import torch.nn as nn

M, K, N = 40, 72, 24


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B.T)


def get_inputs():
    return [torch.randn(M, K, dtype=torch.float16), torch.randn(N, K, dtype=torch.float16)]


def get_init_inputs():
    return []
