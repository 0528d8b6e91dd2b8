"""Templates for 1-D and 2-D max and average pooling (`sliding` in pooling_sliding.py, `interior` in
pooling_interior.py); the window (sizes, strides, padding, dilation) is the reference's own, written in as
constants (not knobs).

`tiled`: each program computes BLOCK_H x BLOCK_W outputs of one (batch, channel) plane, BLOCK_W
along the contiguous dim, so each of the KH x KW window loads is BLOCK_W neighbouring values
(overlapping windows hit L1, not DRAM); the grid is (plane, row block, column block). A 1-D input
is the 2-D case with one row.

`rolling`: for a 2-D window that slides down one input row a step (stride and dilation 1 along the
rows), a strip of ROWS output rows per program; each input row is reduced across the window's width
once and that reduction is carried down the strip, so an output costs KW loads, not KH x KW.

`flat`: the output as one flat range in memory order, BLOCK outputs a program, as torch.compile
writes a pooling at static shapes: the sizes are specialized at launch (`tl.constexpr`, one compile
per shape), so splitting an output's index into plane, row and column divides by constants, and
the index is 32-bit where every offset fits. On the H200 torch.compile's flat kernel ran 1-D pools
7-13% faster than `tiled` at its best configuration (benchmarks/h200/probes/pool1d.log).
"""

from __future__ import annotations

import itertools
from string import Template
from typing import TYPE_CHECKING, Any

from kernelopt.offline.moves import pooling3d, pooling_interior, pooling_sliding

if TYPE_CHECKING:
    from kernelopt.offline.moves import MoveInstance, Skipped
    from kernelopt.offline.moves.family import Family

# What tiled and flat hold: the window's loop over a block of outputs (`$tile` its shape, `$address`
# a tap's address).
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
# What every template's ModelNew holds: the window's sizes read from the input, and the output allocated.
_FORWARD = '''class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, $param):
        x = $param.contiguous()
        kh, kw, sh, sw, ph, pw, dh, dw = window
        H = x.shape[-2] if x.dim() == 4 else 1
        W = x.shape[-1]
        OH = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
        OW = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
        shape = (x.shape[0], x.shape[1], OH, OW) if x.dim() == 4 else (x.shape[0], x.shape[1], OW)
        out = torch.empty(shape, device=x.device, dtype=x.dtype)
'''


def _completed(template: str, tile: str, address: str) -> str:
    """`template` with the shared pieces written in (its own placeholders, such as $param, kept)."""
    loop = Template(_WINDOW_LOOP).substitute(tile=tile, address=address)
    return Template(template).safe_substitute(window_loop=loop.rstrip("\n"), forward=_FORWARD.rstrip("\n"))


# The tiled kernel's signature and its program's place in the plane (pooling_interior.py's too)
_TILE_SIGNATURE = '''@triton.jit
def pool_kernel(out_ptr, x_ptr, H, W, OH, OW, KH: tl.constexpr, KW: tl.constexpr, SH: tl.constexpr,
                SW: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr, DH: tl.constexpr, DW: tl.constexpr,
                IS_MAX: tl.constexpr, COUNT_PAD: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr):
    # Program (plane, row block, column block): BLOCK_H x BLOCK_W outputs of one plane.
    plane, row, column = tl.program_id(0).to(tl.int64), tl.program_id(1), tl.program_id(2)
'''

_SOURCE = '''"""$what pooling, a tile of outputs per program (a structural move of the offline optimizer)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_H = 4
BLOCK_W = 128
# The reference's window (not knobs): sizes, strides, padding, dilation per (row, column) axis.
window = ($kh, $kw, $sh, $sw, $ph, $pw, $dh, $dw)


''' + _TILE_SIGNATURE + '''    oh = row * BLOCK_H + tl.arange(0, BLOCK_H)[:, None]
    ow = column * BLOCK_W + tl.arange(0, BLOCK_W)[None, :]
    live = (oh < OH) & (ow < OW)
    src = x_ptr + plane * H * W
$window_loop
    tl.store(out_ptr + plane * OH * OW + oh.to(tl.int64) * OW + ow, acc.to(out_ptr.dtype.element_ty), mask=live)


$forward
        grid = (x.shape[0] * x.shape[1], triton.cdiv(OH, BLOCK_H), triton.cdiv(OW, BLOCK_W))
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


$forward
        total = out.numel()
        wide = max(x.numel(), total + BLOCK) >= 2**31
        pool_kernel[(triton.cdiv(total, BLOCK),)](
            out, x, TOTAL=total, H=H, W=W, OH=OH, OW=OW, KH=kh, KW=kw, SH=sh, SW=sw, PH=ph, PW=pw, DH=dh, DW=dw,
            IS_MAX=$is_max, COUNT_PAD=$count_pad, WIDE=wide, BLOCK=BLOCK, num_warps=4)
        return out
'''


_ROLLING_SOURCE = '''"""$what pooling, a strip of ROWS output rows per program: the window slides down one input row
a step, so each input row is reduced across the window's width once and carried down the strip (a
structural move of the offline optimizer)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

ROWS = 16
BLOCK_W = 256
# The reference's window (not knobs): sizes, strides, padding, dilation per (row, column) axis.
window = ($kh, $kw, $sh, $sw, $ph, $pw, $dh, $dw)


@triton.jit
def across(src, ih, ow, live, H, W, KW: tl.constexpr, SW: tl.constexpr, PW: tl.constexpr, DW: tl.constexpr,
           IS_MAX: tl.constexpr, BLOCK_W: tl.constexpr):
    # input row ih reduced across the window's width for each output column; outside the input: the identity
    rows_in = live & ((ow * 0 + ih) >= 0) & ((ow * 0 + ih) < H)
    if IS_MAX:
        acc = tl.full([BLOCK_W], float("-inf"), tl.float32)
    else:
        acc = tl.zeros([BLOCK_W], tl.float32)
    for kw in tl.static_range(KW):
        iw = ow * SW - PW + kw * DW
        inside = rows_in & (iw >= 0) & (iw < W)
        if IS_MAX:
            v = tl.load(src + ih.to(tl.int64) * W + iw, mask=inside, other=float("-inf")).to(tl.float32)
            acc = tl.maximum(acc, v, propagate_nan=tl.PropagateNan.ALL)  # a NaN in the window wins, as in torch
        else:
            acc += tl.load(src + ih.to(tl.int64) * W + iw, mask=inside, other=0.0).to(tl.float32)
    return acc


@triton.jit
def pool_kernel(out_ptr, x_ptr, H, W, OH, OW, KH: tl.constexpr, KW: tl.constexpr, SW: tl.constexpr,
                PH: tl.constexpr, PW: tl.constexpr, DW: tl.constexpr, IS_MAX: tl.constexpr,
                COUNT_PAD: tl.constexpr, ROWS: tl.constexpr, BLOCK_W: tl.constexpr):
    # Program (plane, strip, column block): ROWS output rows x BLOCK_W columns of one plane, a row at a time.
    plane, strip, column = tl.program_id(0).to(tl.int64), tl.program_id(1), tl.program_id(2)
    ow = column * BLOCK_W + tl.arange(0, BLOCK_W)
    live = ow < OW
    src = x_ptr + plane * H * W
    dst = out_ptr + plane * OH * OW
    top = strip * ROWS - PH  # the first input row of the strip's first window
$carry_in
    wide = tl.zeros([BLOCK_W], tl.float32)  # how many of a window's columns lie inside the input
    for kw in tl.static_range(KW):
        iw = ow * SW - PW + kw * DW
        wide += ((iw >= 0) & (iw < W)).to(tl.float32)
    for i in range(ROWS):
        acc = across(src, top + i + KH - 1, ow, live, H, W, KW, SW, PW, DW, IS_MAX, BLOCK_W)
$combine
        if not IS_MAX:
            if COUNT_PAD:
                acc = acc / (KH * KW)
            else:  # the window's rows inside the input, times its columns inside it
                high = tl.minimum(top + i + KH, H) - tl.maximum(top + i, 0)
                acc = acc / tl.maximum(high.to(tl.float32) * wide, 1.0)
        oh = strip * ROWS + i
        tl.store(dst + oh.to(tl.int64) * OW + ow, acc.to(out_ptr.dtype.element_ty), mask=live & ((ow * 0 + oh) < OH))
$shift


$forward
        grid = (x.shape[0] * x.shape[1], triton.cdiv(OH, ROWS), triton.cdiv(OW, BLOCK_W))
        pool_kernel[grid](out, x, H, W, OH, OW, KH=kh, KW=kw, SW=sw, PH=ph, PW=pw, DW=dw, IS_MAX=$is_max,
                          COUNT_PAD=$count_pad, ROWS=ROWS, BLOCK_W=BLOCK_W, num_warps=4)
        return out
'''
ROLLING_KH_MAX = 16  # a window this tall carries as many row reductions (registers) down a strip

_SOURCE = _completed(_SOURCE, "(BLOCK_H, BLOCK_W)", "src + ih.to(tl.int64) * W + iw")
_INTERIOR_SOURCE = pooling_interior.template(
    Template(_WINDOW_LOOP).substitute(tile="(BLOCK_H, BLOCK_W)", address="src + ih.to(tl.int64) * W + iw"), _FORWARD,
    _TILE_SIGNATURE)
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


def rolling(op: str, args: tuple[Any, ...], param: str) -> str | None:
    """The `rolling` kernel file for a 2-D pooling call whose window moves one input row a step (stride
    and dilation 1 along the rows), or None when it does not."""
    found = window_of(op, args)
    if found is None or found[0]["sh"] != 1 or found[0]["dh"] != 1 or found[0]["kh"] > ROLLING_KH_MAX:
        return None
    kh, is_max = found[0]["kh"], op == "max_pool2d_with_indices"
    carried = [f"h{k}" for k in range(kh - 1)]  # the last kh - 1 input rows' reductions, oldest first
    step = "acc = tl.maximum(acc, {}, propagate_nan=tl.PropagateNan.ALL)" if is_max else "acc += {}"
    lines = {
        "carry_in": [f"    {h} = across(src, top + {k}, ow, live, H, W, KW, SW, PW, DW, IS_MAX, BLOCK_W)"
                     for k, h in enumerate(carried)],
        "combine": [f"        {step.format(h)}" for h in carried],
        "shift": [f"        {h} = {nxt}" for h, nxt in itertools.pairwise([*carried, "acc_row"])],
    }
    if carried:  # the new row's own reduction, before the division, is what the next row carries
        lines["combine"].insert(0, "        acc_row = acc")
    source = Template(_ROLLING_SOURCE).safe_substitute(
        forward=_FORWARD.rstrip("\n"),
        **{k: "\n".join(v) or " " * (4 if k == "carry_in" else 8) + "pass" for k, v in lines.items()})
    return _written(source, op, args, param)


def _written(template: str, op: str, args: tuple[Any, ...], param: str) -> str | None:
    found = window_of(op, args)
    if found is None:
        return None
    window, count_pad = found
    is_max = op == "max_pool2d_with_indices"
    return Template(template).substitute(what="max" if is_max else "average", param=param, is_max=is_max,
                                         count_pad=count_pad, **{k: str(v) for k, v in window.items()})


def pooling_moves(family: Family) -> tuple[list[MoveInstance], list[Skipped]]:
    """`tiled` and `flat` for every pooling the templates understand; `rolling` where a 2-D window
    slides one input row a step; `sliding` where the window moves one column a step."""
    from kernelopt.offline.moves import MoveInstance, Skipped  # defined in the package, which imports this module

    if family.ops[0] in pooling3d.OPS:
        return pooling3d.pooling3d_moves(family)
    op, args, param = family.ops[0], family.scalars, family.input_names[0]
    tile, flat_source = tiled(op, args, param), flat(op, args, param)
    interior = _written(_INTERIOR_SOURCE, op, args, param)
    if tile is None or flat_source is None or interior is None:  # one window for all: none written if not understood
        why = "ceil_mode or a divisor override: not written in the template"
        return [], [Skipped(f"pooling.{name}", why) for name in ("tiled", "interior", "flat", "rolling", "sliding")]
    window = window_of(op, args)[0]  # type: ignore[index]  # understood: tiled was written
    if family.ndim == 3 and (window["kh"] != 1 or window["ph"] != 0 or window["sh"] != 1):  # one unbatched plane
        why = "a 2-D window over an input without a batch dim (C, H, W): the templates read a 3-D input as 1-D rows"
        return [], [Skipped(f"pooling.{name}", why) for name in ("tiled", "interior", "flat", "rolling", "sliding")]
    # One output a thread too: Triton lays several outputs a thread as a vector along the row (its store can write
    # one), so a tap off a 16-byte boundary loads a thread's values one by one and a warp's load spans 2-4x the
    # bytes it uses (41: 2 a thread, 2.37 ms; 4 a thread, 3.46-3.57 ms); one a thread, a warp's load is 128 bytes.
    if family.ndim == 3:  # one row: a block is a stretch of the row, 1-16 outputs per thread
        grid = tuple({"BLOCK_H": 1, "BLOCK_W": w, "num_warps": n} for w in (512, 1024, 256, 2048) for n in (4, 8)
                     if 1 <= w // (32 * n) <= 16)
    else:  # and two tiles of one output a thread, whole rows of 128
        grid = tuple({"BLOCK_H": h, "BLOCK_W": w, "num_warps": n} for h in (4, 2, 8, 1) for w in (128, 256, 64)
                     for n in (4, 8) if 2 <= h * w // (32 * n) <= 32) + pooling3d.ONE_A_THREAD
    # 1-16 outputs a thread (torch.compile's own pick for the 1-D pools: 512 or 1024 a program)
    flat_grid = tuple({"BLOCK": b, "num_warps": n} for b in (1024, 512, 2048, 256, 128) for n in (4, 8)
                      if 1 <= b // (32 * n) <= 16)
    out = [MoveInstance("pooling.tiled", "BLOCK_H x BLOCK_W outputs per program, BLOCK_W along the contiguous dim: "
                        "window loads are contiguous and overlap in L1", tile, grid),
           MoveInstance("pooling.interior", pooling_interior.WHY, interior,
                        pooling_interior.grid(family.ndim)),
           MoveInstance("pooling.flat", "the output as one flat range, BLOCK outputs a program, sizes constant at "
                        "launch: index splits divide by constants, 32-bit where offsets fit", flat_source, flat_grid)]
    skipped = []
    strip = rolling(op, args, param) if family.ndim == 4 else None
    if strip is None:
        why = ("one row: there is no window to slide down" if family.ndim == 3 else
               f"the window moves {window['sh']} rows a step with dilation {window['dh']} (stride and dilation 1 "
               f"along the rows are what let a row's reduction be carried), or is over {ROLLING_KH_MAX} rows tall")
        skipped.append(Skipped("pooling.rolling", why))
    else:
        # a strip of ROWS rows, 1-4 columns a thread
        strip_grid = tuple({"ROWS": r, "BLOCK_W": w, "num_warps": n} for r in (16, 32, 64, 8)
                           for w in (256, 512, 128) for n in (4, 8) if 1 <= w // (32 * n) <= 4)
        why = (f"a strip of ROWS output rows per program: each input row reduced across the window's {window['kw']} "
               f"columns once and carried down the strip, {window['kw']} loads an output instead of "
               f"{window['kh'] * window['kw']}")
        out.append(MoveInstance("pooling.rolling", why, strip, strip_grid))
    not_sliding = pooling_sliding.applies(op, window)
    if not_sliding is not None:
        return out, [*skipped, Skipped("pooling.sliding", not_sliding)]
    running = pooling_sliding.sliding(op, window, window_of(op, args)[1], param,  # type: ignore[index]
                                      _FORWARD.rstrip("\n"))
    return [*out, MoveInstance("pooling.sliding", pooling_sliding.instance_why(op, window), running,
                               pooling_sliding.grid(op, window))], skipped
