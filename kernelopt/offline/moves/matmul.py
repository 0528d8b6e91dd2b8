"""Templates for the matmul family: C = A @ B with A, B any 2-D views (strides read at run time),
and for torch.bmm: each batch's product, with any 3-D views.

- `grouped`: output tiles in GROUP_M-tall column groups, so that the programs running at once
  share their A rows and B columns in L2 (the order cuBLAS-class kernels use).
- `persistent`: PROGRAMS programs (one per SM) walk the output tiles in GROUP_M order, so no
  program is launched per tile and the last wave is spread over every SM.
- `batched`: one program per (batch, output tile), on one flat grid axis (no 65535-batch limit),
  tiles in GROUP_M order inside each batch.
- `split_k`: a long K with few output tiles leaves SMs idle; SPLIT_K programs per tile each take
  a slice of K into an fp32 partial, and a second kernel sums the slices (deterministic: no
  atomics) and casts.
- `aligned`: rows whose length is no multiple of 16 elements (K=2949) start at addresses Triton
  cannot prove aligned, so every tile is gathered element by element and the K loop is masked.
  A first kernel copies A and B into zero-padded row-major buffers whose sizes are multiples of
  the tiles; the product then loads whole aligned tiles with no mask. The copy reads and writes
  each operand once (about 1% of an 8k x 3k x 6k product's time).

fp32 inputs multiply with input_precision="ieee" (FMAs on the CUDA cores), or in each template's
`on_tensor_cores` twin at "tf32x3" (three TF32 products: fp32's accuracy on the tensor cores);
never at one TF32 product, whose error fails fp32's tolerance. Offsets are int64, masks cover
every edge, so any M, N, K works.
"""

from __future__ import annotations

import math
from string import Template

_HEADER = '''"""matmul, $what (a structural move of the offline optimizer)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_M = 128
BLOCK_N = 128
BLOCK_K = 32
GROUP_M = 8
'''

# The start of each 2-D template's ModelNew: A and B (views of the inputs) and their sizes.
FORWARD_HEAD = '''
class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, $params):
        a, b = $a, $b
        M, K = a.shape
        N = b.shape[1]
'''
# The same for torch.bmm's templates: each batch's A and B.
BMM_FORWARD_HEAD = FORWARD_HEAD.replace("        M, K = a.shape\n        N = b.shape[1]\n",
                                        "        batches, M, K = a.shape\n        N = b.shape[2]\n")

# The grouped kernel's launch over a, b, c (M x N) and `precision`, in forward (the K-major and TMA
# templates run it too).
GROUPED_LAUNCH = '''        grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
        matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            c.stride(0), c.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                            GROUP_M=GROUP_M, PRECISION=precision, num_warps=8, num_stages=3)
'''

# The split-K templates' knobs, their second kernel (the slices' sum) and its launch, in forward
SPLIT_KNOBS = '''
SPLIT_K = 4
SUM_BLOCK = 1024  # outputs per program of the sum; the grid and the launch read this one knob
'''
SUM_SPLITS = '''

@triton.jit
def sum_splits_kernel(p_ptr, c_ptr, total, splits, BLOCK: tl.constexpr):
    # Sum the SPLIT_K partials of BLOCK outputs (c is contiguous, like the partials).
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in range(0, splits):
        acc += tl.load(p_ptr + s * total + offs, mask=mask, other=0.0)
    tl.store(c_ptr + offs, acc.to(c_ptr.dtype.element_ty), mask=mask)

'''
SUM_LAUNCH = '''\
        sum_splits_kernel[(triton.cdiv(M * N, SUM_BLOCK),)](partial, c, M * N, SPLIT_K, BLOCK=SUM_BLOCK, num_warps=4)
'''

# The split-K kernels' launches over a, b, c (M x N) and `precision`, in forward (the K-major split runs them too).
SPLIT_LAUNCH = '''        partial = torch.empty((SPLIT_K, M, N), device=a.device, dtype=torch.float32)
        k_per_split = triton.cdiv(triton.cdiv(K, SPLIT_K), BLOCK_K) * BLOCK_K
        grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N), SPLIT_K)
        partial_kernel[grid](a, b, partial, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                             k_per_split, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,
                             PRECISION=precision, num_warps=8, num_stages=3)
''' + SUM_LAUNCH

_TILE = '''

@triton.jit
def _tile_ids(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    # Tiles in groups of GROUP_M rows of tiles, column after column inside a group.
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * grid_n
    first_m = (pid // in_group) * GROUP_M
    size_m = tl.minimum(grid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % in_group) % size_m
    pid_n = (pid % in_group) // size_m
    return pid_m, pid_n


@triton.jit
def _dot_range(a_ptr, b_ptr, M, N, K, sam, sak, sbk, sbn, pid_m, pid_n, k_lo, k_hi,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, PRECISION: tl.constexpr):
    # The fp32 product of A's rows of tile pid_m and B's columns of tile pid_n over K in [k_lo, k_hi).
    # Offsets are int64 and computed once; the loop only steps the pointers by BLOCK_K.
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None].to(tl.int64) * sam + (k_lo + rk)[None, :].to(tl.int64) * sak
    b_ptrs = b_ptr + (k_lo + rk)[:, None].to(tl.int64) * sbk + rn[None, :].to(tl.int64) * sbn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(k_lo, k_hi, BLOCK_K):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & ((k + rk)[None, :] < k_hi), other=0.0)
        b = tl.load(b_ptrs, mask=((k + rk)[:, None] < k_hi) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K * sak
        b_ptrs += BLOCK_K * sbk
    return acc
'''

# _tile_ids alone, for a template with a product of its own
TILE_IDS = _TILE.split("\n\n@triton.jit\ndef _dot_range(", 1)[0] + "\n"


def header(what: str) -> str:
    """A template file's docstring, imports and tile constants."""
    return Template(_HEADER).substitute(what=what)


_GROUPED = '''

@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  PRECISION: tl.constexpr):
    pid_m, pid_n = _tile_ids(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = _dot_range(a_ptr, b_ptr, M, N, K, sam, sak, sbk, sbn, pid_m, pid_n, 0, K,
                     BLOCK_M, BLOCK_N, BLOCK_K, PRECISION)
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))

''' + FORWARD_HEAD + '''        c = torch.empty((M, N), device=a.device, dtype=a.dtype)
        precision = "ieee" if a.dtype == torch.float32 else "tf32"
''' + GROUPED_LAUNCH + '''        return c
'''

_SPLIT_K = SPLIT_KNOBS + '''

@triton.jit
def partial_kernel(a_ptr, b_ptr, p_ptr, M, N, K, sam, sak, sbk, sbn, k_per_split,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                   PRECISION: tl.constexpr):
    # Program (tile, split): the tile's product over one slice of K, into partial[split].
    pid_m, pid_n = _tile_ids(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    split = tl.program_id(1)
    k_lo = split * k_per_split
    k_hi = tl.minimum(k_lo + k_per_split, K)
    acc = _dot_range(a_ptr, b_ptr, M, N, K, sam, sak, sbk, sbn, pid_m, pid_n, k_lo, k_hi,
                     BLOCK_M, BLOCK_N, BLOCK_K, PRECISION)
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    tl.store(p_ptr + split.to(tl.int64) * M * N + rm[:, None] * N + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))
''' + SUM_SPLITS + FORWARD_HEAD + '''        c = torch.empty((M, N), device=a.device, dtype=a.dtype)
        precision = "ieee" if a.dtype == torch.float32 else "tf32"
''' + SPLIT_LAUNCH + '''        return c
'''


_BATCHED = '''

@triton.jit
def bmm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sab, sam, sak, sbb, sbk, sbn, scb, scm, scn,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
               PRECISION: tl.constexpr):
    # Program p: output tile p % tiles of batch p // tiles (batches one after another on one axis).
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    pid = tl.program_id(0)
    batch = (pid // tiles).to(tl.int64)
    pid_m, pid_n = _tile_ids(pid % tiles, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = _dot_range(a_ptr + batch * sab, b_ptr + batch * sbb, M, N, K, sam, sak, sbk, sbn, pid_m, pid_n, 0, K,
                     BLOCK_M, BLOCK_N, BLOCK_K, PRECISION)
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    tl.store(c_ptr + batch * scb + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))

''' + BMM_FORWARD_HEAD + '''        c = torch.empty((batches, M, N), device=a.device, dtype=a.dtype)
        precision = "ieee" if a.dtype == torch.float32 else "tf32"
        grid = (batches * triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
        bmm_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), a.stride(2), b.stride(0), b.stride(1),
                         b.stride(2), c.stride(0), c.stride(1), c.stride(2), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                         BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, PRECISION=precision, num_warps=8, num_stages=3)
        return c
'''


_PERSISTENT = '''

@triton.jit
def matmul_persistent_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             GROUP_M: tl.constexpr, PROGRAMS: tl.constexpr, PRECISION: tl.constexpr):
    # Program p computes tiles p, p + PROGRAMS, p + 2 * PROGRAMS, ... in GROUP_M order.
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    for tile in range(tl.program_id(0), tiles, PROGRAMS):
        pid_m, pid_n = _tile_ids(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        acc = _dot_range(a_ptr, b_ptr, M, N, K, sam, sak, sbk, sbn, pid_m, pid_n, 0, K,
                         BLOCK_M, BLOCK_N, BLOCK_K, PRECISION)
        rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
        rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
        tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))

''' + FORWARD_HEAD + '''        c = torch.empty((M, N), device=a.device, dtype=a.dtype)
        precision = "ieee" if a.dtype == torch.float32 else "tf32"
        tiles = triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)
        matmul_persistent_kernel[(min(PROGRAMS, tiles),)](
            a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, PROGRAMS=PROGRAMS,
            PRECISION=precision, num_warps=8, num_stages=3)
        return c
'''


_ALIGNED = '''

@triton.jit
def pad_kernel(src_ptr, dst_ptr, rows, cols, s_r, s_c, dst_rows, dst_cols,
               block_r: tl.constexpr, block_c: tl.constexpr):
    # dst (dst_rows x dst_cols, row-major) = src where it lies, zero elsewhere: the zeros past K add nothing.
    r = tl.program_id(0) * block_r + tl.arange(0, block_r)
    c = tl.program_id(1) * block_c + tl.arange(0, block_c)
    r64 = r[:, None].to(tl.int64)
    c64 = c[None, :].to(tl.int64)
    inside = (r[:, None] < rows) & (c[None, :] < cols)
    value = tl.load(src_ptr + r64 * s_r + c64 * s_c, mask=inside, other=0.0)
    tl.store(dst_ptr + r64 * dst_cols + c64, value, mask=(r[:, None] < dst_rows) & (c[None, :] < dst_cols))


@triton.jit
def matmul_aligned_kernel(a_ptr, b_ptr, c_ptr, M, N, Kp, lda, ldb, scm, scn,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                          GROUP_M: tl.constexpr, PRECISION: tl.constexpr):
    # A is Mp x Kp and B is Kp x Np, padded to whole tiles: no load needs a mask.
    pid_m, pid_n = _tile_ids(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None].to(tl.int64) * lda + rk[None, :]
    b_ptrs = b_ptr + rk[:, None].to(tl.int64) * ldb + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, Kp, BLOCK_K):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * ldb
    rm64 = rm.to(tl.int64)
    rn64 = rn.to(tl.int64)
    tl.store(c_ptr + rm64[:, None] * scm + rn64[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm64[:, None] < M) & (rn64[None, :] < N))

''' + FORWARD_HEAD + '''        Kp = triton.cdiv(K, BLOCK_K) * BLOCK_K
        Np = triton.cdiv(N, BLOCK_N) * BLOCK_N
        a_pad = _padded(a, triton.cdiv(M, BLOCK_M) * BLOCK_M, Kp)
        b_pad = _padded(b, Kp, Np)
        c = torch.empty((M, N), device=a.device, dtype=a.dtype)
        precision = "ieee" if a.dtype == torch.float32 else "tf32"
        grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
        matmul_aligned_kernel[grid](a_pad, b_pad, c, M, N, Kp, Kp, Np, c.stride(0), c.stride(1),
                                    BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,
                                    PRECISION=precision, num_warps=8, num_stages=3)
        return c


# after forward: the product's launch comes first, so its num_warps is the knob the sweep sets (the copy's
# launch, first, made a sweep's 8 warps 16 for the product)
def _padded(x, rows, cols):
    # x copied into a zeroed rows x cols row-major buffer (32 x 128 elements per program)
    out = torch.empty((rows, cols), device=x.device, dtype=x.dtype)
    block_r, block_c, warps = 32, 128, 4
    pad_kernel[(triton.cdiv(rows, block_r), triton.cdiv(cols, block_c))](
        x, out, x.shape[0], x.shape[1], x.stride(0), x.stride(1), rows, cols,
        block_r=block_r, block_c=block_c, num_warps=warps)
    return out
'''


def operand(params: tuple[str, ...], index: int, transposed: bool) -> str:
    return f"{params[index]}.T" if transposed else params[index]


def filled(template: str, params: tuple[str, ...], operands: tuple[int, ...], transposed: tuple[bool, ...],
           batched: bool = False) -> str:
    """A template's text with forward's parameters and its A and B: views of the inputs, transposed where the
    reference multiplies them so (each batch's last two dims for torch.bmm, `batched`)."""
    if batched:
        a, b = (f"{params[i]}.transpose(1, 2)" if t else params[i] for i, t in zip(operands, transposed, strict=True))
    else:
        a, b = (operand(params, i, t) for i, t in zip(operands, transposed, strict=True))
    return Template(template).substitute(params=", ".join(params), a=a, b=b)


def grouped(params: tuple[str, ...], operands: tuple[int, ...], transposed: tuple[bool, ...]) -> str:
    """A GROUP_M-ordered tiled matmul."""
    body = filled(_GROUPED, params, operands, transposed)
    return header("grouped (GROUP_M) program order") + _TILE + body


def batched(params: tuple[str, ...], operands: tuple[int, ...], transposed: tuple[bool, ...]) -> str:
    """A batched matmul (torch.bmm): a program per batch and output tile, GROUP_M order in a batch."""
    body = filled(_BATCHED, params, operands, transposed, batched=True)
    return header("batched (torch.bmm), GROUP_M order per batch") + _TILE + body


def split_k(params: tuple[str, ...], operands: tuple[int, ...], transposed: tuple[bool, ...]) -> str:
    """A split-K matmul: SPLIT_K slices of K per output tile, summed by a second kernel."""
    body = filled(_SPLIT_K, params, operands, transposed)
    return header("split-K over SPLIT_K slices of K") + _TILE + body


def aligned(params: tuple[str, ...], operands: tuple[int, ...], transposed: tuple[bool, ...]) -> str:
    """A GROUP_M-ordered matmul on copies of A and B padded to whole tiles, aligned rows and no masks."""
    body = filled(_ALIGNED, params, operands, transposed)
    return header("operands padded to whole, aligned tiles") + _TILE + body


def persistent(params: tuple[str, ...], operands: tuple[int, ...], transposed: tuple[bool, ...], programs: int) -> str:
    """A persistent matmul: `programs` programs (the GPU's SM count) walk the tiles in GROUP_M order."""
    body = filled(_PERSISTENT, params, operands, transposed)
    top = header(f"persistent over {programs} programs")
    return top.replace("GROUP_M = 8\n", f"GROUP_M = 8\nPROGRAMS = {programs}\n") + _TILE + body


_FMA = 'precision = "ieee" if a.dtype == torch.float32 else "tf32"'


def on_tensor_cores(source: str) -> str:
    """A template instance with its fp32 products at 3xTF32 on the tensor cores instead of FMAs."""
    assert _FMA in source
    return source.replace(_FMA, _FMA.replace('"ieee"', '"tf32x3"')).replace('"""matmul, ', '"""matmul at 3xTF32, ', 1)


def split_counts(m: int, n: int, k: int, tile: dict[str, int], sm_count: int) -> list[int]:
    """SPLIT_K values for one tile size, most promising first: the power of two nearest to filling
    every SM once (tiles x SPLIT_K about the SM count), twice that and half of it. A fixed small
    split leaves a 256 x 256 output (4 tiles of 128) on 32 of 132 SMs. Each slice of K keeps at
    least two BLOCK_K steps; where none of those does (a K of a few thousand at BLOCK_K 64), the
    largest split that does."""
    tiles = math.ceil(m / tile["BLOCK_M"]) * math.ceil(n / tile["BLOCK_N"])
    fill = 2 ** max(1, round(math.log2(max(sm_count / tiles, 2))))
    steps = k // (2 * tile["BLOCK_K"])  # the most slices that keep two K steps each
    out = [s for s in dict.fromkeys((fill, 2 * fill, max(2, fill // 2))) if s <= steps]
    return out or ([2 ** int(math.log2(steps))] if steps >= 2 else [])
