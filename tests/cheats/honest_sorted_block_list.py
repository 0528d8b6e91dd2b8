"""Honest ReLU that picks its block size by sorting a Python list of candidates. Problem: problem_relu.py."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=m, other=0.0), 0.0), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.block_candidates = [1024, 256, 512]

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        candidates = list(self.block_candidates)
        candidates.sort()
        # the smallest block that needs at most 8 programs, else the largest
        block = next((b for b in candidates if triton.cdiv(n, b) <= 8), candidates[-1])
        relu_kernel[(triton.cdiv(n, block),)](x, y, n, BLOCK=block)
        return y
