"""Structural moves: template instances that change what a kernel does, not only its launch.

`structural_moves` recognises the problem's family from its reference (family.py) and gives,
for each template written for that family, either an instance (a complete kernel file and the
knob values its sweep measures, best guesses first) or why it does not apply at this size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kernelopt.hardware.ncu import capability_major
from kernelopt.offline.moves import conv, conv_split, elementwise, pooling, precision, reduce, rows, standardize
from kernelopt.offline.moves.cures import CURES
from kernelopt.seed.errors import SeedError

if TYPE_CHECKING:
    from kernelopt.offline.moves.family import Family

Config = dict[str, int]
SM_COUNT = 132  # an H100/H200: "few programs" is judged against it
L2_MB = 50.0  # MiB: an H100's L2 (an H200 has 60): what the moves assume when told nothing


# A run's start where it has no kernel, no model and no compiler seed: a family's template (nodes/setup.py)
TEMPLATE_START = "a template kernelopt writes for the problem's family, as the start:"


@dataclass(frozen=True)
class MoveInstance:
    """One structural move, instantiated for the problem: its kernel file and its knob grid."""

    name: str  # "softmax.looped_online", "matmul.split_k"
    why: str  # what the move changes, for the report
    source: str
    grid: tuple[Config, ...]  # knob values to sweep, most promising first

    @property
    def cures(self) -> tuple[str, ...]:
        """The judger's categories this move answers (offline/judge.py): its diagnosis puts it first."""
        return CURES.get(self.name.rsplit("+", 1)[-1].split(".", 1)[1], ())  # a rewrite of a move's kernel: its own

    def __post_init__(self) -> None:
        if not self.grid:  # the template's own values: a move is always measured at least once
            object.__setattr__(self, "grid", ({},))


def by_diagnosis(instances: tuple[MoveInstance, ...], category: str | None) -> list[MoveInstance]:
    """The moves, those that answer the diagnosis's category first (a stable order otherwise)."""
    return sorted(instances, key=lambda m: category not in m.cures)


@dataclass(frozen=True)
class Skipped:
    """A move that does not apply to this problem, and why."""

    name: str
    why: str


@dataclass(frozen=True)
class FamilyTag:
    """A family as a run's own process knows it where the moves were worked out in a child (remote.py)."""

    name: str  # "softmax", "matmul", ..., "other"
    dtype: str  # the first input's: "float32", ...


@dataclass(frozen=True)
class Moves:
    family: Family | FamilyTag | None
    instances: tuple[MoveInstance, ...]
    skipped: tuple[Skipped, ...]
    rewrites: frozenset[str] = frozenset()  # the instances that rewrite the best kernel (not the problem's templates)


def structural_moves(problem_path: str | Path, sm_count: int = SM_COUNT, source: str | None = None,
                     capability: str = "9.0", l2_mb: float = L2_MB) -> Moves:
    """The moves that apply to the problem in `problem_path` on a GPU of `sm_count` SMs and compute
    `capability` ("9.0": Hopper) with `l2_mb` of L2, and those that do not with why; with the best kernel's `source`,
    the rewrites of that kernel too."""
    moves = _template_moves(problem_path, sm_count, capability, l2_mb)
    if source is None:
        return moves
    instances, skipped = _rewrites(moves.family, source, capability)
    split, why = _seed_split(moves.family, source, capability)
    conv, not_conv = _conv_split(moves.family, source, capability)
    covered = bool(split) or bool(conv) and not conv_split.products_beside(source)
    split, why = split + conv, why + not_conv
    fused, not_fused = _conv_epilogue(source)
    instances, skipped = instances + fused, skipped + not_fused
    if covered:  # the products' operands split once before their launch: no split of each K step's tiles too
        instances = tuple(m for m in instances if m.name != "dot.f16x3")
        verb = "applies" if len(split) == 1 else "apply"
        skipped += (Skipped("dot.f16x3", f"{' and '.join(m.name for m in split)} {verb}: the operands are split "
                            "once before the product, not every K step in every program"),)
    rewrites = frozenset(m.name for m in instances + split)
    return Moves(moves.family, moves.instances + instances + split, moves.skipped + skipped + why, rewrites)


def _rewrites(family: Family | None, source: str,
              capability: str = "9.0") -> tuple[tuple[MoveInstance, ...], tuple[Skipped, ...]]:
    """Moves that rewrite the best kernel itself: its fp32 products from the CUDA cores to 3xTF32."""
    name = "dot.tf32x3"
    if family is None or family.dtype != "float32":
        dtype = family.dtype if family else "unknown"
        return (), (Skipped(name, f"the problem's dtype is {dtype}: tensor cores need no 3xTF32 for it"),)
    f16x3 = _f16x3_rewrite(source, capability)
    rewritten = precision.to_tf32x3(source)
    if rewritten is None:
        return f16x3[0], (Skipped(name, "the best kernel has no tl.dot multiplying fp32 on the CUDA cores"),
                          *f16x3[1])
    from kernelopt.offline.moves.conv_direct import gemm_only

    rewritten = gemm_only(rewritten, source)  # a seed convolution's product rewritten: its implicit GEMM taken
    alike = precision.one_tile(rewritten)  # the tiles below are each GEMM's, not the first's to scale the rest by
    launch = "its launch unchanged" if alike == rewritten else "each GEMM launch at the first's tile"
    rewritten = alike
    dots = len(precision.fma_dots(source))
    grid = _tf32x3_tiles(rewritten, capability)
    launch += f", then {len(grid) - 1} tiles 3xTF32 runs well at" if len(grid) > 1 else ""
    return (MoveInstance(name, f"the best kernel's {dots} fp32 tl.dot call(s) at 3xTF32 on the tensor cores "
                         f"(three TF32 products: fp32's accuracy), {launch}", rewritten, tuple(grid)),
            *f16x3[0]), f16x3[1]


def _no_tensor_cores(name: str, capability: str) -> tuple[Skipped, ...]:
    """Why a move of fp16 or TF32 products does not apply on a GPU older than sm_80 (none where it does)."""
    if (capability_major(capability) or 99) >= 8:
        return ()
    return (Skipped(name, f"the GPU (compute capability {capability}) has no tensor-core products in Triton (sm_80 "
                    "and later)"),)


def _f16x3_rewrite(source: str, capability: str) -> tuple[tuple[MoveInstance, ...], tuple[Skipped, ...]]:
    """The best kernel's fp32 products (FMAs or 3xTF32) as three fp16 products of its tiles scaled and split in
    registers each K step (dot_f16x3.py), wherever they stand: a convolution's gathered tiles, a batched or
    fixed-K template, a kernel someone wrote."""
    name = "dot.f16x3"
    if old := _no_tensor_cores(name, capability):
        return (), old
    from kernelopt.offline.moves import dot_f16x3, matmul_f16x3

    rewritten = dot_f16x3.to_f16x3(source)
    if rewritten is None:
        return (), (Skipped(name, "the best kernel has no statement `acc += tl.dot(a, b)` or `acc = tl.dot(a, b, "
                            "acc)` multiplying fp32 at fp32's accuracy (ieee or tf32x3)"),)
    from kernelopt.offline.moves.conv_direct import gemm_only

    sites = rewritten.count("_fp16_parts(") // 2
    rewritten = precision.one_tile(gemm_only(rewritten, source))
    grid = _tf32x3_tiles(rewritten, capability, (matmul_f16x3.TILES, matmul_f16x3.TILES))
    from kernelopt.offline.tuner import knob_values

    if any(v < 16 for k, v in knob_values(rewritten).items() if k.endswith("BLOCK_K")):
        grid = grid[1:] or [{}]  # its own K tile: an fp16 product needs 16 at least (fp32's takes 8)
    return (MoveInstance(name, f"the best kernel's {sites} fp32 product(s) as three fp16 products of its tiles, "
                         "each K step's scaled by powers of two and split in registers (no pass over the operands "
                         "first; its loads, masks and epilogue kept)", rewritten, tuple(grid)),), ()


def _seed_split(family: Family | None, source: str,
                capability: str = "9.0") -> tuple[tuple[MoveInstance, ...], tuple[Skipped, ...]]:
    """The best kernel's GEMM templates on operands split once into fp16 parts (seed_split.py): for an fp32
    problem outside the matmul families (those have the split as a template move of their own)."""
    name = "dot.split_f16"
    if family is None or family.dtype != "float32" or family.name in ("matmul", "bmm"):
        return (), ()
    if old := _no_tensor_cores(name, capability):
        return (), old
    from kernelopt.offline.moves import matmul_split_f16, seed_split

    rewritten = seed_split.to_split_f16(source)
    if rewritten is None:
        return (), (Skipped(name, "the best kernel has no GEMM template of the compiler's whose loop, sizes and "
                            "launch the rewrite reads (a batch off its grid's second axis, a K under 128, or none)"),)
    keys = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages")
    grid = tuple({} if t is None else dict(zip(keys, t, strict=True))
                 for t in (None, *matmul_split_f16.TILES))
    return (MoveInstance(name, "the best kernel's GEMM templates on A's rows and B's columns scaled by powers of "
                         "two into fp16's range and split once into fp16 parts and remainders before the launch, "
                         "three fp16 products a K step added in fp32; their program order and fused epilogues "
                         "kept", precision.one_tile(rewritten), grid),), ()


def _conv_split(family: Family | None, source: str,
                capability: str = "9.0") -> tuple[tuple[MoveInstance, ...], tuple[Skipped, ...]]:
    """The best kernel's convolution helper (a compiler seed's `conv_triton`) on fp16 parts split once
    (conv_split.py): for an fp32 problem outside the conv family (that has the split as a template move)."""
    name = "dot.conv_split_f16"
    if family is None or family.dtype != "float32" or family.name == "conv" or "def conv_triton(" not in source:
        return (), ()
    if old := _no_tensor_cores(name, capability):
        return (), old
    from kernelopt.offline.moves import conv_split

    rewritten = conv_split.rewrite(source)
    if rewritten is None:
        return (), (Skipped(name, "the best kernel's convolution helper is not the seed's as written (its product "
                            "rewritten otherwise), or the split's names are taken"),)
    grid = _tf32x3_tiles(rewritten, capability, (conv_split.TILES, conv_split.TILES))
    grid.insert(1, {"CONV_CHANNELS_LAST": 0})  # its own launch as the input lies too
    moves = [MoveInstance(name, "the best kernel's convolution on the input's samples and the weight's output "
                          "channels scaled by powers of two into fp16's range and split once before the product, "
                          "three fp16 products a K step added in fp32; the seed's other kernels kept", rewritten,
                          tuple(grid))]
    tf32 = conv_split.rewrite(source, tf32=True)
    if tf32 is not None:
        from kernelopt.offline.moves.conv import TF32X3_TILES

        moves.append(MoveInstance("dot.conv_split_tf32", "the best kernel's convolution as three TF32 products a K "
                                  "step: its gathered input tile split in registers, the weight split once before "
                                  "the product, K-major; the seed's other kernels kept", tf32,
                                  tuple(_tf32x3_tiles(tf32, capability, (TF32X3_TILES, TF32X3_TILES)))))
    return tuple(moves), ()


# the fused kernel's own launch, then tiles of 8 warps: the epilogue's index arithmetic is the tile's, a value at a time
# (64 x 64 at 4 warps: 96 registers for split_f16's product alone, 198 with the epilogue, sm_90)
EPILOGUE_TILES = ({}, {"CONV_BLOCK_M": 64, "CONV_BLOCK_N": 64, "num_warps": 8},
                  {"CONV_BLOCK_M": 128, "CONV_BLOCK_N": 64, "num_warps": 8})


def _conv_epilogue(source: str) -> tuple[tuple[MoveInstance, ...], tuple[Skipped, ...]]:
    """The best kernel's convolution (a compiler seed's `conv_triton`) computing the kernel that reads its output
    where it stores it: a pointwise kernel (conv_epilogue.py) or a reduction over its channels (conv_reduce.py);
    nothing said for a kernel with no such convolution."""
    if "def conv_triton(" not in source:
        return (), ()
    from kernelopt.offline.moves import conv_epilogue, conv_reduce

    found, skipped = [], []
    for module, what, grid in ((conv_epilogue, "the pointwise kernel that reads the convolution's output computed "
                                "where the convolution stores it: that output never written nor read back",
                                EPILOGUE_TILES),
                               (conv_reduce, "the reduction over the convolution's output channels computed where the "
                                "convolution stores, its tile as wide as the channels: that output never written nor "
                                "read back", conv_reduce.tiles)):
        try:
            fused = module.rewrite(source)
            found.append(MoveInstance(module.NAME, what, fused, grid(fused) if callable(grid) else grid))
        except conv_epilogue.NotFused as why:
            skipped.append(Skipped(module.NAME, str(why)))
    return tuple(found), tuple(skipped)


Tiles = tuple[tuple[int, ...], ...]  # (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) rows


def _tf32x3_tiles(source: str, capability: str = "9.0", tables: tuple[Tiles, Tiles] | None = None) -> list[Config]:
    """The rewrite's configurations: its own launch, then where it has a GEMM tile among its knobs
    (a template's BLOCK_M/N/K, the seed convolution's CONV_BLOCK_M/N/K), the tiles 3xTF32 runs
    well at: a tile picked for FMAs is the wrong one for the tensor cores. A GEMM template whose
    operands are both K-major gets the deep K tiles first on a Hopper (an unreadable capability
    counts as new); the convolution's weight tiles are not K-major. Where a template fixes K, only
    tiles whose BLOCK_K divides it (its K loads may carry no mask). `tables`: (plain, deep) tiles of another
    product than 3xTF32's."""
    from kernelopt.offline.tuner import knob_values

    knobs = knob_values(source)
    deep = (capability_major(capability) or 99) >= 9 and precision.k_major_operands(source)
    fixed_k = precision.literal_k(source)  # a template with K fixed may load its K tiles unmasked
    grid: list[Config] = [{}]
    for prefix in ("", "CONV_"):
        names = [f"{prefix}BLOCK_{d}" for d in "MNK"]
        if all(n in knobs for n in names):
            keys = [*names, "num_warps", "num_stages"]
            plain, deeper = tables or (precision.TF32X3_TILES, precision.TF32X3_TILES_DEEP)
            table = deeper if deep and not prefix else plain
            grid += [dict(zip(keys, tile, strict=True)) for tile in table
                     if prefix or all(k % tile[2] == 0 for k in fixed_k)]
    return grid


def _template_moves(problem_path: str | Path, sm_count: int, capability: str = "9.0", l2_mb: float = L2_MB) -> Moves:
    """The template instances for the problem's family, and the templates that do not apply."""
    from kernelopt.harness.problem import import_file

    try:
        from kernelopt.offline.moves.family import trace_family  # torch loads only when a sweep plans moves

        family = trace_family(import_file(problem_path, "kernelopt_moves_problem"))
    except Exception as err:  # the reference is the user's code: any failure means "no family"
        why = f"the reference could not be traced on the meta device ({type(err).__name__}: {err})"
        return Moves(None, (), (Skipped("all", why),))
    if family.name in rows.FAMILIES:
        from kernelopt.offline.moves import rowwise  # it builds MoveInstance, defined above

        instances, skipped = rowwise.row_moves(family, sm_count, l2_mb)
    elif family.name == "pooling":
        instances, skipped = pooling.pooling_moves(family)
    elif family.name == "elementwise":
        instances, skipped = _elementwise_moves(family)
    elif family.name == "standardize":
        from kernelopt.offline.moves import rowwise  # it builds MoveInstance, defined above

        instances, skipped = rowwise.standardize_moves(family, _affine(family, problem_path), sm_count, l2_mb)
    elif family.name in ("matmul", "bmm"):
        from kernelopt.offline.moves import gemm  # it builds MoveInstance, defined above

        instances, skipped = (gemm.matmul_moves(family, sm_count, capability) if family.name == "matmul"
                              else gemm.bmm_moves(family, capability, sm_count))
    elif family.name == "reduce":
        instances, skipped = _reduce_moves(family)
    elif family.name == "scan":
        from kernelopt.offline.moves import scan  # it builds MoveInstance, defined above

        instances, skipped = scan.scan_moves(family)
    elif family.name == "batch_norm":
        from kernelopt.offline.moves import batchnorm  # it builds MoveInstance, defined above

        instances, skipped = batchnorm.batch_norm_moves(family, Path(problem_path).read_text(), sm_count)
    elif family.name == "separable":
        from kernelopt.offline.moves import separable  # it builds MoveInstance, defined above

        try:  # the template takes the reference's own constructor, which must be found in its text
            instances, skipped = separable.separable_moves(family, Path(problem_path).read_text())
        except SeedError as err:
            return Moves(family, (), (Skipped("separable.*", f"the template does not apply: {err}"),))
    elif family.name == "conv":
        try:  # the template takes the reference's own constructor, which must be found in its text
            instances, skipped = conv.conv_moves(family, Path(problem_path).read_text())
        except SeedError as err:
            return Moves(family, (), (Skipped("conv.*", f"the convolution template does not apply: {err}"),))
    else:
        ops = ", ".join(family.ops) or "none"
        why = f"no template for this reference (its operators: {ops}{family.note}); only the launch is swept"
        return Moves(family, (), (Skipped("all", why),))
    return Moves(family, tuple(instances), tuple(skipped))


def _elementwise_moves(family: Family) -> tuple[list[MoveInstance], list[Skipped]]:
    source = elementwise.streaming(family.ops, family.scalars, family.input_names[0], dict(family.options))
    if source is None:
        return [], [Skipped("elementwise.streaming", f"no formula written for {', '.join(family.ops)}")]
    grid = tuple({"BLOCK": b, "num_warps": w} for b in (4096, 8192, 2048, 16384) for w in (8, 4, 16)
                 if 4 <= b // (32 * w) <= 64)
    return [MoveInstance("elementwise.streaming", "BLOCK contiguous values per program, vectorised, evict_first: "
                         "one streaming pass", source, grid)], []


def _affine(family: Family, problem_path: str | Path) -> standardize.Affine | None:
    """An affine LayerNorm's weight and bias as the kernel file reaches them, under the reference's constructor."""
    if not family.state:
        return None
    from kernelopt.seed.writer import reference_init, state_expression

    weight, bias = family.state
    return standardize.Affine(reference_init(Path(problem_path).read_text()),
                              state_expression(weight) if weight else "None",
                              state_expression(bias) if bias else "None",
                              per_channel="native_group_norm" in family.ops)  # GroupNorm's, of any group count


def _reduce_moves(family: Family) -> tuple[list[MoveInstance], list[Skipped]]:
    """A reduction along one dim (reduce.OPS): rows when it is the last, columns when it is strided."""
    assert family.dim is not None
    shape, dim, op, keepdim = family.shapes[0], family.dim, family.ops[0], bool(family.scalars[0])
    n, inner = shape[dim], math.prod(shape[dim + 1:])
    name = f"reduce_{op}"
    if inner == 1:
        grid = [{"ROWS": r, "BLOCK": b, "num_warps": w} for r in (1, 2, 4, 8) for b in (1024, 2048, 4096)
                for w in (4, 8) if 4 <= r * b // (32 * w) <= 64 and b <= max(1024, 1 << (n - 1).bit_length())]
        grid.sort(key=lambda c: abs(c["ROWS"] * c["BLOCK"] - 8192) + c["num_warps"])
        return [MoveInstance(f"{name}.rows", f"ROWS rows of {n} per program, BLOCK-long contiguous steps",
                             reduce.rows(op, dim, keepdim, family.input_names), tuple(grid))], [
            Skipped(f"{name}.columns", "the reduced dim is the last: its values are contiguous already")]
    grid = sorted(({"BLOCK_N": b, "BLOCK_I": i, "num_warps": w} for b in (8, 16, 32, 64) for i in (64, 128, 256)
                   for w in (4, 8) if 4 <= b * i // (32 * w) <= 64),
                  key=lambda c: abs(c["BLOCK_N"] * c["BLOCK_I"] - 4096) + abs(c["BLOCK_I"] - 128))
    return [MoveInstance(f"{name}.columns", f"the reduced dim ({n}) is strided by {inner}: each program reduces "
                         "BLOCK_I contiguous positions at once", reduce.columns(op, dim, keepdim, family.input_names),
                         tuple(grid))], [
        Skipped(f"{name}.rows", f"rows strided by {inner}: a program per output would read one value every {inner}")]
