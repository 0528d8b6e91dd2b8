"""A template for one-input elementwise activations: a wide, streaming pass over memory.

Each program moves BLOCK contiguous values (BLOCK / threads of them per thread: several 128-bit
loads in flight), with int64 offsets past 2^31 elements, contiguity hints so every access is
vectorised, and evict_first on the load and the store: the data is touched once, so it should
not push anything else out of L2.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# ATen operator -> the Triton expression of x (fp32), from the call's own arguments.
EXPRESSIONS: dict[tuple[str, ...], Callable[[tuple[Any, ...]], str]] = {
    ("relu",): lambda args: "tl.maximum(x, 0.0)",
    ("sigmoid",): lambda args: "1.0 / (1.0 + tl.exp(-x))",
    ("tanh",): lambda args: "2.0 / (1.0 + tl.exp(-2.0 * x)) - 1.0",
    ("sigmoid", "mul"): lambda args: "x / (1.0 + tl.exp(-x))",
    ("hardsigmoid",): lambda args: "tl.minimum(tl.maximum(x / 6.0 + 0.5, 0.0), 1.0)",
    ("leaky_relu",): lambda args: f"tl.where(x >= 0.0, x, x * {float(args[1]) if len(args) > 1 else 0.01!r})",
    ("gelu",): lambda args: "0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))",
}

_SOURCE = '''"""Elementwise $ops, one wide streaming pass (a structural move of the offline optimizer)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def elementwise_kernel(out_ptr, x_ptr, n, BLOCK: tl.constexpr):
    # BLOCK contiguous values per program; evict_first: streamed once, kept out of L2's way.
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
    y = $expr
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask, eviction_policy="evict_first")


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, $param):
        out = torch.empty_like($param)
        n = $param.numel()
        elementwise_kernel[(triton.cdiv(n, BLOCK),)](out, $param, n, BLOCK=BLOCK, num_warps=8)
        return out
'''


def streaming(ops: tuple[str, ...], args: tuple[Any, ...], param: str) -> str | None:
    """The kernel file for the reference's operators, or None when no expression is written for them."""
    expression = EXPRESSIONS.get(ops)
    if expression is None:
        return None
    from string import Template

    return Template(_SOURCE).substitute(ops=", ".join(ops), expr=expression(args), param=param)
