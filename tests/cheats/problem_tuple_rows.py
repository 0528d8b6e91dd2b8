"""Row sums of a (batch_size, *input_shape) input: the row length lives in a tuple, as in
KernelBench's losses (89-100). (5, 37) under the interpreter, (512, 4003) on a GPU."""

import torch
import torch.nn as nn

batch_size = 512 if torch.cuda.is_available() else 5
input_shape = (4003,) if torch.cuda.is_available() else (37,)


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=-1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(batch_size, *input_shape)]


def get_init_inputs() -> list[object]:
    return []
