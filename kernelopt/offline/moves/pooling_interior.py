"""`pooling.interior`: the tiled template (pooling.py) with a second path for the tiles whose every window lies inside
the input, read with no mask.

In `tiled` each of the KH x KW taps of a tile is a masked load, its mask a compare of the tap's row and column
against the input's edges: for sm_90 (Triton 3.6; `benchmarks/sm90_compile.py PROBLEM MOVE --sass DIR`)
41_Max_Pooling_1D's tile compiles to 55 instructions and 8 scalar loads an output (flat's to 48 and 8), about as
long to issue as the pool's bytes take to move. Without masks the taps of a thread's neighbouring outputs are one
span of the row at constant offsets from one address, and the compiler loads each span once, in 16-byte vectors
where the row allows: at this move's first launch (8 outputs a thread) the whole tiles' path is 140 instructions
and 14 loads (12 of them 16-byte vectors), 17.5 and 1.75 an output. A
tile takes the unmasked path where its outputs are all in the output and its windows' first and last taps in the
input (most tiles of a long row or a large plane); the tiles at the edges take `tiled`'s masked loop, so padding,
dilation and count_include_pad stay the template's. The 3-D pools' `interior` (pooling3d.py) is the same for a
depth slice's tiles.
"""

from __future__ import annotations

from string import Template
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernelopt.offline.moves import Config

_SOURCE = '''"""$what pooling, a tile of outputs per program, a tile whose windows lie inside the input read with no
mask (a structural move of the offline optimizer)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_H = 1
BLOCK_W = 1024
# The reference's window (not knobs): sizes, strides, padding, dilation per (row, column) axis.
window = ($kh, $kw, $sh, $sw, $ph, $pw, $dh, $dw)


$signature    r0 = row * BLOCK_H
    c0 = column * BLOCK_W
    src = x_ptr + plane * H * W
    whole = ((r0 * SH - PH >= 0) & ((r0 + BLOCK_H - 1) * SH - PH + (KH - 1) * DH < H) & (r0 + BLOCK_H <= OH)
             & (c0 * SW - PW >= 0) & ((c0 + BLOCK_W - 1) * SW - PW + (KW - 1) * DW < W) & (c0 + BLOCK_W <= OW))
    if whole:
        # every tap of every output in the input: no masks, each tap at a constant offset from the tile's corner
        rows = tl.arange(0, BLOCK_H)[:, None]
        cols = tl.arange(0, BLOCK_W)[None, :]
        corner = src + (r0 * SH - PH).to(tl.int64) * W + (c0 * SW - PW)
        if IS_MAX:
            acc = tl.full((BLOCK_H, BLOCK_W), float("-inf"), tl.float32)
        else:
            acc = tl.zeros((BLOCK_H, BLOCK_W), tl.float32)
        for kh in tl.static_range(KH):
            for kw in tl.static_range(KW):
                v = tl.load(corner + (rows * SH + kh * DH) * W + (cols * SW + kw * DW)).to(tl.float32)
                if IS_MAX:
                    acc = tl.maximum(acc, v, propagate_nan=tl.PropagateNan.ALL)  # a NaN in the window wins
                else:
                    acc += v
        if not IS_MAX:
            acc = acc / (KH * KW)  # the window holds no padding
        tl.store(out_ptr + plane * OH * OW + (r0 + rows).to(tl.int64) * OW + (c0 + cols),
                 acc.to(out_ptr.dtype.element_ty))
    else:  # a tile at an edge: tiled's masked loop
        oh = r0 + tl.arange(0, BLOCK_H)[:, None]
        ow = c0 + tl.arange(0, BLOCK_W)[None, :]
        live = (oh < OH) & (ow < OW)
$window_loop
        tl.store(out_ptr + plane * OH * OW + oh.to(tl.int64) * OW + ow, acc.to(out_ptr.dtype.element_ty),
                 mask=live)


$forward
        grid = (x.shape[0] * x.shape[1], triton.cdiv(OH, BLOCK_H), triton.cdiv(OW, BLOCK_W))
        pool_kernel[grid](out, x, H, W, OH, OW, KH=kh, KW=kw, SH=sh, SW=sw, PH=ph, PW=pw, DH=dh, DW=dw,
                          IS_MAX=$is_max, COUNT_PAD=$count_pad, BLOCK_H=BLOCK_H, BLOCK_W=BLOCK_W, num_warps=4)
        return out
'''


def _indented(text: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line if line else line for line in text.splitlines())


def template(window_loop: str, forward: str, signature: str) -> str:
    """The kernel file's template (pooling.py's `_written` fills in the window), from tiled's masked loop over the
    window (its tile and tap address written in), the templates' common forward and tiled's kernel signature."""
    return Template(_SOURCE).safe_substitute(window_loop=_indented(window_loop.rstrip("\n"), 4),
                                             forward=forward.rstrip("\n"), signature=signature)


WHY = ("tiled with a path for the tiles whose windows lie inside the input: their taps read with no mask, a thread's "
       "neighbouring windows as one span of the row (vector loads)")


def grid(ndim: int) -> tuple[Config, ...]:
    """Several outputs a thread (2-16: what lets a thread's windows share their loads), a whole row's stretch a
    program for a 1-D pool; for a 2-D pool, tiles narrow enough that most of a plane's columns are inside, at 4-8
    outputs a thread: a 2-D tile's whole path holds about 16 registers an output (sm_90, Triton 3.6: 42's 4 x 4
    windows 64 registers at 4 outputs, 134-138 at 8, 255 and spilling at 16; 45's 11 x 11 spilled 392 B at 16)."""
    if ndim == 3:
        return tuple({"BLOCK_H": 1, "BLOCK_W": w, "num_warps": n} for w in (1024, 2048, 512) for n in (4, 8)
                     if 2 <= w // (32 * n) <= 16)
    return tuple({"BLOCK_H": h, "BLOCK_W": w, "num_warps": n} for h in (8, 4, 16) for w in (64, 128) for n in (4, 8)
                 if 4 <= h * w // (32 * n) <= 8)
