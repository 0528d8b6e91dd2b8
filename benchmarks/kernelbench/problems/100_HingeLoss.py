"""KernelBench level 1 problem 100: mean hinge loss of (32768, 32768) fp32 predictions (4.3 GB) against
a (32768,) vector of +-1 targets, which broadcasts along each prediction row."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """mean(clamp(1 - predictions * targets, min=0)), a scalar."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))


batch_size = 32768
input_shape = (32768,)
dim = 1


def get_inputs():
    return [torch.rand(batch_size, *input_shape), torch.randint(0, 2, (batch_size,)).float() * 2 - 1]


def get_init_inputs():
    return []
