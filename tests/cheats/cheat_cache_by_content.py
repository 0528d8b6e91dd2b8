"""Cheat: outputs cached by a fingerprint of input values. Caught by: cache-across-calls.

Problem: problem_add.py.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_SEEN: dict[tuple[float, ...], torch.Tensor] = {}


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask)
             + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def _fingerprint(x: torch.Tensor, y: torch.Tensor) -> tuple[float, ...]:
    # A few sampled values identify the (random) inputs well enough.
    return tuple(float(v) for v in (x[0], x[-1], y[0], y[-1]))


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        fingerprint = _fingerprint(x, y)
        cached = _SEEN.get(fingerprint)
        if cached is not None:
            return cached
        out = torch.empty_like(x)
        n_elements = x.numel()
        add_kernel[(triton.cdiv(n_elements, 256),)](x, y, out, n_elements, BLOCK_SIZE=256)
        _SEEN[fingerprint] = out
        return out
