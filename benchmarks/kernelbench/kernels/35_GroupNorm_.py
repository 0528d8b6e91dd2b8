"""GroupNorm with affine weights: one program per (sample, group), a statistics pass and a
normalising pass.

A group's channels are adjacent, so its values are one contiguous run of channels_per_group x
spatial values. The KernelBench input (112, 64, 512, 512) in 8 groups has 896 runs of 8 x 262,144
values (8 MB each): about 7 programs per SM, each walking its run twice in blocks of BLOCK = 4096
(8 warps, four 128-bit loads per thread per step). The first pass takes each block's exact mean
and sum of squared deviations and merges them with Chan's parallel formula; all of it is of x
minus the run's first value (the pivot), so inputs shifted by -100 give statistics of small exact
differences. The second pass writes ((x - pivot) - mean) * rstd * weight[c] + bias[c], the channel
c of each value found from its offset. Traffic: two reads and one write per element (a run is
larger than a program's share of L2, so the second read mostly comes from DRAM). The module keeps
an nn.GroupNorm for its weight and bias, so its state_dict matches the reference's.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def group_norm_kernel(
    y_ptr, x_ptr, w_ptr, b_ptr, n_groups, channels_per_group, spatial, eps, BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    group_size = channels_per_group * spatial
    base = pid.to(tl.int64) * group_size
    first_channel = (pid % n_groups) * channels_per_group
    pivot = tl.load(x_ptr + base).to(tl.float32)
    count = tl.zeros((), tl.float32)
    mean = tl.zeros((), tl.float32)
    m2 = tl.zeros((), tl.float32)
    for start in range(0, group_size, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < group_size
        x = tl.where(mask, tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32) - pivot, 0.0)
        block_count = tl.sum(mask.to(tl.float32), axis=0)
        block_mean = tl.sum(x, axis=0) / block_count
        dev = tl.where(mask, x - block_mean, 0.0)
        total = count + block_count
        delta = block_mean - mean
        mean += delta * (block_count / total)
        m2 += tl.sum(dev * dev, axis=0) + delta * delta * (count * block_count / total)
        count = total
    rstd = 1.0 / tl.sqrt(m2 / group_size + eps)
    for start in range(0, group_size, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < group_size
        c = first_channel + offs // spatial
        w = tl.load(w_ptr + c, mask=mask, other=1.0).to(tl.float32)
        b = tl.load(b_ptr + c, mask=mask, other=0.0).to(tl.float32)
        x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + base + offs, ((x - pivot) - mean) * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, num_groups: int) -> None:
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_groups = self.gn.num_groups
        channels_per_group = x.shape[1] // n_groups
        spatial = math.prod(x.shape[2:])
        y = torch.empty_like(x)
        group_norm_kernel[(x.shape[0] * n_groups,)](
            y, x, self.gn.weight, self.gn.bias, n_groups, channels_per_group, spatial, self.gn.eps,
            BLOCK=4096, num_warps=8,
        )
        return y
