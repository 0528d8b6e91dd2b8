"""A template for one-input elementwise activations (ReLU, LeakyReLU, sigmoid, tanh, Swish/SiLU,
GELU exact and tanh, ELU, SELU, softplus, softsign, Mish, HardSigmoid, HardSwish, HardTanh, ReLU6):
a wide, streaming pass over memory.

Each program moves BLOCK contiguous values (BLOCK / threads of them per thread: several 128-bit
loads in flight), with int64 offsets past 2^31 elements, contiguity hints so every access is
vectorised, and evict_first on the load and the store: the data is touched once, so it should
not push anything else out of L2.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_TANH = "(2.0 / (1.0 + tl.exp(-2.0 * ({z}))) - 1.0)"  # tanh(z), exact at both ends (exp overflows to inf: -1)
_TANH_GELU = "0.5 * x * (1.0 + " + _TANH.format(z="0.7978845608028654 * (x + 0.044715 * x * x * x)") + ")"
_SOFTPLUS = "tl.where(x > 20.0, x, tl.log(1.0 + tl.exp(x)))"


def _arg(args: tuple[Any, ...], index: int, default: float) -> float:
    return float(args[index]) if len(args) > index and args[index] is not None else default


def _gelu(args: tuple[Any, ...], options: dict[str, Any]) -> str:
    if options.get("approximate", "none") == "tanh":
        return _TANH_GELU
    return "0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))"


def _elu(args: tuple[Any, ...], options: dict[str, Any]) -> str:
    # aten.elu(x, alpha, scale, input_scale): SELU is elu with its two constants.
    alpha, scale, input_scale = _arg(args, 1, 1.0), _arg(args, 2, 1.0), _arg(args, 3, 1.0)
    return f"tl.where(x > 0.0, {scale!r} * x, {scale * alpha!r} * (tl.exp(x * {input_scale!r}) - 1.0))"


def _softplus(args: tuple[Any, ...], options: dict[str, Any]) -> str:
    beta, threshold = _arg(args, 1, 1.0), _arg(args, 2, 20.0)
    return f"tl.where(x * {beta!r} > {threshold!r}, x, tl.log(1.0 + tl.exp(x * {beta!r})) / {beta!r})"


# ATen operators -> the Triton expression of x (fp32), from the first call's own arguments and options.
EXPRESSIONS: dict[tuple[str, ...], Callable[[tuple[Any, ...], dict[str, Any]], str]] = {
    ("relu",): lambda args, options: "tl.maximum(x, 0.0)",
    ("sigmoid",): lambda args, options: "1.0 / (1.0 + tl.exp(-x))",
    ("tanh",): lambda args, options: _TANH.format(z="x"),
    ("sigmoid", "mul"): lambda args, options: "x / (1.0 + tl.exp(-x))",
    ("silu",): lambda args, options: "x / (1.0 + tl.exp(-x))",
    ("hardsigmoid",): lambda args, options: "tl.minimum(tl.maximum(x / 6.0 + 0.5, 0.0), 1.0)",
    ("hardswish",): lambda args, options: "x * tl.minimum(tl.maximum(x + 3.0, 0.0), 6.0) / 6.0",
    ("hardtanh",): lambda args, options: f"tl.minimum(tl.maximum(x, {_arg(args, 1, -1.0)!r}), {_arg(args, 2, 1.0)!r})",
    ("leaky_relu",): lambda args, options: f"tl.where(x >= 0.0, x, x * {_arg(args, 1, 0.01)!r})",
    ("gelu",): _gelu,
    ("elu",): _elu,
    ("softplus",): _softplus,
    ("mish",): lambda args, options: "x * " + _TANH.format(z=_SOFTPLUS),
    ("abs", "add", "div"): lambda args, options: "x / (1.0 + tl.abs(x))",  # softsign as F.softsign writes it
    # GPT-2's tanh GELU written out (0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))))
    ("mul", "pow", "mul", "add", "mul", "tanh", "add", "mul"): lambda args, options: _TANH_GELU,
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


def streaming(
    ops: tuple[str, ...], args: tuple[Any, ...], param: str, options: dict[str, Any] | None = None
) -> str | None:
    """The kernel file for the reference's operators, or None when no expression is written for them."""
    expression = EXPRESSIONS.get(ops)
    if expression is None:
        return None
    from string import Template

    return Template(_SOURCE).substitute(ops=", ".join(ops), expr=expression(args, options or {}), param=param)


def _tl_on_torch() -> Any:
    """The few `tl` functions the expressions above use, on torch tensors: the formula evaluated on the CPU."""
    from types import SimpleNamespace

    import torch

    def pair(op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        return lambda a, b: op(torch.as_tensor(a), torch.as_tensor(b))

    return SimpleNamespace(exp=torch.exp, log=torch.log, abs=torch.abs, maximum=pair(torch.maximum),
                           minimum=pair(torch.minimum), math=SimpleNamespace(erf=torch.erf),
                           where=lambda c, a, b: torch.where(c, torch.as_tensor(a), torch.as_tensor(b)))


def formula_differs(ops: tuple[str, ...], args: tuple[Any, ...], options: dict[str, Any], forward: Callable[[Any], Any],
                    ndim: int) -> str:
    """Why the template's formula for `ops` is not what `forward` (the reference, built on the CPU) computes, or "":
    the operators' names alone do not say what they are applied to (`sigmoid(x) * x` is Swish, `sigmoid(x) * 2`
    is not), so both are evaluated on values across every branch of the activations (-30..30, and zero)."""
    import torch

    expression = EXPRESSIONS.get(ops)
    if expression is None:
        return f"no formula written for {', '.join(ops)}"
    x = torch.cat([torch.linspace(-30.0, 30.0, 241), torch.tensor([0.0, 1e-3, -1e-3, 2.5, -2.5, 0.5])])
    x = x.reshape((1,) * (max(ndim, 1) - 1) + (-1,))
    with torch.no_grad():
        want = forward(x.clone())
        got = eval(expression(args, options), {"tl": _tl_on_torch(), "x": x})  # noqa: S307 - the template's own text
    if not isinstance(want, torch.Tensor) or want.shape != x.shape:
        return "the reference does not return one value per input value"
    if not torch.allclose(torch.as_tensor(got).float(), want.float(), rtol=1e-4, atol=1e-5, equal_nan=True):
        return f"its values are not the template's formula for {', '.join(ops)} (the operators apply to other values)"
    return ""

