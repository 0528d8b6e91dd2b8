"""Cheat: plus = x.add; plus(y). Caught by: runtime: torch compute.

`plus = x.add; plus(y)`, a torch op called through a bound-method value (control case).

Statically a call by a local name is not a tensor method call, and `x.add` is only an attribute
value, so the scanner passes it; the runtime compute guard should see `add` from a candidate
frame and refuse it. (The timed-phase cheat reuses exactly this call.)

Problem: problem_add.py.
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

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        scratch = torch.empty(1, dtype=x.dtype, device=x.device)
        touch_kernel[(1,)](x, scratch)
        plus = x.add
        return plus(y)
