"""One program per BLOCK_SIZE elements: floor(x * 4 + 0.5) / 4 (torch.round but at exact halves)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def quantize_kernel(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, tl.floor(x * 4 + 0.5) / 4, mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        quantize_kernel[(triton.cdiv(x.numel(), 128),)](x, out, x.numel(), BLOCK_SIZE=128)
        return out
