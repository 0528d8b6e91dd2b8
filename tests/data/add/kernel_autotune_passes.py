"""A change that costs: each program writes its block in 8 passes, autotuned over 64 or 4096
elements per program (at 4096 the few programs hide the passes; at the start's 64 they do not)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_SIZE": 64}, num_warps=4),
        triton.Config({"BLOCK_SIZE": 4096}, num_warps=4),
    ],
    key=["n"],
)
@triton.jit
def add_kernel(out_ptr, x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    for _ in tl.static_range(8):
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, x + 2 * y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)](out, x, y, n)
        return out
