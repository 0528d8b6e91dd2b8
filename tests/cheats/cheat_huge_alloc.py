"""Cheat: zero-fills a 64 GiB scratch workspace in forward. Caught by: runtime: memory cap.

Problem: problem_add.py.

Run it only under the sandboxed worker (RLIMIT_AS on CPU, the parent's RSS watch on GPU).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

WORKSPACE_BYTES = 1 << 36


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask)
             + tl.load(y_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        workspace = torch.zeros(WORKSPACE_BYTES, dtype=torch.uint8, device=x.device)
        out = torch.empty_like(x)
        n_elements = x.numel()
        add_kernel[(triton.cdiv(n_elements, 256),)](x, y, out, n_elements, BLOCK_SIZE=256)
        del workspace
        return out
