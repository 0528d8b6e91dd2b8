"""The row families' `l2_pieces` template (softmax, log-softmax, the L1 / L2 / RMS row norms): rows too long for
registers, each piece walked twice by one kernel, the second walk from L2 (as standardize_l2.py for the standardize
family, whose docstring says why).

Program row * chunks + piece takes its CHUNK values' statistics (softmax's running max and sum of exp, a norm's sum)
in BLOCK steps with loads that ask L2 to keep their lines, merges the row's pieces' statistics through one_read's
per-row counter (moves/resident.py), and walks the piece again, its loads now L2 hits marked first to go, its output
stored past L2. The launch takes the looped kernel where a row's pieces cannot all be resident at once, and under the
interpreter.
"""

from __future__ import annotations

from kernelopt.offline.moves import resident, rows


def l2_pieces(family: str, dim: int, params: tuple[str, ...], eps: float | None = None) -> str:
    """The kernel file: each row's pieces walked twice by one kernel, the row's statistics merged between."""
    stats, out = rows._STATS[family], rows._out(family, eps)  # noqa: SLF001 - the families' own tables
    merge = rows.piece_merge(stats)
    loop = rows.looped_online(family, dim, params, eps)
    loop_kernel = loop[loop.index("@triton.jit"):loop.index("class ModelNew")].rstrip()
    walk = """    for start in range(0, CHUNK, BLOCK):
        offs = piece * CHUNK + start + cols
        mask = offs < n
        if CHUNK % BLOCK != 0:  # the piece's last block stops at its end (the next piece's values are its own)
            mask = mask & (start + cols < CHUNK)"""
    kernel = f'''
@triton.jit
def l2_pieces_kernel(out_ptr, x_ptr, m_ptr, s_ptr, count_ptr, flag_ptr, row_ptr, n, inner, chunks,
                     CHUNK: tl.constexpr, BLOCK: tl.constexpr, PIECES: tl.constexpr, LAST: tl.constexpr):
    # Program row * chunks + piece: CHUNK values of one row walked twice in BLOCK steps, the statistics walk asking
    # L2 to keep them and the writing walk reading them back from there, the row's statistics merged between
    # through a per-row counter; a row's pieces are consecutive programs, so they are dispatched together.
    pid = tl.program_id(0).to(tl.int64)
    row = pid // chunks
    piece = pid % chunks
    base = (row // inner) * n * inner + row % inner
    cols = tl.arange(0, BLOCK)
    {rows._init(stats)}
{walk}
        x = tl.load(x_ptr + base + offs.to(tl.int64) * inner, mask=mask, other={rows._other(stats)},
                    eviction_policy="evict_last").to(tl.float32)
{rows._stats_loop(stats)}
    tl.store(m_ptr + row * chunks + piece, m)
    tl.store(s_ptr + row * chunks + piece, s)
{resident.merged(rows._PIECES + merge, "m", "s")}
{walk}
        x = tl.load(x_ptr + base + offs.to(tl.int64) * inner, mask=mask, other=0.0,
                    eviction_policy="evict_first").to(tl.float32)
        y = {out}
        tl.store(out_ptr + base + offs.to(tl.int64) * inner, y.to(out_ptr.dtype.element_ty), mask=mask,
                 eviction_policy="evict_first")


{loop_kernel}'''  # noqa: SLF001 - the families' own statistics code
    launch = """        chunks = triton.cdiv(n, CHUNK)
        warps = 8
        if x_in.is_cuda:
            m = torch.empty((rows, chunks), device=x_in.device, dtype=torch.float32)
            s = torch.empty((rows, chunks), device=x_in.device, dtype=torch.float32)
            count, flag = torch.zeros((2, rows), device=x_in.device, dtype=torch.int32)  # flag: LAST_MERGES's
            row_stats = torch.empty((rows, 2), device=x_in.device, dtype=torch.float32)
            args = (out, x_in, m, s, count, flag, row_stats, n, inner, chunks)
            meta = {"CHUNK": CHUNK, "BLOCK": BLOCK, "PIECES": triton.next_power_of_2(chunks), "LAST": LAST_MERGES == 1}
        # a row's pieces wait for each other: all of them must be resident at once
        if x_in.is_cuda and chunks <= resident_programs(l2_pieces_kernel, x_in.device, args, meta, warps):
            l2_pieces_kernel[(chunks * rows,)](*args, **meta, num_warps=warps)
        else:
            row_loop_kernel[(rows,)](out, x_in, n, inner, BLOCK=BLOCK, num_warps=8)"""
    return rows._file(  # noqa: SLF001 - the families' file layout
        family, "l2_pieces: a row's pieces walked twice, the second walk from L2, statistics merged through a per-row "
        "counter", "CHUNK = 16384\nBLOCK = 4096\nLAST_MERGES = 0  # 1: a row's last piece merges its statistics",
        kernel + resident.SOURCE, launch, dim, params)
