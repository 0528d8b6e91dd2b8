"""KernelBench level 1 problem 99: triplet margin loss (margin 1, p = 2, mean) of (32768, 8192) fp32
anchors, positives and negatives (1.07 GB each, 3.2 GB in all)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.TripletMarginLoss with the given margin."""

    def __init__(self, margin=1.0):
        super(Model, self).__init__()
        self.loss_fn = torch.nn.TripletMarginLoss(margin=margin)

    def forward(self, anchor, positive, negative):
        return self.loss_fn(anchor, positive, negative)


batch_size = 32768
input_shape = (8192,)
dim = 1


def get_inputs():
    scale = torch.rand(())
    return [torch.rand(batch_size, *input_shape) * scale, torch.rand(batch_size, *input_shape), torch.rand(batch_size, *input_shape)]


def get_init_inputs():
    return [1.0]
