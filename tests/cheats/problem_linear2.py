"""Linear layer: (BATCH, 64) -> (BATCH, 48)."""
import torch
import torch.nn as nn

BATCH, IN_F, OUT_F = 32, 64, 48


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)


def get_inputs():
    return [torch.randn(BATCH, IN_F)]


def get_init_inputs():
    return [IN_F, OUT_F]
