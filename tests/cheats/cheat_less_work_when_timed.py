"""Cheat: honest while checked, half the work while timed. Caught by: runtime: timed outputs are judged too.

Honest for as many calls as the correctness checks make, then adds only the first half of the
elements, so every timed call does half the work.

Problem: problem_add.py.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        # more calls than the checks make: (seeds + extra + sizes + wide) x repeats
        self.honest_calls = 30 if torch.cuda.is_available() else 8

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        out = torch.empty_like(x)
        n_elements = x.shape[0]
        todo = n_elements if self.calls <= self.honest_calls else n_elements // 2
        add_kernel[(triton.cdiv(todo, 256),)](x, y, out, todo, BLOCK_SIZE=256)
        return out
