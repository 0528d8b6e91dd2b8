"""The matmul family's products on operands split once (moves/gemm.py's): where the split templates apply
(`split_f16`, `split_f16_tma`, `split_tf32`, for matmul and torch.bmm), with their tiles, and the product's sizes the
family's readers share."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from kernelopt.hardware.ncu import capability_major
from kernelopt.offline.moves import MoveInstance, Skipped, matmul_regs, matmul_split, matmul_split_f16

if TYPE_CHECKING:
    from kernelopt.offline.moves.family import Family


def split_products(family: Family, out: list[MoveInstance], skipped: list[Skipped], capability: str,
                sm_count: int) -> tuple[list[MoveInstance], list[Skipped]]:
    """A and B split once into parts and remainders, then three tensor-core products a K step, where the product
    is large enough in every dimension to be bound by the tensor cores, not by memory: in fp16 on rows scaled by
    powers of two (matmul_split_f16.py, twice TF32's rate), then in TF32 (matmul_split.py, fp32's range as it is)."""
    (m, k), n = mk(family), n_of(family)
    tiles = math.ceil(m / 128) * math.ceil(n / 128) * (math.prod(family.shapes[family.operands[0]][:-2])
                                                        if family.name == "bmm" else 1)
    why = ""
    small = min(m, n, k) < SPLIT_MIN  # offered then only where C outweighs A and B (output_bound)
    if (capability_major(capability) or 99) < 8:
        why = f"the GPU (compute capability {capability}) has no TF32 tensor cores (sm_80 and later)"
    elif small and not output_bound(m, n, k):
        why = (f"M={m}, N={n}, K={k}: below {SPLIT_MIN} the product is bound by memory, and the split's pass over "
               "A and B (one read, two writes) and the product's two reads of each cost more than the tensor cores "
               "save")
    elif 2 * tiles < sm_count:
        why = (f"{tiles} output tiles of 128 x 128 for {sm_count} SMs: a product of a program per tile leaves "
               "most SMs idle (the split-K moves take such a K)")
    names = (f"{family.name}.split_f16", f"{family.name}.split_tf32", f"{family.name}.split_f16_tma",
             f"{family.name}.split_f16_regs")
    if why:
        old = "no TF32 tensor cores (sm_80 and later)"  # Triton's fp16 products reach them from sm_80 too
        f16_why = why.replace(old, "no tensor-core products in Triton (sm_80 and later)")
        return out, [*skipped, Skipped(names[0], f16_why), Skipped(names[1], why), Skipped(names[2], f16_why),
                     Skipped(names[3], f16_why)]
    keys = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages")
    bmm = family.name == "bmm"
    each = "each batch's " if bmm else ""
    f16 = (matmul_split_f16.bmm_split_f16 if bmm else matmul_split_f16.split_f16)(
        family.input_names, family.operands, family.transposed)
    tf32 = (matmul_split.bmm_split_tf32 if bmm else matmul_split.split_tf32)(
        family.input_names, family.operands, family.transposed)
    f16_why = (f"{each}A's rows and B's columns scaled by powers of two into fp16's range and split once into "
               "fp16 parts and remainders (K-major, padded to whole tiles), then three fp16 products a K step added "
               "in fp32 on the tensor cores: twice TF32's rate, half its bytes")
    if small:
        f16_why += (f"; K={k}: C's {m} x {n} outputs are {m * n / (m * k + k * n):.0f}x A's and B's elements, so the "
                    "split's passes cost little beside C's stores, and the product leaves the CUDA cores")
    f16_tiles = [dict(zip(keys, t, strict=True)) for t in matmul_split_f16.TILES]
    tma_grid = [{**t, "PROGRAMS": sm_count * r} for r in (1, 2) for t in f16_tiles[:2]]
    tma_why = (f"{f16_why}; the tiles loaded whole by TMA through tensor descriptors, {sm_count} persistent programs "
               "walking them")
    if small:  # C's stores bound it: C's tiles leave through TMA too, tried first
        tma_why += ", each C tile stored by TMA while the program computes its next"
        tma_grid = [*({**t, "PROGRAMS": sm_count * r, "STORE_TMA": 1} for t, r in STORE_TILES),
                    *({**t, "STORE_TMA": 0} for t in tma_grid)]
    tma = [MoveInstance(names[2], tma_why, matmul_split_f16.split_f16_tma(
        family.input_names, family.operands, family.transposed, sm_count, batched=bmm), tuple(tma_grid))]
    if (capability_major(capability) or 99) < 9:
        tma, skipped = [], [*skipped, Skipped(names[2], f"the GPU (compute capability {capability}) has no TMA: "
                                              "tensor descriptors need sm_90 (Hopper) or later")]
    regs_why = matmul_regs.applies(m * k, k * n)
    regs_source = matmul_regs.split_f16_regs(family.input_names, family.operands, family.transposed, bmm)
    regs_grid = tuple(dict(zip(keys, t, strict=True)) for t in matmul_regs.TILES)
    regs = [] if regs_why else [MoveInstance(names[3], f"{each}product, {matmul_regs.WHAT}", regs_source, regs_grid)]
    skipped = [*skipped, Skipped(names[3], regs_why)] if regs_why else skipped
    return [*out, MoveInstance(names[0], f16_why, f16, tuple(f16_tiles)), *tma,
            MoveInstance(names[1], f"{each}A and B split once into TF32 parts and remainders (K-major, padded to "
                         "whole tiles), then three TF32 products a K step added in fp32 on the tensor cores: nothing "
                         "split, nor written back to shared memory, inside the loop", tf32,
                         tuple(dict(zip(keys, t, strict=True)) for t in matmul_split.TILES)), *regs], skipped


SPLIT_MIN = 128  # elements: a product with a dimension under this is memory-bound at fp32 on an H100/H200
# The TMA product's tiles where C's stores bound it, each with its programs per SM: BLOCK_K 32 (a small K is one or
# two steps) and few stages, the C tile staged for its TMA store beside the operands' buffers. Several programs an
# SM overlap one's stores with another's products: on the H100 (RESULTS.md (bb)) 128 x 64 at two an SM (82 KB of
# shared memory each) ran 9_Tall_skinny's product in 2.23 ms and the public K=64 product in 2.96, against 2.93 and
# 3.71 for 128 x 128 at one an SM (131 KB) and 3.36 and 4.42 for 128 x 64 at one. Then three an SM (one stage:
# 32 KB, 154 registers) and 64 x 64 at four (49 KB, 79 registers): occupancy the measurement points to, not yet timed.
STORE_TILES = tuple(({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": 32, "num_warps": w, "num_stages": s}, per_sm)
                    for bm, bn, w, s, per_sm in ((128, 64, 4, 2, 2), (128, 64, 4, 1, 3), (64, 64, 4, 2, 4),
                                                 (128, 128, 8, 2, 1)))
OUTPUT_BOUND = 30  # C's elements over A's and B's past which the split's passes cost under a tenth of C's stores


def output_bound(m: int, n: int, k: int) -> bool:
    """Whether C's M x N outputs outweigh A's and B's elements so far (OUTPUT_BOUND times: a small K, M and N large)
    that the split's passes, 12 bytes an fp32 operand element (two reads, two fp16 halves written), cost under a
    tenth of writing C's 4 bytes an element. Such a product is not bound by A's and B's bytes but by C's stores
    and, at fp32 on the CUDA cores, by its 2 M N K FLOPs (9_Tall_skinny's 68.7 GFLOP: about 1 ms at an H200's
    fp32 rate, as long as its 4.3 GB of C take to write): on the tensor cores the product costs little."""
    return m * n >= OUTPUT_BOUND * (m * k + k * n)


def mk(family: Family) -> tuple[int, int]:
    """A's rows and K (a batch's for torch.bmm; torch.matmul's A of more dims: its leading dims as rows)."""
    shape = family.shapes[family.operands[0]]
    if family.rows_flattened and family.name == "matmul":  # torch.matmul's A of more dims: its leading dims, rows
        return math.prod(shape[:-1]), shape[-1]
    rows, cols = shape[-2:]  # a batch's (torch.bmm) or the matrix's
    return (cols, rows) if family.transposed[0] else (rows, cols)


def n_of(family: Family) -> int:
    """B's columns (a batch's for torch.bmm)."""
    rows, cols = family.shapes[family.operands[1]][-2:]
    return rows if family.transposed[1] else cols
