"""Mean squared error: one program per BLOCK values for a partial sum, then one program for the mean.

The KernelBench predictions and targets are (32768, 32768) fp32 each (4.3 GB apiece).
`partial_kernel` runs one program per BLOCK = 4096 values (8 warps, 16 per thread): 262,144
programs, each writing the fp32 sum of its (p - t)**2 to a partials buffer (1 MB). `mean_kernel`,
a single program, sums the partials in fixed order (deterministic) and divides by the element
count. Traffic: one read of both inputs; summing in two levels keeps fp32 rounding small.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def partial_kernel(partial_ptr, p_ptr, t_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    t = tl.load(t_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    d = p - t
    tl.store(partial_ptr + pid, tl.sum(d * d, axis=0))


@triton.jit
def mean_kernel(out_ptr, partial_ptr, n_partials, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_partials, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(partial_ptr + offs, mask=offs < n_partials, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / n)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        block = 4096
        n = predictions.numel()
        n_partials = triton.cdiv(n, block)
        partials = torch.empty(n_partials, device=predictions.device, dtype=torch.float32)
        out = torch.empty((), device=predictions.device, dtype=predictions.dtype)
        partial_kernel[(n_partials,)](partials, predictions, targets, n, BLOCK=block, num_warps=8)
        mean_kernel[(1,)](out, partials, n_partials, n, BLOCK=1024, num_warps=4)
        return out
