"""The depthwise convolution's rolling-rows stencil (`conv.depthwise_rows`): each input row read once a program and
used by every output row whose window holds it.

The tile stencil (seed/stencil.py, `conv.depthwise`) loads all KH x KW taps of every output: at 3 x 3, nine loads
an output, most of them L1 hits of rows its neighbours loaded. On the H200 at KernelBench 82's size it ran at 42% of
the floor at its best tile (1.06 ms against 0.45), bound by its loads, not by DRAM. Here a program walks down a strip
of ROWS output rows, BLOCK_W columns wide, one input row a step: it loads the row's KW shifted vectors once and adds
each to the KH output rows whose windows hold that row, kept as KH running sums in registers. The oldest sum is
complete after its last kernel row and is stored; the sums move up one. An output costs KW loads instead of
KH x KW, and a strip reads its input rows once (KH - 1 rows of halo a strip).

A row feeds consecutive output rows only at unit stride and dilation along H, so the move applies there (KernelBench's
depthwise problems 82-86 all are); W's stride, dilation and padding are the loads' own, as in the tile stencil. The
kernel text is written for the problem's KH and KW (KH sums, KH x KW weights loaded before the walk). fp32 FMAs in
fp32, each output's terms in the reference's order of kernel rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelopt.offline.moves.conv_depthwise import applies
from kernelopt.seed.stencil import CONV_OUT

if TYPE_CHECKING:
    from kernelopt.offline.moves.family import Family

# (DW_ROWS, DW_ROW_W, num_warps): four outputs a thread along a row first. On the H100 (RESULTS (av)) 82's sweep
# (planes 510 wide) put 16 x 512 / 4 warps first (0.796 ms; at 8 warps, two a thread, 0.888-0.905), and 85's (250
# wide: a 512 tile is cut to 256) went from 16 x 256 / 4 (0.521) to 32 x 256 / 2 (0.483) and / 1 (0.478) in its
# later rounds. Strips of 16 rows (halo 1/8 at 3 x 3) and longer.
TILES = ((16, 512, 4), (32, 256, 2), (32, 512, 4), (16, 256, 2), (32, 256, 1), (64, 512, 4), (16, 512, 8),
         (16, 1024, 8))
KEYS = ("DW_ROWS", "DW_ROW_W", "num_warps")
MOST_TAPS = 121  # an 11 x 11 kernel: KH x KW weights held in registers through the walk


def rows_applies(family: Family) -> str | None:
    """None where the rolling-rows stencil computes this convolution, else why not."""
    if (why := applies(family)) is not None:
        return why
    weight = family.weight_shape
    stride, dilation = family.scalars[3], family.scalars[5]
    if len(weight) != 4:
        return f"a {len(weight) - 2}-D convolution: the rows walked are a 2-D plane's"
    if tuple(stride)[0] != 1 or tuple(dilation)[0] != 1:
        return (f"stride {tuple(stride)[0]} and dilation {tuple(dilation)[0]} along H: an input row feeds consecutive "
                "output rows only at 1 and 1")
    if weight[2] < 2:
        return "a kernel of one row: each input row feeds one output row, as the tile stencil reads it"
    if weight[2] * weight[3] > MOST_TAPS:
        return f"{weight[2]} x {weight[3]} taps: more weights than the walk holds in registers ({MOST_TAPS})"
    return None


def kernel_text(kh: int, kw: int) -> str:
    """The kernel and its host function for a KH x KW kernel (text for a kernel file: no import)."""
    weights = "\n".join(f"    w{r}_{c} = tl.load(w_taps + {r * kw + c}).to(tl.float32)"
                        for r in range(kh) for c in range(kw))
    sums = "\n".join(f"    s{j} = tl.zeros([BLOCK_W], tl.float32)  # output row i - {kh - 1 - j}: kernel row "
                     f"{kh - 1 - j} next" for j in range(kh))
    taps = []
    for c in range(kw):
        taps.append(f"        iw = iw0 + {c} * dlw\n"
                    f"        x = tl.load(row + iw * sxw, mask=row_ok & (iw >= 0) & (iw < W), other=0.0)"
                    f".to(tl.float32)")
        taps += [f"        s{j} += x * w{kh - 1 - j}_{c}" for j in range(kh)]
    shift = "\n".join(f"        s{j} = s{j + 1}" for j in range(kh - 1))
    return f'''

@triton.jit
def conv_dw_rows_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, C_OUT, OH, OW, H, W, OCG, sxn, sxc, sxh, sxw, son, soc, soh, sow, stw, pdh, pdw, dlw,
    HAS_BIAS: tl.constexpr, WIDE: tl.constexpr, ROWS: tl.constexpr, BLOCK_W: tl.constexpr,
):
    # Program: BLOCK_W columns of ROWS output rows of one (sample, output channel) plane; output channel oc reads
    # input channel oc // OCG. It walks its {kh - 1} + ROWS input rows once: each row's {kw} shifted vectors go into the
    # {kh} running sums of the output rows whose windows hold the row; the oldest is then whole and stored.
    plane = tl.program_id(0)
    oc = plane % C_OUT
    n = (plane // C_OUT).to(tl.int64)
    ow = tl.program_id(1) * BLOCK_W + tl.arange(0, BLOCK_W)
    oh0 = tl.program_id(2) * ROWS
    if WIDE:  # an offset within a sample may pass 2**31 (a channels-last layout spans the sample)
        ow = ow.to(tl.int64)
    x_plane = x_ptr + n * sxn + (oc // OCG).to(tl.int64) * sxc
    o_cols = out_ptr + n * son + oc.to(tl.int64) * soc + ow * sow
    col_ok = ow < OW
    iw0 = ow * stw - pdw
    zero = iw0 * 0
    w_taps = w_ptr + oc * {kh * kw}
{weights}
    bias = 0.0
    if HAS_BIAS:
        bias = tl.load(b_ptr + oc).to(tl.float32)
{sums}
    for i in range(ROWS + {kh - 1}):
        ih = oh0 - pdh + i
        row = x_plane + ih.to(tl.int64) * sxh
        row_ok = (zero + ih >= 0) & (zero + ih < H)  # vectors: the interpreter takes no scalar in a mask
{chr(10).join(taps)}
        oh = oh0 + i - {kh - 1}
        tl.store(o_cols + oh.to(tl.int64) * soh, (s0 + bias).to(out_ptr.dtype.element_ty),
                 mask=col_ok & (zero + oh >= oh0) & (zero + oh < OH))
{shift}
        s{kh - 1} = tl.zeros([BLOCK_W], tl.float32)


def conv_depthwise_rows(x, weight, bias, out, stride, padding, dilation, groups, rows, block_w):
    """torch's 2-D convolution where each output channel reads one input channel, at unit stride and dilation along
    H, on `conv_dw_rows_kernel`: strips of `rows` output rows, `block_w` columns (cut to the plane) wide."""
    stride, padding, dilation = (tuple(v) * (2 if len(v) == 1 else 1) for v in (stride, padding, dilation))
    out = _conv_out(x, weight, stride, padding, dilation) if out is None else out
    OH, OW = out.shape[2:]
    block_w = min(block_w, triton.next_power_of_2(OW))
    conv_dw_rows_kernel[(x.shape[0] * out.shape[1], triton.cdiv(OW, block_w), triton.cdiv(OH, rows))](
        x, weight.reshape(weight.shape[0], -1).contiguous(), bias if bias is not None else weight, out, out.shape[1],
        OH, OW, x.shape[2], x.shape[3], out.shape[1] // groups, *x.stride(), *out.stride(), stride[1], padding[0],
        padding[1], dilation[1], HAS_BIAS=bias is not None, WIDE=_wide(x, out), ROWS=rows,
        BLOCK_W=block_w, num_warps=4,
    )
    return out
'''


def helper(family: Family) -> str:
    """The move's helper text: the knobs, the kernel for the family's kernel size, `conv_triton` calling it."""
    kh, kw = family.weight_shape[2:]
    return f'''

# conv_dw_rows_kernel's strip of output rows: the offline sweep's knobs (its width cut to the plane's rows at launch)
DW_ROWS = 16
DW_ROW_W = 512
{CONV_OUT}{kernel_text(kh, kw)}

def conv_triton(x, weight, bias, out, stride, padding, dilation, transposed, output_padding, groups):
    # each output channel reads one input channel at unit stride and dilation along H (the move is offered only so)
    return conv_depthwise_rows(x, weight, bias, out, stride, padding, dilation, groups, DW_ROWS, DW_ROW_W)
'''


HEADER = '''"""conv.depthwise_rows: the reference's convolution, each output channel reading one input channel, as a
stencil walking strips of output rows (kernelopt's template): each input row loaded once and added to the running sums
of the output rows whose windows hold it."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
'''
