"""The convolution family's direct template for groups of few input channels (`conv.direct`: a first layer's RGB
input, KernelBench's 3-channel convolutions): the seed helper's `conv_direct` (seed/direct.py), which the helper
itself takes for such a group of at most 32 output channels, offered for any count of them and swept.

Each (kernel offset, input channel) loads a tile of output positions' inputs once and adds their outer product with
the offset's weights to BLOCK_OC output channels' sums: fp32 FMAs of the reference's own terms, no gathered K
columns. The implicit GEMM's templates stay beside it (they set the helper's CONV_DIRECT_OUTPUTS to 0): at many
output channels a group its products on the tensor cores (3xTF32, fp16 parts) may be the faster, and the search
measures both.
"""

from __future__ import annotations

import ast
import functools
import re
from typing import TYPE_CHECKING

from kernelopt.offline.moves import conv_depthwise
from kernelopt.seed.conv import CONV_HELPER
from kernelopt.seed.direct import DIRECT_CHANNELS

if TYPE_CHECKING:
    from kernelopt.offline.moves.family import Family

HEADER = '''"""conv.direct: the reference's convolution, a group of few input channels, as a direct convolution
(kernelopt's template): a tile of output positions by a group's output channels a program, each tap's inputs loaded
once."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
'''

# the helper's bound on a group's output channels for the direct kernel (the seed's default, 32) lifted: any count
ANY_OUTPUTS = "CONV_DIRECT_OUTPUTS = 1048576\n"
OWN_OUTPUTS = "CONV_DIRECT_OUTPUTS = 32\n"
assert CONV_HELPER.count(OWN_OUTPUTS) == 1, "the convolution helper's direct bound changed"
HELPER = CONV_HELPER.replace(OWN_OUTPUTS, ANY_OUTPUTS)
# the implicit GEMM's templates: the direct kernel never taken
GEMM_ONLY = "CONV_DIRECT_OUTPUTS = 0\n"

# (CONV_BLOCK_M, CONV_BLOCK_N, num_warps): the direct tile is 4 * CONV_BLOCK_M positions by CONV_BLOCK_N output
# channels (each cut to the convolution's own), 32-64 sums a thread first
KEYS = ("CONV_BLOCK_M", "CONV_BLOCK_N", "num_warps")
TILES = ((64, 16, 4), (64, 32, 8), (32, 32, 4), (128, 16, 8), (32, 64, 8), (16, 64, 4), (64, 64, 16), (128, 8, 4))


def applies(family: Family) -> str | None:
    """None where the direct kernel takes the convolution (at most DIRECT_CHANNELS input channels a group, not one the
    helper hands to the depthwise stencil; a transposed one too, by stride phases), else why not."""
    groups = max(family.scalars[8], 1)
    shape = family.shapes[0] if family.shapes else ()
    if len(shape) < 3:
        return "the input's channels were not traced"
    if shape[1] // groups > DIRECT_CHANNELS:
        return (f"{shape[1] // groups} input channels a group: the direct kernel unrolls at most {DIRECT_CHANNELS} "
                "(the implicit GEMM reduces over more on tl.dot)")
    if conv_depthwise.dispatched(family):
        return "one input channel and few output channels a group: the helper hands it to the depthwise stencil"
    return None


def tiles(family: Family) -> tuple[dict[str, int], ...]:
    """The tile table, CONV_BLOCK_N cut to a group's output channels (a power of two), in order, without repeats."""
    return conv_depthwise.cut_tiles(TILES, KEYS, family)


def gemm_only(source: str, before: str | None = None) -> str:
    """A kernel file holding the seed's convolution helper with the direct kernel never taken: a rewrite of the
    implicit GEMM's product (at 3xTF32, on fp16 parts) is measured on the GEMM it rewrote. With `before` (the file
    the rewrite was made from), only where the rewrite changed `conv_igemm_kernel`: a rewrite of another product
    beside it (a Linear after a first layer's convolution) leaves the convolution as it ran."""
    if before is not None and _igemm(before) == _igemm(source):
        return source
    return re.sub(r"^CONV_DIRECT_OUTPUTS = \d+$", GEMM_ONLY.strip(), source, flags=re.M)


@functools.lru_cache(maxsize=64)  # a pure function of its text: the moves ask again each round
def _igemm(source: str) -> str | None:
    """The text of a file's `conv_igemm_kernel` (None where it has none, or does not parse)."""
    from kernelopt.syntax import parse

    try:
        tree = parse(source)
    except SyntaxError:
        return None
    found = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "conv_igemm_kernel"), None)
    return ast.unparse(found) if found is not None else None
