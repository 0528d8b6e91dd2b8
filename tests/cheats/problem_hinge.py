"""Hinge loss with linked sizes, as KernelBench's 100_HingeLoss: predictions (batch_size,
*input_shape) times targets (batch_size,) broadcast along the last dimension, so batch_size and
input_shape[0] must agree. (24, 24) under the interpreter, (2048, 2048) on a GPU."""

import torch
import torch.nn as nn

batch_size = 2048 if torch.cuda.is_available() else 24
input_shape = (2048,) if torch.cuda.is_available() else (24,)


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))


def get_inputs() -> list[torch.Tensor]:
    return [torch.rand(batch_size, *input_shape), torch.randint(0, 2, (batch_size,)).float() * 2 - 1]


def get_init_inputs() -> list[object]:
    return []
