"""fp32 torch.einsum of a 4-D A and a 2-D B, C[b, i, j, k] = sum_l A[b, i, j, l] * B[l, k] (KernelBench's 4-D
tensor-matrix product: eleven views, then a bmm of one batch), small and not a multiple of any tile."""

import torch
import torch.nn as nn

BATCH, ROWS, COLS, L, K = 2, 3, 5, 20, 9


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.einsum("bijl,lk->bijk", A, B)


def get_inputs():
    return [torch.randn(BATCH, ROWS, COLS, L), torch.randn(L, K)]


def get_init_inputs():
    return []
