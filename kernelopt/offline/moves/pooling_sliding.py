"""`sliding`: a pool whose window moves one column a step; an average as a running sum, a maximum as segment
prefix and suffix maxima.

A window's sum is the one before it plus the value entering minus the value leaving. A program takes
BLOCK_W outputs of one output row: the sum of the window just before its block (KW loads, once), then
for each output what enters and what leaves (two loads), summed along the block by `tl.cumsum`. An
output costs 2 x KH loads instead of KH x KW. On the H200, at 44_Average_Pooling_1D's size (window 8,
stride 1), the probe timed it at 1.371 ms against 3.86 ms for a direct sum written the same way and
torch.compile's 1.645 ms, its error 2.5-6x eager's (benchmarks/h200/sliding_pool_probe.py).

A running sum keeps the rounding error of every value that passed through it: a spike of 1e8 among ones
leaves an error near 4 on every later window of the block, and an infinity or a NaN cannot be taken back out
at all (inf - inf is NaN). Each block checks its last output against a direct sum of that window (the error
persists to the block's end) and, where they differ by more than 2**-16 of the window's absolute sum, sums
the block window by window instead, as torch does.

A maximum cannot be taken back out of a window, so a max pool slides another way (van Herk and Gil-Werman):
cut the row into segments of KW window steps; a window starting in a segment is the maximum of the segment's
suffix from its start and the next segment's prefix up to its end. Both are scans (`tl.associative_scan`
along the segment, one of them reversed) of two loads an output: each window's first tap and its last. With
a dilation d the taps of a window are d apart, so the block is laid out [segments, KW, d] (each of the d
phases a row of its own, KW and d padded to powers of two), and the scans run along the middle axis. A max
is exact, so nothing needs checking; a NaN in a window comes out NaN as in torch.
"""

from __future__ import annotations

from string import Template

_SOURCE = '''"""average pooling as a running sum along each row: two loads an output, summed by a cumsum (a
structural move of the offline optimizer)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_W = 1024
# The reference's window (not knobs): sizes, strides, padding per (row, column) axis.
window = ($kh, $kw, $sh, $sw, $ph, $pw, $dh, $dw)


@triton.jit
def pool_kernel(out_ptr, x_ptr, H, W, OH, OW, KH: tl.constexpr, KW: tl.constexpr, KWP: tl.constexpr,
                SH: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr, COUNT_PAD: tl.constexpr,
                BLOCK_W: tl.constexpr):
    # Program (plane x output row, column block): BLOCK_W outputs of one output row.
    line = tl.program_id(0).to(tl.int64)
    plane = line // OH
    oh = line % OH
    first = tl.program_id(1) * BLOCK_W
    ow = first + tl.arange(0, BLOCK_W)
    live = ow < OW
    enter = ow - PW + KW - 1  # the column that enters output ow's window
    leave = ow - PW - 1  # the column that left it
    taps = tl.arange(0, KWP)
    before = first - 1 - PW + taps  # the window of the output just before the block
    acc = tl.zeros([BLOCK_W], tl.float32)
    for kh in tl.static_range(KH):
        ih = oh * SH - PH + kh
        row_in = ((ow * 0 + ih) >= 0) & ((ow * 0 + ih) < H)  # a block's worth: a scalar mask is refused
        src = x_ptr + (plane * H + ih) * W
        a = tl.load(src + enter, mask=live & row_in & (enter >= 0) & (enter < W), other=0.0).to(tl.float32)
        c = tl.load(src + leave, mask=live & row_in & (leave >= 0) & (leave < W), other=0.0).to(tl.float32)
        tap_in = ((taps * 0 + ih) >= 0) & ((taps * 0 + ih) < H) & (taps < KW) & (before >= 0) & (before < W)
        b = tl.load(src + before, mask=tap_in, other=0.0).to(tl.float32)
        acc += tl.sum(b, 0) + tl.cumsum(a - c, 0)
    # The block's last output summed directly: a running sum keeps the rounding error of every value that passed
    # through it (1e8 entering and leaving leaves an error near 4 on windows of ones), and an inf or a NaN that
    # entered leaves a NaN behind. Either shows at the last output; the block is then summed window by window.
    last = tl.minimum(first + BLOCK_W, OW) - 1
    direct = 0.0
    size = 0.0
    for kh in tl.static_range(KH):
        ih = oh * SH - PH + kh
        t = last - PW + taps
        v = tl.load(x_ptr + (plane * H + ih) * W + t, other=0.0,
                    mask=((taps * 0 + ih) >= 0) & ((taps * 0 + ih) < H) & (taps < KW) & (t >= 0) & (t < W))
        direct += tl.sum(v.to(tl.float32), 0)
        size += tl.sum(tl.abs(v.to(tl.float32)), 0)
    error = tl.abs(tl.sum(tl.where(ow == last, acc, 0.0), 0) - direct)
    if (error > size * 0.0000152587890625) | (error != error):  # over 2**-16 of the window's size, or NaN
        acc = tl.zeros([BLOCK_W], tl.float32)
        for kh in tl.static_range(KH):
            ih = oh * SH - PH + kh
            row_in = ((ow * 0 + ih) >= 0) & ((ow * 0 + ih) < H)
            src = x_ptr + (plane * H + ih) * W
            for kw in tl.static_range(KW):
                iw = ow - PW + kw
                acc += tl.load(src + iw, mask=live & row_in & (iw >= 0) & (iw < W), other=0.0).to(tl.float32)
    if COUNT_PAD:
        acc = acc / (KH * KW)
    else:  # the window's rows inside the input, times its columns inside it
        high = tl.minimum(oh * SH - PH + KH, H) - tl.maximum(oh * SH - PH, 0)
        wide = tl.minimum(ow - PW + KW, W) - tl.maximum(ow - PW, 0)
        acc = acc / tl.maximum(high.to(tl.float32) * wide.to(tl.float32), 1.0)
    tl.store(out_ptr + line * OW + ow, acc.to(out_ptr.dtype.element_ty), mask=live)


$forward
        grid = (x.shape[0] * x.shape[1] * OH, triton.cdiv(OW, BLOCK_W))
        pool_kernel[grid](out, x, H, W, OH, OW, KH=kh, KW=kw, KWP=triton.next_power_of_2(kw), SH=sh, PH=ph, PW=pw,
                          COUNT_PAD=$count_pad, BLOCK_W=BLOCK_W, num_warps=4)
        return out
'''

_MAX_SOURCE = '''"""max pooling along each row as prefix and suffix maxima of KW-step segments (van Herk, Gil-Werman):
two loads an output and two scans (a structural move of the offline optimizer)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

SEGMENTS = $segments
# The reference's window (not knobs): sizes, strides, padding, dilation per (row, column) axis.
window = ($kh, $kw, $sh, $sw, $ph, $pw, $dh, $dw)


@triton.jit
def _max(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)  # a NaN in the window wins, as in torch


@triton.jit
def pool_kernel(out_ptr, x_ptr, H, W, OH, OW, KH: tl.constexpr, KW: tl.constexpr, KWP: tl.constexpr,
                SH: tl.constexpr, PH: tl.constexpr, DH: tl.constexpr, PW: tl.constexpr, DW: tl.constexpr,
                DWP: tl.constexpr, SEGMENTS: tl.constexpr):
    # Program (plane x output row, column block): SEGMENTS x KW x DW outputs of one output row, laid out
    # [segment, step, phase]: output first + (segment * KW + step) * DW + phase.
    line = tl.program_id(0).to(tl.int64)
    plane = line // OH
    oh = line % OH
    first = tl.program_id(1) * (SEGMENTS * KW * DW)
    seg = tl.arange(0, SEGMENTS)[:, None, None]
    step = tl.arange(0, KWP)[None, :, None]
    phase = tl.arange(0, DWP)[None, None, :]
    ow = first + (seg * KW + step) * DW + phase
    real = (step < KW) & (phase < DW)  # KW and DW padded to powers of two: the padding holds -inf
    lead = ow - PW  # each output's first tap; its window's taps are lead + k * DW, k < KW
    tail = lead + (KW - 1) * DW  # its last tap
    acc = tl.full([SEGMENTS, KWP, DWP], float("-inf"), tl.float32)
    for kh in tl.static_range(KH):
        ih = oh * SH - PH + kh * DH
        row_in = (ow * 0 + ih >= 0) & (ow * 0 + ih < H)  # a block's worth: a scalar mask is refused
        src = x_ptr + (plane * H + ih) * W
        a = tl.load(src + lead, mask=real & row_in & (lead >= 0) & (lead < W), other=float("-inf")).to(tl.float32)
        b = tl.load(src + tail, mask=real & row_in & (tail >= 0) & (tail < W), other=float("-inf")).to(tl.float32)
        # a's suffix from a step to its segment's end, b's prefix up to the step: together the whole window
        after = tl.associative_scan(a, 1, _max, reverse=True)
        upto = tl.associative_scan(b, 1, _max)
        acc = _max(acc, _max(after, upto))
    tl.store(out_ptr + line * OW + ow, acc.to(out_ptr.dtype.element_ty), mask=real & (ow < OW))


$forward
        kwp, dwp = triton.next_power_of_2(kw), triton.next_power_of_2(dw)
        grid = (x.shape[0] * x.shape[1] * OH, triton.cdiv(OW, SEGMENTS * kw * dw))
        pool_kernel[grid](out, x, H, W, OH, OW, KH=kh, KW=kw, KWP=kwp, SH=sh, PH=ph, DH=dh, PW=pw, DW=dw, DWP=dwp,
                          SEGMENTS=SEGMENTS, num_warps=4)
        return out
'''


# 2-16 outputs a thread: the probe's best was 1024 at 4 warps (1.371 ms), 512 at 4 next (1.425)
GRID = tuple({"BLOCK_W": w, "num_warps": n} for w in (1024, 512, 2048, 256) for n in (4, 8)
             if 2 <= w // (32 * n) <= 16)


MAX_LANES = 4096  # a maximum's segment (KW x dilation, padded to powers of two) must fit a program at least once


def applies(op: str, window: dict[str, int]) -> str | None:
    """Why sliding does not apply to this pooling (None when it does)."""
    if window["sw"] != 1:
        return (f"the window moves {window['sw']} columns a step (sliding needs each output's window one column past "
                f"the last)")
    if window["kw"] < 3:
        return (f"a window {window['kw']} wide: sliding's two loads an output are no fewer than the window's own "
                f"{window['kw']}")
    lanes = _lanes(window)
    if op == "max_pool2d_with_indices" and lanes > MAX_LANES:
        return (f"{window['kw']} taps {window['dw']} apart pad to {lanes} lanes a segment, over the {MAX_LANES} a "
                f"program holds")
    return None  # an average pool has no dilation; a maximum's is taken phase by phase


def sliding(op: str, window: dict[str, int], count_pad: bool, param: str, forward: str) -> str:
    """The `sliding` kernel file for a pooling whose window moves one column a step (an average as a running sum,
    a maximum as segment prefix and suffix maxima); `forward` is the pooling templates' shared ModelNew head (its
    own $param substituted with the rest)."""
    is_max = op == "max_pool2d_with_indices"
    with_head = Template(_MAX_SOURCE if is_max else _SOURCE).safe_substitute(forward=forward)
    first = grid(op, window)[0]["SEGMENTS"] if is_max else 0  # the file as written runs its grid's first configuration
    return Template(with_head).substitute(param=param, count_pad=count_pad, segments=first,
                                          **{k: str(v) for k, v in window.items()})


def grid(op: str, window: dict[str, int]) -> tuple[dict[str, int], ...]:
    """The knob grid: an average's BLOCK_W, or a maximum's SEGMENTS at 512-4096 lanes a program (the window's
    KW x dilation padded to powers of two), 2-16 lanes a thread."""
    if op != "max_pool2d_with_indices":
        return GRID
    lanes = _lanes(window)
    return tuple({"SEGMENTS": tile // lanes, "num_warps": n} for tile in (1024, 2048, 512, 4096) for n in (4, 8)
                 if tile >= lanes and 2 <= tile // (32 * n) <= 16)  # never empty: applies() caps lanes at 4096


def _lanes(window: dict[str, int]) -> int:
    """A maximum's lanes a segment: its KW taps times its dilation's phases, each padded to a power of two."""
    return (1 << max(window["kw"] - 1, 0).bit_length()) * (1 << max(window["dw"] - 1, 0).bit_length())


def instance_why(op: str, window: dict[str, int]) -> str:
    loads = f"{2 * window['kh']} loads an output instead of {window['kh'] * window['kw']}"
    if op == "max_pool2d_with_indices":
        return (f"segments of {window['kw']} window steps: each window the maximum of a segment's suffix and the "
                f"next one's prefix, two scans, {loads}")
    return (f"a running sum along each row: the window before a block summed once, then what enters minus what "
            f"leaves summed by a cumsum, {loads}")
