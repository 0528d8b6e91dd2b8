"""Contiguous rows that start off a 16-byte boundary, read and written in whole vectors (the row templates' VEC > 1).

A row whose length is not a multiple of a 16-byte vector (KernelBench's 65,535) starts off a 16-byte boundary, so
Triton cannot prove any row's loads aligned and issues a 4-byte load and store a value. With VEC > 1 a row is read
instead in windows of whole VEC-value vectors from its first whole vector (`body`): each vector that starts in the
row is one 16-byte load (a mask that is one value a vector), the next row's values in the last one dropped (a
neighbour's max in a row's would underflow its sum); the row's head before its first whole vector (up to VEC - 1
values) is read value by value and joins the statistics. The vectors wholly inside the row are stored as vectors,
the head and the cut last vector value by value. `rows.one_read`'s pieces (a row keeps its cdiv(n, CHUNK) pieces;
the first takes the head) and `rows.rows_in_registers`'s rows ([ROWS, vectors, VEC] blocks) are read so.

On the H200 (L1 norm of 32768 x 65,535 fp32, benchmarks/h200/rownorm_probe.py): 6.99 ms with 4-byte accesses, 7.29
with 16-byte loads and 4-byte stores, 5.02 with both in vectors (an extra piece a row then), 4.83 for rows of
65,536; KernelBench 38 in a pass: RESULTS.md (ap).
"""

from __future__ import annotations

import re

# The launch's choice of VEC, written into each template that reads rows so.
ALIGNED_VECTOR = '''


def aligned_vector(x, n, inner):
    """Values in a 16-byte vector where contiguous rows of n start off a 16-byte boundary (the aligned windows pay
    then), else 1; whole vectors only where the tensor's last vector is whole too (no load past its end)."""
    vec = 16 // x.element_size()
    return vec if inner == 1 and n % vec and n > vec and x.numel() % vec == 0 and x.is_contiguous() else 1
'''

def off_boundary(n: int, element_bytes: int) -> bool:
    """Whether contiguous rows of n values start off a 16-byte boundary with a whole vector in them: where the
    launch's aligned_vector (above, written into the templates) picks VEC > 1."""
    vec = 16 // element_bytes
    return bool(n % vec) and n > vec


_PIECE_READ = """    if VEC > 1:
        end = base + n
        body = ((base + VEC - 1) // VEC) * VEC
        # 32-bit offsets from the first whole vector (64-bit ones: 93 registers a thread against 48 at CHUNK 8192,
        # 8 warps, KernelBench 38's rows; benchmarks/row_registers.py)
        lim = (end - body).to(tl.int32)
        first = (piece * CHUNK).to(tl.int32) + tl.arange(0, CHUNK // VEC) * VEC
        at = first[:, None] + tl.arange(0, VEC)[None, :]
        mask = at < lim
        x = tl.where(mask, tl.load(x_ptr + body + at, mask=(first < lim)[:, None], other=OTHER).to(tl.float32), OTHER)
        h_at = base + tl.arange(0, VEC)
        h_mask = h_at < tl.where(piece == 0, tl.minimum(body, end), base)  # the head: the first piece's
        h = tl.load(x_ptr + h_at, mask=h_mask, other=OTHER).to(tl.float32)
    else:
        offs = (piece * CHUNK).to(tl.int32) + tl.arange(0, CHUNK)
        mask = offs < n
        at = offs.to(tl.int64) * inner
        x = tl.load(x_ptr + base + at, mask=mask, other=OTHER).to(tl.float32)"""
# The row's head and its cut last vector, value by value (`edge`'s shape: ROW_AXIS, a row's or a block of rows').
_EDGES = """\
edge = tl.arange(0, 2 * VEC)ROW_AXIS
tail = (end // VEC) * VEC
e_at = tl.where(edge < VEC, base + edge, tail + edge - VEC)
e_mask = tl.where(edge < VEC, e_at < body, e_at >= body) & (e_at >= base) & (e_at < end)
e_x = tl.load(x_ptr + e_at, mask=e_mask, other=OTHER).to(tl.float32)
tl.store(out_ptr + e_at, (E_OUT).to(out_ptr.dtype.element_ty), mask=e_mask)"""
_PIECE_WRITE = """    if VEC > 1:
        tl.store(out_ptr + body + at, y.to(out_ptr.dtype.element_ty), mask=(first + VEC <= lim)[:, None])
        if piece == 0:
EDGES
    else:
        tl.store(out_ptr + base + at, y.to(out_ptr.dtype.element_ty), mask=mask)"""
_REGISTERS = """\
        # contiguous rows off a 16-byte boundary: each from its first whole vector in 16-byte loads, the head
        # before it value by value; rows past the last are empty
        base = row * n
        end = tl.where(row < n_rows, base + n, base)
        body = ((base + VEC - 1) // VEC) * VEC
        lim = (end - body).to(tl.int32)[:, :, None]  # 32-bit offsets from each row's first whole vector
        first = (tl.arange(0, BLOCK_N // VEC) * VEC)[None, :, None]
        at = first + tl.arange(0, VEC)[None, None, :]
        mask = at < lim
        x = tl.where(mask, tl.load(x_ptr + body[:, :, None] + at, mask=first < lim, other=OTHER).to(tl.float32),
                     OTHER)
        h_at = base + tl.arange(0, VEC)[None, :]
        h_mask = h_at < tl.minimum(body, end)
        h = tl.load(x_ptr + h_at, mask=h_mask, other=OTHER).to(tl.float32)
        REDUCE
        y = OUT3
        tl.store(out_ptr + body[:, :, None] + at, y.to(out_ptr.dtype.element_ty), mask=first + VEC <= lim)
EDGES"""


def _as(name: str, formula: str) -> str:
    """A formula of x written of another name (the head's values, the edges')."""
    return re.sub(r"\bx\b", name, formula)


def piece_read(other: str) -> str:
    """one_read's piece: x and its mask, aligned windows where VEC > 1 (the head h, h_mask too)."""
    return _PIECE_READ.replace("OTHER", other)


def piece_head_stats(block: str) -> str:
    """The head's values into the first piece's (m, s): `block`, the row templates' own merge of a block of x under
    its mask into (m, s) (8 spaces in), taken over the head h under h_mask."""
    return "    if VEC > 1:\n" + re.sub(r"\bmask\b", "h_mask", _as("h", block))


def _edges(indent: str, row_axis: str, other: str, out: str) -> str:
    edges = _EDGES.replace("ROW_AXIS", row_axis).replace("OTHER", other).replace("E_OUT", _as("e_x", out))
    return "\n".join(indent + line for line in edges.splitlines())


def piece_write(other: str, out: str) -> str:
    """one_read's piece written: vectors inside the row, the first piece the head and the cut last vector."""
    return _PIECE_WRITE.replace("EDGES", _edges(" " * 12, "", other, out)).replace("OTHER", other)


def registers_block(stats: str, out: str, term: str, other: str) -> str:
    """rows_in_registers's VEC > 1 branch: ROWS rows as [ROWS, vectors, VEC] blocks, read, reduced and written."""
    if stats == "online":
        reduce_ = """m = tl.maximum(tl.max(tl.max(x, axis=2), axis=1)[:, None], tl.max(h, axis=1)[:, None])
        safe = tl.where(m == float('-inf'), 0.0, m)
        s = (tl.sum(tl.sum(tl.where(mask, tl.exp(x - safe[:, :, None]), 0.0), axis=2), axis=1)[:, None]
             + tl.sum(tl.where(h_mask, tl.exp(h - safe), 0.0), axis=1)[:, None])
        s = tl.where(m == float('-inf'), float('nan'), s)  # a row all -inf: NaN, as torch and the 2-D kernel"""
    else:
        reduce_ = f"""m = tl.zeros((ROWS, 1), tl.float32)
        s = (tl.sum(tl.sum(tl.where(mask, {term}, 0.0), axis=2), axis=1)[:, None]
             + tl.sum(tl.where(h_mask, {_as("h", term)}, 0.0), axis=1)[:, None])"""
    out3 = re.sub(r"\bs\b", "s[:, :, None]", re.sub(r"\bm\b", "m[:, :, None]", out))
    return (_REGISTERS.replace("EDGES", _edges(" " * 8, "[None, :]", other, out)).replace("OTHER", other)
            .replace("REDUCE", reduce_).replace("OUT3", out3))
