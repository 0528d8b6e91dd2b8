"""RMS normalization over dim 1 (features): one program per sample and SPATIAL_BLOCK positions.

In the KernelBench input (112, 64, 512, 512) the 64 features of one position lie 262,144 values
apart, while neighbouring positions are adjacent: a program takes a (BLOCK_C, SPATIAL_BLOCK) tile,
features down and positions across, so every load is a contiguous 1 KB run. It walks the
features twice: first summing squares per position, then writing x / sqrt(mean + eps). The
second walk re-reads the 64 KB the program has just read, which is still in L2, so DRAM traffic
is close to one read and one write per element. 112 x 1024 = 114,688 programs.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_norm_kernel(
    y_ptr, x_ptr, n_features, n_positions, n_position_blocks, eps,
    BLOCK_C: tl.constexpr, SPATIAL_BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    sample = pid // n_position_blocks
    positions = (pid % n_position_blocks) * SPATIAL_BLOCK + tl.arange(0, SPATIAL_BLOCK)
    position_mask = positions < n_positions
    base = sample.to(tl.int64) * n_features * n_positions
    features = tl.arange(0, BLOCK_C)
    sum_sq = tl.zeros((SPATIAL_BLOCK,), tl.float32)
    for start in range(0, n_features, BLOCK_C):
        c = start + features
        mask = (c < n_features)[:, None] & position_mask[None, :]
        offs = c.to(tl.int64)[:, None] * n_positions + positions[None, :]
        x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
        sum_sq += tl.sum(x * x, axis=0)
    rms = tl.sqrt(sum_sq / n_features + eps)
    for start in range(0, n_features, BLOCK_C):
        c = start + features
        mask = (c < n_features)[:, None] & position_mask[None, :]
        offs = c.to(tl.int64)[:, None] * n_positions + positions[None, :]
        x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + base + offs, x / rms[None, :], mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        spatial_block = 256
        y = torch.empty_like(x)
        n_features = x.shape[1]
        n_positions = math.prod(x.shape[2:])
        n_position_blocks = triton.cdiv(n_positions, spatial_block)
        rms_norm_kernel[(x.shape[0] * n_position_blocks,)](
            y, x, n_features, n_positions, n_position_blocks, self.eps,
            BLOCK_C=16, SPATIAL_BLOCK=spatial_block, num_warps=4,
        )
        return y
