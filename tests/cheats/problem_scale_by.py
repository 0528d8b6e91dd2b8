"""x times a number the forward takes (KernelBench's 5_Matrix_scalar_multiplication: `A * s`, s = 3.14 in
get_inputs): a kernel that bakes the given number in is right on every case that keeps it. (6, 37) under the
interpreter, (512, 4003) on a GPU."""

import torch
import torch.nn as nn

ROWS, COLS = (512, 4003) if torch.cuda.is_available() else (6, 37)


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, s: float) -> torch.Tensor:
        return x * s


def get_inputs() -> list[object]:
    return [torch.randn(ROWS, COLS), 3.14]


def get_init_inputs() -> list[object]:
    return []
