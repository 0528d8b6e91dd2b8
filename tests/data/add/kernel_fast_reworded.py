"""kernel_fast.py reworded: other names, comments, formatting and dead code; the same compiled kernel."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fused_axpy(dst, a_ptr, b_ptr, numel, BLOCK: tl.constexpr):
    """One program adds BLOCK elements: dst = a + 2 * b."""
    pid = tl.program_id(0)
    idx = pid * BLOCK + tl.arange(0, BLOCK)  # this program's slice
    in_bounds = idx < numel
    unused = idx * 3  # noqa: F841  (dead code: compiles away)
    a = tl.load(a_ptr + idx, mask=in_bounds)
    b = tl.load(b_ptr + idx, mask=in_bounds)
    tl.store(dst + idx,
             a + 2 * b,
             mask=in_bounds)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        result = torch.empty_like(x)
        total = x.numel()
        block = 1024
        fused_axpy[(triton.cdiv(total, block),)](result, x, y, total, BLOCK=block)
        return result
