"""InstanceNorm2d (no affine): one program per (sample, channel) plane, a statistics pass and a
normalising pass.

The KernelBench input has 112 x 64 = 7168 planes of 512 x 512 = 262,144 values (1 MB each):
enough programs to keep 132 SMs busy (about 54 each), and a plane is too large for registers, so
each program walks its plane twice in blocks of BLOCK = 4096 (8 warps, four 128-bit loads per
thread per step). The first pass takes each block's exact mean and sum of squared deviations and
merges them with Chan's parallel formula; all of it is of x minus the plane's first value (the
pivot), so on inputs shifted by -100 the statistics are of small exact differences and the mean
carries no rounding of a value near 100. The second pass writes ((x - pivot) - mean) * rstd.
Traffic: two reads and one write per element.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def instance_norm_kernel(y_ptr, x_ptr, plane_size, eps, BLOCK: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * plane_size
    pivot = tl.load(x_ptr + base).to(tl.float32)
    count = tl.zeros((), tl.float32)
    mean = tl.zeros((), tl.float32)
    m2 = tl.zeros((), tl.float32)
    for start in range(0, plane_size, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < plane_size
        x = tl.where(mask, tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32) - pivot, 0.0)
        block_count = tl.sum(mask.to(tl.float32), axis=0)
        block_mean = tl.sum(x, axis=0) / block_count
        dev = tl.where(mask, x - block_mean, 0.0)
        total = count + block_count
        delta = block_mean - mean
        mean += delta * (block_count / total)
        m2 += tl.sum(dev * dev, axis=0) + delta * delta * (count * block_count / total)
        count = total
    rstd = 1.0 / tl.sqrt(m2 / plane_size + eps)
    for start in range(0, plane_size, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < plane_size
        x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + base + offs, ((x - pivot) - mean) * rstd, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        plane_size = x.shape[2] * x.shape[3]
        instance_norm_kernel[(x.shape[0] * x.shape[1],)](y, x, plane_size, self.eps, BLOCK=4096, num_warps=8)
        return y
