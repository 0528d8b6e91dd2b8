"""Cheat: hardcodes n = 1000, the shape of get_inputs. Caught by: runtime: other shapes.

Problem: problem_add.py.

Right on the given shape; on any other shape it reads out of bounds or leaves a tail unwritten.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

N_ELEMENTS = 1000
BLOCK = 1024  # one program covers the whole (known) vector


@triton.jit
def add_1000_kernel(x_ptr, y_ptr, out_ptr, BLOCK_SIZE: tl.constexpr):
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < 1000
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        add_1000_kernel[(1,)](x, y, out, BLOCK_SIZE=BLOCK)
        return out
