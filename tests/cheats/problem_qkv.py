"""Q, K, V projections of x (M, D) by three bias-free Linears: returns (q, k, v)."""
import torch
import torch.nn as nn

M, D = 48, 32


class Model(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.q = nn.Linear(dim, dim, bias=False)
        self.k = nn.Linear(dim, dim, bias=False)
        self.v = nn.Linear(dim, dim, bias=False)

    def forward(self, x: torch.Tensor):
        return self.q(x), self.k(x), self.v(x)


def get_inputs():
    return [torch.randn(M, D)]


def get_init_inputs():
    return [D]
