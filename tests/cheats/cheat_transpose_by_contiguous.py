"""Cheat: the answer is x.t().contiguous(). Caught by: runtime: torch compute.

the whole transpose is torch's `.t().contiguous()`, an allowed "view + copy".

For a data-movement problem the answer is a strided copy, and the compute guard allows views and
same-dtype copies outside a launch (clone/contiguous/copy_), while the static allow-list has
.t() and .contiguous() as plain view/layout methods. The Triton kernel launched is a dummy that
copies one element into a scratch tensor; torch's copy kernel does the transpose. (out =
x.t().contiguous()).

Problem: problem_transpose.py.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch_kernel(x_ptr, scratch_ptr):
    tl.store(scratch_ptr, tl.load(x_ptr))


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scratch = torch.empty(1, dtype=x.dtype, device=x.device)
        touch_kernel[(1,)](x, scratch)
        return x.t().contiguous()
