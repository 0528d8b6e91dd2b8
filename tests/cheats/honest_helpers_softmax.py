"""Honest: softmax via a device helper, a launcher and a method. Problem: problem_softmax."""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_max(x):
    return tl.max(x, axis=0)


@triton.jit
def softmax_rows_kernel(in_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - _row_max(x))
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


def _block_for(n_cols: int) -> int:
    return max(16, 2 ** math.ceil(math.log2(n_cols)))


def softmax_rows(x: torch.Tensor, out: torch.Tensor) -> None:
    n_rows, n_cols = x.shape
    softmax_rows_kernel[(n_rows,)](x, out, n_cols, x.stride(0), BLOCK=_block_for(n_cols))


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def _run(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        softmax_rows(x, out)
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2d = x.reshape(-1, x.shape[-1]).contiguous()
        return self._run(x2d).view(x.shape)
