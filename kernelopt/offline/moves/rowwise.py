"""The row families' moves (softmax, log-softmax, the L1 / L2 / RMS row norms; standardize): which
templates (moves/rows.py, moves/standardize.py) apply to a problem's rows at its size and on its GPU,
with the knobs each sweeps (best guesses first), and why the others do not apply."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from kernelopt.offline.moves import (
    Config,
    MoveInstance,
    Skipped,
    resident,
    rows,
    rows_aligned,
    rows_l2,
    standardize,
    standardize_l2,
)
from kernelopt.offline.space import DTYPE_BYTES

if TYPE_CHECKING:
    from kernelopt.offline.moves.family import Family

REGISTER_ROW_MAX = 16384  # values of one row a program holds in registers (64 per thread at 8 warps)
LOOP_ROW_MIN = 2048  # shorter rows fit in registers: a loop over them buys nothing
SPLIT_ROW_MIN = 65536  # a row split in pieces needs pieces worth a program each
LONG_ROW = 1 << 20  # a row this long is milliseconds of one program's time: split unless rows fill the SMs
RESIDENT_L2_SHARE = 0.6  # of L2, for the rows in flight of looped_resident: the rest for the output streaming by


def _pow2_up_to(low: int, high: int) -> list[int]:
    return [1 << k for k in range(low.bit_length() - 1, high.bit_length()) if low <= 1 << k <= high]


def row_moves(family: Family, sm_count: int, l2_mb: float) -> tuple[list[MoveInstance], list[Skipped]]:
    assert family.dim is not None
    shape = family.shapes[0]
    n = shape[family.dim]
    n_rows = math.prod(shape) // max(n, 1)
    name, dim, params, eps = family.name, family.dim, family.input_names, family.eps
    inner = math.prod(shape[dim + 1:])
    if inner > 1:
        return column_moves(family, n, inner)
    out: list[MoveInstance] = []
    skipped: list[Skipped] = []
    if n <= REGISTER_ROW_MAX:
        block_n = 1 << max(n - 1, 0).bit_length()
        grid = [{"ROWS": r, "num_warps": w} for r in (1, 2, 4, 8, 16) for w in (4, 8, 16)
                if 4 <= r * block_n // (32 * w) <= 64]
        grid.sort(key=lambda c: abs(c["ROWS"] * block_n * 4 - 16384) + c["num_warps"])  # 16 KB per program first
        if rows_aligned.off_boundary(n, DTYPE_BYTES.get(family.dtype, 4)):
            # rows off a 16-byte boundary: each launch in aligned vectors and value by value (rows.rows_in_registers)
            grid = [{**c, "VECTORS": v} for c in grid for v in (1, 0)]
        out.append(MoveInstance(f"{name}.rows_in_registers",
                                f"ROWS whole rows of {n} per program in registers: one read, one write",
                                rows.rows_in_registers(name, dim, params, eps), tuple(grid) or ({"num_warps": 4},)))
    else:
        skipped.append(Skipped(f"{name}.rows_in_registers",
                               f"a row of {n} values is more than the {REGISTER_ROW_MAX} a program holds in registers"))
    resident = _resident(family, n, n_rows, sm_count, l2_mb)
    out += resident[0]
    skipped += resident[1]
    if n >= LOOP_ROW_MIN:
        grid = [{"BLOCK": b, "num_warps": w} for b in _pow2_up_to(1024, min(16384, 1 << (n - 1).bit_length()))
                for w in (4, 8, 16) if 4 <= b // (32 * w) <= 32]
        grid.sort(key=lambda c: abs(c["BLOCK"] - 4096) + abs(c["num_warps"] - 8))
        out.append(MoveInstance(f"{name}.looped_online",
                                "one row per program: a single statistics pass, the output pass walking back (L2)",
                                rows.looped_online(name, dim, params, eps), tuple(grid)))
    else:
        skipped.append(Skipped(f"{name}.looped_online", f"rows of {n} fit in registers: a loop over them buys nothing"))
    out_one, skip_one = _one_read(family, n, sm_count)
    out += out_one
    skipped += skip_one
    out_l2, skip_l2 = _l2_pieces(family, n, sm_count, l2_mb)
    out += out_l2
    skipped += skip_l2
    grid, why = split_row_grid(n, n_rows, sm_count)
    if grid:
        out.append(MoveInstance(f"{name}.split_row", f"each of the {n_rows} rows split in pieces: statistics, "
                                "then merge and write, in two kernels", rows.split_row(name, dim, params, eps),
                                tuple(grid)))
    else:
        skipped.append(Skipped(f"{name}.split_row", why))
    return out, skipped


def split_row_grid(n: int, n_rows: int, sm_count: int) -> tuple[list[Config], str]:
    """A split row's knob grid (about four programs per SM first), or why rows are not split: rows
    are split where they are fewer than two per SM, or long (LONG_ROW) and fewer than eight per SM,
    where a program per row leaves a tail wave and few loads in flight (35_GroupNorm_'s 896 rows of
    2M values: 6.8 programs per SM, its looped kernel 4% slower than torch.compile on the H200)."""
    most = 8 * sm_count if n >= LONG_ROW else 2 * sm_count
    if n < SPLIT_ROW_MIN or n_rows >= most:
        return [], (f"{n_rows} rows already give {n_rows / sm_count:.1f} programs per SM" if n_rows >= most
                    else f"rows of {n} are too short to split")
    grid = [{"CHUNK": c, "BLOCK": b, "num_warps": w} for c in (16384, 32768, 65536) for b in (2048, 4096)
            for w in (4, 8) if c >= b and 4 <= b // (32 * w) <= 32 and c <= n]
    grid.sort(key=lambda c: (abs(n_rows * n // c["CHUNK"] - 4 * sm_count), abs(c["BLOCK"] - 4096)))
    return grid, ""


def column_moves(family: Family, n: int, inner: int) -> tuple[list[MoveInstance], list[Skipped]]:
    """A reduction down a strided dim: programs take contiguous positions after it, not rows."""
    assert family.dim is not None
    top = 1 << max(n - 1, 0).bit_length()
    grid = sorted(({"BLOCK_N": b, "BLOCK_I": i, "num_warps": w} for b in (16, 32, 64) for i in (128, 256, 64)
                   for w in (4, 8) if b <= max(top, 16) and 4 <= b * i // (32 * w) <= 64),
                  key=lambda c: abs(c["BLOCK_N"] - min(top, 64)))  # the whole reduced dim in one tile first
    why = f"rows strided by {inner}: a program per row would read one value every {inner}"
    return [MoveInstance(f"{family.name}.columns", f"the reduced dim ({n}) is strided by {inner}: each program "
                         "reduces BLOCK_I contiguous positions at once",
                         rows.columns(family.name, family.dim, family.input_names, family.eps), tuple(grid))], [
        Skipped(f"{family.name}.{m}", why) for m in ("rows_in_registers", "looped_resident", "looped_online",
                                                        "one_read", "split_row")]


def one_read_grid(n: int, sm_count: int) -> list[Config]:
    """The one-read move's configurations for rows of `n`: pieces of CHUNK values, no more in a row than the
    GPU is estimated to hold at once (a row's pieces wait for each other; moves/resident.py: the launch reads the
    compiled kernel's registers and takes the looped kernel where they hold fewer).

    Smaller pieces first: on the H200's 393,216-wide softmax rows, 4096 values per piece (96 pieces)
    took 3.74 ms and 8192 (48) 4.33 ms; 2048 (192) was slower again, 4.83 ms.
    """
    def held(chunk: int, warps: int) -> int:  # programs an SM is estimated to hold, one at least
        return max(1, resident.per_sm(resident.estimated_registers(chunk // (32 * warps)), warps))

    return [{"CHUNK": c, "num_warps": w} for c in (4096, 8192, 16384) for w in (8, 4, 16)
            if 8 <= c // (32 * w) <= 64 and -(-n // c) <= sm_count * held(c, w)]


def last_merges(grid: list[Config], n: int, sm_count: int) -> list[Config]:
    """One-read configurations with their LAST_MERGES switch: a row of more than two pieces an SM also has its last
    piece merge the row's statistics for the others, measured beside every piece merging every piece's (pieces^2
    values read a row); fewer pieces, each merges."""
    return [{**c, "LAST_MERGES": last} for c in grid
            for last in ((0, 1) if -(-n // c["CHUNK"]) > 2 * sm_count else (0,))]


def _resident(family: Family, n: int, n_rows: int, sm_count: int,
              l2_mb: float) -> tuple[list[MoveInstance], list[Skipped]]:
    """The persistent looped move, where a row per SM (or two) fit L2's share for the rows in flight."""
    name = f"{family.name}.looped_resident"
    row_mib = n * DTYPE_BYTES.get(family.dtype, 4) / 2**20
    if n <= REGISTER_ROW_MAX:
        return [], [Skipped(name, f"rows of {n} fit in one program's registers: rows_in_registers reads them once")]
    if n_rows <= sm_count:
        return [], [Skipped(name, f"{n_rows} rows are a program per row in one wave already")]
    programs = [p for p in (sm_count, 2 * sm_count) if p * row_mib <= RESIDENT_L2_SHARE * l2_mb]
    if not programs:
        return [], [Skipped(name, f"a row of {row_mib:.2f} MiB on each of {sm_count} SMs is more than "
                                  f"{RESIDENT_L2_SHARE:.0%} of the {l2_mb:g} MiB L2")]
    grid = [{"BLOCK": b, "num_warps": w, "PROGRAMS": p} for p in programs for b in (4096, 8192, 16384)
            for w in (8, 16, 32) if 8 <= b // (32 * w) <= 32]
    grid.sort(key=lambda c: (c["PROGRAMS"], abs(c["BLOCK"] - 8192) + abs(c["num_warps"] - 16)))
    assert family.dim is not None
    return [MoveInstance(name, f"{programs[0]} persistent programs, a row of {row_mib:.2f} MiB each at a time: the "
                         "rows in flight stay in L2 between the statistics pass and the writing pass",
                         rows.looped_resident(family.name, family.dim, family.input_names, family.eps),
                         tuple(grid))], []


def _l2_pieces(family: Family, n: int, sm_count: int, l2_mb: float) -> tuple[list[MoveInstance], list[Skipped]]:
    """The two-walk move for rows too long for registers whose resident pieces fit half of L2 (standardize_l2.py)."""
    name = f"{family.name}.l2_pieces"
    if n <= REGISTER_ROW_MAX:
        return [], [Skipped(name, f"rows of {n} fit in one program's registers: rows_in_registers reads them once")]
    if rows_aligned.off_boundary(n, DTYPE_BYTES.get(family.dtype, 4)):
        return [], [Skipped(name, f"rows of {n} start off a 16-byte boundary: its walks would read value by value "
                                  "(one_read reads such rows in aligned windows)")]
    grid, why = standardize_l2.l2_pieces_grid(n, sm_count, l2_mb, DTYPE_BYTES.get(family.dtype, 4))
    if not grid:
        return [], [Skipped(name, why)]
    assert family.dim is not None
    return [MoveInstance(name, "a row's pieces walked twice by one kernel, the second walk from L2, the row's "
                         "statistics merged between through a per-row counter: one read from DRAM (a GPU move)",
                         rows_l2.l2_pieces(family.name, family.dim, family.input_names, family.eps), tuple(grid))], []


def _one_read(family: Family, n: int, sm_count: int) -> tuple[list[MoveInstance], list[Skipped]]:
    """The one-read move for rows too long for registers and short enough for their pieces to be resident at once."""
    name = f"{family.name}.one_read"
    if n <= REGISTER_ROW_MAX:
        return [], [Skipped(name, f"rows of {n} fit in one program's registers: rows_in_registers reads them once")]
    grid = last_merges(one_read_grid(n, sm_count), n, sm_count)
    if not grid:
        return [], [Skipped(name, f"a row of {n} needs more pieces than the {sm_count} SMs are estimated to hold "
                                  "at once")]
    assert family.dim is not None
    return [MoveInstance(name, "a row's pieces in registers, statistics merged through a per-row counter: "
                         "one read and one write (a GPU move: the interpreter takes the looped kernel)",
                         rows.one_read(family.name, family.dim, family.input_names, family.eps), tuple(grid))], []


def standardize_moves(family: Family, affine: standardize.Affine | None, sm_count: int,
                      l2_mb: float = 60.0) -> tuple[list[MoveInstance], list[Skipped]]:
    """InstanceNorm, LayerNorm and GroupNorm rows (the standardize family), with the reference's affine."""
    assert family.dim is not None and family.eps is not None
    n = math.prod(family.shapes[0][family.dim:]) // family.groups
    first, eps, params, groups = family.dim, family.eps, family.input_names, family.groups
    n_rows = math.prod(family.shapes[0]) // max(n, 1)
    split, not_split = split_row_grid(n, n_rows, sm_count)
    if split:
        split = [MoveInstance("standardize.split_row", f"each of the {n_rows} rows split in pieces: statistics, then "
                              "merge and write, in two kernels",
                              standardize.split_row(first, eps, params, affine, groups), tuple(split))]
    if n <= REGISTER_ROW_MAX:
        block_n = 1 << max(n - 1, 0).bit_length()
        grid = [{"ROWS": r, "num_warps": w} for r in (1, 2, 4, 8) for w in (4, 8) if 4 <= r * block_n // (32 * w) <= 64]
        return [MoveInstance("standardize.rows_in_registers", f"ROWS whole rows of {n} per program: one read",
                             standardize.rows_in_registers(first, eps, params, affine, groups), tuple(grid))], [
            Skipped("standardize.one_read", f"rows of {n} fit in one program's registers"),
            Skipped("standardize.l2_pieces", f"rows of {n} fit in one program's registers"),
            Skipped("standardize.split_row", not_split)]
    out = [MoveInstance("standardize.looped_online", "one Welford-exact statistics pass, the output pass walking "
                        "back (L2)", standardize.looped_online(first, eps, params, affine, groups),
                        tuple({"BLOCK": b, "num_warps": w} for b in (4096, 2048, 8192) for w in (8, 4)))]
    skipped = [Skipped("standardize.rows_in_registers", f"a row of {n} values is more than {REGISTER_ROW_MAX}")]
    if grid := tuple(last_merges(one_read_grid(n, sm_count), n, sm_count)):
        out.append(MoveInstance("standardize.one_read", "a row's pieces in registers, statistics merged through a "
                                "per-row counter: one read (a GPU move)",
                                standardize.one_read(first, eps, params, affine, groups), grid))
    else:
        skipped.append(Skipped("standardize.one_read", f"a row of {n} needs more pieces than the {sm_count} SMs are "
                               "estimated to hold at once"))
    element = DTYPE_BYTES.get(family.dtype, 4)
    every_row = 2 * n * element if affine is not None and not affine.per_channel else 0  # a LayerNorm's w and b
    if rows_aligned.off_boundary(n, element):  # the walks' loads would go value by value, not in 16-byte vectors
        l2_grid, not_l2 = [], f"rows of {n} start off a 16-byte boundary: its walks would read value by value"
    else:
        l2_grid, not_l2 = standardize_l2.l2_pieces_grid(n, sm_count, l2_mb, element, every_row)
    if l2_grid:
        out.append(MoveInstance("standardize.l2_pieces", "a row's pieces walked twice by one kernel, the second walk "
                                "from L2, the row's statistics merged between through a per-row counter: one read "
                                "from DRAM (a GPU move)", standardize_l2.l2_pieces(first, eps, params, affine, groups),
                                tuple(l2_grid)))
    else:
        skipped.append(Skipped("standardize.l2_pieces", not_l2))
    return (out + split, skipped) if split else (out, [*skipped, Skipped("standardize.split_row", not_split)])
