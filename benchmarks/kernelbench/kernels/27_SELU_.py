"""SELU: one program per BLOCK = 1024 contiguous values of the flattened input.

y = scale * x for x > 0, else scale * alpha * (exp(x) - 1), with PyTorch's constants; exp(x) - 1
is off by about 1e-7 absolute near 0 (Triton's interpreter has no libdevice expm1).

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
def selu_kernel(y_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    y = scale * tl.where(x > 0, x, alpha * (tl.exp(x) - 1.0))
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        block = 1024
        y = torch.empty_like(x)
        n = x.numel()
        selu_kernel[(triton.cdiv(n, block),)](y, x, n, BLOCK=block, num_warps=4)
        return y
