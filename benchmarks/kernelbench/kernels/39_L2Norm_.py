"""L2 normalization over dim 1 (x / ||x||_2): one program per row, a sum-of-squares pass and a
divide pass.

The KernelBench input has 32,768 rows of 65,535 values (256 KB each), about 248 programs per
SM. A program sums x**2 over its row in blocks of BLOCK = 4096 (8 warps, 16 values per thread),
each lane keeping its own fp32 partial sum, then walks the row again writing x / sqrt(sum).
Traffic: two reads and one write per element; the second read partly hits L2. Row offsets are
64-bit, as the input holds just under 2**31 values and larger sizes hold more.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def l2_norm_kernel(y_ptr, x_ptr, n_cols, inner, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = (row // inner) * n_cols * inner + row % inner
    cols = tl.arange(0, BLOCK)
    sq_sum = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        x = tl.load(x_ptr + base + offs * inner, mask=offs < n_cols, other=0.0).to(tl.float32)
        sq_sum += x * x
    norm = tl.sqrt(tl.sum(sq_sum, axis=0))
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        mask = offs < n_cols
        x = tl.load(x_ptr + base + offs * inner, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + base + offs * inner, x / norm, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        n_cols = x.shape[1]
        inner = math.prod(x.shape[2:])
        l2_norm_kernel[(x.numel() // n_cols,)](y, x, n_cols, inner, BLOCK=4096, num_warps=8)
        return y
