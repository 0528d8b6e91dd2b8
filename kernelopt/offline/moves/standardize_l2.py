"""The standardize family's `l2_pieces` template: rows too long for registers, read from DRAM once where the rows in
flight fit in L2.

`split_row` reads each row twice from DRAM (a statistics kernel, then a writing kernel), three passes over memory
where the floor counts two: LayerNorm over (64, 256, 256), 16 rows of 16 MB, ran at 58% of the H200's floor, and
GroupNorm's 2M-value groups at 61%. `one_read` holds a row's pieces in registers, which a row of millions of values
outgrows (the GPU's registers hold about 2M fp32 values). Here one kernel does both passes: program row * chunks +
piece walks its CHUNK values in BLOCK steps, taking their statistics (Chan's formula, less the row's first value),
with loads that ask L2 to keep the lines (`evict_last`); the row's pieces then wait for each other through a
per-row counter (as one_read's do: moves/resident.py) and merge the row's statistics; and the piece is walked again,
its loads now L2 hits marked `evict_first` (their last use), the output stored past L2 (`evict_first`). A row's
pieces are consecutive programs, so the rows in flight are the resident programs over the pieces a row; the grid
keeps their bytes within a share of L2 (`L2_SHARE`), so the second walk finds them there.

A row's pieces must all be resident at once (they wait for each other): the launch reads the compiled kernel's
registers and threads (resident.py) and takes the looped kernel where the GPU holds fewer programs than a row has
pieces, and under the interpreter, which runs programs one after another.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelopt.offline.moves import resident, standardize

if TYPE_CHECKING:
    from kernelopt.offline.moves import Config

# Of L2, for the rows in flight between a piece's two walks: the rest for the output streaming by and the statistics.
L2_SHARE = 0.5
CHUNKS = (4096, 8192, 12288, 16384, 32768, 65536, 131072)

_KERNEL = '''
@triton.jit
def l2_pieces_kernel(out_ptr, x_ptr, w_ptr, b_ptr, mean_ptr, m2_ptr, count_ptr, flag_ptr, row_ptr, n, eps, groups,
                     plane, chunks, CHUNK: tl.constexpr, BLOCK: tl.constexpr, PIECES: tl.constexpr,
                     has_w: tl.constexpr, has_b: tl.constexpr, UNIFORM: tl.constexpr, LAST: tl.constexpr):
    # Program row * chunks + piece: CHUNK values of one row walked twice in BLOCK steps, the statistics walk asking
    # L2 to keep them and the writing walk reading them back from there, the row's statistics merged between through
    # a per-row counter. Offsets within a row are 32-bit.
    pid = tl.program_id(0).to(tl.int64)
    row = pid // chunks
    first = (pid % chunks * CHUNK).to(tl.int32)
    base = row * n
    pivot = tl.load(x_ptr + base).to(tl.float32)  # the pieces' statistics are of the values less the row's first
    cols = tl.arange(0, BLOCK)
    count = tl.zeros((), tl.float32)
    piece_mean = tl.zeros((), tl.float32)
    piece_m2 = tl.zeros((), tl.float32)
    for start in range(0, CHUNK, BLOCK):
        offs = first + start + cols
        mask = offs < n
        if CHUNK % BLOCK != 0:  # the piece's last block stops at its end (the next piece's values are its own)
            mask = mask & (start + cols < CHUNK)
        x = tl.load(x_ptr + base + offs, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
        count, piece_mean, piece_m2 = chan_step(tl.where(mask, x - pivot, 0.0), mask, count, piece_mean, piece_m2)
    tl.store(mean_ptr + pid, piece_mean)
    tl.store(m2_ptr + pid, piece_m2)
$merged
    for start in range(0, CHUNK, BLOCK):
        offs = first + start + cols
        mask = offs < n
        if CHUNK % BLOCK != 0:
            mask = mask & (start + cols < CHUNK)
        x = tl.load(x_ptr + base + offs, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
        y = scaled((x - pivot - mean) * rstd, w_ptr, b_ptr, row, offs, first + start, mask, n, groups, plane, has_w,
                   has_b, UNIFORM)
        tl.store(out_ptr + base + offs, y.to(out_ptr.dtype.element_ty), mask=mask, eviction_policy="evict_first")
'''

KERNEL = _KERNEL.replace("$merged", resident.merged(
    "    mean, rstd = row_statistics(mean_ptr, m2_ptr, row, n, eps, chunks, CHUNK, PIECES)", "mean", "rstd"))

_LAUNCH = standardize.PIECE_BUFFERS + """\
            meta = {"CHUNK": CHUNK, "BLOCK": BLOCK, "PIECES": triton.next_power_of_2(chunks), "has_w": has_w,
                    "has_b": has_b, "UNIFORM": plane % BLOCK == 0 and CHUNK % BLOCK == 0, "LAST": LAST_MERGES == 1}
        # a row's pieces wait for each other: all of them must be resident at once
        if x.is_cuda and chunks <= resident_programs(l2_pieces_kernel, x.device, args, meta, warps):
            l2_pieces_kernel[(chunks * rows,)](*args, **meta, num_warps=warps)
        else:  # the looped kernel (a row a program)
            """


def l2_pieces(first: int, eps: float, params: tuple[str, ...], affine: standardize.Affine | None = None,
              groups: int = 1) -> str:
    """The kernel file: each row's pieces walked twice by one kernel, the row's statistics merged between."""
    launch = _LAUNCH + standardize._LOOP_LAUNCH  # noqa: SLF001 - the family's own fallback
    return standardize._file(  # noqa: SLF001 - the family's file layout
        "l2_pieces: a row's pieces walked twice, the second walk from L2, statistics merged through a per-row "
        "counter", "CHUNK = 16384\nBLOCK = 4096\nLAST_MERGES = 0",
        KERNEL + standardize.ROW_STATISTICS + standardize._LOOP + resident.SOURCE,  # noqa: SLF001
        launch, first, eps, params, affine, groups)


def registers(values_per_thread: int) -> int:
    """Registers a thread of an l2_pieces kernel is likely to take, at or above its compiles for sm_90: at 8 and 16
    values a thread (a block of 4,096 at 16 and 8 warps) Triton 3.6 allocated 49 and 64 with LayerNorm's weight and
    bias, Triton 3.9 40 and 80 (85 with LAST_MERGES). One_read's estimate (resident.py), fitted to kernels that hold
    their values, said 36 and 64: the launch then found fewer programs resident than a row has pieces and took the
    looped kernel under this move's name."""
    return min(255, 24 + 4 * values_per_thread)


def l2_pieces_grid(n: int, sm_count: int, l2_mb: float, dtype_bytes: int,
                   every_row_bytes: int = 0) -> tuple[list[Config], str]:
    """The configurations (CHUNK, BLOCK, warps, LAST_MERGES) where a row's pieces are resident at once (programs held
    estimated from `registers`, high) and the resident pieces' values (each program's CHUNK, kept between its two
    walks) fit L2_SHARE of L2 beside `every_row_bytes` (what every row reads again: a LayerNorm's weight and bias),
    the largest pieces first (fewer pieces a row wait for each other); or none and why. The programs an SM may hold
    are bounded by its threads alone, not by a register estimate: softmax's walks compile to 32 registers at 8 warps,
    8 programs an SM, where 40 registers would have planned 6 (33 MiB of pieces in flight, not 25)."""
    share = L2_SHARE * l2_mb * 2**20
    if every_row_bytes > share / 2:
        return [], (f"every row reads its {every_row_bytes / 2**20:.1f} MiB of weight and bias again: with the "
                    f"pieces kept, they do not stay in {L2_SHARE:.0%} of the {l2_mb:g} MiB L2, so each row would "
                    "read them from DRAM (split_row's pieces of all rows side by side share them)")
    grid = []
    for chunk in CHUNKS:
        pieces = -(-n // chunk)
        for block, warps in ((4096, 8), (2048, 8), (4096, 16)):
            held = sm_count * resident.per_sm(registers(block // (32 * warps)), warps)
            most = sm_count * min(resident.SM_PROGRAMS, resident.SM_THREADS // (32 * warps))
            if block <= chunk and 2 <= pieces <= held and most * chunk * dtype_bytes + every_row_bytes <= share:
                grid.append({"CHUNK": chunk, "BLOCK": block, "num_warps": warps})
    if not grid:
        return [], (f"no piece of a row of {n} values keeps the row's pieces resident at once with their values "
                    f"within {L2_SHARE:.0%} of the {l2_mb:g} MiB L2")
    grid.sort(key=lambda c: (-c["CHUNK"], c["BLOCK"] != 4096, c["num_warps"]))
    return [c | {"LAST_MERGES": last} for c in grid[:6]
            for last in ((0, 1) if -(-n // c["CHUNK"]) > 2 * sm_count else (0,))], ""
