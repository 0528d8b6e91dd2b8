"""GELU (erf form): one program per BLOCK = 8192 contiguous values of the flattened input.

y = 0.5 * x * (1 + erf(x / sqrt(2))), computed in fp32. The KernelBench input holds 1.6 G fp32
values (6.4 GB): 196,608 programs, each 8 warps with 32 values per thread; erf costs a few dozen
instructions per value, well under the time the bytes take. Offsets are 64-bit: the larger
verification sizes exceed 2**31 values.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(y_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        block = 8192
        y = torch.empty_like(x)
        n = x.numel()
        gelu_kernel[(triton.cdiv(n, block),)](y, x, n, BLOCK=block, num_warps=8)
        return y
