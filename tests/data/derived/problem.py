"""Cross-entropy whose input shape is fixed at import from a module-level size: a case that
grows `num_classes` for get_inputs draws targets the logits have no column for. The problem
itself cannot run such a case (on CUDA: a device-side assert), so the verifier must drop it."""

import torch
import torch.nn as nn

batch_size = 64
num_classes = 10
input_shape = (num_classes,)
dim = 1


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(predictions, targets)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(batch_size, *input_shape), torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs() -> list[object]:
    return []
