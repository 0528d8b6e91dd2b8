"""x / ||x||_F over the whole tensor, in three launches: partial sums of squares, the norm, the divide.

The KernelBench input is (112, 64, 512, 512) fp32 (7.5 GB, 1.88 G values). `partial_kernel` runs
one program per BLOCK = 4096 values (8 warps, 16 per thread), 458,752 programs each writing the
fp32 sum of its squares to a partials buffer (1.8 MB). `norm_kernel`, a single program, sums the
partials in fixed order (deterministic; two levels of fp32 sums keep rounding small) and writes
the norm. `divide_kernel` runs one program per BLOCK values again, writing x / norm. Traffic: two
reads and one write per element; the input is far larger than L2, so the second read is DRAM.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def partial_kernel(partial_ptr, x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.store(partial_ptr + pid, tl.sum(x * x, axis=0))


@triton.jit
def norm_kernel(norm_ptr, partial_ptr, n_partials, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_partials, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(partial_ptr + offs, mask=offs < n_partials, other=0.0)
    tl.store(norm_ptr, tl.sqrt(tl.sum(acc, axis=0)))


@triton.jit
def divide_kernel(y_ptr, x_ptr, norm_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    norm = tl.load(norm_ptr)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, x / norm, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        block = 4096
        n = x.numel()
        n_blocks = triton.cdiv(n, block)
        partials = torch.empty(n_blocks, device=x.device, dtype=torch.float32)
        norm = torch.empty(1, device=x.device, dtype=torch.float32)
        y = torch.empty_like(x)
        partial_kernel[(n_blocks,)](partials, x, n, BLOCK=block, num_warps=8)
        norm_kernel[(1,)](norm, partials, n_blocks, BLOCK=1024, num_warps=4)
        divide_kernel[(n_blocks,)](y, x, norm, n, BLOCK=block, num_warps=8)
        return y
