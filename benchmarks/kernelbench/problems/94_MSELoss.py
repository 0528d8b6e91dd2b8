"""KernelBench level 1 problem 94: mean squared error of (32768, 32768) fp32 predictions and targets
(4.3 GB each, 8.6 GB in all); the predictions are scaled by a random factor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """mean((predictions - targets) ** 2), a scalar."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, predictions, targets):
        return torch.mean((predictions - targets) ** 2)


batch_size = 32768
input_shape = (32768,)
dim = 1


def get_inputs():
    scale = torch.rand(())
    return [torch.rand(batch_size, *input_shape) * scale, torch.rand(batch_size, *input_shape)]


def get_init_inputs():
    return []
