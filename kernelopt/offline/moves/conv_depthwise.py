"""The convolution family's direct template for convolutions whose output channels each read one input channel
(`conv.depthwise`: groups equal to the input channels, KernelBench's depthwise convolutions 82-85).

The implicit GEMM (seed/conv.py) reduces over a group's input channels times the kernel's taps and spreads a
group's output channels over a tile's columns. With one input channel and one output channel a group, a tile of
BLOCK_N columns holds one useful column, and its K steps of BLOCK_K one useful channel: it multiplies a thousand
times the work, on the CUDA cores at fp32. Such a convolution is a stencil: each output is the weighted sum of its
window's KD x KH x KW inputs, a few FLOPs a byte, bound by memory. Here one program computes a BLOCK_H x BLOCK_W tile
of one (sample, output channel, output depth) plane, a tap at a time, its window's rows read where the tile's
neighbours read them (from L1 or L2 after the first). The taps are unrolled (the kernel sizes are constexprs), a kernel
row's taps at constant steps from its first; without padding, or in a tile whose window lies inside the input, only the
tile's edge is masked. fp32 FMAs in fp32, the same few terms as the reference.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelopt.seed.stencil import DEPTHWISE, DEPTHWISE_OUTPUTS

if TYPE_CHECKING:
    from kernelopt.offline.moves.family import Family

HELPER = """

# conv_dw_kernel's tile of an output plane: the offline sweep's knobs (each cut to the plane's own size at launch)
DW_BLOCK_H = 1
DW_BLOCK_W = 512
""" + DEPTHWISE + """

def conv_triton(x, weight, bias, out, stride, padding, dilation, transposed, output_padding, groups):
    # each output channel reads one input channel (the move is offered only so): the stencil at the swept tile
    return conv_depthwise(x, weight, bias, out, stride, padding, dilation, groups, DW_BLOCK_H, DW_BLOCK_W)
"""

HEADER = '''"""conv.depthwise: the reference's convolution, each output channel reading one input channel, as a direct
stencil (kernelopt's template): a tile of an output plane a program, its taps unrolled."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
'''

# (DW_BLOCK_H, DW_BLOCK_W, num_warps): two outputs a thread first, 82's best on the H200 (1 x 512 at 8 warps 1.06 ms,
# against 1.43 at four a thread, 32 x 32 / 4 or 1 x 512 / 4, and 1.82-1.88 at one: 1 x 128 / 4, 4 x 32 / 4, 8 x 32 / 8;
# RESULTS (au)), 2-D tiles of two a thread next (a window's rows shared in L1), then four and eight a thread.
TILES = ((1, 512, 8), (2, 256, 8), (4, 128, 8), (8, 64, 8), (1, 256, 4), (32, 32, 4), (1, 512, 4), (8, 64, 4))
KEYS = ("DW_BLOCK_H", "DW_BLOCK_W", "num_warps")


def outputs_a_group(family: Family) -> int | None:
    """A group's output channels, from the traced weight (None where it was not read)."""
    weight, groups, transposed = family.weight_shape, family.scalars[8], family.scalars[6]
    if len(weight) < 2:
        return None
    return weight[1] if transposed else weight[0] // max(groups, 1)


def cut_tiles(table: tuple[tuple[int, ...], ...], keys: tuple[str, ...], family: Family,
              least: int = 1) -> tuple[dict[str, int], ...]:
    """A tile table's configurations for this convolution, CONV_BLOCK_N cut to its group's output channels (a power
    of two, `least` at least), in order, without repeats."""
    outputs = outputs_a_group(family) or 1 << 30
    most = max(least, 1 << max(outputs - 1, 0).bit_length())
    out: list[dict[str, int]] = []
    for tile in table:
        config = dict(zip(keys, tile, strict=True))
        config["CONV_BLOCK_N"] = min(config["CONV_BLOCK_N"], most)
        if config not in out:
            out.append(config)
    return tuple(out)


def applies(family: Family) -> str | None:
    """None where the convolution's output channels each read one input channel (not transposed), else why not."""
    transposed, groups = family.scalars[6], family.scalars[8]
    shape = family.shapes[0] if family.shapes else ()
    if transposed:
        return "a transposed convolution: each output gathers from several input positions a tap"
    if len(shape) < 3 or shape[1] != groups:
        channels = shape[1] if len(shape) > 1 else "?"
        return f"{channels} input channels in {groups} group(s): each output reads several channels"
    return None


def dispatched(family: Family) -> bool:
    """Whether the seed's helper hands this convolution to the stencil itself (seed/stencil.py DEPTHWISE_OUTPUTS): then
    every implicit-GEMM template of it runs the stencil at the helper's own tile."""
    outputs = outputs_a_group(family)
    return applies(family) is None and outputs is not None and outputs < DEPTHWISE_OUTPUTS
