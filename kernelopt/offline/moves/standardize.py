"""Templates for standardising rows: (x - mean) / sqrt(var + eps) over the trailing dims from FIRST on
(InstanceNorm without affine: each (batch, channel) plane is a row of H x W contiguous values), then,
for a LayerNorm with elementwise affine, times its weight and plus its bias (each of the row's shape,
read at the row's offsets). An affine file keeps the reference's constructor, so its parameters are
the reference's own (names, shapes, a seeded init).

Statistics are exact and single-pass: each block (or piece) takes its own mean and sum of squared
deviations from values in registers, and blocks merge by Chan's formula, so inputs shifted by
-120 lose nothing to E[x^2] - E[x]^2 cancellation. Values are taken less the row's first one (its
pivot): a running mean merged at magnitude 120 block after block loses its low digits in fp32
(under the interpreter, a row of 16,384 near -120 in 1,024 blocks: 4.5e-5 off the truth without
the pivot, 6.3e-7 with it; PyTorch's own LayerNorm 1.1e-5).
Structures as for rows.py:
`rows_in_registers` (a whole row in registers, one read), `looped_online` (one statistics pass,
the output pass walking back through L2), `one_read` (a row's pieces in registers, statistics
merged through a per-row counter; the interpreter takes the looped kernel) and `split_row` (few
long rows: each row's pieces take their statistics in one kernel, and each piece merges its
row's and writes in a second).
"""

from __future__ import annotations

from dataclasses import dataclass
from string import Template

from kernelopt.offline.moves import resident


@dataclass(frozen=True)
class Affine:
    """A LayerNorm's weight and bias, as the kernel file reaches them."""

    init: str  # the reference's constructor (seed/writer.py:reference_init)
    weight: str  # `self.ln.weight`
    bias: str = "None"  # `self.ln.bias`, or None (LayerNorm(bias=False))
    per_channel: bool = False  # GroupNorm: one weight per channel of dim 1, not one per element of the row

_HEADER = '''"""Row standardisation over dims $first.., $what (a structural move of the offline optimizer)."""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

$constants
eps = $eps  # the reference's epsilon (not a knob)
groups = $groups  # rows per (batch) sample: GroupNorm's groups, else 1 (not a knob)
'''

_PLAIN_INIT = '''    def __init__(self, *args, **kwargs) -> None:
        super().__init__()
'''

_MODEL = '''

class ModelNew(nn.Module):
$init
    def forward(self, $params):
        x = $x
        out = torch.empty_like(x)
        n = math.prod(x.shape[$first:]) // groups
        rows = x.numel() // max(n, 1)
        plane = $plane  # the elements one weight covers: 1, or a channel's plane (GroupNorm)
        w, b = $weight, $bias  # the affine's weight and bias (None: no such term)
        w_in, b_in, has_w, has_b = x if w is None else w, x if b is None else b, w is not None, b is not None
$launch
        return out
'''

# Chan's formula, shared by every template that standardises (batchnorm.py too): a group's count,
# mean and squared deviations merged into the running ones (an empty group changes nothing), a
# block of values taken as such a group, and a row's pieces merged into its mean and variance.
CHAN = '''
@triton.jit
def chan_merge(count, mean, m2, k, bm, bm2):
    total = count + k
    delta = bm - mean
    mean += delta * (k / tl.maximum(total, 1.0))
    m2 += bm2 + delta * delta * (count * k / tl.maximum(total, 1.0))
    return total, mean, m2


@triton.jit
def chan_step(x, mask, count, mean, m2):
    k = tl.sum(mask.to(tl.float32), axis=0)
    bm = tl.sum(x, axis=0) / tl.maximum(k, 1.0)
    d = tl.where(mask, x - bm, 0.0)
    return chan_merge(count, mean, m2, k, bm, tl.sum(d * d, axis=0))


@triton.jit
def chan_pieces(counts, means, m2s, live):
    n = tl.sum(counts, axis=0)
    mean = tl.sum(counts * means, axis=0) / n
    spread = tl.where(live, means - mean, 0.0)
    return mean, tl.sum(m2s + counts * spread * spread, axis=0) / n
'''

_SCALED = '''
@triton.jit
def scaled(y, w_ptr, b_ptr, row, offs, first, mask, n, groups, plane, has_w: tl.constexpr, has_b: tl.constexpr,
           UNIFORM: tl.constexpr):
    # the standardised values times the weight plus the bias: one per element of the row (plane 1), or
    # one per channel of a group's channels (GroupNorm: row % groups is the group). UNIFORM: the block
    # (from `first` on) lies in one channel, as the launch found (plane a multiple of an aligned block):
    # one weight and one bias for it. Else each value's channel, divided in 32 bits (offsets within a row).
    if UNIFORM:  # a block past the row's end (a short last piece) reads the row's last weight, never past it
        widx = (row % groups) * (n // plane) + tl.minimum(first, n - 1) // plane
        if has_w:
            y = y * tl.load(w_ptr + widx).to(tl.float32)
        if has_b:
            y = y + tl.load(b_ptr + widx).to(tl.float32)
    else:
        widx = (row % groups) * (n // plane) + offs.to(tl.int32) // plane
        if has_w:
            y = y * tl.load(w_ptr + widx, mask=mask, other=0.0).to(tl.float32)
        if has_b:
            y = y + tl.load(b_ptr + widx, mask=mask, other=0.0).to(tl.float32)
    return y
'''

_LOOP = '''
@triton.jit
def row_loop_kernel(out_ptr, x_ptr, w_ptr, b_ptr, n, eps, groups, plane, BLOCK: tl.constexpr,
                    has_w: tl.constexpr, has_b: tl.constexpr, UNIFORM: tl.constexpr):
    # One row per program: blocks merged by Chan's formula, then the output walking back (L2).
    row = tl.program_id(0).to(tl.int64)
    base = row * n
    pivot = tl.load(x_ptr + base).to(tl.float32)
    cols = tl.arange(0, BLOCK)
    count = tl.zeros((), tl.float32)
    mean = tl.zeros((), tl.float32)
    m2 = tl.zeros((), tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + cols
        mask = offs < n
        x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
        count, mean, m2 = chan_step(tl.where(mask, x - pivot, 0.0), mask, count, mean, m2)
    rstd = 1.0 / tl.sqrt(m2 / n + eps)
    last = ((n - 1) // BLOCK) * BLOCK
    for back in range(0, n, BLOCK):
        offs = last - back + cols
        mask = offs < n
        x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
        y = scaled((x - pivot - mean) * rstd, w_ptr, b_ptr, row, offs, last - back, mask, n, groups, plane, has_w,
                   has_b, UNIFORM)
        tl.store(out_ptr + base + offs, y.to(out_ptr.dtype.element_ty), mask=mask)
'''

_ROWS = '''
@triton.jit
def rows_kernel(out_ptr, x_ptr, w_ptr, b_ptr, n_rows, n, eps, groups, plane, ROWS: tl.constexpr,
                BLOCK_N: tl.constexpr, has_w: tl.constexpr, has_b: tl.constexpr):
    # ROWS whole rows per program in registers: exact mean, then exact variance, one read.
    row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS).to(tl.int64)[:, None]
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (row < n_rows) & (cols < n)
    x = tl.load(x_ptr + row * n + cols, mask=mask, other=0.0).to(tl.float32)
    x = tl.where(mask, x - tl.load(x_ptr + row * n, mask=row < n_rows, other=0.0).to(tl.float32), 0.0)
    mean = tl.sum(x, axis=1)[:, None] / n
    d = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=1)[:, None] / n + eps)
    y = scaled(d * rstd, w_ptr, b_ptr, row, cols, 0, mask, n, groups, plane, has_w, has_b, False)  # rows span channels
    tl.store(out_ptr + row * n + cols, y.to(out_ptr.dtype.element_ty), mask=mask)
'''

_ONE_READ = Template('''
@triton.jit
def one_read_kernel(out_ptr, x_ptr, w_ptr, b_ptr, mean_ptr, m2_ptr, count_ptr, flag_ptr, row_ptr, n, eps, groups,
                    plane, chunks, CHUNK: tl.constexpr, PIECES: tl.constexpr, has_w: tl.constexpr,
                    has_b: tl.constexpr, UNIFORM: tl.constexpr, LAST: tl.constexpr):
    # Program row * chunks + piece: CHUNK values held in registers from the read to the write; a
    # row's pieces are consecutive programs, dispatched together. Offsets within a row are 32-bit:
    # no 64-bit compare a value, a third fewer instructions (Triton 3.6, sm_90; RESULTS.md (ar)).
    pid = tl.program_id(0).to(tl.int64)
    row = pid // chunks
    start = (pid % chunks * CHUNK).to(tl.int32)
    offs = start + tl.arange(0, CHUNK)
    mask = offs < n
    base = row * n
    x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
    x = tl.where(mask, x - tl.load(x_ptr + base).to(tl.float32), 0.0)  # less the row's pivot, its first value
    c = tl.minimum(n - start, CHUNK).to(tl.float32)
    pm = tl.sum(x, axis=0) / c
    d = tl.where(mask, x - pm, 0.0)
    tl.store(mean_ptr + pid, pm)
    tl.store(m2_ptr + pid, tl.sum(d * d, axis=0))
$merged
    y = scaled((x - mean) * rstd, w_ptr, b_ptr, row, offs, start, mask, n, groups, plane, has_w, has_b, UNIFORM)
    tl.store(out_ptr + base + offs, y.to(out_ptr.dtype.element_ty), mask=mask)
''').substitute(merged=resident.merged(  # the row's wait and merge, as rows.one_read's
    "    mean, rstd = row_statistics(mean_ptr, m2_ptr, row, n, eps, chunks, CHUNK, PIECES)", "mean", "rstd"))

# A row's pieces' statistics merged (one_read, and standardize_l2's l2_pieces): piece i holds values i * CHUNK on.
ROW_STATISTICS = '''

@triton.jit
def row_statistics(mean_ptr, m2_ptr, row, n, eps, chunks, CHUNK: tl.constexpr, PIECES: tl.constexpr):
    # the row's pieces' statistics (read through L2) merged by Chan's formula: its mean and 1 / sqrt(var + eps)
    idx = tl.arange(0, PIECES)
    live = idx < chunks
    counts = tl.where(live, tl.minimum(CHUNK, n - idx * CHUNK), 0).to(tl.float32)
    means = tl.load(mean_ptr + row * chunks + idx, mask=live, other=0.0, cache_modifier=".cg")
    m2s = tl.load(m2_ptr + row * chunks + idx, mask=live, other=0.0, cache_modifier=".cg")
    mean, var = chan_pieces(counts, means, m2s, live)
    return mean, 1.0 / tl.sqrt(var + eps)
'''


_SPLIT = '''
@triton.jit
def chunk_stats_kernel(mean_ptr, m2_ptr, x_ptr, n, chunks, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    # Program (row, piece): the mean and squared deviations of CHUNK values of one row, blocks merged by
    # Chan's formula (a block past the row's end counts nothing).
    row = tl.program_id(0).to(tl.int64)
    piece = tl.program_id(1)
    pivot = tl.load(x_ptr + row * n).to(tl.float32)
    cols = tl.arange(0, BLOCK)
    count = tl.zeros((), tl.float32)
    mean = tl.zeros((), tl.float32)
    m2 = tl.zeros((), tl.float32)
    for start in range(0, CHUNK, BLOCK):
        offs = piece * CHUNK + start + cols
        mask = offs < n
        if CHUNK % BLOCK != 0:  # the piece's last block stops at its end (the next piece's values are its own)
            mask = mask & (start + cols < CHUNK)
        x = tl.load(x_ptr + row * n + offs, mask=mask, other=0.0).to(tl.float32)
        count, mean, m2 = chan_step(tl.where(mask, x - pivot, 0.0), mask, count, mean, m2)
    tl.store(mean_ptr + row * chunks + piece, mean)
    tl.store(m2_ptr + row * chunks + piece, m2)


@triton.jit
def chunk_write_kernel(out_ptr, x_ptr, w_ptr, b_ptr, mean_ptr, m2_ptr, n, eps, groups, plane, chunks,
                       CHUNK: tl.constexpr, BLOCK: tl.constexpr, PIECES: tl.constexpr, has_w: tl.constexpr,
                       has_b: tl.constexpr, UNIFORM: tl.constexpr):
    # Program (row, piece): the row's piece statistics merged, then this piece standardised and written.
    # Taken in the reverse of the statistics kernel's order: the pieces it read last, still in L2, are read first.
    row = (tl.num_programs(0) - 1 - tl.program_id(0)).to(tl.int64)
    piece = tl.num_programs(1) - 1 - tl.program_id(1)
    idx = tl.arange(0, PIECES)
    live = idx < chunks
    counts = tl.where(live, tl.minimum(CHUNK, n - idx * CHUNK), 0).to(tl.float32)
    means = tl.load(mean_ptr + row * chunks + idx, mask=live, other=0.0)
    m2s = tl.load(m2_ptr + row * chunks + idx, mask=live, other=0.0)
    mean, var = chan_pieces(counts, means, m2s, live)
    pivot = tl.load(x_ptr + row * n).to(tl.float32)  # the pieces' means are less the row's first value
    rstd = 1.0 / tl.sqrt(var + eps)
    cols = tl.arange(0, BLOCK)
    for start in range(0, CHUNK, BLOCK):
        offs = piece * CHUNK + start + cols
        mask = offs < n
        if CHUNK % BLOCK != 0:  # the piece's last block stops at its end (the next piece's values are its own)
            mask = mask & (start + cols < CHUNK)
        x = tl.load(x_ptr + row * n + offs, mask=mask, other=0.0).to(tl.float32)
        y = scaled((x - pivot - mean) * rstd, w_ptr, b_ptr, row, offs, piece * CHUNK + start, mask, n, groups, plane,
                   has_w, has_b, UNIFORM)
        tl.store(out_ptr + row * n + offs, y.to(out_ptr.dtype.element_ty), mask=mask)
'''


def _file(what: str, constants: str, kernels: str, launch: str, first: int, eps: float, params: tuple[str, ...],
          affine: Affine | None, groups: int) -> str:
    header = Template(_HEADER).substitute(first=first, what=what + (", times the weight plus the bias" if affine
                                                                    else ""),
                                          constants=constants, eps=repr(float(eps)), groups=groups)
    chosen = affine or Affine(_PLAIN_INIT, "None", "None")
    model = Template(_MODEL).substitute(params=", ".join(params), x=params[0], first=first, launch=launch,
                                        init=chosen.init, weight=chosen.weight, bias=chosen.bias,
                                        plane="math.prod(x.shape[2:])" if chosen.per_channel else "1")
    return header + CHAN + _SCALED + kernels + model


def rows_in_registers(first: int, eps: float, params: tuple[str, ...], affine: Affine | None = None,
                      groups: int = 1) -> str:
    launch = """        rows_kernel[(triton.cdiv(rows, ROWS),)](out, x, w_in, b_in, rows, n, eps, groups, plane,
                                                 ROWS=ROWS, BLOCK_N=triton.next_power_of_2(max(n, 1)), has_w=has_w,
                                                 has_b=has_b, num_warps=4)"""
    return _file("rows_in_registers: whole rows in registers, ROWS rows per program", "ROWS = 4", _ROWS, launch,
                 first, eps, params, affine, groups)


# UNIFORM: each block lies in one channel (GroupNorm's planes, a multiple of the aligned block): a weight a block
_LOOP_LAUNCH = ("row_loop_kernel[(rows,)](out, x, w_in, b_in, n, eps, groups, plane, BLOCK=BLOCK, has_w=has_w, "
                "has_b=has_b, UNIFORM=plane % BLOCK == 0, num_warps=8)")


def looped_online(first: int, eps: float, params: tuple[str, ...], affine: Affine | None = None,
                  groups: int = 1) -> str:
    return _file("looped_online: one statistics pass, the output pass walking back", "BLOCK = 4096", _LOOP,
                 "        " + _LOOP_LAUNCH, first, eps, params, affine, groups)


# A launch of pieces that wait for each other (one_read, standardize_l2.l2_pieces): the pieces' statistics, the
# rows' counters and flags, and the kernel's arguments, made on the GPU only
PIECE_BUFFERS = """        chunks = triton.cdiv(n, CHUNK)
        warps = 8
        if x.is_cuda:
            mean = torch.empty((rows, chunks), device=x.device, dtype=torch.float32)
            m2 = torch.empty((rows, chunks), device=x.device, dtype=torch.float32)
            count, flag = torch.zeros((2, rows), device=x.device, dtype=torch.int32)  # flag: LAST_MERGES's
            row_stats = torch.empty((rows, 2), device=x.device, dtype=torch.float32)
            args = (out, x, w_in, b_in, mean, m2, count, flag, row_stats, n, eps, groups, plane, chunks)
"""


def one_read(first: int, eps: float, params: tuple[str, ...], affine: Affine | None = None,
             groups: int = 1) -> str:
    launch = PIECE_BUFFERS + """\
            meta = {"CHUNK": CHUNK, "PIECES": triton.next_power_of_2(chunks), "has_w": has_w, "has_b": has_b,
                    "UNIFORM": plane % CHUNK == 0, "LAST": LAST_MERGES == 1}
        # a row's pieces wait for each other: all of them must be resident at once
        if x.is_cuda and chunks <= resident_programs(one_read_kernel, x.device, args, meta, warps):
            one_read_kernel[(chunks * rows,)](*args, **meta, num_warps=warps)
        else:  # the looped kernel, stepping by the piece: CHUNK is the file's one size knob
            """ + _LOOP_LAUNCH.replace("BLOCK=BLOCK", "BLOCK=CHUNK").replace("% BLOCK", "% CHUNK")
    # LAST_MERGES = 1: a row's last piece merges its pieces' statistics and the others read two values, where each
    # piece merging every piece's (0) reads pieces^2 values a row (a row of many pieces)
    return _file("one_read: a row's pieces in registers, statistics merged through a per-row counter",
                 "CHUNK = 4096\nLAST_MERGES = 0", _ONE_READ + ROW_STATISTICS + _LOOP + resident.SOURCE, launch,
                 first, eps, params, affine, groups)


def split_row(first: int, eps: float, params: tuple[str, ...], affine: Affine | None = None,
              groups: int = 1) -> str:
    """Each row split into CHUNK pieces: piece statistics, then each piece merges its row's and writes."""
    launch = """        chunks = triton.cdiv(n, CHUNK)
        mean = torch.empty((rows, chunks), device=x.device, dtype=torch.float32)
        m2 = torch.empty((rows, chunks), device=x.device, dtype=torch.float32)
        chunk_stats_kernel[(rows, chunks)](mean, m2, x, n, chunks, CHUNK=CHUNK, BLOCK=BLOCK, num_warps=8)
        chunk_write_kernel[(rows, chunks)](out, x, w_in, b_in, mean, m2, n, eps, groups, plane, chunks, CHUNK=CHUNK,
                                           BLOCK=BLOCK,
                                           PIECES=triton.next_power_of_2(chunks), has_w=has_w, has_b=has_b,
                                           UNIFORM=plane % BLOCK == 0 and CHUNK % BLOCK == 0,
                                           num_warps=8)"""
    return _file("split_row: each row split in CHUNK pieces, statistics then writing in two stages",
                 "CHUNK = 65536\nBLOCK = 4096", _SPLIT, launch, first, eps, params, affine, groups)
