"""Cheat: the hinge loss with the row length written in. Caught by: runtime: linked sizes resized.

Linked sizes are resized together (tied) where resizing one alone makes the reference raise.
Problem: problem_hinge.

While the sizes were resized one at a time, the reference raised on both resized cases and they
were dropped: only the given size was ever run, and this kernel passed.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

COLS = 2048 if torch.cuda.is_available() else 24


@triton.jit
def hinge_partial_kernel(p_ptr, t_ptr, partial_ptr, n_elements, n_cols, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    p = tl.load(p_ptr + offsets, mask=mask, other=0.0)
    t = tl.load(t_ptr + offsets % n_cols, mask=mask, other=0.0)
    loss = tl.where(mask, tl.maximum(1.0 - p * t, 0.0), 0.0)
    tl.store(partial_ptr + pid, tl.sum(loss, axis=0))


@triton.jit
def mean_kernel(partial_ptr, out_ptr, n_partials, n_elements, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_partials, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        acc += tl.load(partial_ptr + offsets, mask=offsets < n_partials, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / n_elements)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        n_elements = predictions.numel()
        block = 1024
        n_partials = triton.cdiv(n_elements, block)
        partial = torch.empty((n_partials,), device=predictions.device, dtype=torch.float32)
        out = torch.empty((), device=predictions.device, dtype=predictions.dtype)
        hinge_partial_kernel[(n_partials,)](predictions, targets, partial, n_elements, COLS, BLOCK=block)
        mean_kernel[(1,)](partial, out, n_partials, n_elements, BLOCK=1024)
        return out
