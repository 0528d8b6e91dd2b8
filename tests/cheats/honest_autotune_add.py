"""Honest: autotuned vector add launched by a small module-level helper. Problem: problem_add."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


# A single config: with several, the autotuner benchmarks them, which needs a GPU driver
# (TRITON_INTERPRET=1 on a CPU has none). On a GPU, list the candidates here.
@triton.autotune(
    configs=[triton.Config({"BLOCK_SIZE": 256})],
    key=["n_elements"],
)
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask)
             + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def launch_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n_elements = out.numel()

    def grid(meta: dict[str, int]) -> tuple[int]:
        return (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)

    add_kernel[grid](x, y, out, n_elements)
    return out


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return launch_add(x.contiguous(), y.contiguous())
