"""Templates for row-wise work: softmax, log-softmax, L1 and L2 normalisation along one dimension.

Each is a complete kernel file (a KernelBench ModelNew). The input is seen as (outer, n, inner)
around the reduced dimension, so any rank and any dim works; rows are `outer * inner`. Three
structures, each fitting a range of row lengths:

- `rows_in_registers`: a program holds ROWS whole rows in registers (n up to 16K): one read,
  one write, statistics in a single pass. Short rows get several per program so that a program
  still moves enough bytes.
- `looped_online`: a program walks one row in blocks: a single statistics pass (an online
  max and rescaled sum for softmax; a running sum for the norms), then the writing pass walks
  the row backwards, so its first blocks are the ones just read and still in L2.
- `looped_resident`: as `looped_online`, but PROGRAMS persistent programs walk the rows, so the rows
  in flight fit L2 (a row per SM of 256 KB is 34 MB): the statistics pass keeps the row in L2, and the
  writing pass reads it from there, where a program per row leaves more rows in flight than L2 holds.
- `split_row`: few long rows leave most SMs idle with a program per row; each row is split into
  CHUNK-long pieces, a first kernel takes each piece's statistics, a second merges the row's
  pieces and writes its own piece (a split reduction in two stages).

- `one_read`: on a GPU, a row's pieces run at once, each holding its piece in registers; they
  publish their statistics, wait on a per-row counter until every piece of the row has, merge
  and write from registers: one read and one write, where the others read a long row twice.
  A row's pieces are consecutive programs, and a row has no more pieces than the GPU holds programs
  at once (read from the compiled kernel at launch: moves/resident.py), so every piece a program
  waits on is resident, done or next: programs are dispatched in order, and the kernel has the GPU
  to itself (processes time-slice it; an MPS neighbour that also waits on its own pieces could hold
  SMs this row needs). Rows with more pieces, and the interpreter (which runs programs one at a
  time), take `looped_online`.

All offsets are int64: rows of the project's problems reach 8.6 GB inputs.
"""

from __future__ import annotations

from string import Template

from kernelopt.offline.moves import resident
from kernelopt.offline.moves import rows_aligned as aligned

# Per family: the statistics each pass keeps, how two blocks' statistics merge, and the output.
# `a` is the running statistic, `b` the block's; softmax keeps (max, sum of exp(x - max)).
_STATS = {
    "softmax": "online",
    "log_softmax": "online",
    "row_l1_norm": "sum_abs",
    "row_l2_norm": "sum_sq",
    "row_rms_norm": "sum_sq",
}
_OUTPUT = {
    "softmax": "tl.exp(x - m) / s",
    "log_softmax": "x - m - tl.log(s)",
    "row_l1_norm": "x / (s / n)",
    "row_l2_norm": "x / tl.sqrt(s)",
    "row_rms_norm": "x / tl.sqrt(s / n + EPS)",  # EPS: the reference's epsilon, written in as a literal
}


def _out(family: str, eps: float | None) -> str:
    return _OUTPUT[family].replace("EPS", repr(float(eps or 0.0)))
_TERM = {"sum_abs": "tl.abs(x)", "sum_sq": "x * x"}

FAMILIES = tuple(_STATS)

_HEADER = '''"""$doc"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

$constants
'''

# A block's statistics into (m, s): online softmax rescales the running sum when the max grows.
# Values of -inf (masked logits) so far give a max of -inf: the exps are taken against 0 then, so they
# come out 0, where exp(-inf - -inf) would be NaN and spread to the whole row.
_ONLINE_BLOCK = """        blk_max = tl.max(x, axis=0)
        new_m = tl.maximum(m, blk_max)
        safe = tl.where(new_m == float('-inf'), 0.0, new_m)
        s = s * tl.exp(m - safe) + tl.sum(tl.where(mask, tl.exp(x - safe), 0.0), axis=0)
        m = new_m"""
_SUM_BLOCK = "        s += tl.sum(tl.where(mask, $term, 0.0), axis=0)"

_MODEL = '''

class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, $params):
        out = torch.empty_like($x)
        n = $x.shape[$dim]
        inner = math.prod($x.shape[$dim + 1:])
        rows = $x.numel() // max(n, 1)
$launch
        return out
'''


def _stats_loop(stats: str, indent: str = "") -> str:
    body = _ONLINE_BLOCK if stats == "online" else Template(_SUM_BLOCK).substitute(term=_TERM[stats])
    return "\n".join(indent + line for line in body.splitlines())


def _init(stats: str, shape: str = "()") -> str:
    neg = f"tl.full({shape}, float('-inf'), tl.float32)"
    zero = f"tl.zeros({shape}, tl.float32)"
    return f"m = {neg if stats == 'online' else zero}\n    s = {zero}"


def _other(stats: str) -> str:
    return "float('-inf')" if stats == "online" else "0.0"


def rows_in_registers(family: str, dim: int, params: tuple[str, ...], eps: float | None = None) -> str:
    """ROWS whole rows per program, held in registers: one read, one write."""
    stats, out = _STATS[family], _out(family, eps)
    reduce_ = (
        "m = tl.max(x, axis=1)[:, None]\n        s = tl.sum(tl.where(mask, tl.exp(x - m), 0.0), axis=1)[:, None]"
        if stats == "online"
        else "m = tl.zeros((ROWS, 1), tl.float32)\n"
        f"        s = tl.sum(tl.where(mask, {_TERM[stats]}, 0.0), axis=1)[:, None]"
    )
    other = _other(stats)
    kernel = f'''
@triton.jit
def rows_kernel(out_ptr, x_ptr, n_rows, n, inner, ROWS: tl.constexpr, BLOCK_N: tl.constexpr, VEC: tl.constexpr = 1):
    # ROWS rows of the (outer, n, inner) view per program, each a whole row of n in registers.
    row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS).to(tl.int64)[:, None]
    if VEC > 1:
{aligned.registers_block(stats, out, _TERM.get(stats, ''), other)}
    else:
        cols = tl.arange(0, BLOCK_N)[None, :]
        base = (row // inner) * n * inner + row % inner
        mask = (row < n_rows) & (cols < n)
        x = tl.load(x_ptr + base + cols.to(tl.int64) * inner, mask=mask, other={other}).to(tl.float32)
        {reduce_}
        y = {out}
        tl.store(out_ptr + base + cols.to(tl.int64) * inner, y.to(out_ptr.dtype.element_ty), mask=mask)
'''
    # VECTORS: rows off a 16-byte boundary in aligned vectors (1) or value by value (0); neither wins on every shape
    # (the H200, rows of 4,095 fp32 at ROWS 4: 0.403 ms in vectors, 0.325 value by value), so the sweep measures both.
    launch = """        block_n = triton.next_power_of_2(max(n, 1))
        rows_kernel[(triton.cdiv(rows, ROWS),)](out, x_in, rows, n, inner, ROWS=ROWS, BLOCK_N=block_n,
                                                 VEC=aligned_vector(x_in, n, inner) if VECTORS else 1, num_warps=4)"""
    return _file(family, "rows_in_registers: whole rows in registers, ROWS rows per program",
                 "ROWS = 4\nVECTORS = 1  # 0: 4-byte accesses on rows off a 16-byte boundary",
                 kernel + aligned.ALIGNED_VECTOR, launch, dim, params)


def looped_online(family: str, dim: int, params: tuple[str, ...], eps: float | None = None) -> str:
    """One program per row: one statistics pass in blocks, then a writing pass walking back."""
    stats, out = _STATS[family], _out(family, eps)
    kernel = f'''
@triton.jit
def row_loop_kernel(out_ptr, x_ptr, n, inner, BLOCK: tl.constexpr):
    # One row per program: statistics in one pass, then the output walking the row backwards so
    # that the first blocks written are the last read, still in L2.
    row = tl.program_id(0).to(tl.int64)
    base = (row // inner) * n * inner + row % inner
    cols = tl.arange(0, BLOCK)
    {_init(stats)}
    for start in range(0, n, BLOCK):
        offs = start + cols
        mask = offs < n
        x = tl.load(x_ptr + base + offs.to(tl.int64) * inner, mask=mask, other={_other(stats)}).to(tl.float32)
{_stats_loop(stats)}
    last = ((n - 1) // BLOCK) * BLOCK
    for back in range(0, n, BLOCK):
        offs = last - back + cols
        mask = offs < n
        x = tl.load(x_ptr + base + offs.to(tl.int64) * inner, mask=mask, other=0.0).to(tl.float32)
        y = {out}
        tl.store(out_ptr + base + offs.to(tl.int64) * inner, y.to(out_ptr.dtype.element_ty), mask=mask)
'''
    launch = "        row_loop_kernel[(rows,)](out, x_in, n, inner, BLOCK=BLOCK, num_warps=8)"
    return _file(family, "looped_online: one row per program, one statistics pass, the output pass walking back",
                 "BLOCK = 4096", kernel, launch, dim, params)


def looped_resident(family: str, dim: int, params: tuple[str, ...], eps: float | None = None) -> str:
    """PROGRAMS persistent programs, a row each at a time: the rows in flight fit L2, so the writing
    pass reads each row again from L2 rather than from memory."""
    stats, out = _STATS[family], _out(family, eps)
    kernel = f'''
@triton.jit
def row_resident_kernel(out_ptr, x_ptr, n_rows, n, inner, BLOCK: tl.constexpr):
    # Program p takes rows p, p + PROGRAMS, ...: PROGRAMS rows in flight, together smaller than L2. The
    # statistics pass asks L2 to keep the row (evict_last); the writing pass walks it back, the blocks
    # read last first, and the output streams past it (evict_first).
    cols = tl.arange(0, BLOCK)
    last = ((n - 1) // BLOCK) * BLOCK
    for r in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        row = tl.zeros((), tl.int64) + r  # int64 offsets (a Python int under the interpreter)
        base = (row // inner) * n * inner + row % inner
        {_init(stats).replace(chr(10) + "    ", chr(10) + "        ")}
        for start in range(0, n, BLOCK):
            offs = start + cols
            mask = offs < n
            x = tl.load(x_ptr + base + offs.to(tl.int64) * inner, mask=mask, other={_other(stats)},
                        eviction_policy="evict_last").to(tl.float32)
{_stats_loop(stats, "    ")}
        for back in range(0, n, BLOCK):
            offs = last - back + cols
            mask = offs < n
            x = tl.load(x_ptr + base + offs.to(tl.int64) * inner, mask=mask, other=0.0,
                        eviction_policy="evict_first").to(tl.float32)
            y = {out}
            tl.store(out_ptr + base + offs.to(tl.int64) * inner, y.to(out_ptr.dtype.element_ty), mask=mask,
                     eviction_policy="evict_first")
'''
    launch = """        row_resident_kernel[(max(1, min(rows, PROGRAMS)),)](out, x_in, rows, n, inner, BLOCK=BLOCK,
                                                             num_warps=16)"""
    return _file(family, "looped_resident: PROGRAMS persistent programs, the rows in flight held in L2 between the "
                 "statistics pass and the writing pass", "BLOCK = 8192\nPROGRAMS = 132", kernel, launch, dim, params)


def split_row(family: str, dim: int, params: tuple[str, ...], eps: float | None = None) -> str:
    """Each row split into CHUNK pieces: piece statistics, then each piece merges its row's and writes."""
    stats, out = _STATS[family], _out(family, eps)
    if stats == "online":
        merge = """    pm = tl.load(m_ptr + row * chunks + idx, mask=live, other=float('-inf'))
    ps = tl.load(s_ptr + row * chunks + idx, mask=live, other=0.0)
    m = tl.max(pm, axis=0)
    s = tl.sum(tl.where(live, ps * tl.exp(pm - m), 0.0), axis=0)"""
    else:
        merge = """    m = 0.0
    s = tl.sum(tl.load(s_ptr + row * chunks + idx, mask=live, other=0.0), axis=0)"""
    kernel = f'''
@triton.jit
def chunk_stats_kernel(m_ptr, s_ptr, x_ptr, n, inner, chunks, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    # Program (row, piece): the statistics of CHUNK values of one row.
    row = tl.program_id(0).to(tl.int64)
    piece = tl.program_id(1)
    base = (row // inner) * n * inner + row % inner
    cols = tl.arange(0, BLOCK)
    {_init(stats)}
    for start in range(0, CHUNK, BLOCK):
        offs = piece * CHUNK + start + cols
        mask = offs < n
        if CHUNK % BLOCK != 0:  # the piece's last block stops at its end (the next piece's values are its own)
            mask = mask & (start + cols < CHUNK)
        x = tl.load(x_ptr + base + offs.to(tl.int64) * inner, mask=mask, other={_other(stats)}).to(tl.float32)
{_stats_loop(stats)}
    tl.store(m_ptr + row * chunks + piece, m)
    tl.store(s_ptr + row * chunks + piece, s)


@triton.jit
def chunk_write_kernel(out_ptr, x_ptr, m_ptr, s_ptr, n, inner, chunks,
                       CHUNK: tl.constexpr, BLOCK: tl.constexpr, PIECES: tl.constexpr):
    # Program (row, piece): merge the row's piece statistics, then write this piece.
    # Taken in the reverse of the statistics kernel's order: the pieces it read last, still in L2, are read first.
    row = (tl.num_programs(0) - 1 - tl.program_id(0)).to(tl.int64)
    piece = tl.num_programs(1) - 1 - tl.program_id(1)
    base = (row // inner) * n * inner + row % inner
    idx = tl.arange(0, PIECES)
    live = idx < chunks
{merge}
    cols = tl.arange(0, BLOCK)
    for start in range(0, CHUNK, BLOCK):
        offs = piece * CHUNK + start + cols
        mask = offs < n
        if CHUNK % BLOCK != 0:  # the piece's last block stops at its end (the next piece's values are its own)
            mask = mask & (start + cols < CHUNK)
        x = tl.load(x_ptr + base + offs.to(tl.int64) * inner, mask=mask, other=0.0).to(tl.float32)
        y = {out}
        tl.store(out_ptr + base + offs.to(tl.int64) * inner, y.to(out_ptr.dtype.element_ty), mask=mask)
'''
    launch = """        chunks = triton.cdiv(n, CHUNK)
        m = torch.empty((rows, chunks), device=x_in.device, dtype=torch.float32)
        s = torch.empty((rows, chunks), device=x_in.device, dtype=torch.float32)
        chunk_stats_kernel[(rows, chunks)](m, s, x_in, n, inner, chunks, CHUNK=CHUNK, BLOCK=BLOCK, num_warps=8)
        chunk_write_kernel[(rows, chunks)](out, x_in, m, s, n, inner, chunks, CHUNK=CHUNK, BLOCK=BLOCK,
                                           PIECES=triton.next_power_of_2(chunks), num_warps=8)"""
    return _file(family, "split_row: each row split in CHUNK pieces, statistics then writing in two stages",
                 "CHUNK = 65536\nBLOCK = 4096", kernel, launch, dim, params)


_PIECES = """    idx = tl.arange(0, PIECES)
    live = idx < chunks
"""


def piece_merge(stats: str) -> str:
    """A row's pieces' statistics (read through L2, after the wait) merged into its (m, s): one_read's and
    rows_l2.l2_pieces's."""
    if stats == "online":
        return """    pm = tl.load(m_ptr + row * chunks + idx, mask=live, other=float('-inf'), cache_modifier=".cg")
    ps = tl.load(s_ptr + row * chunks + idx, mask=live, other=0.0, cache_modifier=".cg")
    m = tl.max(pm, axis=0)
    s = tl.sum(tl.where(live, ps * tl.exp(pm - m), 0.0), axis=0)"""
    return """    m = 0.0
    s = tl.sum(tl.load(s_ptr + row * chunks + idx, mask=live, other=0.0, cache_modifier=".cg"), axis=0)"""


def one_read(family: str, dim: int, params: tuple[str, ...], eps: float | None = None) -> str:
    """Pieces of a row in registers, statistics merged through a per-row counter: one read."""
    stats, out = _STATS[family], _out(family, eps)
    merge = piece_merge(stats)
    if stats == "online":
        own = ("m = tl.max(x)\n"
               "    s = tl.sum(tl.where(mask, tl.exp(x - tl.where(m == float('-inf'), 0.0, m)), 0.0))")
    else:
        own = f"m = 0.0\n    s = tl.sum(tl.where(mask, {_TERM[stats]}, 0.0))"
    # Softmax takes a second exp a value at the write (exp(x - m_row) / s). Keeping exp(x - m_piece) from
    # the first and scaling it there held 38 registers a thread, not 32: 4.54 ms against 3.84 at
    # 4096 x 393,216 on the H200 (fewer programs an SM; benchmarks/h200/softmax_probe.py, `template`).
    loop = looped_online(family, dim, params, eps)
    loop_kernel = loop[loop.index("@triton.jit"):loop.index("class ModelNew")].rstrip()
    kernel = f'''
@triton.jit
def one_read_kernel(out_ptr, x_ptr, m_ptr, s_ptr, count_ptr, flag_ptr, row_ptr, n, inner, chunks,
                    CHUNK: tl.constexpr, PIECES: tl.constexpr, VEC: tl.constexpr, LAST: tl.constexpr):
    # Program row * chunks + piece: CHUNK values of one row held in registers from the read to the
    # write; a row's pieces are consecutive programs, so they are dispatched together.
    pid = tl.program_id(0).to(tl.int64)
    row = pid // chunks
    piece = pid % chunks
    base = (row // inner) * n * inner + row % inner
{aligned.piece_read(_other(stats))}
    {own}
{aligned.piece_head_stats(_stats_loop(stats))}
    tl.store(m_ptr + row * chunks + piece, m)
    tl.store(s_ptr + row * chunks + piece, s)
{resident.merged(_PIECES + merge, "m", "s")}
    y = {out}
{aligned.piece_write(_other(stats), out)}


{loop_kernel}'''
    launch = """        vec = aligned_vector(x_in, n, inner)
        chunks = triton.cdiv(n, CHUNK)
        warps = 8
        if x_in.is_cuda:
            m = torch.empty((rows, chunks), device=x_in.device, dtype=torch.float32)
            s = torch.empty((rows, chunks), device=x_in.device, dtype=torch.float32)
            count, flag = torch.zeros((2, rows), device=x_in.device, dtype=torch.int32)  # flag: LAST_MERGES's
            row_stats = torch.empty((rows, 2), device=x_in.device, dtype=torch.float32)
            args = (out, x_in, m, s, count, flag, row_stats, n, inner, chunks)
            meta = {"CHUNK": CHUNK, "PIECES": triton.next_power_of_2(chunks), "VEC": vec, "LAST": LAST_MERGES == 1}
        # a row's pieces wait for each other: all of them must be resident at once
        if x_in.is_cuda and chunks <= resident_programs(one_read_kernel, x_in.device, args, meta, warps):
            one_read_kernel[(chunks * rows,)](*args, **meta, num_warps=warps)
        else:
            row_loop_kernel[(rows,)](out, x_in, n, inner, BLOCK=CHUNK, num_warps=8)"""
    return _file(family, "one_read: a row's pieces held in registers, statistics merged through a per-row counter",
                 "CHUNK = 4096\nLAST_MERGES = 0  # 1: a row's last piece merges its statistics (moves/resident.py)",
                 kernel + aligned.ALIGNED_VECTOR + resident.SOURCE, launch, dim, params)


def columns(family: str, dim: int, params: tuple[str, ...], eps: float | None = None) -> str:
    """A reduction down a strided dim: each program takes BLOCK_I contiguous positions after it, all at once."""
    stats, out = _STATS[family], _out(family, eps)
    kernel = f'''
@triton.jit
def columns_kernel(out_ptr, x_ptr, n, inner, BLOCK_N: tl.constexpr, BLOCK_I: tl.constexpr):
    # Program (outer, block): BLOCK_I contiguous positions of the (outer, n, inner) view, reduced down
    # n in steps of BLOCK_N rows; every load is BLOCK_I contiguous values, where a program per row
    # would read one value every `inner`. The output pass re-reads the tiles just read (in L2).
    o = tl.program_id(0).to(tl.int64)
    cols = (tl.program_id(1) * BLOCK_I + tl.arange(0, BLOCK_I)).to(tl.int64)
    base = o * n * inner
    steps = tl.arange(0, BLOCK_N)
    {_init(stats, "(BLOCK_I,)")}
    for start in range(0, n, BLOCK_N):
        r = start + steps
        mask = (r[:, None] < n) & (cols[None, :] < inner)
        x = tl.load(x_ptr + base + r[:, None].to(tl.int64) * inner + cols[None, :], mask=mask,
                    other={_other(stats)}).to(tl.float32)
{_stats_loop(stats)}
    for start in range(0, n, BLOCK_N):
        r = start + steps
        mask = (r[:, None] < n) & (cols[None, :] < inner)
        x = tl.load(x_ptr + base + r[:, None].to(tl.int64) * inner + cols[None, :], mask=mask, other=0.0)
        x = x.to(tl.float32)
        y = {out}
        tl.store(out_ptr + base + r[:, None].to(tl.int64) * inner + cols[None, :],
                 y.to(out_ptr.dtype.element_ty), mask=mask)
'''
    launch = """        outer = x_in.numel() // max(n * inner, 1)
        columns_kernel[(outer, triton.cdiv(inner, BLOCK_I))](out, x_in, n, inner, BLOCK_N=BLOCK_N, BLOCK_I=BLOCK_I,
                                                             num_warps=4)"""
    return _file(family, "columns: BLOCK_I contiguous positions per program, reduced down the strided dim",
                 "BLOCK_N = 16\nBLOCK_I = 128", kernel, launch, dim, params)


def _file(family: str, what: str, constants: str, kernel: str, launch: str, dim: int, params: tuple[str, ...]) -> str:
    doc = f"{family} along dim {dim}, {what} (a structural move of the offline optimizer)."
    x = params[0]
    launch = launch.replace("x_in", x)
    model = Template(_MODEL).substitute(params=", ".join(params), x=x, dim=dim, launch=launch)
    return Template(_HEADER).substitute(doc=doc, constants=constants) + kernel + model
