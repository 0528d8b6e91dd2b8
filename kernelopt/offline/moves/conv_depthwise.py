"""The convolution family's direct template for convolutions whose output channels each read one input channel
(`conv.depthwise`: groups equal to the input channels, KernelBench's depthwise convolutions 82-85).

The implicit GEMM (seed/conv.py) reduces over a group's input channels times the kernel's taps and spreads a
group's output channels over a tile's columns. With one input channel and one output channel a group, a tile of
BLOCK_N columns holds one useful column, and its K steps of BLOCK_K one useful channel: it multiplies a thousand
times the work, on the CUDA cores at fp32. Such a convolution is a stencil: each output is the weighted sum of its
window's KD x KH x KW inputs, a few FLOPs a byte, bound by memory. Here one program computes a BLOCK_H x BLOCK_W tile
of one (sample, output channel, output depth) plane, a tap at a time, its window's rows read where the tile's
neighbours read them (from L1 or L2 after the first). fp32 FMAs in fp32, the same few terms as the reference.
"""

from __future__ import annotations

HELPER = '''

# conv_dw_kernel's tile of an output plane: the offline sweep's knobs (each cut to the plane's own size at launch)
DW_BLOCK_H = 8
DW_BLOCK_W = 64


@triton.jit
def conv_dw_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, TILES_W, TILES, C_OUT, OD, OH, OW, D, H, W, KD, KH, KW, OCG,
    sxn, sxc, sxd, sxh, sxw, son, soc, sod, soh, sow,
    std, sth, stw, pdd, pdh, pdw, dld, dlh, dlw,
    HAS_BIAS: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr,
):
    # Program: a BLOCK_H x BLOCK_W tile of one (sample, output channel, output depth) plane; output channel oc
    # reads input channel oc // OCG (OCG output channels a group, one input channel each)
    pid = tl.program_id(0)
    row = pid // TILES
    tile = pid % TILES
    od = row % OD
    t = row // OD
    oc = t % C_OUT
    n = (t // C_OUT).to(tl.int64)
    oh = (tile // TILES_W) * BLOCK_H + tl.arange(0, BLOCK_H)
    ow = (tile % TILES_W) * BLOCK_W + tl.arange(0, BLOCK_W)
    out_ok = (oh[:, None] < OH) & (ow[None, :] < OW)
    x_plane = x_ptr + n * sxn + (oc // OCG).to(tl.int64) * sxc
    w_taps = w_ptr + oc * (KD * KH * KW)
    acc = tl.zeros((BLOCK_H, BLOCK_W), dtype=tl.float32)
    for kd in range(KD):
        i_d = od * std - pdd + kd * dld
        d_ok = (oh * 0 + i_d >= 0) & (oh * 0 + i_d < D)  # a vector: the interpreter takes no scalar in a mask
        for kh in range(KH):
            i_h = oh * sth - pdh + kh * dlh
            h_ok = d_ok & (i_h >= 0) & (i_h < H)
            for kw in range(KW):
                i_w = ow * stw - pdw + kw * dlw
                ok = out_ok & h_ok[:, None] & ((i_w >= 0) & (i_w < W))[None, :]
                x = tl.load(x_plane + i_d * sxd + i_h[:, None] * sxh + i_w[None, :] * sxw, mask=ok, other=0.0)
                acc += x.to(tl.float32) * tl.load(w_taps + (kd * KH + kh) * KW + kw).to(tl.float32)
    if HAS_BIAS:
        acc += tl.load(b_ptr + oc).to(tl.float32)
    o = out_ptr + n * son + oc.to(tl.int64) * soc + od * sod + oh[:, None] * soh + ow[None, :] * sow
    tl.store(o, acc.to(out_ptr.dtype.element_ty), mask=out_ok)


def _dw_three(values, fill):
    """A 1- or 2-D convolution's sizes, strides or settings as 3-D ones (leading `fill`s)."""
    values = tuple(values)
    return (fill,) * (3 - len(values)) + values


def conv_triton(x, weight, bias, out, stride, padding, dilation, transposed, output_padding, groups):
    """torch's convolution where each output channel reads one input channel (groups = input channels), on
    `conv_dw_kernel`, into `out` (allocated here when None). Not a transposed one."""
    spatial = x.dim() - 2
    stride, padding, dilation = (tuple(v) * (spatial if len(v) == 1 else 1) for v in (stride, padding, dilation))
    if out is None:
        sizes = [(i + 2 * p - d * (k - 1) - 1) // s + 1 for i, s, p, d, k in
                 zip(x.shape[2:], stride, padding, dilation, weight.shape[2:], strict=True)]
        out = torch.empty((x.shape[0], weight.shape[0], *sizes), dtype=x.dtype, device=x.device)
    OD, OH, OW = _dw_three(out.shape[2:], 1)
    KD, KH, KW = _dw_three(weight.shape[2:], 1)
    taps = weight.reshape(weight.shape[0], -1).contiguous()
    block_h = min(DW_BLOCK_H, triton.next_power_of_2(OH))  # a 1-D convolution's plane is one row
    block_w = min(DW_BLOCK_W, triton.next_power_of_2(OW))
    tiles_w = triton.cdiv(OW, block_w)
    tiles = triton.cdiv(OH, block_h) * tiles_w
    conv_dw_kernel[(x.shape[0] * out.shape[1] * OD * tiles,)](
        x, taps, bias if bias is not None else taps, out, tiles_w, tiles, out.shape[1], OD, OH, OW,
        *_dw_three(x.shape[2:], 1), KD, KH, KW, out.shape[1] // groups,
        x.stride(0), x.stride(1), *_dw_three(x.stride()[2:], 0),
        out.stride(0), out.stride(1), *_dw_three(out.stride()[2:], 0),
        *_dw_three(stride, 1), *_dw_three(padding, 0), *_dw_three(dilation, 1),
        HAS_BIAS=bias is not None, BLOCK_H=block_h, BLOCK_W=block_w, num_warps=4,
    )
    return out
'''

HEADER = '''"""conv.depthwise: the reference's convolution, each output channel reading one input channel, as a direct
stencil (kernelopt's template): a tile of an output plane a program, a tap at a time."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
'''

# (DW_BLOCK_H, DW_BLOCK_W, num_warps): tiles of 512-2048 outputs, 4-16 a thread. Not yet timed.
TILES = ((8, 64, 4), (4, 128, 4), (16, 64, 8), (8, 128, 8), (2, 256, 4), (32, 32, 4), (1, 512, 4))
KEYS = ("DW_BLOCK_H", "DW_BLOCK_W", "num_warps")


def applies(family_scalars: tuple[object, ...], input_shape: tuple[int, ...]) -> str | None:
    """None where the convolution's output channels each read one input channel (not transposed), else why not."""
    transposed, groups = family_scalars[6], family_scalars[8]
    if transposed:
        return "a transposed convolution: each output gathers from several input positions a tap"
    if len(input_shape) < 3 or input_shape[1] != groups:
        channels = input_shape[1] if len(input_shape) > 1 else "?"
        return f"{channels} input channels in {groups} group(s): each output reads several channels"
    return None
