"""Templates for standardising rows: (x - mean) / sqrt(var + eps) over the trailing dims from FIRST on
(InstanceNorm without affine: each (batch, channel) plane is a row of H x W contiguous values).

Statistics are exact and single-pass: each block (or piece) takes its own mean and sum of squared
deviations from values in registers, and blocks merge by Chan's formula, so inputs shifted by
-120 lose nothing to E[x^2] - E[x]^2 cancellation. Structures as for rows.py:
`rows_in_registers` (a whole row in registers, one read), `looped_online` (one statistics pass,
the output pass walking back through L2) and `one_read` (a row's pieces in registers, statistics
merged through a per-row counter; the interpreter takes the looped kernel).
"""

from __future__ import annotations

from string import Template

_HEADER = '''"""Row standardisation over dims $first.., $what (a structural move of the offline optimizer)."""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

$constants
eps = $eps  # the reference's epsilon (not a knob)
'''

_MODEL = '''

class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, $params):
        x = $x
        out = torch.empty_like(x)
        n = math.prod(x.shape[$first:])
        rows = x.numel() // max(n, 1)
$launch
        return out
'''

_LOOP = '''
@triton.jit
def row_loop_kernel(out_ptr, x_ptr, n, eps, BLOCK: tl.constexpr):
    # One row per program: blocks merged by Chan's formula, then the output walking back (L2).
    row = tl.program_id(0).to(tl.int64)
    base = row * n
    cols = tl.arange(0, BLOCK)
    count = tl.zeros((), tl.float32)
    mean = tl.zeros((), tl.float32)
    m2 = tl.zeros((), tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + cols
        mask = offs < n
        x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
        c = tl.sum(mask.to(tl.float32), axis=0)
        bm = tl.sum(x, axis=0) / c
        d = tl.where(mask, x - bm, 0.0)
        total = count + c
        delta = bm - mean
        mean += delta * (c / total)
        m2 += tl.sum(d * d, axis=0) + delta * delta * (count * c / total)
        count = total
    rstd = 1.0 / tl.sqrt(m2 / n + eps)
    last = ((n - 1) // BLOCK) * BLOCK
    for back in range(0, n, BLOCK):
        offs = last - back + cols
        mask = offs < n
        x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + base + offs, ((x - mean) * rstd).to(out_ptr.dtype.element_ty), mask=mask)
'''

_ROWS = '''
@triton.jit
def rows_kernel(out_ptr, x_ptr, n_rows, n, eps, ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    # ROWS whole rows per program in registers: exact mean, then exact variance, one read.
    row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS).to(tl.int64)[:, None]
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (row < n_rows) & (cols < n)
    x = tl.load(x_ptr + row * n + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=1)[:, None] / n
    d = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=1)[:, None] / n + eps)
    tl.store(out_ptr + row * n + cols, (d * rstd).to(out_ptr.dtype.element_ty), mask=mask)
'''

_ONE_READ = '''
@triton.jit
def one_read_kernel(out_ptr, x_ptr, mean_ptr, m2_ptr, count_ptr, n, eps, chunks,
                    CHUNK: tl.constexpr, PIECES: tl.constexpr):
    # Program row * chunks + piece: CHUNK values held in registers from the read to the write; a
    # row's pieces are consecutive programs, dispatched together.
    pid = tl.program_id(0).to(tl.int64)
    row = pid // chunks
    piece = pid % chunks
    offs = piece * CHUNK + tl.arange(0, CHUNK)
    mask = offs < n
    x = tl.load(x_ptr + row * n + offs, mask=mask, other=0.0).to(tl.float32)
    c = tl.sum(mask.to(tl.float32), axis=0)
    pm = tl.sum(x, axis=0) / c
    d = tl.where(mask, x - pm, 0.0)
    tl.store(mean_ptr + pid, pm)
    tl.store(m2_ptr + pid, tl.sum(d * d, axis=0))
    tl.debug_barrier()
    seen = tl.atomic_add(count_ptr + row, 1, sem="release") + 1
    while seen < chunks:
        seen = tl.atomic_add(count_ptr + row, 0, sem="acquire")
    tl.debug_barrier()
    idx = tl.arange(0, PIECES)
    live = idx < chunks
    counts = tl.where(live, tl.minimum(CHUNK, n - idx * CHUNK), 0).to(tl.float32)
    means = tl.load(mean_ptr + row * chunks + idx, mask=live, other=0.0, cache_modifier=".cg")
    m2s = tl.load(m2_ptr + row * chunks + idx, mask=live, other=0.0, cache_modifier=".cg")
    mean = tl.sum(counts * means, axis=0) / n
    spread = tl.where(live, means - mean, 0.0)
    m2 = tl.sum(m2s + counts * spread * spread, axis=0)
    rstd = 1.0 / tl.sqrt(m2 / n + eps)
    tl.store(out_ptr + row * n + offs, ((x - mean) * rstd).to(out_ptr.dtype.element_ty), mask=mask)
'''


def _file(what: str, constants: str, kernels: str, launch: str, first: int, eps: float, params: tuple[str, ...]) -> str:
    header = Template(_HEADER).substitute(first=first, what=what, constants=constants, eps=repr(float(eps)))
    return header + kernels + Template(_MODEL).substitute(params=", ".join(params), x=params[0], first=first,
                                                          launch=launch)


def rows_in_registers(first: int, eps: float, params: tuple[str, ...]) -> str:
    launch = """        rows_kernel[(triton.cdiv(rows, ROWS),)](out, x, rows, n, eps, ROWS=ROWS,
                                                 BLOCK_N=triton.next_power_of_2(max(n, 1)), num_warps=4)"""
    return _file("rows_in_registers: whole rows in registers, ROWS rows per program", "ROWS = 4", _ROWS, launch,
                 first, eps, params)


def looped_online(first: int, eps: float, params: tuple[str, ...]) -> str:
    launch = "        row_loop_kernel[(rows,)](out, x, n, eps, BLOCK=BLOCK, num_warps=8)"
    return _file("looped_online: one statistics pass, the output pass walking back", "BLOCK = 4096", _LOOP, launch,
                 first, eps, params)


def one_read(first: int, eps: float, params: tuple[str, ...]) -> str:
    launch = """        chunks = triton.cdiv(n, CHUNK)
        if x.is_cuda and chunks <= max_pieces:
            mean = torch.empty((rows, chunks), device=x.device, dtype=torch.float32)
            m2 = torch.empty((rows, chunks), device=x.device, dtype=torch.float32)
            count = torch.zeros((rows,), device=x.device, dtype=torch.int32)
            one_read_kernel[(chunks * rows,)](out, x, mean, m2, count, n, eps, chunks, CHUNK=CHUNK,
                                              PIECES=triton.next_power_of_2(chunks), num_warps=8)
        else:
            row_loop_kernel[(rows,)](out, x, n, eps, BLOCK=BLOCK, num_warps=8)"""
    constants = "CHUNK = 8192\nBLOCK = 4096\n# Not a knob (lower case): a row's pieces must all be resident at once.\n"
    return _file("one_read: a row's pieces in registers, statistics merged through a per-row counter",
                 constants + "max_pieces = 64", _ONE_READ + _LOOP, launch, first, eps, params)
