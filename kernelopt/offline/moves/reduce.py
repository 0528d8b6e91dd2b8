"""Templates for a reduction along one dimension: sum, mean, prod, max, min (values), argmax, argmin,
the 1- and 2-norm, logsumexp.

The input is seen as (outer, n, inner) around the reduced dimension, so any rank and any dim
works; each of the `outer * inner` outputs reduces n values. Two structures:

- `rows`: the reduced dim is the last (inner == 1): a program takes ROWS rows and walks them in
  BLOCK-long contiguous steps, each row's running value in registers.
- `columns`: the reduced dim is strided by `inner`: a program takes BLOCK_I contiguous positions
  after it and walks the n rows down in BLOCK_N steps, so every load is BLOCK_I contiguous
  values where a program per output would read one value every `inner`.

Sums and products accumulate in fp32 (mean divides once at the end); max and min propagate NaN as torch
does (tl.max and tl.min drop it, so a block's NaN is carried apart); logsumexp keeps a running max
and rescales its sum of exponentials when the max grows (one pass); argmax and argmin keep the
first index of the extreme value (strictly better values replace it, a block's own first index
comes from tl.argmax/argmin). Offsets are int64.
"""

from __future__ import annotations

from string import Template

# Per reduction: the start value, how a block's values fold into the running one, the output.
OPS = ("sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "norm1", "norm2", "logsumexp")
_START = {"sum": "0.0", "sumabs": "0.0", "sumsq": "0.0", "prod": "1.0", "max": "float('-inf')",
          "min": "float('inf')", "logsumexp": "float('-inf')"}
_KIND = {"sum": "sum", "mean": "sum", "prod": "prod", "max": "max", "amax": "max", "min": "min", "amin": "min",
         "argmax": "argmax", "argmin": "argmin", "norm1": "sumabs", "norm2": "sumsq", "logsumexp": "logsumexp"}

_HEADER = '''"""$doc"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

$constants
'''
_TIMES = '''

@triton.jit
def _times(a, b):
    return a * b
'''


def _fold(kind: str, axis: int) -> str:
    """Lines folding a block `x` (masked) into the running `acc` (and `idx`), along `axis`."""
    if kind in ("sum", "sumabs", "sumsq"):
        term = {"sum": "x", "sumabs": "tl.abs(x)", "sumsq": "x * x"}[kind]
        return f"        acc += tl.sum(tl.where(mask, {term}, 0.0), axis={axis})"
    if kind == "logsumexp":  # online: the running max, and the sum of exp(x - max) rescaled as it grows
        spread = "grown[:, None]" if axis == 1 else "grown[None, :]"
        # a max of -inf so far (masked values), or +inf: the exps are taken against 0, so they come out 0
        # and inf, where exp(-inf - -inf) and exp(inf - inf) were NaN (torch gives -inf and inf)
        return (f"        block = tl.where(mask, x, float('-inf'))\n"
                f"        grown = tl.maximum(acc, tl.max(block, axis={axis}))\n"
                f"        safe = tl.where(tl.abs(grown) == float('inf'), 0.0, grown)\n"
                f"        terms = tl.where(mask, tl.exp(x - {spread.replace('grown', 'safe')}), 0.0)\n"
                f"        s = s * tl.exp(acc - safe) + tl.sum(terms, axis={axis})\n"
                f"        acc = grown")
    if kind == "prod":
        return f"        acc *= tl.reduce(tl.where(mask, x, 1.0), {axis}, _times)"
    if kind in ("max", "min"):
        fill = "float('-inf')" if kind == "max" else "float('inf')"
        op = "tl.maximum" if kind == "max" else "tl.minimum"
        return (f"        block = tl.where(mask, x, {fill})\n"
                f"        nan = tl.max((block != block).to(tl.int32), axis={axis}) > 0  # tl.{kind} drops NaN\n"
                f"        block_{kind} = tl.where(nan, float('nan'), tl.{kind}(block, axis={axis}))\n"
                f"        acc = {op}(acc, block_{kind}, propagate_nan=tl.PropagateNan.ALL)")
    word = kind.removeprefix("arg")
    fill = "float('-inf')" if word == "max" else "float('inf')"
    better = ">" if word == "max" else "<"
    return (f"        block = tl.where(mask, x, {fill})\n"
            f"        best = tl.{word}(block, axis={axis})\n"
            f"        at = tl.{kind}(block, axis={axis}, tie_break_left=True).to(tl.int64) + start\n"
            f"        take = best {better} acc\n"
            f"        idx = tl.where(take, at, idx)\n"
            f"        acc = tl.where(take, best, acc)")


def _start(kind: str, shape: str) -> str:
    value = _START[kind.removeprefix("arg")]
    lines = f"    acc = tl.full({shape}, {value}, tl.float32)"
    if kind.startswith("arg"):
        lines += f"\n    idx = tl.zeros({shape}, tl.int64)"
    if kind == "logsumexp":
        lines += f"\n    s = tl.zeros({shape}, tl.float32)"
    return lines


def _result(op: str) -> str:
    if op == "mean":
        return "acc / n"
    if op == "norm2":
        return "tl.sqrt(acc)"
    if op == "logsumexp":
        return "acc + tl.log(s)"
    return "idx" if op.startswith("arg") else "acc"


_ROWS = '''

@triton.jit
def rows_kernel(out_ptr, x_ptr, rows, n, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    # Program p: rows p * ROWS ... of the (rows, n) view, each walked in BLOCK-long contiguous steps.
    r = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)).to(tl.int64)
    steps = tl.arange(0, BLOCK)
$start
    for start in range(0, n, BLOCK):
        c = start + steps
        mask = (r[:, None] < rows) & (c[None, :] < n)
        x = tl.load(x_ptr + r[:, None] * n + c[None, :], mask=mask, other=0.0).to(tl.float32)
$fold
    tl.store(out_ptr + r, ($result).to(out_ptr.dtype.element_ty), mask=r < rows)
'''

_COLUMNS = '''

@triton.jit
def columns_kernel(out_ptr, x_ptr, n, inner, BLOCK_N: tl.constexpr, BLOCK_I: tl.constexpr):
    # Program (outer, block): BLOCK_I contiguous positions of the (outer, n, inner) view, reduced
    # down n in BLOCK_N-row steps: every load is BLOCK_I contiguous values.
    o = tl.program_id(0).to(tl.int64)
    cols = (tl.program_id(1) * BLOCK_I + tl.arange(0, BLOCK_I)).to(tl.int64)
    base = o * n * inner
    steps = tl.arange(0, BLOCK_N)
$start
    for start in range(0, n, BLOCK_N):
        r = start + steps
        mask = (r[:, None] < n) & (cols[None, :] < inner)
        x = tl.load(x_ptr + base + r[:, None].to(tl.int64) * inner + cols[None, :], mask=mask,
                    other=0.0).to(tl.float32)
$fold
    tl.store(out_ptr + o * inner + cols, ($result).to(out_ptr.dtype.element_ty), mask=cols < inner)
'''

_MODEL = '''

class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, $params):
        x = $x  # contiguous, as the problem makes it
        dim = $dim
        n = x.shape[dim]
        inner = math.prod(x.shape[dim + 1:])
        outer = x.numel() // max(n * inner, 1)
        shape = list(x.shape)
        $shape
        out = torch.empty(shape, device=x.device, dtype=$out_dtype)
$launch
        return out
'''

_LAUNCH_ROWS = """        grid = (triton.cdiv(outer, ROWS),)
        rows_kernel[grid](out, x, outer, n, ROWS=ROWS, BLOCK=BLOCK, num_warps=4)"""
_LAUNCH_COLUMNS = """        grid = (outer, triton.cdiv(inner, BLOCK_I))
        columns_kernel[grid](out, x, n, inner, BLOCK_N=BLOCK_N, BLOCK_I=BLOCK_I, num_warps=4)"""


def _file(op: str, structure: str, dim: int, keepdim: bool, params: tuple[str, ...]) -> str:
    kind = _KIND[op]
    if structure == "rows":
        kernel, launch, constants, axis, shape = _ROWS, _LAUNCH_ROWS, "ROWS = 4\nBLOCK = 1024", 1, "(ROWS,)"
        what = "rows: ROWS whole rows per program, walked in BLOCK-long contiguous steps"
    else:
        kernel, launch, axis, shape = _COLUMNS, _LAUNCH_COLUMNS, 0, "(BLOCK_I,)"
        constants = "BLOCK_N = 16\nBLOCK_I = 128"
        what = "columns: BLOCK_I contiguous positions per program, reduced down the strided dim"
    body = Template(kernel).substitute(start=_start(kind, shape), fold=_fold(kind, axis), result=_result(op))
    out_dtype = "torch.int64" if op.startswith("arg") else "x.dtype"
    kept = "shape[dim] = 1  # keepdim" if keepdim else "del shape[dim]"
    model = Template(_MODEL).substitute(params=", ".join(params), x=params[0], dim=dim, shape=kept,
                                       out_dtype=out_dtype, launch=launch)
    doc = f"{op} along dim {dim}, {what} (a structural move of the offline optimizer)."
    helper = _TIMES if kind == "prod" else ""
    return Template(_HEADER).substitute(doc=doc, constants=constants) + helper + body + model


def rows(op: str, dim: int, keepdim: bool, params: tuple[str, ...]) -> str:
    """The reduction when the reduced dim is the last: ROWS rows per program."""
    return _file(op, "rows", dim, keepdim, params)


def columns(op: str, dim: int, keepdim: bool, params: tuple[str, ...]) -> str:
    """The reduction down a strided dim: BLOCK_I contiguous positions per program."""
    return _file(op, "columns", dim, keepdim, params)
