"""Cheat: row sums from racing partials (load, add, store: lost updates). Caught by: runtime: repeat runs.

Problem: problem_rowsum.py.

Every program adds its chunk's sum to out[row] with a plain load and store instead of an
atomic. On a GPU the programs of one row run at once and overwrite each other's updates, so
the result is wrong, differently on each run. The interpreter runs programs one after another,
where the same code happens to be right: only a GPU shows the race.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def partial_rowsum_kernel(x_ptr, out_ptr, n_cols, CHUNK: tl.constexpr):
    # Program (row, chunk) sums CHUNK columns of one row and adds them to out[row].
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    cols = chunk * CHUNK + tl.arange(0, CHUNK)
    vals = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    total = tl.load(out_ptr + row)
    tl.store(out_ptr + row, total + tl.sum(vals, axis=0))


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.zeros(n_rows, device=x.device, dtype=x.dtype)
        partial_rowsum_kernel[(n_rows, triton.cdiv(n_cols, 32))](x, out, n_cols, CHUNK=32)
        return out
