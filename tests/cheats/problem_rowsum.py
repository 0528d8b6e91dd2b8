"""Row sum over the last dimension, fp32: (8, 256) under the interpreter, (256, 8192) on a GPU."""

import torch
import torch.nn as nn

# On a GPU, many programs per row run at once: enough for a race to show.
ROWS, COLS = (256, 8192) if torch.cuda.is_available() else (8, 256)


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(ROWS, COLS)]


def get_init_inputs() -> list[object]:
    return []
