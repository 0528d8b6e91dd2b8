"""HardSigmoid: one program per BLOCK = 1024 contiguous values of the flattened input.

y = clamp(x / 6 + 1 / 2, 0, 1), as torch.nn.functional.hardsigmoid computes it.

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
def hard_sigmoid_kernel(y_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = tl.minimum(tl.maximum(x / 6.0 + 0.5, 0.0), 1.0)
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        block = 1024
        y = torch.empty_like(x)
        n = x.numel()
        hard_sigmoid_kernel[(triton.cdiv(n, block),)](y, x, n, BLOCK=block, num_warps=4)
        return y
