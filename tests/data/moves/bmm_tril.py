"""fp32 torch.tril of each product of torch.bmm (A @ B, each batch's lower triangle below the diagonal's first
subdiagonal kept), small and not a multiple of any tile."""

import torch
import torch.nn as nn

BATCHES, M, K, N = 2, 37, 29, 45


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.tril(torch.bmm(A, B), -1)


def get_inputs():
    return [torch.randn(BATCHES, M, K), torch.randn(BATCHES, K, N)]


def get_init_inputs():
    return []
