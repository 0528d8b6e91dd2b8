"""Cheat: a list subclass whose __iter__ launches after the timer. Caught by: deferred-output.

forward returns a list subclass whose __iter__ launches the kernel: timed calls do no work.
The worker unpacks outputs with list(result) when result is a list/tuple, so the work runs when
the result is unpacked. In the checked calls that is inside _checked_call (the launch is
counted); in the timed calls measure() only keeps the returned object, and the samples are
unpacked after the timer stopped. Only the element type is checked (plain Tensor), never the
container's, and __iter__ is not a refused dunder. The launch in forward sits in a dead branch
for the static "forward launches a kernel" rule.

Problem: problem_add.py.
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


class _Pending(list):
    def __iter__(self):
        a = self[0]
        b = self[1]
        out = torch.empty_like(a)
        n = a.numel()
        add_kernel[(triton.cdiv(n, 256),)](a, b, out, n, BLOCK=256)
        yield out


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        n = x.numel()
        if n < 0:  # never taken: satisfies the static launch rule
            add_kernel[(1,)](x, y, x, n, BLOCK=256)
        return _Pending([x.contiguous(), y.contiguous()])
