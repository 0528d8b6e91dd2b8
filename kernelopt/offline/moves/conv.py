"""The convolution family's template: one convolution of the model's own weight (KernelBench's
level-1 convolutions), as the compiler seed's implicit-GEMM Triton convolution (seed/conv.py).

The kernel file keeps the reference's constructor (the same parameters, so a seeded init
matches) and launches `conv_triton` with the reference's stride, padding, dilation, groups and
transposition, read from its aten.convolution call. fp32 gets a twin at 3xTF32 on the tensor
cores, its tiles the ones 3xTF32 runs well at, and one whose gathered tiles are scaled and split into
fp16 parts in registers each K step (three fp16 products: dot_f16x3.py), at twice TF32's rate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelopt.offline.moves import conv_depthwise, conv_direct, conv_pointwise, conv_rows, conv_split
from kernelopt.offline.moves.precision import TF32X3_TILES
from kernelopt.seed.conv import CONV_HELPER
from kernelopt.seed.writer import reference_init, state_expression

if TYPE_CHECKING:
    from kernelopt.offline.moves import MoveInstance, Skipped
    from kernelopt.offline.moves.family import Family

_HEADER = '''"""conv.$name: the reference's convolution as an implicit GEMM (kernelopt's template)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
'''
# (CONV_BLOCK_M, CONV_BLOCK_N, CONV_BLOCK_K, num_warps, num_stages), the template's own first
TILES = ((64, 64, 32, 4, 3), (128, 64, 32, 4, 3), (64, 128, 32, 4, 3), (128, 128, 32, 8, 3), (32, 64, 32, 4, 2),
          (64, 32, 32, 4, 3), (128, 32, 64, 4, 3))
_KEYS = ("CONV_BLOCK_M", "CONV_BLOCK_N", "CONV_BLOCK_K", "num_warps", "num_stages")
_IEEE = 'input_precision="ieee"'


def source(family: Family, problem_source: str, precision: str = "ieee", helper: str = "") -> str:
    """The kernel file: the helper, then ModelNew with the reference's constructor calling it. `helper`: "split"
    (on fp16 parts split once, conv_split.py), "split_tf32" (three TF32 products, conv_split.py), "split_regs" (the
    input split in registers, the weight once, conv_split.py), "depthwise" (the
    direct stencil, conv_depthwise.py), "rows" (the rolling-rows stencil, conv_rows.py) or "direct" (few input
    channels a group, conv_direct.py); else the implicit GEMM, never the helper's direct kernel."""
    _, _, _, stride, padding, dilation, transposed, output_padding, groups = family.scalars[:9]
    weight, bias = family.state
    x = family.input_names[0]
    settings = ", ".join(str(tuple(v)) if isinstance(v, list | tuple) else str(v)
                         for v in (stride, padding, dilation, bool(transposed), output_padding, groups))
    call = (f"conv_triton({x}, {state_expression(weight)}, {state_expression(bias) if bias else 'None'}, "
            f"None, {settings})")
    if helper == "split":
        head, text = conv_split.header(), conv_split.helper()
    elif helper == "split_tf32":
        head, text = conv_split.TF32_HEADER, conv_split.tf32_helper()
    elif helper == "split_regs":
        head, text = conv_split.REGS_HEADER, conv_split.regs_helper()
    elif helper == "depthwise":
        head, text = conv_depthwise.HEADER, conv_depthwise.HELPER
    elif helper == "rows":
        head, text = conv_rows.HEADER, conv_rows.helper(family)
    elif helper == "direct":
        head, text = conv_direct.HEADER, conv_direct.HELPER
    else:
        head = _HEADER.replace("$name", "implicit_gemm" + ("_tf32x3" if precision == "tf32x3" else ""))
        text = conv_direct.gemm_only(CONV_HELPER.replace(_IEEE, f'input_precision="{precision}"'))
    return (head + text + "\n\nclass ModelNew(nn.Module):\n"
            + reference_init(problem_source) + f"\n    def forward(self, {x}):\n        return {call}\n")


def tiles(table: tuple[tuple[int, ...], ...], family: Family) -> tuple[dict[str, int], ...]:
    """A tile table's configurations for this convolution, BLOCK_N cut to its group's output channels (at least 16,
    a tensor-core product's least): a group of 8 spread over 64 columns multiplies 8 times the work. In order,
    without repeats."""
    return conv_depthwise.cut_tiles(table, _KEYS, family, least=16)


def conv_moves(family: Family, problem_source: str) -> tuple[list[MoveInstance], list[Skipped]]:
    """The implicit GEMM, and for fp32 its twins: on fp16 parts split once, at 3xTF32, split in registers."""
    from kernelopt.offline.moves import MoveInstance, Skipped, dot_f16x3, matmul_f16x3

    why = ("an implicit GEMM: rows (batch, output position) by a group's output channels, reduced over "
           "(channel, kernel offset) on tl.dot")
    gemm = MoveInstance("conv.implicit_gemm", why, source(family, problem_source), tiles(TILES, family))
    out, skipped = [gemm], []
    not_depthwise = conv_depthwise.applies(family)
    if not_depthwise is None:  # first: the implicit GEMM's tiles hold one useful column and channel a step here
        out.insert(0, MoveInstance("conv.depthwise", "each output channel reads one input channel: a direct stencil, "
                                   "a BLOCK_H x BLOCK_W tile of an output plane a program, its taps unrolled",
                                   source(family, problem_source, helper="depthwise"),
                                   tuple(dict(zip(conv_depthwise.KEYS, t, strict=True))
                                         for t in conv_depthwise.TILES)))
        not_rows = conv_rows.rows_applies(family)
        if not_rows is None:  # each input row loaded once a strip: KW loads an output, not KH x KW
            out.insert(1, MoveInstance("conv.depthwise_rows", "each output channel reads one input channel: a stencil "
                                       "walking strips of output rows, each input row loaded once and added to the "
                                       "running sums of the KH output rows whose windows hold it",
                                       source(family, problem_source, helper="rows"),
                                       tuple(dict(zip(conv_rows.KEYS, t, strict=True)) for t in conv_rows.TILES)))
        else:
            skipped.append(Skipped("conv.depthwise_rows", not_rows))
    else:
        skipped.append(Skipped("conv.depthwise", not_depthwise))
    not_direct = conv_direct.applies(family)
    if not_direct is None:  # first where the seed's helper itself takes it (few output channels a group too)
        direct = MoveInstance("conv.direct", "a group of few input channels: a direct convolution, a tile of output "
                              "positions by a group's output channels a program, each tap's inputs loaded once",
                              source(family, problem_source, helper="direct"), conv_direct.tiles(family))
        few = (conv_depthwise.outputs_a_group(family) or 1 << 30) <= 32
        stencils = sum(m.name.startswith("conv.depthwise") for m in out)  # a depthwise group's stencils stay first
        out.insert(stencils if few else len(out), direct)
    else:
        skipped.append(Skipped("conv.direct", not_direct))
    pointwise, not_pointwise = _pointwise_moves(family, problem_source)
    out[:0] = pointwise  # first: the implicit GEMM's gathers and masks, for a product of contiguous rows
    skipped += not_pointwise
    if conv_depthwise.dispatched(family):  # the GEMM templates' helper would run the stencil at its own tile
        why_not = (f"{conv_depthwise.outputs_a_group(family)} output channel(s) of one input channel a group: the "
                   "helper hands this convolution to the depthwise stencil, which conv.depthwise sweeps")
        return [m for m in out if m is not gemm], [*skipped, *(Skipped(name, why_not) for name in (
            "conv.implicit_gemm", "conv.split_f16", "conv.split_tf32", "conv.split_f16_regs",
            "conv.implicit_gemm_tf32x3", "conv.implicit_gemm_f16x3"))]
    if family.dtype != "float32":
        own = f"the problem's dtype is {family.dtype}: its products are the tensor cores' own"
        return out, [*skipped, Skipped("conv.split_f16", own), Skipped("conv.split_tf32", own),
                     Skipped("conv.split_f16_regs", own),
                     Skipped("conv.implicit_gemm_tf32x3", f"the problem's dtype is {family.dtype}: no 3xTF32"),
                     Skipped("conv.implicit_gemm_f16x3", own)]
    out.append(MoveInstance("conv.split_f16", f"{why}; fp32 products as three fp16 products of the input's "
                            "samples and the weight's output channels scaled by powers of two and split once before "
                            "it", source(family, problem_source, helper="split"),
                            conv_split.grid(tiles(conv_split.TILES, family))))
    out.append(MoveInstance("conv.split_tf32", f"{why}; fp32 products as three TF32 products: the gathered input "
                            "tile split in registers (the tensor cores' A operand), the weight split once, K-major",
                            source(family, problem_source, helper="split_tf32"), tiles(TF32X3_TILES, family)))
    out.append(MoveInstance("conv.split_f16_regs", f"{why}; fp32 products as three fp16 products: the gathered input "
                            "tile scaled by its samples' powers of two (found by one read) and split in registers (the "
                            "tensor cores' A operand), the weight split once", source(family, problem_source,
                                                                                     helper="split_regs"),
                            tiles(conv_split.TILES, family)))
    out.append(MoveInstance("conv.implicit_gemm_tf32x3", f"{why}; fp32 products at 3xTF32 on the tensor cores",
                            source(family, problem_source, "tf32x3"), tiles(TF32X3_TILES, family)))
    split = dot_f16x3.to_f16x3(gemm.source)
    assert split is not None, "the convolution helper's fp32 product is no longer `acc = tl.dot(a, b, acc, ...)`"
    out.append(MoveInstance("conv.implicit_gemm_f16x3", f"{why}; fp32 products as three fp16 products of the "
                            "gathered tiles, scaled by powers of two and split in registers each K step",
                            split.replace("conv.implicit_gemm:", "conv.implicit_gemm_f16x3:", 1),
                            tiles(matmul_f16x3.TILES, family)))
    return out, skipped


def _pointwise_moves(family: Family, problem_source: str) -> tuple[list[MoveInstance], list[Skipped]]:
    """conv.pointwise for a 1 x 1 convolution at unit stride, and for fp32 its twins on TF32 parts, at 3xTF32 and split
    in registers; else why not."""
    from kernelopt.offline.moves import MoveInstance, Skipped, dot_f16x3

    names = ("conv.pointwise", "conv.pointwise_split", "conv.pointwise_tf32x3", "conv.pointwise_f16x3")
    why_not = conv_pointwise.applies(family)
    if why_not is None and conv_depthwise.applies(family) is None:  # a product of one useful channel a K step
        why_not = "each output channel reads one input channel: a per-channel scale, the depthwise stencil's"
    if why_not is not None:
        return [], [Skipped(name, why_not) for name in names]
    why = ("a 1 x 1 convolution as a product per sample: a group's output channels by contiguous positions a "
           "program, its tiles loaded and stored whole (no gathered offsets, no masks inside the tensor)")
    grid = conv_pointwise.tiles(family)
    plain = MoveInstance(names[0], why, conv_pointwise.source(family, problem_source), grid)
    if family.dtype != "float32":
        own = f"the problem's dtype is {family.dtype}: its products are the tensor cores' own"
        return [plain], [Skipped(name, own) for name in names[1:]]
    split = dot_f16x3.to_f16x3(plain.source)
    assert split is not None, "the pointwise product is no longer `acc = tl.dot(a, b, acc, ...)`"
    return [plain, MoveInstance(names[1], f"{why}; fp32 products as three TF32 products of the positions' tile (split "
                                "in registers, the tensor cores' A operand) and the weight (split once, K-major)",
                                conv_pointwise.source(family, problem_source, "split"), grid),
            MoveInstance(names[2], f"{why}; fp32 products at 3xTF32 on the tensor cores",
                         conv_pointwise.source(family, problem_source, "tf32x3"), grid),
            MoveInstance(names[3], f"{why}; fp32 products as three fp16 products of the tiles, scaled by powers of "
                         "two and split in registers each K step",
                         split.replace("conv.pointwise:", "conv.pointwise_f16x3:", 1), grid)], []
