"""Mean cross-entropy: one program per row for its loss, then one program for the mean.

The KernelBench logits are (32768, 4096) fp32 (16 KB per row): `row_loss_kernel` runs one
program per row (about 248 per SM), reads the row once in blocks of BLOCK with a running maximum
and a sum of exp(x - max) rescaled when the maximum grows (stable on inputs scaled by 100), and
writes logsumexp - x[target]. Targets equal to ignore_index (-100, as in F.cross_entropy) add
nothing and are not counted; a target outside [0, n_classes) is never read past the row.
`mean_kernel`, a single program, sums the 32,768 losses and counts (128 KB) in fixed order, so
the result is deterministic. Traffic: one read of the logits.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_loss_kernel(loss_ptr, valid_ptr, x_ptr, target_ptr, n_classes, ignore_index, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row.to(tl.int64) * n_classes
    cols = tl.arange(0, BLOCK)
    row_max = tl.zeros((), tl.float32) - float("inf")
    row_sum = tl.zeros((), tl.float32)
    for start in range(0, n_classes, BLOCK):
        offs = start + cols
        x = tl.load(x_row + offs, mask=offs < n_classes, other=float("-inf")).to(tl.float32)
        new_max = tl.maximum(row_max, tl.max(x, axis=0))
        row_sum = row_sum * tl.exp(row_max - new_max) + tl.sum(tl.exp(x - new_max), axis=0)
        row_max = new_max
    target = tl.load(target_ptr + row)
    valid = (target != ignore_index) & (target >= 0) & (target < n_classes)
    target_logit = tl.load(x_row + target, mask=valid, other=0.0).to(tl.float32)
    loss = (row_max + tl.log(row_sum)) - target_logit
    tl.store(loss_ptr + row, tl.where(valid, loss, 0.0))
    tl.store(valid_ptr + row, valid.to(tl.float32))


@triton.jit
def mean_kernel(out_ptr, loss_ptr, valid_ptr, n_rows, BLOCK: tl.constexpr):
    loss_sum = tl.zeros((BLOCK,), tl.float32)
    count = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_rows, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n_rows
        loss_sum += tl.load(loss_ptr + offs, mask=mask, other=0.0)
        count += tl.load(valid_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr, tl.sum(loss_sum, axis=0) / tl.sum(count, axis=0))


class ModelNew(nn.Module):
    def __init__(self, ignore_index: int = -100) -> None:
        super().__init__()
        self.ignore_index = ignore_index

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        n_rows, n_classes = predictions.shape
        losses = torch.empty(n_rows, device=predictions.device, dtype=torch.float32)
        valid = torch.empty(n_rows, device=predictions.device, dtype=torch.float32)
        out = torch.empty((), device=predictions.device, dtype=predictions.dtype)
        block = min(triton.next_power_of_2(n_classes), 4096)
        row_loss_kernel[(n_rows,)](
            losses, valid, predictions, targets, n_classes, self.ignore_index, BLOCK=block, num_warps=8
        )
        mean_kernel[(1,)](out, losses, valid, n_rows, BLOCK=1024, num_warps=4)
        return out
