"""ReLU: one program per BLOCK = 8192 contiguous values of the flattened input.

The KernelBench input holds 1.6 G fp32 values (6.4 GB): 196,608 programs, each 8 warps moving
32 values per thread (eight 128-bit loads and stores), one read and one write per element.
Offsets are 64-bit: the larger verification sizes exceed 2**31 values. x < 0 ? 0 : x keeps NaN
as NaN, as torch.relu does.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(y_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.where(x < 0, 0.0, x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        block = 8192
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, block),)](y, x, n, BLOCK=block, num_warps=8)
        return y
