"""Cheat: forward = _impl in the class body. Caught by: forward-override.

The scanned def forward is honest-looking, but a later class-body assignment forward = _impl
rebinds it to an unscanned top-level function that uses torch.softmax.

Problem: problem_softmax.py.
"""


import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)



def _impl(self, x):
    out = torch.empty_like(x)
    n = x.numel()
    copy_kernel[(triton.cdiv(n, 256),)](torch.softmax(x, dim=-1), out, n, BLOCK_SIZE=256)
    return out


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        copy_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK_SIZE=256)
        return out

    forward = _impl  # noqa: F811 (the trick itself)
