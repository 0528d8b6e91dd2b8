"""LayerNorm over rows of 4M elements, in three launches: chunk statistics, row statistics, normalise.

The KernelBench input has only 16 rows (each (64, 256, 256) = 4,194,304 values, 16 MB), far too
few for one program per row to fill 132 SMs. So:

1. `chunk_stats_kernel`: one program per CHUNK = 65,536 values of a row (64 chunks x 16 rows =
   1024 programs). It walks its chunk in blocks of BLOCK, takes each block's exact mean and sum of
   squared deviations from the values in registers, and merges them into its running ones with
   Chan's parallel formula: no E[x^2] - E[x]^2 cancellation on inputs shifted by -100.
   All statistics are of x minus the row's first value (the pivot): on inputs near -100 the
   differences are small and exact, so the mean carries no rounding of a value near 100 and the
   output stays within about 1e-6 of a float64 LayerNorm.
2. `row_stats_kernel`: one program per row merges its chunks (the mean of the chunk means
   weighted by their counts, then the chunks' squared deviations plus each chunk's count times
   its mean's squared distance from the row mean) into the row's mean and 1/sqrt(var + eps).
3. `normalize_kernel`: one program per BLOCK columns and ROWS rows loads its slice of weight and
   bias once and applies them to every row it covers, so the 32 MB of weight and bias are read
   once, not once per row.

Traffic: x read twice, y written once (about 0.8 GB at the KernelBench size).
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def chunk_stats_kernel(x_ptr, mean_ptr, m2_ptr, n_cols, n_chunks, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    row = pid // n_chunks
    chunk_start = (pid % n_chunks) * CHUNK
    x_row = x_ptr + row.to(tl.int64) * n_cols
    pivot = tl.load(x_row).to(tl.float32)
    count = tl.zeros((), tl.float32)
    mean = tl.zeros((), tl.float32)
    m2 = tl.zeros((), tl.float32)
    for start in range(0, CHUNK, BLOCK):
        offs = chunk_start + start + tl.arange(0, BLOCK)
        mask = offs < n_cols
        x = tl.where(mask, tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32) - pivot, 0.0)
        block_count = tl.sum(mask.to(tl.float32), axis=0)
        block_mean = tl.sum(x, axis=0) / tl.maximum(block_count, 1.0)
        dev = tl.where(mask, x - block_mean, 0.0)
        block_m2 = tl.sum(dev * dev, axis=0)
        total = tl.maximum(count + block_count, 1.0)
        delta = block_mean - mean
        mean += delta * (block_count / total)
        m2 += block_m2 + delta * delta * (count * block_count / total)
        count += block_count
    tl.store(mean_ptr + pid, mean)
    tl.store(m2_ptr + pid, m2)


@triton.jit
def row_stats_kernel(
    chunk_mean_ptr, chunk_m2_ptr, row_mean_ptr, row_rstd_ptr, n_cols, n_chunks, eps,
    CHUNK: tl.constexpr, BLOCK: tl.constexpr,
):
    row = tl.program_id(0)
    first = row * n_chunks
    weighted = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_chunks, BLOCK):
        idx = start + tl.arange(0, BLOCK)
        mask = idx < n_chunks
        count = tl.minimum(CHUNK, n_cols - idx * CHUNK).to(tl.float32)
        chunk_mean = tl.load(chunk_mean_ptr + first + idx, mask=mask, other=0.0)
        weighted += tl.where(mask, count * chunk_mean, 0.0)
    mean = tl.sum(weighted, axis=0) / n_cols
    m2 = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_chunks, BLOCK):
        idx = start + tl.arange(0, BLOCK)
        mask = idx < n_chunks
        count = tl.minimum(CHUNK, n_cols - idx * CHUNK).to(tl.float32)
        chunk_mean = tl.load(chunk_mean_ptr + first + idx, mask=mask, other=0.0)
        chunk_m2 = tl.load(chunk_m2_ptr + first + idx, mask=mask, other=0.0)
        delta = chunk_mean - mean
        m2 += tl.where(mask, chunk_m2 + count * delta * delta, 0.0)
    var = tl.sum(m2, axis=0) / n_cols
    tl.store(row_mean_ptr + row, mean)
    tl.store(row_rstd_ptr + row, 1.0 / tl.sqrt(var + eps))


@triton.jit
def normalize_kernel(
    y_ptr, x_ptr, w_ptr, b_ptr, row_mean_ptr, row_rstd_ptr, n_rows, n_cols, n_col_blocks,
    ROWS: tl.constexpr, BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    row_start = (pid // n_col_blocks) * ROWS
    offs = (pid % n_col_blocks) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_cols
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    for r in range(ROWS):
        row = row_start + r
        if row < n_rows:
            start = row.to(tl.int64) * n_cols
            pivot = tl.load(x_ptr + start).to(tl.float32)
            mean = tl.load(row_mean_ptr + row)
            rstd = tl.load(row_rstd_ptr + row)
            x = tl.load(x_ptr + start + offs, mask=mask, other=0.0).to(tl.float32)
            tl.store(y_ptr + start + offs, ((x - pivot) - mean) * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: int | tuple, eps: float = 1e-5) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(self.normalized_shape))
        self.bias = nn.Parameter(torch.zeros(self.normalized_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        chunk, block, rows_per_program = 65536, 2048, 16
        n_cols = math.prod(self.normalized_shape)
        n_rows = x.numel() // n_cols
        n_chunks = triton.cdiv(n_cols, chunk)
        chunk_mean = torch.empty(n_rows * n_chunks, device=x.device, dtype=torch.float32)
        chunk_m2 = torch.empty(n_rows * n_chunks, device=x.device, dtype=torch.float32)
        row_mean = torch.empty(n_rows, device=x.device, dtype=torch.float32)
        row_rstd = torch.empty(n_rows, device=x.device, dtype=torch.float32)
        y = torch.empty_like(x)
        chunk_stats_kernel[(n_rows * n_chunks,)](
            x, chunk_mean, chunk_m2, n_cols, n_chunks, CHUNK=chunk, BLOCK=block, num_warps=8
        )
        row_stats_kernel[(n_rows,)](
            chunk_mean, chunk_m2, row_mean, row_rstd, n_cols, n_chunks, self.eps, CHUNK=chunk, BLOCK=128
        )
        n_col_blocks = triton.cdiv(n_cols, block)
        normalize_kernel[(n_col_blocks * triton.cdiv(n_rows, rows_per_program),)](
            y, x, self.weight, self.bias, row_mean, row_rstd, n_rows, n_cols, n_col_blocks,
            ROWS=rows_per_program, BLOCK=block, num_warps=8,
        )
        return y
