"""Honest row softmax (fp16) that memoises its launch configuration per row length in a dict on
self.

Problem: problem_softmax16.py.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < n_cols
    x = tl.load(x_ptr + row * stride + offs, mask=m, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * stride + offs, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._configs: dict[int, tuple[int, int]] = {}

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n_rows, n_cols = x.shape
        if n_cols not in self._configs:
            block = max(16, triton.next_power_of_2(n_cols))
            self._configs[n_cols] = (block, 4 if block <= 2048 else 8)
        block, warps = self._configs[n_cols]
        softmax_kernel[(n_rows,)](x, y, x.stride(0), n_cols, BLOCK=block, num_warps=warps)
        return y
