"""LayerNorm over the last dim (96) of a (BATCH, SEQ, 96) tensor, its affine as nn.LayerNorm makes it
(weight 1, bias 0), as KernelBench's problems leave it."""
import torch
import torch.nn as nn

BATCH, SEQ, HIDDEN = 4, 10, 96


class Model(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=1e-5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN)]


def get_init_inputs():
    return [HIDDEN]
