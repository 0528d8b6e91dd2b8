"""A template for BatchNorm in training mode: each channel standardised with its batch statistics.

A channel's values are the batch's planes of it, `samples` runs of `plane` contiguous values
strided by `channels * plane`: few long rows, so the work is split as `split_row` splits a row
(rows.py, standardize.py). A first kernel takes each piece's mean and sum of squared deviations,
a piece being CHUNK contiguous values of one (sample, channel) plane, so no per-element division
finds a value's plane. Values are taken less their channel's first one (a pivot), so a channel
far from zero keeps its mean's low digits in fp32. A second, one program per channel, merges the
channel's pieces by Chan's formula, adds the pivot back, folds the weight and bias into a scale and
a shift applied to the value less the mean, and moves the running statistics the way the
reference does (momentum, or the cumulative average when it is None; the unbiased variance).
A third writes each piece, and a last one-program kernel counts the batch in
`num_batches_tracked`. In eval mode the running statistics are the channel's (no statistics
kernel, nothing moved), as PyTorch's.

The file keeps the reference's constructor, so its weight, bias and buffers are the reference's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from string import Template
from typing import TYPE_CHECKING

from kernelopt.offline.moves.standardize import CHAN
from kernelopt.seed.writer import reference_init, state_expression

if TYPE_CHECKING:
    from kernelopt.offline.moves import Config, MoveInstance, Skipped
    from kernelopt.offline.moves.family import Family

# A plane shorter than this is no run of contiguous values worth a piece (BatchNorm1d over (N, C) has
# planes of 1): such a channel is a strided column, not this template's work.
MIN_PLANE = 1024
CHUNKS = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


@dataclass(frozen=True)
class BatchNormState:
    """The reference module's tensors, as state_dict names ("" where it has none)."""

    weight: str
    bias: str
    running_mean: str
    running_var: str
    batches: str  # num_batches_tracked


_FILE = '''\"\"\"BatchNorm over dim 1, split: $what (a structural move of the offline optimizer).\"\"\"

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

CHUNK = 65536
BLOCK = 2048
eps = $eps  # the reference's epsilon (not a knob)
momentum = $momentum  # the reference's momentum; None: a cumulative average (not a knob)
$chan

@triton.jit
def bn_stats_kernel(mean_ptr, m2_ptr, x_ptr, channels, plane, per_plane, pieces, CHUNK: tl.constexpr,
                    BLOCK: tl.constexpr):
    # Program channel * pieces + piece: CHUNK contiguous values of one (sample, channel) plane, blocks
    # merged by Chan's formula (a block past the plane's end counts nothing). Values are taken less the
    # channel's first one (its pivot), so a channel far from zero keeps its mean's low digits.
    pid = tl.program_id(0).to(tl.int64)
    c = pid // pieces
    piece = pid % pieces
    base = ((piece // per_plane) * channels + c) * plane
    first = (piece % per_plane) * CHUNK
    pivot = tl.load(x_ptr + c * plane).to(tl.float32)
    cols = tl.arange(0, BLOCK)
    count = tl.zeros((), tl.float32)
    mean = tl.zeros((), tl.float32)
    m2 = tl.zeros((), tl.float32)
    for start in range(0, tl.minimum(CHUNK, plane - first), BLOCK):
        offs = first + start + cols
        mask = offs < plane
        x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
        count, mean, m2 = chan_step(tl.where(mask, x - pivot, 0.0), mask, count, mean, m2)
    tl.store(mean_ptr + pid, mean)
    tl.store(m2_ptr + pid, m2)


@triton.jit
def bn_merge_kernel(center_ptr, scale_ptr, shift_ptr, mean_ptr, m2_ptr, x_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr,
                    nbt_ptr, plane, per_plane, pieces, eps, momentum, CHUNK: tl.constexpr, PIECES: tl.constexpr,
                    has_w: tl.constexpr, has_b: tl.constexpr, BATCH: tl.constexpr, RUNNING: tl.constexpr,
                    AVERAGE: tl.constexpr):
    # Program c: the channel's statistics (its pieces merged PIECES at a time, Chan's formula, and the
    # pivot added back; or, in eval mode, the running ones): the mean the write subtracts, and the
    # scale and shift (weight and bias folded in) it applies after; in training mode the running
    # statistics move as the reference's (the unbiased variance).
    c = tl.program_id(0).to(tl.int64)
    if BATCH:
        idx = tl.arange(0, PIECES)
        n = tl.zeros((), tl.float32)
        mean = tl.zeros((), tl.float32)
        m2 = tl.zeros((), tl.float32)
        for start in range(0, pieces, PIECES):
            live = start + idx < pieces
            counts = tl.where(live, tl.minimum(CHUNK, plane - ((start + idx) % per_plane) * CHUNK), 0)
            counts = counts.to(tl.float32)
            bm, bv = chan_pieces(counts, tl.load(mean_ptr + c * pieces + start + idx, mask=live, other=0.0),
                                 tl.load(m2_ptr + c * pieces + start + idx, mask=live, other=0.0), live)
            k = tl.sum(counts, axis=0)
            n, mean, m2 = chan_merge(n, mean, m2, k, bm, bv * k)
        var = m2 / n
        mean = mean + tl.load(x_ptr + c * plane).to(tl.float32)
    else:
        mean = tl.load(rm_ptr + c).to(tl.float32)
        var = tl.load(rv_ptr + c).to(tl.float32)
    scale = 1.0 / tl.sqrt(var + eps)
    if has_w:
        scale = scale * tl.load(w_ptr + c).to(tl.float32)
    shift = tl.zeros((), tl.float32)
    if has_b:
        shift = tl.load(b_ptr + c).to(tl.float32)
    tl.store(center_ptr + c, mean)
    tl.store(scale_ptr + c, scale)
    tl.store(shift_ptr + c, shift)
    if BATCH and RUNNING:
        factor = momentum
        if AVERAGE:
            factor = 1.0 / (tl.load(nbt_ptr).to(tl.float32) + 1.0)
        unbiased = var * n / tl.maximum(n - 1.0, 1.0)
        rm = tl.load(rm_ptr + c).to(tl.float32)
        rv = tl.load(rv_ptr + c).to(tl.float32)
        tl.store(rm_ptr + c, ((1.0 - factor) * rm + factor * mean).to(rm_ptr.dtype.element_ty))
        tl.store(rv_ptr + c, ((1.0 - factor) * rv + factor * unbiased).to(rv_ptr.dtype.element_ty))


@triton.jit
def bn_write_kernel(out_ptr, x_ptr, center_ptr, scale_ptr, shift_ptr, channels, plane, per_plane, pieces,
                    CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    # Program channel * pieces + piece: its piece less the mean, scaled, shifted and written.
    pid = tl.program_id(0).to(tl.int64)
    c = pid // pieces
    piece = pid % pieces
    center = tl.load(center_ptr + c)
    scale = tl.load(scale_ptr + c)
    shift = tl.load(shift_ptr + c)
    base = ((piece // per_plane) * channels + c) * plane
    first = (piece % per_plane) * CHUNK
    cols = tl.arange(0, BLOCK)
    for start in range(0, tl.minimum(CHUNK, plane - first), BLOCK):
        offs = first + start + cols
        mask = offs < plane
        x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + base + offs, ((x - center) * scale + shift).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def bn_count_kernel(nbt_ptr):
    # num_batches_tracked += 1, after every channel has read it
    tl.store(nbt_ptr, tl.load(nbt_ptr) + 1)


class ModelNew(nn.Module):
$init
    def forward(self, $params):
        x = $x.contiguous()
        out = torch.empty_like(x)
        samples, channels = x.shape[0], x.shape[1]
        plane = math.prod(x.shape[2:])
        per_plane = triton.cdiv(plane, CHUNK)
        pieces = samples * per_plane
        w, b = $weight, $bias
        rm, rv, nbt = $running_mean, $running_var, $batches
        running = rm is not None and rv is not None
        batch = self.training or not running  # eval mode with running statistics normalises with them
        center = torch.empty((channels,), device=x.device, dtype=torch.float32)
        scale = torch.empty((channels,), device=x.device, dtype=torch.float32)
        shift = torch.empty((channels,), device=x.device, dtype=torch.float32)
        mean = torch.empty((channels * pieces if batch else 1,), device=x.device, dtype=torch.float32)
        m2 = torch.empty_like(mean)
        if batch:
            bn_stats_kernel[(channels * pieces,)](mean, m2, x, channels, plane, per_plane, pieces, CHUNK=CHUNK,
                                                  BLOCK=BLOCK, num_warps=8)
        counted = batch and running and nbt is not None
        bn_merge_kernel[(channels,)](center, scale, shift, mean, m2, x, x if w is None else w,
                                     x if b is None else b, rm if running else x, rv if running else x,
                                     nbt if counted else x, plane, per_plane, pieces, eps,
                                     0.0 if momentum is None else momentum, CHUNK=CHUNK,
                                     PIECES=min(1024, triton.next_power_of_2(pieces)), has_w=w is not None,
                                     has_b=b is not None, BATCH=batch, RUNNING=batch and running,
                                     AVERAGE=momentum is None and counted)
        bn_write_kernel[(channels * pieces,)](out, x, center, scale, shift, channels, plane, per_plane, pieces,
                                              CHUNK=CHUNK, BLOCK=BLOCK, num_warps=8)
        if counted:
            bn_count_kernel[(1,)](nbt)
        return out
'''


def split(init: str, params: tuple[str, ...], eps: float, momentum: float | None, state: BatchNormState) -> str:
    """The kernel file: statistics per piece of a (sample, channel) plane, then merge and write."""
    def reach(name: str) -> str:
        return state_expression(name) if name else "None"

    return Template(_FILE).substitute(
        what="piece statistics, then each piece merges its channel's and writes", eps=repr(float(eps)), chan=CHAN,
        momentum=repr(None if momentum is None else float(momentum)), init=init,
        params=", ".join(params), x=params[0], weight=reach(state.weight), bias=reach(state.bias),
        running_mean=reach(state.running_mean), running_var=reach(state.running_var), batches=reach(state.batches))


def batch_norm_moves(family: Family, problem_source: str, sm_count: int) -> tuple[list[MoveInstance], list[Skipped]]:
    """The split template where a channel's planes are long enough to be pieces, with its grid."""
    from kernelopt.offline.moves import MoveInstance, Skipped

    name = "batch_norm.split"
    shape = family.shapes[0]
    if len(shape) < 3 or family.eps is None:
        return [], [Skipped(name, f"an input of shape {shape}: no (sample, channel) planes")]
    samples, channels, plane = shape[0], shape[1], math.prod(shape[2:])
    if plane < MIN_PLANE:
        return [], [Skipped(name, f"planes of {plane} values: too short to split into pieces of a plane")]
    if family.dtype not in ("float32", "float16", "bfloat16"):
        return [], [Skipped(name, f"the problem's dtype is {family.dtype}: the template computes in fp32")]
    grid = _grid(samples, channels, plane, sm_count)
    state = BatchNormState(*family.state)
    why = (f"each of the {channels} channels' {samples} planes split in pieces: piece statistics, a merge per "
           "channel into a scale and a shift (running statistics moved as the reference does), then the write")
    return [MoveInstance(name, why, split(reference_init(problem_source), family.input_names, family.eps,
                                          family.momentum, state), tuple(grid))], []


def _grid(samples: int, channels: int, plane: int, sm_count: int) -> list[Config]:
    """CHUNK (no longer than the plane, rounded up to a power of two) and BLOCK, those nearest eight
    programs per SM first."""
    top = 1 << max(plane - 1, 1).bit_length()
    grid = [{"CHUNK": c, "BLOCK": b, "num_warps": w} for c in CHUNKS if c <= top
            for b in (1024, 2048, 4096) for w in (4, 8) if b <= c and 4 <= b // (32 * w) <= 32]
    programs = {c: channels * samples * -(-plane // c) for c in CHUNKS}
    grid.sort(key=lambda g: (abs(math.log2(programs[g["CHUNK"]] / (8 * sm_count))), abs(g["BLOCK"] - 2048),
                             -g["num_warps"]))
    return grid[:12]
