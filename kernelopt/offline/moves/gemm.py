"""The matmul family's moves: which templates (moves/matmul.py) apply to a problem's A @ B or
torch.bmm, with the tiles each sweeps, and why the others do not apply."""

from __future__ import annotations

import dataclasses
import math
import re
from typing import TYPE_CHECKING

from kernelopt.hardware.ncu import capability_major
from kernelopt.offline.moves import (
    Config,
    MoveInstance,
    Skipped,
    matmul,
    matmul_f16x3,
    matmul_kmajor,
    matmul_parts,
    matmul_tma,
    matmul_triangle,
)
from kernelopt.offline.moves.gemm_split import mk as _mk
from kernelopt.offline.moves.gemm_split import n_of as _n
from kernelopt.offline.moves.gemm_split import split_products

if TYPE_CHECKING:
    from kernelopt.offline.moves.family import Family

_MATMUL_TILES = (  # (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages): the tiles Hopper kernels start from
    (128, 256, 64, 8, 3), (128, 128, 64, 4, 4), (256, 128, 64, 8, 3), (128, 128, 32, 4, 4),
    (64, 256, 32, 4, 4), (128, 64, 64, 4, 4), (64, 128, 64, 4, 4), (64, 64, 64, 4, 3),
)
_MATMUL_TILES_FP32 = (
    (128, 128, 32, 8, 3), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (64, 64, 32, 4, 4), (128, 128, 16, 8, 4),
    (64, 64, 16, 4, 3),
)

# 3xTF32 runs three tensor-core products a K step: a deeper K tile amortises each step's loads and operand splits.
# On the H200 every K-major 3xTF32 matmul of pass c3 (4096 square, 2048 x 8192 x 4096, torch.bmm's 128 x 512 x
# 1024 x 2048, B transposed) ran 10-11% faster at BLOCK_K 64 than at the fp32 table's first tile, BLOCK_K 32,
# found only in round 2 (RESULTS.md (ah)); a K tile of 16 was the slowest there. The deep tiles (192 KB of
# shared memory at these stages: a Hopper's 227 KB, not an A100's 163) go first, so that round 1 measures them,
# where the product's tiles are K-major: a strided operand's tiles, transposed each K step, ran slower at them
# (the batched template on 3_Batched's B: 7.62 and 5.44 ms, against 5.26 at 128 x 64 x 32).
_MATMUL_TILES_TF32X3 = ((128, 128, 64, 8, 3), (128, 64, 64, 8, 4),
                        *(t for t in _MATMUL_TILES_FP32 if t[2] == 32))


def _tiles(family: Family, deep: bool = False) -> list[Config]:
    """A template's first tiles; `deep`: for an fp32 product at 3xTF32 of K-major tiles on a Hopper."""
    table = _MATMUL_TILES_FP32 if family.dtype == "float32" else _MATMUL_TILES
    if deep and family.dtype == "float32":
        table = _MATMUL_TILES_TF32X3
    keys = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages")
    return [dict(zip(keys, t, strict=True)) for t in table]


def _deep(family: Family, capability: str, k_major: bool) -> bool:
    """Whether a 3xTF32 product starts from the deep K tiles: its tiles K-major (the K-major copies', or
    operands stored so), on a GPU with a Hopper's shared memory (an unreadable capability counts as new)."""
    return (k_major or _k_strided(family) is None) and (capability_major(capability) or 99) >= 9


def _tf32x3_twin(m: MoveInstance, family: Family, capability: str) -> MoveInstance:
    """A template's twin with its fp32 products at 3xTF32: a grid of the plain tiles becomes 3xTF32's where
    its tiles are K-major (a persistent or split-K grid, built on them, keeps its own)."""
    deep = _deep(family, capability, k_major=False)
    grid = tuple(_tiles(family, deep)) if m.grid == tuple(_tiles(family)) else m.grid
    return MoveInstance(f"{m.name}_tf32x3", f"{m.why}; fp32 products at 3xTF32 on the tensor cores",
                        matmul.on_tensor_cores(m.source), grid)


def matmul_moves(family: Family, sm_count: int, capability: str = "9.0") -> tuple[list[MoveInstance], list[Skipped]]:
    params, ops, flips = family.input_names, family.operands, family.transposed
    out = [MoveInstance("matmul.grouped", "output tiles in GROUP_M groups for L2 reuse; fp32 without TF32",
                        matmul.grouped(params, ops, flips), tuple(_tiles(family)))]
    if (capability_major(capability) or 99) >= 9:  # an unreadable capability counts as new
        out, skipped = _tma(family, sm_count, out, [])
    else:  # the file would run its grouped fallback there: the same kernel measured twice
        skipped = [Skipped("matmul.tma", f"the GPU (compute capability {capability}) has no TMA: tensor descriptors "
                           "need sm_90 (Hopper) or later")]
    out, skipped = _matmul_structures(family, sm_count, out, skipped)
    out, skipped = _aligned(family, out, skipped)
    if family.dtype == "float32":
        twins = [_tf32x3_twin(m, family, capability) for m in out]
        out, skipped = _k_major(family, out + twins, skipped, capability, sm_count)
        out, skipped = split_products(family, out, skipped, capability, sm_count)
        out, skipped = _f16x3(family, out, skipped, capability, sm_count, "matmul.split_k")
        out, skipped = matmul_parts.offered(family, out, skipped, capability)
    if family.rows_flattened:
        out = [dataclasses.replace(m, source=_on_rows(m.source, family)) for m in out]
    return _on_triangle(family, out, skipped)


def _on_triangle(family: Family, out: list[MoveInstance],
                 skipped: list[Skipped]) -> tuple[list[MoveInstance], list[Skipped]]:
    """Where the reference returns torch.triu or torch.tril of the product: each template computing only the
    tiles the triangle keeps (matmul_triangle.py); one whose kernels the rewrite does not know does not apply."""
    if not family.triangle:
        return out, skipped
    kind, diagonal = family.triangle
    kept, left = [], []
    for move in out:
        source = matmul_triangle.on_triangle(move.source, kind, diagonal)
        if source is None:
            left.append(Skipped(move.name, f"the reference returns torch.{kind} of the product, and this template "
                                "writes its tiles in a way the triangle's rewrite does not know"))
        else:
            kept.append(dataclasses.replace(move, source=source, why=f"{move.why}; only the tiles torch.{kind} "
                                            f"(diagonal {diagonal}) keeps are multiplied, the rest written as zeros"))
    return kept, [*skipped, *left]


def _on_rows(source: str, family: Family) -> str:
    """A 2-D template's kernel file for an A of more dims: forward takes A's leading dims as rows (a view,
    as torch.matmul does) and gives the product's rows back their dims."""
    a = family.input_names[family.operands[0]]
    head = f"        a, b = {a}, "
    assert source.count(head) == 1 and re.search(r"^ +return c$", source, re.M), "not a 2-D matmul template"
    # A's leading dims taken before `a, b = ...` rebinds the template's locals (an input named a, b or c)
    lead = f"        _lead_dims = {a}.shape[:-1]\n"
    source = source.replace(head, f"{lead}        a, b = {a}.reshape(-1, {a}.shape[-1]), ")
    return re.sub(r"^( +)return c$", r"\1return c.view(*_lead_dims, -1)", source, flags=re.M)


def _k_major(family: Family, out: list[MoveInstance], skipped: list[Skipped], capability: str,
             sm_count: int) -> tuple[list[MoveInstance], list[Skipped]]:
    """The K-major copies before a 3xTF32 product, where A or B is stored with K strided: before the grouped
    product, and before the split-K product where that applies (a long K, few output tiles)."""
    why = _k_strided(family)
    if why is None:
        return out, [*skipped, Skipped("matmul.k_major_tf32x3", _K_CONTIGUOUS),
                     Skipped("matmul.k_major_split_k_tf32x3", _K_CONTIGUOUS)]
    params, ops, flips = family.input_names, family.operands, family.transposed
    deep = _tiles(family, _deep(family, capability, k_major=True))
    out = [*out, MoveInstance("matmul.k_major_tf32x3", why,
                              matmul.on_tensor_cores(matmul_kmajor.k_major(params, ops, flips)), tuple(deep))]
    tiles, split_why = _split_k_applies(family, sm_count)
    if split_why:
        return out, [*skipped, Skipped("matmul.k_major_split_k_tf32x3", split_why)]
    # the split product on the copies: a long K's copy is one more pass over B, against a product whose every K
    # step transposed B's tile (6_Matmul on the H200: 1.27 ms at split_k_tf32x3 on B as stored)
    k = _mk(family)[1]
    split = why.replace("then fp32 products", f"then K={k} split in SPLIT_K slices for the {tiles} output tiles "
                        "(summed by a second kernel), fp32 products")
    source = matmul.on_tensor_cores(matmul_kmajor.k_major_split_k(params, ops, flips))
    return [*out, MoveInstance("matmul.k_major_split_k_tf32x3", split, source,
                               _split_grid(family, sm_count, deep))], skipped


_K_CONTIGUOUS = ("A and B are stored with K contiguous and rows of a multiple of 16 elements already: the TF32 "
                 "products take their tiles as they lie")


def _k_strided(family: Family) -> str | None:
    """Why A and B want K-major copies before a TF32 product (per batch for torch.bmm), or None."""
    (m, k), n = _mk(family), _n(family)
    # A stored transposed (K x M) or B as it is (K x N): K is the strided dimension, unless the other is 1
    strided = {"A": family.transposed[0] and m > 1, "B": not family.transposed[1] and n > 1}
    if not any(strided.values()) and k % ALIGN == 0:
        return None
    which = " and ".join(name for name, yes in strided.items() if yes)
    parts = [f"{which} stored with K strided, which a TF32 product transposes tile by tile"] if which else []
    parts += [f"K={k}, no multiple of {ALIGN}, cuts the loads along K into single elements (both operands "
              f"copied, K padded with zeros to a multiple of {ALIGN})"] if k % ALIGN else []
    return "; ".join(parts) + (": copied K-major, rows 16 elements apart, in one pass, then fp32 products at 3xTF32 "
                               "on the tensor cores")


_BYTES = {"float16": 2, "bfloat16": 2}


def _tma(family: Family, sm_count: int, out: list[MoveInstance],
         skipped: list[Skipped]) -> tuple[list[MoveInstance], list[Skipped]]:
    """The tensor-descriptor (TMA) template for 16-bit operands whose stored rows TMA can describe."""
    size = _BYTES.get(family.dtype)
    if size is None:
        return out, [*skipped, Skipped("matmul.tma", f"{family.dtype} operands: TMA tiles are tried for 16-bit "
                                       "operands, whose loads weigh most against the tensor cores' rate")]
    rows = {**{f"{family.input_names[i]}'s": family.shapes[i][-1] for i in family.operands}, "the output's": _n(family)}
    if any(n * size % 16 for n in rows.values()):
        stored = ", ".join(f"{name} {n}" for name, n in rows.items())
        return out, [*skipped, Skipped("matmul.tma", f"stored rows of {stored} elements are not all multiples of "
                                       "16 bytes: a tensor descriptor cannot describe them")]
    why = ("tiles loaded and stored by TMA through device-side tensor descriptors (no address arithmetic, no "
           "masks), one program per SM walking the tiles in GROUP_M order")
    source = matmul_tma.tma(family.input_names, family.operands, family.transposed, sm_count)
    grid = tuple({**t, "PROGRAMS": sm_count * r} for r in (1, 2) for t in _tiles(family)[:3])
    return [*out, MoveInstance("matmul.tma", why, source, grid)], skipped


def bmm_moves(family: Family, capability: str = "9.0",
              sm_count: int = 132) -> tuple[list[MoveInstance], list[Skipped]]:
    source = matmul.batched(family.input_names, family.operands, family.transposed)
    out = [MoveInstance("bmm.batched", "a program per batch and output tile, GROUP_M order in each batch",
                        source, tuple(_tiles(family)))]
    if family.dtype != "float32":
        return _on_triangle(family, _on_batches(family, out), [])
    out.append(_tf32x3_twin(out[0], family, capability))
    why = _k_strided(family)
    skipped = [Skipped("bmm.k_major_tf32x3", _K_CONTIGUOUS)] if why is None else []
    if why is not None:
        kmajor = matmul.on_tensor_cores(matmul_kmajor.bmm_k_major(family.input_names, family.operands,
                                                                  family.transposed))
        out.append(MoveInstance("bmm.k_major_tf32x3", why.replace("copied K-major", "each batch copied K-major"),
                                kmajor, tuple(_tiles(family, _deep(family, capability, k_major=True)))))
    out, skipped = split_products(family, out, skipped, capability, sm_count)
    out, skipped = _f16x3(family, out, skipped, capability, sm_count, "bmm.batched")
    return _on_triangle(family, _on_batches(family, out), skipped)


def _on_batches(family: Family, out: list[MoveInstance]) -> list[MoveInstance]:
    """torch.bmm's templates for inputs of more dims (torch.matmul or einsum of two (..., M, K) and (..., K, N)
    inputs with the same leading dims): forward views each input's leading dims as the batch and gives the product
    back their dims."""
    if not family.rows_flattened:
        return out
    names = [family.input_names[i] for i in family.operands]
    was = [f"{n}.transpose(1, 2)" if t else n for n, t in zip(names, family.transposed, strict=True)]
    now = [w.replace(n, f"{n}.reshape(-1, *{n}.shape[-2:])", 1) for w, n in zip(was, names, strict=True)]
    head = f"        a, b = {was[0]}, {was[1]}\n"

    def viewed(source: str) -> str:
        assert source.count(head) == 1, "not a torch.bmm template"
        # the leading dims taken before `a, b = ...` rebinds the template's locals (an input named a, b or c)
        lead = f"        _lead_dims = {names[0]}.shape[:-2]\n"
        source = source.replace(head, f"{lead}        a, b = {now[0]}, {now[1]}\n")
        return re.sub(r"^( +)return (c|c\.zero_\(\))$", r"\1return \2.view(*_lead_dims, *c.shape[-2:])", source,
                      flags=re.M)

    return [dataclasses.replace(m, source=viewed(m.source)) for m in out]


def _f16x3(family: Family, out: list[MoveInstance], skipped: list[Skipped], capability: str, sm_count: int,
           base: str) -> tuple[list[MoveInstance], list[Skipped]]:
    """The `base` template's twin with each K step's tiles scaled and split into fp16 parts in registers
    (matmul_f16x3.py), where `base` applies: split-K for a long K over few output tiles, and torch.bmm."""
    name = f"{base}_f16x3"
    if (capability_major(capability) or 99) < 8:
        return out, [*skipped, Skipped(name, f"the GPU (compute capability {capability}) has no tensor-core "
                                       "products in Triton (sm_80 and later)")]
    found = next((m for m in out if m.name == base), None)
    if found is None:
        why = next((s.why for s in skipped if s.name == base), f"{base} does not apply")
        return out, [*skipped, Skipped(name, why)]
    keys = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages")
    tiles = [dict(zip(keys, t, strict=True)) for t in matmul_f16x3.TILES]
    grid = _split_grid(family, sm_count, tiles) if "SPLIT_K" in found.grid[0] else tuple(tiles)
    return [*out, MoveInstance(name, f"{found.why}; {matmul_f16x3.WHAT} (three fp16 products a step, "
                               "added in fp32: no pass over A and B before the product)",
                               matmul_f16x3.on_fp16_splits(found.source), grid)], skipped


def _matmul_structures(family: Family, sm_count: int, out: list[MoveInstance],
                       skipped: list[Skipped]) -> tuple[list[MoveInstance], list[Skipped]]:
    """The persistent and split-K templates where the problem's tile count and K call for them."""
    (m, k), n = _mk(family), _n(family)
    params, ops, flips = family.input_names, family.operands, family.transposed
    tiles = math.ceil(m / 128) * math.ceil(n / 128)
    if tiles > sm_count:
        out.append(MoveInstance("matmul.persistent", f"one program per SM walking the {tiles} output tiles "
                                "in GROUP_M order", matmul.persistent(params, ops, flips, sm_count),
                                tuple({**t, "PROGRAMS": sm_count * r} for r in (1, 2) for t in _tiles(family)[:3])))
    else:
        skipped.append(Skipped("matmul.persistent", f"{tiles} output tiles of 128 x 128 are not more than the "
                               f"{sm_count} SMs: a program per tile is already one wave"))
    tiles, why = _split_k_applies(family, sm_count)
    if why:
        return out, [*skipped, Skipped("matmul.split_k", why)]
    out.append(MoveInstance("matmul.split_k", f"{tiles} output tiles for {sm_count} SMs: K={k} split in SPLIT_K "
                            "slices, summed by a second kernel", matmul.split_k(params, ops, flips),
                            _split_grid(family, sm_count, _tiles(family))))
    return out, skipped


def _split_k_applies(family: Family, sm_count: int) -> tuple[int, str]:
    """The output's tiles of 128 x 128, and why K is not split ("" where it is: few tiles, a long K)."""
    (m, k), n = _mk(family), _n(family)
    tiles = math.ceil(m / 128) * math.ceil(n / 128)
    if tiles >= sm_count:
        return tiles, f"{tiles} output tiles of 128 x 128 already fill {sm_count} SMs"
    return tiles, "" if k >= 8 * 128 else f"K={k} is too short to split"


def _split_grid(family: Family, sm_count: int, tiles: list[Config]) -> tuple[Config, ...]:
    """The split-K grid on a table's first three tiles: each tile's best SPLIT_K guess first, then each one's
    second, ..."""
    (m, k), n = _mk(family), _n(family)
    per_tile = [[{**t, "SPLIT_K": s} for s in matmul.split_counts(m, n, k, t, sm_count)] for t in tiles[:3]]
    return tuple(c for rank in range(max(map(len, per_tile))) for configs in per_tile for c in configs[rank : rank + 1])


ALIGN = 16  # elements: a row length Triton can prove a multiple of, so its tiles load as whole vectors


def _aligned(family: Family, out: list[MoveInstance],
             skipped: list[Skipped]) -> tuple[list[MoveInstance], list[Skipped]]:
    """The padded, aligned template where a stored row of A or B is no multiple of ALIGN elements."""
    rows = {family.input_names[i]: family.shapes[i][-1] for i in family.operands}
    stored = ", ".join(f"{name}'s {n}" for name, n in rows.items())
    if not any(n % ALIGN for n in rows.values()):
        return out, [*skipped, Skipped("matmul.aligned", f"the stored rows ({stored} elements) are multiples of "
                                       f"{ALIGN}: their tiles load aligned already")]
    why = (f"stored rows of {stored} elements are no multiple of {ALIGN}: A and B copied into zero-padded, aligned "
           "buffers of whole tiles, then multiplied with no mask")
    source = matmul.aligned(family.input_names, family.operands, family.transposed)
    return [*out, MoveInstance("matmul.aligned", why, source, tuple(_tiles(family)))], skipped
