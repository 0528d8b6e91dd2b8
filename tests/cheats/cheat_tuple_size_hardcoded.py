"""Cheat: the row length written in, not read from x.shape. Caught by: runtime: tuple sizes resized.

The row length is 37 on the CPU and 4003 on a GPU; other sizes resize the ints inside a tuple too.

Problem: problem_tuple_rows.py.

The problem keeps its row length in `input_shape = (N,)`. While only plain int sizes were
resized, every case had the given row length and this kernel passed all of them.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

ROW = 4003 if torch.cuda.is_available() else 37


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_elements, ROW: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    offsets = row * ROW + cols
    x = tl.load(x_ptr + offsets, mask=(cols < ROW) & (offsets < n_elements), other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.shape[0]
        out = torch.empty((rows,), device=x.device, dtype=x.dtype)
        row_sum_kernel[(rows,)](x, out, x.numel(), ROW=ROW, BLOCK=triton.next_power_of_2(ROW))
        return out
