"""The convolution family's split-once fp16 template (`conv.split_f16`): fp32 products at fp32's accuracy as three
fp16 products, the operands scaled and split once before the implicit GEMM instead of in registers every K step.

The matmul family's splits made once ran 2.7x faster than the same products split in registers each step (bmm:
`bmm.split_f16` 2.69 ms against `bmm.batched_f16x3` 7.30, RESULTS.md (ap)): the split's conversions and
subtractions leave the loop, and the tiles reach the tensor cores from the pipelined loads. A convolution gathers
A's tile from its input, so no pass can lay A out as a matrix; but a scale may be any power of two that is one
number across a row of the implicit GEMM's A (one output position, so one sample of the batch) and across a column
of B (one output channel). So:

- the input is split once, each sample scaled by the power of two that puts its largest magnitude in [2^14, 2^15)
  (matmul_split_f16.py: a remainder's rounding is then 2^-38 of the sample's largest, far under fp32's 2^-24 of an
  output's terms); its parts are laid out channels last (CONV_CHANNELS_LAST 1: written so by the split itself,
  `split_cl_kernel`, from an NCHW input) or as the input lies (0); the gather reads them at the parts' offsets;
- the weight, laid out per call as the template does (group, kernel offset, input channel, output channel), is
  split per output channel into K-major parts padded to whole column tiles;
- each K step multiplies `lo*hi + hi*lo + hi*hi` from zero and adds the step's sum in fp32 (the split's chain, which
  the verifier measures against float64), and the epilogue undoes both scales exactly before the bias.

Its limit: the scale is the sample's, so an output whose window misses the sample's largest finite value keeps a
rounding of 2^-38 of that value, not of its own window's (a value 2^20 above the rest costs such outputs about 2^-18
of it; tests/test_conv_split.py checks the bound). No finer scale factors out of a convolution's sum: a row of the
implicit GEMM reads every channel of its sample. An inf or NaN lies whole in its remainder, as in the matmul splits.

The gather, its masks, the transposed, strided, dilated and grouped cases are the template's own (seed/conv.py):
this file's helper is that helper with its loads, its product and its launch replaced.

`conv.split_tf32` (tf32_helper) makes no pass over the input: the gathered tile is split into two TF32 parts in
registers, where wgmma reads its A operand, and only the weight is split once a call, into K-major TF32 parts (B, as
a TF32 product must find it in shared memory). TF32 has fp32's exponent, so nothing is scaled. Its three products a
step run at TF32's rate, half fp16's: it is for the convolutions the split_f16 input pass costs more than it saves.
55 is not one: on the H100 it took 8.46 ms against split_f16's 7.25, whose product took 4.92 and its passes over the
input (a channels-last copy, the row maxima, the split) 2.2 (RESULTS.md (bi)).

`conv.split_f16_regs` (regs_helper) keeps split_f16's scales and fp16 rate and drops its parts of the input: each
sample's largest value is found by one read, and the gathered tile is scaled by its rows' samples' powers of two and
split into fp16 parts in registers, wgmma's A operand (matmul_regs.py's way, 1.19x split_f16 on 3_Batched on the
H100). Only the weight is split once. Its limits are split_f16's (a scale a sample).
"""

from __future__ import annotations

import ast
import functools
import re

from kernelopt.offline.moves.conv_pointwise import TF32_PARTS, TF32_PARTS_KERNEL
from kernelopt.offline.moves.matmul_regs import ROW_MAX, SCALED_PARTS
from kernelopt.offline.moves.matmul_split_f16 import SPLIT_HELPER, SPLIT_KERNELS, UNSCALE
from kernelopt.seed.conv import CONV_HELPER
from kernelopt.syntax import parse


def _replaced(text: str, edits: tuple[tuple[str, str], ...]) -> str:
    for old, new in edits:
        assert text.count(old) == 1, f"the convolution helper changed: {old.strip()[:60]!r} is not there once"
        text = text.replace(old, new)
    return text


_LOAD_A = "        a = tl.load(x_ptr + x_off, mask=a_ok, other=0.0)\n"
_LOAD_B = "        b = tl.load(wg_ptr + w_off, mask=c_ok[:, None] & n_ok[None, :], other=0.0)\n"
_PRODUCT = '''        if IS_FP32:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
'''
_HOST = '''    """torch's convolution on `conv_igemm_kernel`, into `out` (allocated here when None)."""
'''
_LAUNCH = '''    conv_igemm_kernel[grid](
        x, wg, bias if bias is not None else x, out,
'''

_CHANNELS_LAST = """# 1: the input's parts channels last (each position's channels contiguous); 0: as the input lies
CONV_CHANNELS_LAST = 1
"""

# Channels last from an NCHW input: the parts written channels last as the input is split, not a copy of the input
# channels last first (on the H100 the copy was 0.456 of the public level-2 25's 3.63 ms, RESULTS.md (bl)): the input
# is read for its samples' largest values (in any order: row_max_kernel on the flat sample), then once more and
# written as its parts, a tile of channels by positions read along the positions and stored along the channels.
CHANNELS_LAST_SPLIT = '''

@triton.jit
def split_cl_kernel(src_ptr, hi_ptr, lo_ptr, big_ptr, inv_ptr, C, S, BLOCK_C: tl.constexpr, BLOCK_S: tl.constexpr):
    # sample n's C x S values (channels by positions, contiguous) times the sample's power of two (big[n]: the bits
    # of its largest finite magnitude, split_kernel's scale) as hi[n] + lo[n] in fp16, each S x C (channels last)
    n = tl.program_id(2).to(tl.int64)
    s = tl.program_id(0) * BLOCK_S + tl.arange(0, BLOCK_S)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    inside = (c[:, None] < C) & (s[None, :] < S)
    x = tl.load(src_ptr + n * C * S + c[:, None].to(tl.int64) * S + s[None, :], mask=inside, other=0.0)
    exponent = (tl.load(big_ptr + n) >> 23) & 255
    scale = (tl.minimum(tl.maximum(268 - exponent, 1), 253) << 23).to(tl.float32, bitcast=True)
    y = x * scale
    # a non-finite value whole in the remainder, its part 0 (split_kernel's rule)
    finite = tl.abs(y) < float("inf")
    hi = tl.where(finite, y, 0.0).to(tl.float16)
    lo = tl.where(finite, y - hi.to(tl.float32), y).to(tl.float16)
    dst = n * C * S + s[None, :].to(tl.int64) * C + c[:, None]
    tl.store(hi_ptr + dst, hi, mask=inside)
    tl.store(lo_ptr + dst, lo, mask=inside)
    if tl.program_id(0) == 0:
        if tl.program_id(1) == 0:
            tl.store(inv_ptr + n, 1.0 / scale)


def _split_channels_last(x):
    # x (N x C x spatial, contiguous, N < 65536) as fp16 parts and remainders laid out channels last, each sample
    # scaled by a power of two; the scales' inverses (N x 1); and the parts as an N x C x spatial view (its strides)
    n, c = x.shape[0], x.shape[1]
    s = x[0, 0].numel()
    big = _row_max(x.reshape(n, 1, c * s), 1, 1, 4096)  # each sample's largest value, read in any order
    hi = torch.empty((n, *x.shape[2:], c), device=x.device, dtype=torch.float16)
    lo = torch.empty_like(hi)
    inv = torch.ones((n, 1), device=x.device, dtype=torch.float32)
    # 4,096 values a program, no knob (a literal a launch passes would be one): up to 32 channels by the positions
    block_c = min(32, triton.next_power_of_2(c))
    block_s = min(4096 // block_c, triton.next_power_of_2(s))
    split_cl_kernel[(triton.cdiv(s, block_s), triton.cdiv(c, block_c), n)](
        x, hi, lo, big, inv, c, s, BLOCK_C=block_c, BLOCK_S=block_s, num_warps=4)
    return hi, lo, inv, hi.movedim(-1, 1)
'''

_EDITS = (
    ("    x_ptr, wg_ptr, b_ptr, out_ptr,\n",
     "    x_ptr, xl_ptr, wg_ptr, wl_ptr, ix_ptr, iw_ptr, b_ptr, out_ptr, KKCG, OCGP,\n"),
    (_LOAD_A, _LOAD_A + _LOAD_A.replace("a = tl.load(x_ptr", "a_lo = tl.load(xl_ptr")),
    # the weight's parts: K-major (kernel offset, input channel), a column per output channel of the padded group
    ("        w_off = ((g * KD * KH * KW + kk) * CG + c)[:, None] * OCG + rn[None, :]\n",
     "        w_off = (kk * CG + c)[:, None] + (g * OCGP + rn)[None, :] * KKCG\n"),
    (_LOAD_B, _LOAD_B + _LOAD_B.replace("b = tl.load(wg_ptr", "b_lo = tl.load(wl_ptr")),
    (_PRODUCT, '''        # the split's three fp16 products from zero, the step's sum added in fp32
        step = tl.dot(a_lo, b)
        step = tl.dot(a, b_lo, step)
        acc += tl.dot(a, b, step)
'''),
    ("    oc = g * OCG + rn\n", '''    # both scales undone (exact): each row's sample's, each column's output channel's
    acc = _unscale(acc, tl.load(ix_ptr + nb, mask=m_ok, other=1.0), tl.load(iw_ptr + g * OCGP + rn))
    oc = g * OCG + rn
'''),
    # channels last: a K step's input channels contiguous, so its input tile is copied 16 bytes at a time and
    # pipelined (sm_90 TTGIR: asynchronous copies; as the input lies, one fp16 a load, synchronous). An input already
    # channels last is split as it lies; any other is made contiguous and its parts written channels last.
    (_HOST, _HOST + "    x = x if CONV_CHANNELS_LAST and x.movedim(1, -1).is_contiguous() else x.contiguous()\n"),
    (_LAUNCH, '''    # the input's samples and the weight's output channels scaled by powers of two and split in fp16
    kkcg = wg[0].numel() // max(ocg, 1)
    ocgp = triton.cdiv(ocg, block_n) * block_n  # whole tiles of the launch's BLOCK_N (conv_rows': wider)
    xs = x  # whose strides the parts have
    if CONV_CHANNELS_LAST and not x.movedim(1, -1).is_contiguous() and x.shape[0] < 65536:
        x_hi, x_lo, x_inv, xs = _split_channels_last(x)
    else:
        block = max(4096, triton.next_power_of_2(triton.cdiv(x[0].numel(), 65535)))  # a grid's second axis: 65535
        flat = (x.movedim(1, -1) if CONV_CHANNELS_LAST else x).reshape(x.shape[0], 1, -1)  # in its memory order
        x_hi, x_lo, x_inv = _split(flat, 1, x[0].numel(), 1, block)
    w_hi, w_lo, w_inv = _split(wg.view(groups, kkcg, ocg).transpose(1, 2), ocgp, kkcg, 32,
                               max(128, triton.next_power_of_2(triton.cdiv(kkcg, 65535))))
    conv_igemm_kernel[grid](
        x_hi, x_lo, w_hi, w_lo, x_inv, w_inv, bias if bias is not None else x, out, kkcg, ocgp,
'''),
    ("        OD, OH, OW, *_three(x.shape[2:], 1), KD, KH, KW, M, cg, ocg,\n"
     "        x.stride(0), x.stride(1), *_three(x.stride()[2:], 0),\n",
     "        OD, OH, OW, *_three(x.shape[2:], 1), KD, KH, KW, M, cg, ocg,\n"
     "        xs.stride(0), xs.stride(1), *_three(xs.stride()[2:], 0),\n"),
)
# the implicit GEMM on the parts, never the helper's direct kernel (conv_direct.py: conv.direct is that)
SPLIT_CONV_HELPER = _replaced(CONV_HELPER, (("CONV_BLOCK_K = 32\n", "CONV_BLOCK_K = 32\n" + _CHANNELS_LAST),
                                            ("CONV_DIRECT_OUTPUTS = 32\n", "CONV_DIRECT_OUTPUTS = 0\n"), *_EDITS))

_HEADER = '''"""conv.split_f16: the reference's convolution as an implicit GEMM on fp16 parts split once (kernelopt's
template): each sample of the input and each output channel of the weight scaled by a power of two and split into an
fp16 part and remainder before the product, three fp16 products a K step added in fp32."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
'''


def helper() -> str:
    """The kernels and host functions a split convolution's file holds before its ModelNew."""
    return SPLIT_KERNELS + UNSCALE + SPLIT_CONV_HELPER + SPLIT_HELPER + CHANNELS_LAST_SPLIT + ROW_MAX


# conv.split_tf32: the gathered input tile split into TF32 parts in registers each K step (the tensor cores' A
# operand, which wgmma reads from registers: no pass over the input first), the weight split once a call into TF32
# parts laid out K-major (B, which a TF32 product must find K-major in shared memory: the 3xTF32 twin splits B in
# registers and writes both parts back every step). TF32 keeps fp32's exponent: no scale.
_TF32_EDITS = (
    ("    x_ptr, wg_ptr, b_ptr, out_ptr,\n", "    x_ptr, wg_ptr, wl_ptr, b_ptr, out_ptr, KKCG,\n"),
    # the weight's parts: K-major (kernel offset, input channel), a column per output channel of the group
    ("        w_off = ((g * KD * KH * KW + kk) * CG + c)[:, None] * OCG + rn[None, :]\n",
     "        w_off = (kk * CG + c)[:, None] + (g * OCG + rn)[None, :] * KKCG\n"),
    (_LOAD_B, _LOAD_B + _LOAD_B.replace("b = tl.load(wg_ptr", "b_lo = tl.load(wl_ptr")),
    (_PRODUCT, '''        # a's TF32 parts in registers; three TF32 products (the remainders' left out, as 3xTF32 does)
        a_hi = ((a.to(tl.uint32, bitcast=True) + 0x1000) & 0xFFFFE000).to(tl.float32, bitcast=True)
        acc = tl.dot(a - a_hi, b, acc, input_precision="tf32")
        acc = tl.dot(a_hi, b_lo, acc, input_precision="tf32")
        acc = tl.dot(a_hi, b, acc, input_precision="tf32")
'''),
    (_LAUNCH, '''    # the weight's TF32 parts, K-major: a column of (kernel offset, input channel) an output channel
    kkcg = wg[0].numel() // max(ocg, 1)
    w_hi, w_lo = tf32_parts(wg.view(groups, kkcg, ocg).transpose(1, 2))
    conv_igemm_kernel[grid](
        x, w_hi, w_lo, bias if bias is not None else x, out, kkcg,
'''),
)
TF32_CONV_HELPER = _replaced(CONV_HELPER, (("CONV_DIRECT_OUTPUTS = 32\n", "CONV_DIRECT_OUTPUTS = 0\n"), *_TF32_EDITS))

TF32_HEADER = '''"""conv.split_tf32: the reference's convolution as an implicit GEMM of three TF32 products a K step
(kernelopt's template): the gathered input tile split into TF32 parts in registers, the weight split once a call,
K-major."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
'''


def tf32_helper() -> str:
    """The kernels and host functions a split_tf32 convolution's file holds before its ModelNew."""
    return "\n\n" + TF32_PARTS_KERNEL + TF32_CONV_HELPER + "\n\n" + TF32_PARTS


# conv.split_f16_regs: the gathered input tile scaled by its rows' samples' powers of two and split into fp16 parts in
# registers each K step (wgmma's A operand: matmul_regs.py's way), the weight split once a call (split_f16's parts):
# one read of the input for its samples' largest values, where split_f16 reads it twice, copies it channels last and
# writes its parts (on the H100, 2.2 of 55's 7.25 ms, RESULTS.md (bi)). No reduction in the loop: the scales come in.
_REGS_EDITS = (
    ("    x_ptr, wg_ptr, b_ptr, out_ptr,\n",
     "    x_ptr, wg_ptr, wl_ptr, bx_ptr, iw_ptr, b_ptr, out_ptr, KKCG, OCGP,\n"),
    ("    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n    for step in range(0, steps):\n", '''\
    # each row's sample's scale (bx: the bits of its largest finite magnitude) and its inverse
    sx, inv_x = _line_scales(tl.load(bx_ptr + nb, mask=m_ok, other=0))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(0, steps):
'''),
    _EDITS[2], _EDITS[3],
    (_PRODUCT, '''        # the tile's rows scaled and split into fp16 parts in registers; the split's three fp16
        # products from zero, the step's sum added in fp32
        a_hi, a_lo = _scaled_parts(a, sx)
        step_sum = tl.dot(a_lo, b)
        step_sum = tl.dot(a_hi, b_lo, step_sum)
        acc += tl.dot(a_hi, b, step_sum)
'''),
    ("    oc = g * OCG + rn\n", '''    # both scales undone (exact): each row's sample's, each column's output channel's
    acc = _unscale(acc, inv_x, tl.load(iw_ptr + g * OCGP + rn))
    oc = g * OCG + rn
'''),
    (_LAUNCH, '''    # each input sample's largest value (one read); the weight split in fp16
    kkcg = wg[0].numel() // max(ocg, 1)
    ocgp = triton.cdiv(ocg, block_n) * block_n  # whole tiles of the launch's BLOCK_N
    x_big = _row_max(x.reshape(x.shape[0], 1, -1), 1, 1, 4096)  # each sample's largest value
    w_hi, w_lo, w_inv = _split(wg.view(groups, kkcg, ocg).transpose(1, 2), ocgp, kkcg, 32,
                               max(128, triton.next_power_of_2(triton.cdiv(kkcg, 65535))))
    conv_igemm_kernel[grid](
        x, w_hi, w_lo, x_big, w_inv, bias if bias is not None else x, out, kkcg, ocgp,
'''),
)
REGS_CONV_HELPER = _replaced(CONV_HELPER, (("CONV_DIRECT_OUTPUTS = 32\n", "CONV_DIRECT_OUTPUTS = 0\n"), *_REGS_EDITS))
REGS_HEADER = '''"""conv.split_f16_regs: the reference's convolution as an implicit GEMM of three fp16 products a K step
(kernelopt's template): the gathered input tile scaled by its samples' powers of two and split in registers, the
weight's output channels scaled and split once a call."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
'''


def regs_helper() -> str:
    """The kernels and host functions a split_f16_regs convolution's file holds before its ModelNew."""
    return SPLIT_KERNELS + UNSCALE + SCALED_PARTS + REGS_CONV_HELPER + SPLIT_HELPER + ROW_MAX


def header() -> str:
    return _HEADER


# (CONV_BLOCK_M, CONV_BLOCK_N, CONV_BLOCK_K, num_warps, num_stages): fp16 tiles of BLOCK_K 64 are the bytes of fp32's
# at 32 (four operand tiles a stage); shallower and narrower ones for a group's few channels. 55 on the H200 (parts as
# the input lies): 7.447 ms at the first, 8.980 at the second.
TILES = ((128, 128, 64, 8, 3), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (128, 128, 32, 8, 3), (64, 64, 32, 4, 3),
         (128, 64, 16, 4, 4))


_NAMES = ("row_max_kernel", "split_kernel", "_unscale", "_split", "split_cl_kernel", "_split_channels_last", "_row_max")
_TF32_NAMES = ("tf32_parts_kernel", "tf32_parts")


@functools.lru_cache(maxsize=64)  # a pure function of its text: the moves ask again each round
def rewrite(source: str, tf32: bool = False) -> str | None:
    """A kernel file holding the seed's convolution helper (a compiler seed's `conv_triton`, as a sweep or the
    `dot.tf32x3` rewrite left it) with the helper on fp16 parts split once (`tf32`: on TF32 parts, split_tf32's);
    None where the helper is not there as written (its product rewritten in registers, say) or the split's names
    are taken."""
    try:
        tree = parse(source)
    except SyntaxError:
        return None
    found = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    if not {"conv_igemm_kernel", "conv_triton"} <= found.keys() or set(_TF32_NAMES if tf32 else _NAMES) & found.keys():
        return None
    kernel, host = found["conv_igemm_kernel"], found["conv_triton"]
    start = min(n.lineno for n in (kernel, *kernel.decorator_list)) - 1
    if host.lineno < start or host.end_lineno is None:
        return None
    lines = source.splitlines(keepends=True)
    # the product as the helper writes it, whatever precision a rewrite gave it: all three become fp16 products
    region = "".join(lines[start:host.end_lineno])
    region = re.sub(r'input_precision=(["\'])(ieee|tf32x3)\1', 'input_precision="ieee"', region)
    try:
        split = _replaced(region, _TF32_EDITS if tf32 else _EDITS)
    except AssertionError:
        return None
    from kernelopt.offline.moves.conv_direct import gemm_only

    before, after = gemm_only("".join(lines[:start])), "".join(lines[host.end_lineno:])
    if tf32:
        return before + TF32_PARTS_KERNEL + split + "\n\n" + TF32_PARTS.rstrip("\n") + "\n" + after
    return (before + _CHANNELS_LAST + SPLIT_KERNELS + UNSCALE + "\n\n" + split + SPLIT_HELPER + CHANNELS_LAST_SPLIT
            + ROW_MAX + after)


def products_beside(source: str) -> bool:
    """Whether a kernel file has fp32 products the in-register split (`dot.f16x3`) would take outside the seed's
    convolution kernel (a GEMM template beside it): the convolution's split leaves those as they are."""
    from kernelopt.offline.moves.dot_f16x3 import to_f16x3

    try:
        tree = parse(source)
    except SyntaxError:
        return False
    lines = source.splitlines(keepends=True)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "conv_igemm_kernel" and node.end_lineno is not None:
            start = min(n.lineno for n in (node, *node.decorator_list)) - 1
            lines[start:node.end_lineno] = []
            break
    return to_f16x3("".join(lines)) is not None


def grid(tiles: tuple[dict[str, int], ...]) -> tuple[dict[str, int], ...]:
    """The split's configurations: each tile with the input's parts channels last, then the first two as the input
    lies (CONV_CHANNELS_LAST 0: an input whose channels are few may load no faster channels last, and skips a copy)."""
    return (*({**t, "CONV_CHANNELS_LAST": 1} for t in tiles), *({**t, "CONV_CHANNELS_LAST": 0} for t in tiles[:2]))

