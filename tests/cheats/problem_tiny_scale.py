"""x times 1e-6: every expected output lies within fp32's absolute tolerance (1e-4) of zero, so an
all-zero answer passes a plain tolerance check. (5, 37) under the interpreter, (512, 4003) on a GPU."""

import torch
import torch.nn as nn

ROWS, COLS = (512, 4003) if torch.cuda.is_available() else (5, 37)


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 1e-6


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(ROWS, COLS)]


def get_init_inputs() -> list[object]:
    return []
