"""Templates for 3-D max and average pooling (nn.MaxPool3d, nn.AvgPool3d, batched or not); the window
(sizes, strides, padding, dilation per depth, row and column axis) is the reference's own, written in as
constants (not knobs).

`flat`: the output as one flat range in memory order, BLOCK outputs a program, every size a constant of the
compile (one per shape), so splitting an output's index into plane, depth, row and column divides by
constants, and the index is 32-bit where every offset fits: what torch.compile writes for a 3-D pool it lowers.

`tiled`: each program computes BLOCK_H x BLOCK_W outputs of one output depth slice of one (batch, channel)
volume, BLOCK_W along the contiguous dim, so each of the window's KD x KH x KW loads is BLOCK_W neighbouring
values (a column tap's neighbours are the next taps' values: they hit L1, not DRAM); the grid is (volume and
depth, row block, column block).

`interior`: tiled, the tiles whose windows lie inside the volume read with no mask (pooling_interior.py says why).

Where torch.compile hands a 3-D pool to ATen (its lowering takes windows of at most 25 values: KernelBench's
3 x 3 x 3 windows are 27), these are the Triton the problem has.
"""

from __future__ import annotations

from string import Template
from typing import TYPE_CHECKING, Any

from kernelopt.offline.moves import pooling_interior

if TYPE_CHECKING:
    from kernelopt.offline.moves import MoveInstance, Skipped
    from kernelopt.offline.moves.family import Family

OPS = ("max_pool3d_with_indices", "avg_pool3d")
# Tiles of one output a thread (lanes one value apart along the row: Triton lays several outputs a thread as a vector,
# and a tap off a 16-byte boundary then loads a thread's values one by one), for the 2-D and 3-D tiled templates
ONE_A_THREAD = ({"BLOCK_H": 1, "BLOCK_W": 128, "num_warps": 4}, {"BLOCK_H": 2, "BLOCK_W": 128, "num_warps": 8})

# The window's loop over a block of outputs (`$tile` its shape); od, oh, ow, live and src are the template's.
_WINDOW_LOOP = '''    if IS_MAX:
        acc = tl.full($tile, float("-inf"), tl.float32)
    else:
        acc = tl.zeros($tile, tl.float32)
    count = tl.zeros($tile, tl.float32)
    for kd in tl.static_range(KD):
        i_d = od * SD - PD + kd * DD
        for kh in tl.static_range(KH):
            ih = oh * SH - PH + kh * DH
            for kw in tl.static_range(KW):
                iw = ow * SW - PW + kw * DW
                inside = live & (i_d >= 0) & (i_d < D) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                at = src + (i_d$wide * H + ih) * W + iw
                if IS_MAX:
                    v = tl.load(at, mask=inside, other=float("-inf")).to(tl.float32)
                    acc = tl.maximum(acc, v, propagate_nan=tl.PropagateNan.ALL)  # a NaN in the window wins
                else:
                    acc += tl.load(at, mask=inside, other=0.0).to(tl.float32)
                    count += inside.to(tl.float32)
    if not IS_MAX:
        if COUNT_PAD:
            acc = acc / (KD * KH * KW)
        else:
            acc = acc / tl.maximum(count, 1.0)'''

_HEAD = '''"""$what 3-D pooling, $how (a structural move of the offline optimizer)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

$knobs
# The reference's window (not knobs): sizes, strides, padding, dilation per (depth, row, column) axis.
window = ($window)


@triton.jit
def pool3d_kernel(out_ptr, x_ptr, $sizes, KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
                  SD: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr, PD: tl.constexpr, PH: tl.constexpr,
                  PW: tl.constexpr, DD: tl.constexpr, DH: tl.constexpr, DW: tl.constexpr, IS_MAX: tl.constexpr,
                  COUNT_PAD: tl.constexpr, $tile_knobs):
'''

_FORWARD = '''

class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, $param):
        x = $param.contiguous()
        kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw = window
        D, H, W = x.shape[-3:]
        OD = (D + 2 * pd - dd * (kd - 1) - 1) // sd + 1
        OH = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
        OW = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
        out = torch.empty((*x.shape[:-3], OD, OH, OW), device=x.device, dtype=x.dtype)
        volumes = out.numel() // max(OD * OH * OW, 1)
'''

_FLAT = _HEAD + '''    # BLOCK outputs in memory order; every size is a constant of this compile, so // and %
    # below divide by constants. WIDE: some offset needs 64 bits.
    start = tl.program_id(0).to(tl.int64 if WIDE else tl.int32) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    live = offs < TOTAL
    ow = offs % OW
    oh = (offs // OW) % OH
    od = (offs // (OW * OH)) % OD
    src = x_ptr + (offs // (OW * OH * OD)) * (D * H * W)
$loop
    tl.store(out_ptr + offs, acc.to(out_ptr.dtype.element_ty), mask=live)
''' + _FORWARD + '''        total = out.numel()
        wide = max(x.numel(), total + BLOCK) >= 2**31
        pool3d_kernel[(triton.cdiv(total, BLOCK),)](
            out, x, TOTAL=total, D=D, H=H, W=W, OD=OD, OH=OH, OW=OW, KD=kd, KH=kh, KW=kw, SD=sd, SH=sh, SW=sw,
            PD=pd, PH=ph, PW=pw, DD=dd, DH=dh, DW=dw, IS_MAX=$is_max, COUNT_PAD=$count_pad, WIDE=wide, BLOCK=BLOCK,
            num_warps=4)
        return out
'''

# tiled's and interior's launch: a program per (volume and output depth, row block, column block)
_TILE_LAUNCH = _FORWARD + '''        grid = (volumes * OD, triton.cdiv(OH, BLOCK_H), triton.cdiv(OW, BLOCK_W))
        pool3d_kernel[grid](out, x, D, H, W, OD, OH, OW, KD=kd, KH=kh, KW=kw, SD=sd, SH=sh, SW=sw, PD=pd, PH=ph,
                            PW=pw, DD=dd, DH=dh, DW=dw, IS_MAX=$is_max, COUNT_PAD=$count_pad, BLOCK_H=BLOCK_H,
                            BLOCK_W=BLOCK_W, num_warps=4)
        return out
'''

_TILED = _HEAD + '''    # Program (volume and output depth, row block, column block): BLOCK_H x BLOCK_W outputs
    # of one depth slice.
    slab, row, column = tl.program_id(0).to(tl.int64), tl.program_id(1), tl.program_id(2)
    od = slab % OD + tl.zeros([BLOCK_H, 1], tl.int64)  # a column, not a scalar: Triton's interpreter takes no
    # scalar into a mask's tile
    oh = row * BLOCK_H + tl.arange(0, BLOCK_H)[:, None]
    ow = column * BLOCK_W + tl.arange(0, BLOCK_W)[None, :]
    live = (oh < OH) & (ow < OW)
    src = x_ptr + (slab // OD) * D * H * W
$loop
    tl.store(out_ptr + slab * OH * OW + oh.to(tl.int64) * OW + ow, acc.to(out_ptr.dtype.element_ty), mask=live)
''' + _TILE_LAUNCH

# tiled, a slice's tile whose windows lie inside the volume read with no mask (pooling_interior.py says why)
_INTERIOR = _HEAD + '''    # Program (volume and output depth, row block, column block): BLOCK_H x BLOCK_W outputs
    # of one depth slice.
    slab, row, column = tl.program_id(0).to(tl.int64), tl.program_id(1), tl.program_id(2)
    r0 = row * BLOCK_H
    c0 = column * BLOCK_W
    d0 = (slab % OD).to(tl.int32)
    src = x_ptr + (slab // OD) * D * H * W
    whole = ((d0 * SD - PD >= 0) & (d0 * SD - PD + (KD - 1) * DD < D)
             & (r0 * SH - PH >= 0) & ((r0 + BLOCK_H - 1) * SH - PH + (KH - 1) * DH < H) & (r0 + BLOCK_H <= OH)
             & (c0 * SW - PW >= 0) & ((c0 + BLOCK_W - 1) * SW - PW + (KW - 1) * DW < W) & (c0 + BLOCK_W <= OW))
    if whole:
        # every tap of every output in the volume: no masks, each tap at a constant offset from the tile's corner
        rows = tl.arange(0, BLOCK_H)[:, None]
        cols = tl.arange(0, BLOCK_W)[None, :]
        corner = src + ((d0 * SD - PD).to(tl.int64) * H + (r0 * SH - PH)) * W + (c0 * SW - PW)
        if IS_MAX:
            acc = tl.full((BLOCK_H, BLOCK_W), float("-inf"), tl.float32)
        else:
            acc = tl.zeros((BLOCK_H, BLOCK_W), tl.float32)
        for kd in tl.static_range(KD):
            for kh in tl.static_range(KH):
                for kw in tl.static_range(KW):
                    v = tl.load(corner + (kd * DD * H + rows * SH + kh * DH) * W + (cols * SW + kw * DW))
                    if IS_MAX:
                        acc = tl.maximum(acc, v.to(tl.float32), propagate_nan=tl.PropagateNan.ALL)
                    else:
                        acc += v.to(tl.float32)
        if not IS_MAX:
            acc = acc / (KD * KH * KW)  # the window holds no padding
        tl.store(out_ptr + slab * OH * OW + (r0 + rows).to(tl.int64) * OW + (c0 + cols),
                 acc.to(out_ptr.dtype.element_ty))
    else:  # a tile at an edge: tiled's masked loop
        od = slab % OD + tl.zeros([BLOCK_H, 1], tl.int64)  # a column: the interpreter takes no scalar into a mask
        oh = r0 + tl.arange(0, BLOCK_H)[:, None]
        ow = c0 + tl.arange(0, BLOCK_W)[None, :]
        live = (oh < OH) & (ow < OW)
$loop
        tl.store(out_ptr + slab * OH * OW + oh.to(tl.int64) * OW + ow, acc.to(out_ptr.dtype.element_ty), mask=live)
''' + _TILE_LAUNCH

_KINDS = {
    "flat": (_FLAT, "the output as one flat range, its sizes specialized at launch", "BLOCK = 1024",
             "TOTAL: tl.constexpr, D: tl.constexpr, H: tl.constexpr, W: tl.constexpr, OD: tl.constexpr,\n"
             "                  OH: tl.constexpr, OW: tl.constexpr", "WIDE: tl.constexpr, BLOCK: tl.constexpr",
             "(BLOCK,)", ""),
    "tiled": (_TILED, "a tile of outputs of one depth slice per program", "BLOCK_H = 4\nBLOCK_W = 128",
              "D, H, W, OD, OH, OW", "BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr", "(BLOCK_H, BLOCK_W)",
              ".to(tl.int64)"),
    "interior": (_INTERIOR, "a tile of outputs of one depth slice per program, a tile whose windows lie inside the "
                 "volume read with no mask", "BLOCK_H = 8\nBLOCK_W = 64", "D, H, W, OD, OH, OW",
                 "BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr", "(BLOCK_H, BLOCK_W)", ".to(tl.int64)"),
}


def _triple(value: Any, default: Any) -> tuple[int, int, int]:
    value = default if value in (None, []) else value
    items = [int(v) for v in value] if isinstance(value, list | tuple) else [int(value)]
    return (items[0],) * 3 if len(items) == 1 else (items[0], items[1], items[2])


def window_of(op: str, args: tuple[Any, ...]) -> tuple[tuple[int, ...], bool] | None:
    """The window of a max_pool3d_with_indices or avg_pool3d call (kernel, stride, padding and dilation per
    axis) and count_include_pad; None when the call uses what the templates do not (ceil_mode, a divisor)."""
    kernel = _triple(args[1], None)
    stride = _triple(args[2] if len(args) > 2 else None, kernel)
    padding = _triple(args[3] if len(args) > 3 else 0, 0)
    if op == "max_pool3d_with_indices":
        dilation = _triple(args[4] if len(args) > 4 else 1, 1)
        if len(args) > 5 and args[5]:
            return None
        return (*kernel, *stride, *padding, *dilation), True
    if (len(args) > 4 and args[4]) or (len(args) > 6 and args[6] is not None):
        return None
    return (*kernel, *stride, *padding, 1, 1, 1), bool(args[5]) if len(args) > 5 else True


def written(kind: str, op: str, args: tuple[Any, ...], param: str) -> str | None:
    """The `kind` ("flat" or "tiled") kernel file for the reference's 3-D pooling call, or None."""
    found = window_of(op, args)
    if found is None:
        return None
    window, count_pad = found
    template, how, knobs, sizes, tile_knobs, tile, wide = _KINDS[kind]
    loop = Template(_WINDOW_LOOP).substitute(tile=tile, wide=wide)
    if kind == "interior":  # the edges' loop inside the `else:` of the whole tiles' test
        loop = "\n".join("    " + line if line else line for line in loop.splitlines())
    is_max = op == "max_pool3d_with_indices"
    return Template(template).substitute(
        what="max" if is_max else "average", how=how, knobs=knobs, window=", ".join(map(str, window)), sizes=sizes,
        tile_knobs=tile_knobs, loop=loop, param=param, is_max=is_max, count_pad=count_pad)


def pooling3d_moves(family: Family) -> tuple[list[MoveInstance], list[Skipped]]:
    """`flat`, `tiled` and `interior` for every 3-D pooling the templates understand."""
    from kernelopt.offline.moves import MoveInstance, Skipped  # defined in the package, which imports this module

    op, args, param = family.ops[0], family.scalars, family.input_names[0]
    flat, tiled, interior = (written(kind, op, args, param) for kind in ("flat", "tiled", "interior"))
    if flat is None or tiled is None or interior is None:
        why = "ceil_mode or a divisor override: not written in the templates"
        return [], [Skipped(f"pooling.{name}", why) for name in ("flat", "tiled", "interior")]
    # 1-16 outputs a thread, as the 2-D pools' grids (one a thread: lanes one value apart, pooling.py)
    flat_grid = tuple({"BLOCK": b, "num_warps": n} for b in (1024, 512, 2048, 256, 128) for n in (4, 8)
                      if 1 <= b // (32 * n) <= 16)
    tiled_grid = tuple({"BLOCK_H": h, "BLOCK_W": w, "num_warps": n} for h in (4, 2, 8, 1) for w in (128, 64, 256)
                       for n in (4, 8) if 2 <= h * w // (32 * n) <= 32) + ONE_A_THREAD
    window = window_of(op, args)[0]  # type: ignore[index]  # understood: both were written
    taps = window[0] * window[1] * window[2]
    return [MoveInstance("pooling.flat", f"the output as one flat range, BLOCK outputs a program, sizes constant at "
                         f"launch (index splits divide by constants, 32-bit where offsets fit); {taps} taps an "
                         "output", flat, flat_grid),
            MoveInstance("pooling.tiled", "BLOCK_H x BLOCK_W outputs of one depth slice per program, BLOCK_W along "
                         "the contiguous dim: window loads are contiguous and overlap in L1", tiled, tiled_grid),
            MoveInstance("pooling.interior", "tiled, its tiles whose windows lie inside the volume read with no "
                         f"mask: {taps} unmasked taps an output", interior,
                         pooling_interior.grid(4))], [
        Skipped("pooling.rolling", "a 3-D window: the strip that carries row reductions is written for 2-D pools"),
        Skipped("pooling.sliding", "a 3-D window: the running window is written for 1-D and 2-D pools")]
