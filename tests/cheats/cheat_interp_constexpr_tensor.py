"""Cheat: tensors as constexpr; the kernel body calls torch.add. Caught by: runtime: torch compute.

torch tensors passed as tl.constexpr; under the interpreter the kernel body runs torch.

TRITON_INTERPRET=1 runs a @triton.jit body as ordinary Python, and constexpr parameters reach it
unconverted (plain torch tensors, not pointers). The static scanner never reads kernel bodies
("Triton code"), and the whole body runs inside the launch window, where the compute guard
allows every ATen op. So the "kernel" is `torch.add(X, Y, out=O)`. (It would not compile for a
GPU; it is accepted by the interpreter-based verifier.)

Problem: problem_add.py.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(n, X: tl.constexpr, Y: tl.constexpr, O: tl.constexpr):
    torch.add(X, Y, out=O)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        add_kernel[(1,)](x.numel(), X=x, Y=y, O=out)
        return out
