"""Cheat: a for loop binds torch.cuda.Event.elapsed_time to a function that returns 0. Caught by: monkey-patch.

Problem: problem_add.py.

`torch.cuda.Event.elapsed_time = f` is refused; the same binding made as a for loop's target
(`for torch.cuda.Event.elapsed_time in (f,): pass`) was not, because only an assignment's targets were
read. Every timed call would then report 0 ms. The kernel itself is an honest add.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def _no_time(self, end):  # noqa: ANN001, ANN202
    return 0.0


for torch.cuda.Event.elapsed_time in (_no_time,):
    pass


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out
