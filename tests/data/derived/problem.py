"""Cross-entropy whose logits' width is written as a literal (10) while the targets are drawn
from the module-level `num_classes`: a case that grows `num_classes` draws targets the logits have
no column for, however the sizes are resized together. The problem itself cannot run such a case
(on CUDA: a device-side assert), so the verifier must drop it; a smaller `num_classes` runs."""

import torch
import torch.nn as nn

batch_size = 64
num_classes = 10


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(predictions, targets)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(batch_size, 10), torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs() -> list[object]:
    return []
