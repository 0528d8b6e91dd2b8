"""minGPT's tanh GELU: one program per BLOCK = 1024 contiguous values of the flattened input.

y = 0.5 * x * (1 + tanh(u)) with u = sqrt(2 / pi) * (x + 0.044715 * x**3), tanh(u) written as
sign(u) * (1 - e) / (1 + e) with e = exp(-2|u|) (no overflow for large |u|; Triton's interpreter
has no libdevice tanh).

A plain first kernel: 4 warps, 8 values per thread (two 128-bit loads and stores), one read and
one write per element. The KernelBench input, (8192, 8192) fp32 (268 MB), gives 65,536
programs, plenty for every SM. Offsets are 64-bit, so inputs of more than 2**31 values work. The
math is done in fp32.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def new_gelu_kernel(y_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    e = tl.exp(-2.0 * tl.abs(inner))
    t = (1.0 - e) / (1.0 + e)
    y = 0.5 * x * (1.0 + tl.where(inner < 0, -t, t))
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        block = 1024
        y = torch.empty_like(x)
        n = x.numel()
        new_gelu_kernel[(triton.cdiv(n, block),)](y, x, n, BLOCK=block, num_warps=4)
        return y
