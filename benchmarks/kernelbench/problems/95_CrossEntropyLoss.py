"""KernelBench level 1 problem 95: mean cross-entropy of (32768, 4096) fp32 logits (537 MB) against
32768 int64 class targets. input_shape is fixed from num_classes when the module is imported."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Cross-entropy loss, mean over the batch."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, predictions, targets):
        return torch.nn.functional.cross_entropy(predictions, targets)


batch_size = 32768
num_classes = 4096
input_shape = (num_classes,)
dim = 1


def get_inputs():
    return [torch.rand(batch_size, *input_shape), torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs():
    return []
