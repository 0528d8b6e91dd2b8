"""RMS normalisation over the features (dim 1) of a small 4-D input: a strided reduction (a tiny test problem)."""

import torch
import torch.nn as nn

batch, features, dim1, dim2 = 2, 6, 3, 5


class Model(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.sqrt(torch.mean(x**2, dim=1, keepdim=True) + self.eps)
        return x / rms


def get_inputs():
    return [torch.randn(batch, features, dim1, dim2)]


def get_init_inputs():
    return [features]
