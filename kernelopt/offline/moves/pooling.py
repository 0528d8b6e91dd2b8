"""Two templates for 1-D and 2-D max and average pooling; the window (sizes, strides, padding,
dilation) is the reference's own, written in as constants (not knobs).

`tiled`: each program computes BLOCK_H x BLOCK_W outputs of one (batch, channel) plane, BLOCK_W
along the contiguous dim, so each of the KH x KW window loads is BLOCK_W neighbouring values
(overlapping windows hit L1, not DRAM); the grid is (plane, row block, column block). A 1-D input
is the 2-D case with one row.

`flat`: the output as one flat range in memory order, BLOCK outputs a program, as torch.compile
writes a pooling at static shapes: the sizes are specialized at launch (`tl.constexpr`, one compile
per shape), so splitting an output's index into plane, row and column divides by constants, and
the index is 32-bit where every offset fits. On the H200 torch.compile's flat kernel ran 1-D pools
7-13% faster than `tiled` at its best configuration (benchmarks/h200/probes/pool1d.log).
"""

from __future__ import annotations

from string import Template
from typing import Any

# What both templates hold: the window's loop over a block of outputs (`$tile` its shape, `$address`
# a tap's address), and the forward's sizes.
_WINDOW_LOOP = '''    if IS_MAX:
        acc = tl.full($tile, float("-inf"), tl.float32)
    else:
        acc = tl.zeros($tile, tl.float32)
    count = tl.zeros($tile, tl.float32)
    for kh in tl.static_range(KH):
        ih = oh * SH - PH + kh * DH
        for kw in tl.static_range(KW):
            iw = ow * SW - PW + kw * DW
            inside = live & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            if IS_MAX:
                v = tl.load($address, mask=inside, other=float("-inf")).to(tl.float32)
                acc = tl.maximum(acc, v, propagate_nan=tl.PropagateNan.ALL)  # a NaN in the window wins, as in torch
            else:
                v = tl.load($address, mask=inside, other=0.0).to(tl.float32)
                acc += v
                count += inside.to(tl.float32)
    if not IS_MAX:
        if COUNT_PAD:
            acc = acc / (KH * KW)
        else:
            acc = acc / tl.maximum(count, 1.0)
'''
_SIZES = '''        x = $param.contiguous()
        kh, kw, sh, sw, ph, pw, dh, dw = window
        H = x.shape[-2] if x.dim() == 4 else 1
        W = x.shape[-1]
        OH = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
        OW = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
'''


def _completed(template: str, tile: str, address: str) -> str:
    """`template` with the shared pieces written in (its own placeholders, such as $param, kept)."""
    loop = Template(_WINDOW_LOOP).substitute(tile=tile, address=address)
    return Template(template).safe_substitute(window_loop=loop.rstrip("\n"), sizes=_SIZES.rstrip("\n"))


_SOURCE = '''"""$what pooling, a tile of outputs per program (a structural move of the offline optimizer)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_H = 4
BLOCK_W = 128
# The reference's window (not knobs): sizes, strides, padding, dilation per (row, column) axis.
window = ($kh, $kw, $sh, $sw, $ph, $pw, $dh, $dw)


@triton.jit
def pool_kernel(out_ptr, x_ptr, H, W, OH, OW, KH: tl.constexpr, KW: tl.constexpr, SH: tl.constexpr,
                SW: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr, DH: tl.constexpr, DW: tl.constexpr,
                IS_MAX: tl.constexpr, COUNT_PAD: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr):
    # Program (plane, row block, column block): BLOCK_H x BLOCK_W outputs of one plane.
    plane, row, column = tl.program_id(0).to(tl.int64), tl.program_id(1), tl.program_id(2)
    oh = row * BLOCK_H + tl.arange(0, BLOCK_H)[:, None]
    ow = column * BLOCK_W + tl.arange(0, BLOCK_W)[None, :]
    live = (oh < OH) & (ow < OW)
    src = x_ptr + plane * H * W
$window_loop
    tl.store(out_ptr + plane * OH * OW + oh.to(tl.int64) * OW + ow, acc.to(out_ptr.dtype.element_ty), mask=live)


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, $param):
$sizes
        planes = x.shape[0] * x.shape[1]
        shape = (x.shape[0], x.shape[1], OH, OW) if x.dim() == 4 else (x.shape[0], x.shape[1], OW)
        out = torch.empty(shape, device=x.device, dtype=x.dtype)
        grid = (planes, triton.cdiv(OH, BLOCK_H), triton.cdiv(OW, BLOCK_W))
        pool_kernel[grid](out, x, H, W, OH, OW, KH=kh, KW=kw, SH=sh, SW=sw, PH=ph, PW=pw, DH=dh, DW=dw,
                          IS_MAX=$is_max, COUNT_PAD=$count_pad, BLOCK_H=BLOCK_H, BLOCK_W=BLOCK_W, num_warps=4)
        return out
'''


_FLAT_SOURCE = '''"""$what pooling over the output as one flat range, its sizes specialized at launch (a structural
move of the offline optimizer)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 1024
# The reference's window (not knobs): sizes, strides, padding, dilation per (row, column) axis.
window = ($kh, $kw, $sh, $sw, $ph, $pw, $dh, $dw)


@triton.jit
def pool_kernel(out_ptr, x_ptr, TOTAL: tl.constexpr, H: tl.constexpr, W: tl.constexpr, OH: tl.constexpr,
                OW: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr,
                PH: tl.constexpr, PW: tl.constexpr, DH: tl.constexpr, DW: tl.constexpr, IS_MAX: tl.constexpr,
                COUNT_PAD: tl.constexpr, WIDE: tl.constexpr, BLOCK: tl.constexpr):
    # BLOCK outputs in memory order; every size is a constant of this compile, so // and % below
    # divide by constants. WIDE: some offset needs 64 bits.
    start = tl.program_id(0).to(tl.int64 if WIDE else tl.int32) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    live = offs < TOTAL
    ow = offs % OW
    oh = (offs // OW) % OH
    src = x_ptr + (offs // (OW * OH)) * (H * W)
$window_loop
    tl.store(out_ptr + offs, acc.to(out_ptr.dtype.element_ty), mask=live)


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, $param):
$sizes
        shape = (x.shape[0], x.shape[1], OH, OW) if x.dim() == 4 else (x.shape[0], x.shape[1], OW)
        out = torch.empty(shape, device=x.device, dtype=x.dtype)
        total = out.numel()
        wide = max(x.numel(), total + BLOCK) >= 2**31
        pool_kernel[(triton.cdiv(total, BLOCK),)](
            out, x, TOTAL=total, H=H, W=W, OH=OH, OW=OW, KH=kh, KW=kw, SH=sh, SW=sw, PH=ph, PW=pw, DH=dh, DW=dw,
            IS_MAX=$is_max, COUNT_PAD=$count_pad, WIDE=wide, BLOCK=BLOCK, num_warps=4)
        return out
'''


_SOURCE = _completed(_SOURCE, "(BLOCK_H, BLOCK_W)", "src + ih.to(tl.int64) * W + iw")
_FLAT_SOURCE = _completed(_FLAT_SOURCE, "(BLOCK,)", "src + ih * W + iw")


def _pair(value: Any, default: Any) -> tuple[int, int]:
    value = default if value in (None, []) else value
    items = list(value) if isinstance(value, list | tuple) else [value]
    return (int(items[0]), int(items[-1]))


def window_of(op: str, args: tuple[Any, ...]) -> tuple[dict[str, int], bool] | None:
    """The window of a max_pool2d_with_indices or avg_pool2d call, and count_include_pad; None when
    the call uses what the template does not (ceil_mode, a divisor override)."""
    kernel = _pair(args[1], None)
    stride = _pair(args[2] if len(args) > 2 else None, kernel)
    padding = _pair(args[3] if len(args) > 3 else 0, 0)
    if op == "max_pool2d_with_indices":
        dilation = _pair(args[4] if len(args) > 4 else 1, 1)
        if len(args) > 5 and args[5]:
            return None
        count_pad = True
    else:
        dilation = (1, 1)
        if (len(args) > 4 and args[4]) or (len(args) > 6 and args[6] is not None):
            return None
        count_pad = bool(args[5]) if len(args) > 5 else True
    names = ("kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw")
    values = (*kernel, *stride, *padding, *dilation)
    return dict(zip(names, values, strict=True)), count_pad


def tiled(op: str, args: tuple[Any, ...], param: str) -> str | None:
    """The `tiled` kernel file for the reference's pooling call, or None when the template cannot do it."""
    return _written(_SOURCE, op, args, param)


def flat(op: str, args: tuple[Any, ...], param: str) -> str | None:
    """The `flat` kernel file for the reference's pooling call, or None when the template cannot do it."""
    return _written(_FLAT_SOURCE, op, args, param)


def _written(template: str, op: str, args: tuple[Any, ...], param: str) -> str | None:
    found = window_of(op, args)
    if found is None:
        return None
    window, count_pad = found
    is_max = op == "max_pool2d_with_indices"
    return Template(template).substitute(what="max" if is_max else "average", param=param, is_max=is_max,
                                         count_pad=count_pad, **{k: str(v) for k, v in window.items()})
