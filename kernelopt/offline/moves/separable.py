"""The depthwise-separable family's template (`separable.fused`): a depthwise convolution and the 1 x 1 convolution
of its output (MobileNet's block; KernelBench's 86) in one kernel, the intermediate never written.

Run as two convolutions, the pair writes the depthwise output (as large as the input) and reads it back for the
1 x 1 product: at 86's size (16 x 64 x 512 x 512 fp32 to 128 channels) that is 2.1 GB of its 5.4 GB of traffic, and
the seed ran at 22% of the floor on the H200 (3.05 ms). Here a program takes BLOCK_M outputs along one output row of
one sample and computes the 1 x 1 product for them, BLOCK_N output channels at a time, on `tl.dot`: its K loop runs
over the middle channels BLOCK_K at a time, and each K step's A tile is made in registers, the depthwise sums of those
channels a tap at a time as the stencil does (seed/stencil.py), with their bias. The second bias is the epilogue's.
The input is read once from memory (a window's rows from L1 and L2; again for each further BLOCK_N of output
channels), the output written once.

fp32 takes the product at "ieee" (`separable.fused`) and as three fp16 products of the tiles scaled and split in
registers (`separable.fused_f16x3`, the dot.f16x3 rewrite of it: dot_f16x3.py); 16-bit inputs multiply their own
dtype on the tensor cores.

Where the rolling-rows stencil applies, the pair is also offered as two kernels (`separable.two_pass`): the stencil,
then the 1 x 1 product on the seed helper's implicit GEMM at the seed's precision, and for fp32 with that product
split in registers (`separable.two_pass_f16x3`); and with the product as conv.pointwise's product per sample
(`separable.two_pass_pointwise`, conv_pointwise.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from kernelopt.seed.writer import reference_init, state_expression

if TYPE_CHECKING:
    from kernelopt.offline.moves import MoveInstance, Skipped
    from kernelopt.offline.moves.family import Family

# (SEP_BLOCK_M, SEP_BLOCK_N, SEP_BLOCK_K, num_warps). On the H100 at 86's size (session 38, the f16x3 product) the
# sweep put 64 x 128 x 16 / 4 warps first (3.84 ms) and 32 x 128 x 32 / 4 second (4.31); 64 x 128 x 16 / 8, the old
# first, was last (7.18). sm_90 (Triton 3.6) registers a thread, f16x3, none spilled: 240, 255, then the three added
# for fewer registers a warp (128, 126 and 133: 16 warps at 128 x 128, 4 at 32 x 64 without wgmma, 8 at 64 x 64), 255,
# 244. Software-pipelined loads asked 207 KB of shared memory: the launch takes one stage. The template is the first.
TILES = ((64, 128, 16, 4), (32, 128, 32, 4), (128, 128, 16, 16), (32, 64, 16, 4), (64, 64, 16, 8), (64, 64, 32, 4),
         (128, 128, 16, 8))
KEYS = ("SEP_BLOCK_M", "SEP_BLOCK_N", "SEP_BLOCK_K", "num_warps")

KERNEL = '''

# separable_kernel's tile: the offline sweep's knobs (outputs along a row, output channels a product, middle channels
# a K step)
SEP_BLOCK_M = 64
SEP_BLOCK_N = 128
SEP_BLOCK_K = 16


@triton.jit
def separable_kernel(
    x_ptr, wd_ptr, bd_ptr, wp_ptr, bp_ptr, out_ptr, C_MID, C_OUT, OH, OW, H, W, MULT, TILES_W,
    sxn, sxc, sxh, sxw, son, soc, soh, sow, sth, stw, pdh, pdw, dlh, dlw,
    KH: tl.constexpr, KW: tl.constexpr, BIAS_D: tl.constexpr, BIAS_P: tl.constexpr, LOW: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    # Program: BLOCK_M outputs along one output row of one sample, every output channel, BLOCK_N a step. The 1 x 1
    # product's K loop runs over the middle channels BLOCK_K at a time, each step's A tile the depthwise sums of those
    # channels (channel c reads input channel c // MULT) made in registers: the intermediate is never written.
    pid = tl.program_id(0)
    row = pid // TILES_W
    oh = row % OH
    n = (row // OH).to(tl.int64)
    ow = (pid % TILES_W) * BLOCK_M + tl.arange(0, BLOCK_M)
    m_ok = ow < OW
    x_row = x_ptr + n * sxn
    o_rows = out_ptr + n * son + oh.to(tl.int64) * soh + ow.to(tl.int64) * sow
    for n0 in range(0, C_OUT, BLOCK_N):
        oc = n0 + tl.arange(0, BLOCK_N)
        oc_ok = oc < C_OUT
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for c0 in range(0, C_MID, BLOCK_K):
            c = c0 + tl.arange(0, BLOCK_K)
            c_ok = c < C_MID
            x_cols = x_row + (c // MULT).to(tl.int64)[None, :] * sxc
            dw = tl.zeros((BLOCK_M, BLOCK_K), dtype=tl.float32)
            for kh in tl.static_range(KH):
                ih = ow * 0 + oh * sth - pdh + kh * dlh  # a vector: the interpreter takes no scalar in a mask
                for kw in tl.static_range(KW):
                    iw = ow * stw - pdw + kw * dlw
                    ok = (m_ok & (iw >= 0) & (iw < W) & (ih >= 0) & (ih < H))[:, None] & c_ok[None, :]
                    x = tl.load(x_cols + (ih.to(tl.int64) * sxh + iw.to(tl.int64) * sxw)[:, None], mask=ok,
                                other=0.0)
                    w = tl.load(wd_ptr + c * (KH * KW) + (kh * KW + kw), mask=c_ok, other=0.0)
                    dw += x.to(tl.float32) * w.to(tl.float32)[None, :]
            if BIAS_D:
                dw += tl.load(bd_ptr + c, mask=c_ok, other=0.0).to(tl.float32)[None, :]
            b = tl.load(wp_ptr + oc[None, :] * C_MID + c[:, None], mask=c_ok[:, None] & oc_ok[None, :], other=0.0)
            if LOW:
                acc += tl.dot(dw.to(b.dtype), b)
            else:
                a = dw
                acc += tl.dot(a, b, input_precision="ieee")
        if BIAS_P:
            acc += tl.load(bp_ptr + oc, mask=oc_ok, other=0.0).to(tl.float32)[None, :]
        tl.store(o_rows[:, None] + oc.to(tl.int64)[None, :] * soc, acc.to(out_ptr.dtype.element_ty),
                 mask=m_ok[:, None] & oc_ok[None, :])


def separable_triton(x, w_dw, b_dw, w_pw, b_pw, stride, padding, dilation, groups, block_m, block_n, block_k):
    """torch's depthwise convolution of x (groups = its channels) then the 1 x 1 convolution of that, on
    `separable_kernel`: BLOCK_M outputs of a row (cut to the row) a program, BLOCK_N output channels a product,
    BLOCK_K middle channels a K step (each cut to the channels, 16 at least: a tensor-core product's least)."""
    stride, padding, dilation = (tuple(v) * (2 if len(v) == 1 else 1) for v in (stride, padding, dilation))
    c_mid, c_out = w_dw.shape[0], w_pw.shape[0]
    kh, kw = w_dw.shape[2:]
    oh, ow = [(i + 2 * p - d * (k - 1) - 1) // s + 1
              for i, s, p, d, k in zip(x.shape[2:], stride, padding, dilation, (kh, kw), strict=True)]
    out = torch.empty((x.shape[0], c_out, oh, ow), dtype=x.dtype, device=x.device)
    block_m = min(block_m, max(16, triton.next_power_of_2(ow)))
    block_n = min(block_n, max(16, triton.next_power_of_2(c_out)))
    block_k = min(block_k, max(16, triton.next_power_of_2(c_mid)))
    tiles_w = triton.cdiv(ow, block_m)
    separable_kernel[(x.shape[0] * oh * tiles_w,)](
        x, w_dw.reshape(c_mid, -1).contiguous(), b_dw if b_dw is not None else w_dw,
        w_pw.reshape(c_out, c_mid).contiguous(), b_pw if b_pw is not None else w_pw, out, c_mid, c_out, oh, ow,
        x.shape[2], x.shape[3], c_mid // groups, tiles_w, *x.stride(), *out.stride(), *stride, *padding, *dilation,
        KH=kh, KW=kw, BIAS_D=b_dw is not None, BIAS_P=b_pw is not None, LOW=x.dtype != torch.float32,
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, num_warps=4, num_stages=1,
    )
    return out
'''

HEADER = '''"""separable.$name: the reference's depthwise convolution and the 1 x 1 convolution of its output in one
kernel (kernelopt's template): the 1 x 1 product's K steps over the middle channels, each step's depthwise sums made in
registers."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
'''


def source(family: Family, problem_source: str) -> str:
    """The kernel file: the kernel and its host function, then ModelNew with the reference's constructor."""
    _, _, _, stride, padding, dilation, _, _, groups = family.scalars[:9]
    w_dw, b_dw, w_pw, b_pw = (state_expression(s) if s else "None" for s in family.state)
    call = (f"separable_triton({family.input_names[0]}, {w_dw}, {b_dw}, {w_pw}, {b_pw}, {tuple(stride)}, "
            f"{tuple(padding)}, {tuple(dilation)}, {groups}, SEP_BLOCK_M, SEP_BLOCK_N, SEP_BLOCK_K)")
    return (HEADER.replace("$name", "fused") + KERNEL + "\n\nclass ModelNew(nn.Module):\n"
            + reference_init(problem_source) + f"\n    def forward(self, {family.input_names[0]}):\n"
            f"        return {call}\n")


TWO_PASS_HEADER = '''"""separable.$name: the reference's depthwise convolution on the rolling-rows stencil, then the
1 x 1 convolution of its output on the implicit GEMM (kernelopt's template): two kernels, the intermediate written
once."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
'''

def two_pass_source(family: Family, problem_source: str, pointwise: bool = False) -> str:
    """The kernel file: the seed's convolution helper (its implicit GEMM for the 1 x 1 product; with `pointwise`,
    conv_pointwise.py's product per sample) and the rolling-rows stencil for the depthwise convolution, and ModelNew
    running one then the other."""
    from kernelopt.offline.moves import conv_pointwise, conv_rows
    from kernelopt.seed.conv import CONV_HELPER
    from kernelopt.seed.stencil import CONV_OUT

    _, _, _, stride, padding, dilation, _, _, groups = family.scalars[:9]
    w_dw, b_dw, w_pw, b_pw = (state_expression(s) if s else "None" for s in family.state)
    kh, kw = family.weight_shape[2:]
    rows_launch = "BLOCK_W=block_w, num_warps=4,"
    rows = conv_rows.kernel_text(kh, kw)
    assert rows_launch in rows, "the rows stencil's launch is no longer `BLOCK_W=block_w, num_warps=4,`"
    rows = rows.replace(rows_launch, "BLOCK_W=block_w, num_warps=DW_WARPS,")
    # the stencil's strip at its own grid's first, its warps a knob of their own (DW_WARPS): a GEMM tile's num_warps
    # leaves them as swept
    names = ("DW_ROWS", "DW_ROW_W", "DW_WARPS")
    strip = "\n".join(f"{k} = {v}" for k, v in zip(names, conv_rows.TILES[0], strict=True))
    x = family.input_names[0]
    product, name = CONV_HELPER, "two_pass"
    if pointwise:  # the stencil's output and offset width beside it (the seed helper's own)
        product, name = conv_pointwise.helper(family.dtype) + CONV_OUT, "two_pass_pointwise"
    return (TWO_PASS_HEADER.replace("$name", name) + product
            + "\n\n# conv_dw_rows_kernel's strip of output rows and its warps: the offline sweep's knobs\n" + strip
            + rows + "\n\nclass ModelNew(nn.Module):\n" + reference_init(problem_source)
            + f"\n    def forward(self, {x}):\n"
            f"        mid = conv_depthwise_rows({x}, {w_dw}, {b_dw}, None, {tuple(stride)}, {tuple(padding)}, "
            f"{tuple(dilation)}, {groups}, DW_ROWS, DW_ROW_W)\n"
            f"        return conv_triton(mid, {w_pw}, {b_pw}, None, (1, 1), (0, 0), (1, 1), False, (0, 0), 1)\n")


def separable_moves(family: Family, problem_source: str) -> tuple[list[MoveInstance], list[Skipped]]:
    """The two kernels at their best (the rolling-rows stencil, then the 1 x 1 product at the seed's precision and,
    for fp32, split in registers) and the fused pair, and for fp32 its product as three fp16 products split in
    registers."""
    from kernelopt.offline.moves import MoveInstance, Skipped, conv, conv_pointwise, conv_rows, dot_f16x3, matmul_f16x3

    grid = tuple(dict(zip(KEYS, t, strict=True)) for t in TILES)
    text = source(family, problem_source)
    why = ("the depthwise convolution and the 1 x 1 convolution of its output in one kernel: the product's K steps "
           "over the middle channels, each step's tile of depthwise sums made in registers (never written)")
    fused = MoveInstance("separable.fused", why, text, grid)
    out: list[MoveInstance] = []
    skipped: list[Skipped] = []
    low = family.dtype != "float32"
    two_why = ("the depthwise convolution on the rolling-rows stencil (KW loads an output), then the 1 x 1 "
               "convolution of its output on the implicit GEMM")
    if (not_rows := conv_rows.rows_applies(family)) is not None:
        names = ("separable.two_pass", "separable.two_pass_pointwise") + (() if low else ("separable.two_pass_f16x3",))
        skipped += [Skipped(name, not_rows) for name in names]
    else:
        # The 1 x 1 product's K is the middle channels (64 at 86's size): a GEMM bound by its bytes, where the seed's
        # own fp32 product ("ieee") beat it at 3xTF32 and on operands split once (the H100, sessions 38 and 39:
        # 2.79 ms against 2.93 and 3.69), and the product split in registers took the pair to 3.48. Both are offered.
        two = two_pass_source(family, problem_source)
        pointwise = replace(family, weight_shape=family.pointwise_shape, scalars=(*family.scalars[:8], 1))
        out.append(MoveInstance("separable.two_pass", two_why, two, conv.tiles(conv.TILES, pointwise)))
        # the 1 x 1 product per sample (at 87's channels on the H100, ieee: 7.49 ms swept against the implicit
        # GEMM's 8.08); 86's pair with it, kernel by kernel over three tiles, 2.64 ms (RESULTS (bg)): both are swept
        out.append(MoveInstance("separable.two_pass_pointwise", two_why.replace(
            "on the implicit GEMM", "as a product per sample (contiguous positions, whole tiles unmasked)"),
            two_pass_source(family, problem_source, pointwise=True), conv_pointwise.tiles(pointwise)))
        if not low:
            split = dot_f16x3.to_f16x3(two)
            assert split is not None, "the convolution helper's fp32 product is no longer `acc = tl.dot(a, b, acc)`"
            split = split.replace("separable.two_pass:", "separable.two_pass_f16x3:", 1)
            out.append(MoveInstance("separable.two_pass_f16x3", f"{two_why}; its fp32 products as three fp16 "
                                    "products split in registers each K step", split,
                                    conv.tiles(matmul_f16x3.TILES, pointwise)))  # BLOCK_N cut to C_OUT
    if low:
        return [*out, fused], [*skipped, Skipped("separable.fused_f16x3", f"the problem's dtype is {family.dtype}: "
                                                 "its product is the tensor cores' own")]
    split = dot_f16x3.to_f16x3(text)
    assert split is not None, "the fused kernel's fp32 product is no longer `acc += tl.dot(a, b, ...)`"
    split = split.replace("separable.fused:", "separable.fused_f16x3:", 1)
    return [*out, MoveInstance("separable.fused_f16x3", f"{why}; fp32 products as three fp16 products of the tiles "
                               "scaled and split in registers", split, grid), fused], skipped
