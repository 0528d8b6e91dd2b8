"""The scan family's template: a cumulative sum or product along the last dim, from the row's start, from its end
(the reference flips the row, scans it and flips the result back) or exclusive (each output the scan of the values
before it: the reference scans all but the row's last value and puts the identity first), of one input or of the
product of two of one shape (a masked scan, `cumsum(x * mask)`).

`rows`: a program takes ROWS rows and walks them in BLOCK-long steps in the scan's order, each step scanned in
registers (`tl.associative_scan`) and offset by the running total carried from the steps before, which is the step's
last value in the scan's order. A reversed scan takes the row's steps from its end, each loaded in ascending whole
vectors and scanned from its end (`reverse=True`), so the result lands where the reference's second flip puts it:
one read and one write of the row, where the compiler seed's kernels for the flipped form scan into a buffer and flip
it in a second kernel (two reads and two writes: the public KernelBench's reversed cumsum at 44.7% of the H100's
floor, RESULTS.md (ba)). An exclusive scan loads each position's value from the one before it. Values accumulate in
fp32 and are stored in the input's dtype.
"""

from __future__ import annotations

import math
from string import Template
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernelopt.offline.moves import MoveInstance, Skipped
    from kernelopt.offline.moves.family import Family

OPS = {"cumsum": ("+", "0.0"), "cumprod": ("*", "1.0")}  # the combining operator and its identity

_SOURCE = '''"""$what along the last dim, ROWS rows a program in BLOCK-long steps, the running total carried
(a structural move of the offline optimizer)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

ROWS = 1
BLOCK = 4096


@triton.jit
def _combine(a, b):
    return a $op b


@triton.jit
def scan_kernel(out_ptr, x_ptr, m_ptr, rows, n, REVERSED: tl.constexpr, EXCLUSIVE: tl.constexpr, MASKED: tl.constexpr,
                ROWS: tl.constexpr, BLOCK: tl.constexpr):
    # Program p: rows p * ROWS.. scanned in BLOCK-long steps in the scan's order (from the row's end where REVERSED),
    # each step offset by the total of the steps before it; EXCLUSIVE: each output the scan of the values before it
    row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS).to(tl.int64)[:, None]
    cols = tl.arange(0, BLOCK)[None, :]
    carry = tl.full([ROWS, 1], $identity, tl.float32)
    for start in range(0, n, BLOCK):
        if REVERSED:  # the step [n - start - BLOCK, n - start): loaded in ascending vectors, scanned from its end
            offs = n - start - BLOCK + cols
            mask = (row < rows) & (offs >= 0)
        else:
            offs = start + cols
            mask = (row < rows) & (offs < n)
        at = offs - 1 if EXCLUSIVE else offs  # exclusive: each position takes the value before it (the first none)
        live = mask & (at >= 0) if EXCLUSIVE else mask
        x = tl.load(x_ptr + row * n + at, mask=live, other=$identity).to(tl.float32)
        if MASKED:  # the scanned values are the first input's times the second's (a bool mask: 0 or 1)
            x = tl.where(live, x * tl.load(m_ptr + row * n + at, mask=live, other=0).to(tl.float32), $identity)
        y = carry $op tl.associative_scan(x, 1, _combine, reverse=REVERSED)
        tl.store(out_ptr + row * n + offs, y.to(out_ptr.dtype.element_ty), mask=mask)
        # the step's total, its last value in the scan's order (past the row's ends the identity keeps it): picked
        carry = tl.sum(tl.where(cols == (0 if REVERSED else BLOCK - 1), y, 0.0), axis=1, keep_dims=True)


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, $params, *args):
        x = $param.contiguous()
        m = $mask.contiguous() if $masked else x  # the second input, of x's shape
        out = torch.empty_like(x)
        n = x.shape[-1]
        rows = x.numel() // max(n, 1)
        if x.numel():
            scan_kernel[(triton.cdiv(rows, ROWS),)](out, x, m, rows, n, REVERSED=$reversed, EXCLUSIVE=$exclusive,
                                                     MASKED=$masked, ROWS=ROWS, BLOCK=BLOCK, num_warps=4)
        return out
'''


def rows(op: str, form: str, params: tuple[str, ...]) -> str:
    """The kernel file of a cumulative `op` ("cumsum" or "cumprod") along the last dim of the input `params[0]` (times
    `params[1]` where given: a masked scan), in the `form` family_checks.SCAN_FORMS names."""
    combine, identity = OPS[op]
    what = {"forward": op, "reversed": f"Reversed {op} (from the row's end)", "exclusive": f"Exclusive {op}"}[form]
    what += " of the first input times the second" if len(params) > 1 else ""
    return Template(_SOURCE).substitute(what=what[0].upper() + what[1:], op=combine, identity=identity,
                                        reversed=form == "reversed", exclusive=form == "exclusive", param=params[0],
                                        params=", ".join(params), mask=params[-1], masked=len(params) > 1)


def scan_moves(family: Family) -> tuple[list[MoveInstance], list[Skipped]]:
    """`scan.rows` where the scanned dim is the last (its values contiguous); else why not."""
    from kernelopt.offline.moves import MoveInstance, Skipped

    assert family.dim is not None
    shape, dim, op, form = family.shapes[0], family.dim, family.ops[0], family.scalars[0]
    inner = math.prod(shape[dim + 1:])
    if inner != 1:
        return [], [Skipped("scan.rows", f"the scanned dim is strided by {inner}: the template scans contiguous rows")]
    n = shape[dim]
    grid = [{"ROWS": r, "BLOCK": b, "num_warps": w} for r in (1, 2, 4) for b in (4096, 2048, 8192, 1024)
            for w in (4, 8) if 8 <= r * b // (32 * w) <= 64 and b <= max(1024, 1 << (n - 1).bit_length())]
    grid.sort(key=lambda c: (abs(c["ROWS"] * c["BLOCK"] - 4096), c["ROWS"], c["num_warps"]))
    way = {"forward": "", "reversed": " from the row's end (each step scanned from its end)",
           "exclusive": " of the values before each position (exclusive)"}[form]
    why = (f"ROWS rows of {n} per program scanned in BLOCK-long steps{way}, the running total carried: one read and "
           "one write of each row")
    params = family.input_names[:2] if family.operands else family.input_names[:1]
    if family.operands:
        why += " (the second input loaded beside the first and multiplied in)"
    return [MoveInstance("scan.rows", why, rows(op, form, params), tuple(grid))], []
