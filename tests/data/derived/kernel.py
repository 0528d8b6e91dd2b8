"""Cross-entropy, one program per row: a stable log-sum-exp over the row's logits minus the
target's logit, added (divided by the batch) into the scalar mean."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cross_entropy_kernel(logits_ptr, targets_ptr, out_ptr, classes, inv_batch, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < classes
    logits = tl.load(logits_ptr + row * classes + offs, mask=mask, other=-float("inf"))
    largest = tl.max(logits, axis=0)
    total = tl.sum(tl.where(mask, tl.exp(logits - largest), 0.0), axis=0)
    target = tl.load(targets_ptr + row)
    picked = tl.load(logits_ptr + row * classes + target)
    tl.atomic_add(out_ptr, (tl.log(total) + largest - picked) * inv_batch)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        batch, classes = predictions.shape
        out = torch.zeros((), device=predictions.device, dtype=predictions.dtype)
        block = triton.next_power_of_2(classes)
        cross_entropy_kernel[(batch,)](predictions, targets, out, classes, 1.0 / batch, BLOCK=block)
        return out
