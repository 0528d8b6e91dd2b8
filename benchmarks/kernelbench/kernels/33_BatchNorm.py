"""BatchNorm2d as the reference module runs it (training mode by default: batch statistics, running
statistics updated; eval mode: running statistics), in three launches.

1. `plane_stats_kernel`: one program per (sample, channel) plane. The KernelBench input
   (64, 64, 512, 512) has 4096 planes of 262,144 values (1 MB): about 31 programs per SM. A
   program walks its plane in blocks of BLOCK = 4096 (8 warps, 16 values per thread), takes each
   block's exact mean and sum of squared deviations and merges them with Chan's parallel formula;
   all of it is of x minus the channel's first value (the pivot), so inputs shifted by -100 give
   statistics of small exact differences (no E[x^2] - E[x]^2 cancellation).
2. `channel_stats_kernel`: one program per channel merges its planes the same way into the
   channel's mean and 1/sqrt(var + eps), and (training) updates running_mean, running_var
   (unbiased) with the momentum and counts the batch in num_batches_tracked, as the module does.
3. `normalize_kernel`: one program per plane and BLOCK values writes
   ((x - pivot) - mean) * rstd * weight + bias.

Traffic: two reads and one write per element. The module keeps an nn.BatchNorm2d for its
parameters and buffers, so its state_dict matches the reference's.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def plane_stats_kernel(mean_ptr, m2_ptr, x_ptr, n_channels, plane_size, BLOCK: tl.constexpr):
    plane = tl.program_id(0)
    base = plane.to(tl.int64) * plane_size
    pivot = tl.load(x_ptr + (plane % n_channels).to(tl.int64) * plane_size).to(tl.float32)
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
    tl.store(mean_ptr + plane, mean)
    tl.store(m2_ptr + plane, m2)


@triton.jit
def channel_stats_kernel(
    ch_mean_ptr, ch_rstd_ptr, plane_mean_ptr, plane_m2_ptr, x_ptr,
    running_mean_ptr, running_var_ptr, batches_ptr,
    n_samples, n_channels, plane_size, eps, momentum,
    TRAINING: tl.constexpr,
):
    c = tl.program_id(0)
    pivot = tl.load(x_ptr + c.to(tl.int64) * plane_size).to(tl.float32)
    if TRAINING:
        count = tl.zeros((), tl.float32)
        mean = tl.zeros((), tl.float32)
        m2 = tl.zeros((), tl.float32)
        for n in range(0, n_samples):
            p_mean = tl.load(plane_mean_ptr + n * n_channels + c)
            p_m2 = tl.load(plane_m2_ptr + n * n_channels + c)
            total = count + plane_size
            delta = p_mean - mean
            mean += delta * (plane_size / total)
            m2 += p_m2 + delta * delta * (count * plane_size / total)
            count = total
        var = m2 / count
        unbiased = m2 / tl.maximum(count - 1.0, 1.0)
        old_mean = tl.load(running_mean_ptr + c).to(tl.float32)
        old_var = tl.load(running_var_ptr + c).to(tl.float32)
        tl.store(running_mean_ptr + c, (1.0 - momentum) * old_mean + momentum * (mean + pivot))
        tl.store(running_var_ptr + c, (1.0 - momentum) * old_var + momentum * unbiased)
        if c == 0:
            tl.store(batches_ptr, tl.load(batches_ptr) + 1)
    else:
        mean = tl.load(running_mean_ptr + c).to(tl.float32) - pivot
        var = tl.load(running_var_ptr + c).to(tl.float32)
    tl.store(ch_mean_ptr + c, mean)
    tl.store(ch_rstd_ptr + c, 1.0 / tl.sqrt(var + eps))


@triton.jit
def normalize_kernel(
    y_ptr, x_ptr, ch_mean_ptr, ch_rstd_ptr, w_ptr, b_ptr, n_channels, plane_size, n_blocks,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    plane = pid // n_blocks
    c = plane % n_channels
    offs = (pid % n_blocks) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < plane_size
    pivot = tl.load(x_ptr + c.to(tl.int64) * plane_size).to(tl.float32)
    scale = tl.load(ch_rstd_ptr + c) * tl.load(w_ptr + c).to(tl.float32)
    mean = tl.load(ch_mean_ptr + c)
    bias = tl.load(b_ptr + c).to(tl.float32)
    base = plane.to(tl.int64) * plane_size
    x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + base + offs, ((x - pivot) - mean) * scale + bias, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features: int) -> None:
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        block = 4096
        n_samples, n_channels = x.shape[0], x.shape[1]
        plane_size = x.shape[2] * x.shape[3]
        n_planes = n_samples * n_channels
        training = self.training
        plane_mean = torch.empty(n_planes, device=x.device, dtype=torch.float32)
        plane_m2 = torch.empty(n_planes, device=x.device, dtype=torch.float32)
        ch_mean = torch.empty(n_channels, device=x.device, dtype=torch.float32)
        ch_rstd = torch.empty(n_channels, device=x.device, dtype=torch.float32)
        if training:
            plane_stats_kernel[(n_planes,)](plane_mean, plane_m2, x, n_channels, plane_size, BLOCK=block, num_warps=8)
        channel_stats_kernel[(n_channels,)](
            ch_mean, ch_rstd, plane_mean, plane_m2, x,
            self.bn.running_mean, self.bn.running_var, self.bn.num_batches_tracked,
            n_samples, n_channels, plane_size, self.bn.eps, self.bn.momentum,
            TRAINING=training, num_warps=1,
        )
        n_blocks = triton.cdiv(plane_size, block)
        y = torch.empty_like(x)
        normalize_kernel[(n_planes * n_blocks,)](
            y, x, ch_mean, ch_rstd, self.bn.weight, self.bn.bias,
            n_channels, plane_size, n_blocks, BLOCK=block, num_warps=8,
        )
        return y
