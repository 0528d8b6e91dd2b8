"""LeakyReLU: one program per BLOCK = 1024 contiguous values of the flattened input.

y = x where x >= 0, else negative_slope * x (the slope is a runtime argument, so one compile
serves any slope). NaN stays NaN.

A plain first kernel: 4 warps, 8 values per thread (two 128-bit loads and stores), one read and
one write per element. The KernelBench input, (4096, 393216) fp32 (6.4 GB), gives 1,572,864
programs, plenty for every SM. Offsets are 64-bit, so inputs of more than 2**31 values work. The
math is done in fp32.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def leaky_relu_kernel(y_ptr, x_ptr, n, negative_slope, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = tl.where(x >= 0, x, x * negative_slope)
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01) -> None:
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        block = 1024
        y = torch.empty_like(x)
        n = x.numel()
        leaky_relu_kernel[(triton.cdiv(n, block),)](y, x, n, self.negative_slope, BLOCK=block, num_warps=4)
        return y
