"""A Triton stand-in for the convolutions Inductor hands to cuDNN.

With dynamic shapes Inductor keeps `extern_kernels.convolution` (cuDNN) even when its conv
backends are Triton only, so a problem with a convolution had no compiler seed at all: every
KernelBench convolution, and the level-2 problems that fuse one with an epilogue. The seed now
launches `conv_triton` there instead: an implicit-GEMM convolution written out in the seed file
(no import), for 1-, 2- and 3-D convolutions, strided, padded, dilated, grouped (depthwise
included) and transposed, with or without a bias. Inductor's own Triton kernels around it (the
fused epilogues) stay as they are.

One program computes a BLOCK_M x BLOCK_N tile of the output seen as a matrix: rows are
(batch, output position), columns the output channels of one group (the grid's third axis).
The reduction is one loop over the kernel offsets and, within each, the group's input channels in
BLOCK_K steps. A step works out each row's input position once (zero outside the padding; for a
transposed convolution, only the positions the stride lands on), gathers a [BLOCK_M, BLOCK_K]
tile of the input at one add per element, and multiplies it on `tl.dot` by a [BLOCK_K, BLOCK_N]
tile of the weight, which a first small kernel lays out per call as (group, kernel offset, input
channel, output channel) so that tile is whole lines. A group of fewer channels than a K step (3 in
a first layer's RGB, 1 in a depthwise one) packs several kernel offsets into a step instead, each
element's input position worked out on its own: a step of BLOCK_K was otherwise 3/BLOCK_K used.
A transposed convolution of stride s takes its rows a phase at a time (outputs o = q * s + phase):
a phase's outputs gather from the same kernel offsets, worked out in the kernel, so a step visits only
those (at stride 2 in 3-D, 1/8 of the offsets land on an output; the others were steps masked whole),
where that takes fewer steps than packing them (a group of few channels and a small stride).
A group of at most 4 input channels and 32 output channels (a first layer's RGB to 16) takes a direct kernel
instead (seed/direct.py): each tap's inputs loaded once and multiplied by all the group's output channels (a
transposed convolution's a stride phase at a time).
(The first version flattened (channel, kernel offset) into K for every group and did int64 index
arithmetic per element and step: 3.2 TFLOP/s on the H200 at level 2's size.) fp32 multiplies at
`input_precision="ieee"`, so the offline optimizer's `dot.tf32x3` move can take it to the tensor
cores. A 1- or 2-D convolution is a 3-D one with leading sizes of 1: one kernel for all.
"""

from __future__ import annotations

import ast

from kernelopt.seed.direct import DIRECT, DIRECT_CHANNELS
from kernelopt.seed.stencil import DEPTHWISE, DEPTHWISE_OUTPUTS

CONV_HELPER = '''

# conv_igemm_kernel's tile: the offline sweep's knobs (CONV_ names: the seed's GEMM tiles are others)
CONV_BLOCK_M = 64
CONV_BLOCK_N = 64
CONV_BLOCK_K = 32
# a group of at most ''' + str(DIRECT_CHANNELS) + ''' input and this many output channels takes the direct kernel
# (conv_direct: its tile 4 * CONV_BLOCK_M outputs, in runs of CONV_DIRECT_RUN along W, by CONV_BLOCK_N channels); 0:
# never (a choice, no knob)
CONV_DIRECT_OUTPUTS = 32
# the direct kernel's outputs along a row a thread takes, sharing their taps' inputs (1: one a thread; on the H100, 2
# was 7% faster on a 3-D convolution of 3 to 16 channels and 10-50% slower on 2-D ones: the sweep's to choose)
CONV_DIRECT_RUN = 1


@triton.jit
def conv_unflatten(i, A, B, C):
    # i as (q, a, b, c) of a row-major (?, A, B, C) index: the first and the three innermost
    c = i % C
    t = i // C
    b = t % B
    t = t // B
    return t // A, t % A, b, c


@triton.jit
def conv_weight_kernel(
    w_ptr, wg_ptr, total, KK, KH, KW, CG, OCG, sw0, sw1, swd, swh, sww,
    TRANSPOSED: tl.constexpr, BLOCK: tl.constexpr,
):
    # The weight as the GEMM reads it: (group, kernel offset, input channel, output channel),
    # output channels contiguous, so a step's [BLOCK_K, BLOCK_N] tile is rows of whole lines.
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = i < total
    g, kk, c, oc = conv_unflatten(i, KK, CG, OCG)
    kw = kk % KW
    kh = (kk // KW) % KH
    kd = kk // (KW * KH)
    if TRANSPOSED:
        src = (g * CG + c) * sw0 + oc * sw1
    else:
        src = (g * OCG + oc) * sw0 + c * sw1
    src += kd * swd + kh * swh + kw * sww
    tl.store(wg_ptr + i, tl.load(w_ptr + src, mask=ok), mask=ok)


@triton.jit
def conv_phase_taps(p, s, pad, dil, K):
    # the kernel offsets k < K one dim's outputs of phase p gather from (p + pad - k * dil a multiple of the stride
    # s): the first, the step between them (s / gcd(dil, s)) and their count
    first = K
    for t in range(s):
        if (first == K) & (t < K) & ((p + pad - t * dil) % s == 0):
            first = t
    step = s
    for u in range(s, 0, -1):
        if (u * dil) % s == 0:
            step = u
    return first, step, tl.where(first < K, (K - first + step - 1) // step, 0)


@triton.jit
def conv_igemm_kernel(
    x_ptr, wg_ptr, b_ptr, out_ptr,
    OD, OH, OW, D, H, W, KD, KH, KW, M, CG, OCG,
    sxn, sxc, sxd, sxh, sxw, son, soc, sod, soh, sow,
    std, sth, stw, pdd, pdh, pdw, dld, dlh, dlw,
    MQ, QD, QH, QW,
    TRANSPOSED: tl.constexpr, HAS_BIAS: tl.constexpr, IS_FP32: tl.constexpr, WIDE: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, CG_POW: tl.constexpr,
    PHASED: tl.constexpr,
):
    # Rows: (batch, output position); columns: the output channels of group g. The reduction runs
    # over the kernel offsets and, within each, the group's input channels in BLOCK_K steps, as one
    # loop: a row's input position is worked out once per offset, not once per element. A group of
    # fewer channels than BLOCK_K (CG_POW: their count's power of two, else 0) takes BLOCK_K // CG_POW
    # offsets a step, each element's input position its own: a step of a 3-channel group is not 1/16 used.
    # A strided transposed convolution (PHASED) takes its rows a phase at a time (o = q * stride + phase): a
    # phase's outputs gather from the same kernel offsets (conv_phase_taps, a dim at a time), so its steps visit
    # those alone, not every offset to mask all but 1/stride of them.
    g = tl.program_id(2)
    if PHASED:
        phase = tl.program_id(0) // tl.cdiv(MQ, BLOCK_M)
        rm = (tl.program_id(0) % tl.cdiv(MQ, BLOCK_M)) * BLOCK_M + tl.arange(0, BLOCK_M)
    else:
        rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    ck = tl.arange(0, BLOCK_K)
    if WIDE:  # an offset may pass 2**31
        rm = rm.to(tl.int64)
        ck = ck.to(tl.int64)
    n_ok = rn < OCG
    if PHASED:
        nb, od, oh, ow = conv_unflatten(rm, QD, QH, QW)
        od = od * std + phase // (sth * stw)
        oh = oh * sth + (phase // stw) % sth
        ow = ow * stw + phase % stw
        m_ok = (rm < MQ) & (od < OD) & (oh < OH) & (ow < OW)
    else:
        m_ok = rm < M
        nb, od, oh, ow = conv_unflatten(rm, OD, OH, OW)
    x_row = nb * sxn + (g * CG) * sxc
    c_steps = tl.cdiv(CG, BLOCK_K)
    if CG_POW:
        steps = tl.cdiv(KD * KH * KW, BLOCK_K // CG_POW)
    elif PHASED:
        fd, sd, nd = conv_phase_taps(phase // (sth * stw), std, pdd, dld, KD)
        fh, sh, nh = conv_phase_taps((phase // stw) % sth, sth, pdh, dlh, KH)
        fw, sw, nw = conv_phase_taps(phase % stw, stw, pdw, dlw, KW)
        steps = nd * nh * nw * c_steps
    else:
        steps = KD * KH * KW * c_steps
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(0, steps):
        if CG_POW:  # offsets kk, channels c: a column each
            kk = step * (BLOCK_K // CG_POW) + ck // CG_POW
            c = ck % CG_POW
            kw = kk % KW
            kh = (kk // KW) % KH
            kd = kk // (KW * KH)
            if TRANSPOSED:
                td = od[:, None] + pdd - (kd * dld)[None, :]
                th = oh[:, None] + pdh - (kh * dlh)[None, :]
                tw = ow[:, None] + pdw - (kw * dlw)[None, :]
                ok = m_ok[:, None] & (td >= 0) & (th >= 0) & (tw >= 0)
                ok = ok & (td % std == 0) & (th % sth == 0) & (tw % stw == 0)
                i_d, i_h, i_w = td // std, th // sth, tw // stw
                ok = ok & (i_d < D) & (i_h < H) & (i_w < W)
            else:
                i_d = (od * std - pdd)[:, None] + (kd * dld)[None, :]
                i_h = (oh * sth - pdh)[:, None] + (kh * dlh)[None, :]
                i_w = (ow * stw - pdw)[:, None] + (kw * dlw)[None, :]
                ok = m_ok[:, None] & (i_d >= 0) & (i_d < D) & (i_h >= 0) & (i_h < H) & (i_w >= 0) & (i_w < W)
            c_ok = (c < CG) & (kk < KD * KH * KW)
            x_off = x_row[:, None] + i_d * sxd + i_h * sxh + i_w * sxw + (c * sxc)[None, :]
            a_ok = ok & c_ok[None, :]
        else:  # one offset a step, BLOCK_K of its channels
            if PHASED:
                j = step // c_steps
                kk = ((fd + (j // (nw * nh)) * sd) * KH + fh + (j // nw) % nh * sh) * KW + fw + j % nw * sw
            else:
                kk = step // c_steps
            c = (step % c_steps) * BLOCK_K + ck  # the input channel within the group
            kw = kk % KW
            kh = (kk // KW) % KH
            kd = kk // (KW * KH)
            if TRANSPOSED:  # out[o] gathers in[i] where o = i * stride - pad + k * dilation
                td = od + pdd - kd * dld
                th = oh + pdh - kh * dlh
                tw = ow + pdw - kw * dlw
                ok = m_ok & (td >= 0) & (th >= 0) & (tw >= 0) & (td % std == 0) & (th % sth == 0) & (tw % stw == 0)
                i_d, i_h, i_w = td // std, th // sth, tw // stw
                ok = ok & (i_d < D) & (i_h < H) & (i_w < W)
            else:
                i_d = od * std - pdd + kd * dld
                i_h = oh * sth - pdh + kh * dlh
                i_w = ow * stw - pdw + kw * dlw
                ok = m_ok & (i_d >= 0) & (i_d < D) & (i_h >= 0) & (i_h < H) & (i_w >= 0) & (i_w < W)
            c_ok = c < CG
            x_off = (x_row + i_d * sxd + i_h * sxh + i_w * sxw)[:, None] + c[None, :] * sxc
            a_ok = ok[:, None] & c_ok[None, :]
        a = tl.load(x_ptr + x_off, mask=a_ok, other=0.0)
        w_off = ((g * KD * KH * KW + kk) * CG + c)[:, None] * OCG + rn[None, :]
        b = tl.load(wg_ptr + w_off, mask=c_ok[:, None] & n_ok[None, :], other=0.0)
        if IS_FP32:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
    oc = g * OCG + rn
    if HAS_BIAS:
        acc += tl.load(b_ptr + oc, mask=n_ok, other=0.0).to(tl.float32)[None, :]
    o_off = (nb * son + od * sod + oh * soh + ow * sow)[:, None] + oc[None, :] * soc
    tl.store(out_ptr + o_off, acc.to(out_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


''' + DEPTHWISE + DIRECT + '''


def conv_triton(x, weight, bias, out, stride, padding, dilation, transposed, output_padding, groups):
    """torch's convolution on `conv_igemm_kernel`, into `out` (allocated here when None)."""
    spatial = x.dim() - 2
    stride, padding, dilation, output_padding = (
        tuple(v) * (spatial if len(v) == 1 else 1) for v in (stride, padding, dilation, output_padding))
    if out is None and transposed:
        sizes = [(i - 1) * s - 2 * p + d * (k - 1) + op + 1 for i, s, p, d, k, op in
                 zip(x.shape[2:], stride, padding, dilation, weight.shape[2:], output_padding, strict=True)]
        out = torch.empty((x.shape[0], weight.shape[1] * groups, *sizes), dtype=x.dtype, device=x.device)
    elif out is None:
        out = _conv_out(x, weight, stride, padding, dilation)
    cg, ocg = x.shape[1] // groups, out.shape[1] // groups
    # a tile no wider than the group's output channels (16 at least, a product's least): 16 channels in 64 columns
    # multiplied 4 times the work (a public level-2 Conv3d of 3 to 16 channels: 85% of its time in this kernel)
    block_n = min(CONV_BLOCK_N, max(16, triton.next_power_of_2(ocg)))
    # a group of one input channel and few outputs: the implicit GEMM's tile would hold ocg useful columns (the
    # stencil at 1 x 512 outputs, 8 warps: two outputs a thread, 82's best on the H200, RESULTS (au))
    if not transposed and cg == 1 and ocg < ''' + str(DEPTHWISE_OUTPUTS) + ''':
        return conv_depthwise(x, weight, bias, out, stride, padding, dilation, groups, 1, 512)
    OD, OH, OW = _three(out.shape[2:], 1)
    KD, KH, KW = _three(weight.shape[2:], 1)
    M = x.shape[0] * OD * OH * OW
    wg = torch.empty((groups, KD * KH * KW, cg, ocg), dtype=weight.dtype, device=weight.device)
    # the layout's elements per program, no knob: a literal bound to a name a launch passes is one (the sweeps of
    # every convolution seed spent configurations on this trivial kernel's BLOCK)
    lanes = min(1024, triton.next_power_of_2(wg.numel()))
    conv_weight_kernel[(triton.cdiv(wg.numel(), lanes),)](
        weight, wg, wg.numel(), KD * KH * KW, KH, KW, cg, ocg,
        weight.stride(0), weight.stride(1), *_three(weight.stride()[2:], 0),
        TRANSPOSED=bool(transposed), BLOCK=lanes,
    )
    # few input and output channels a group (a first layer's RGB to 16): the direct kernel, no K steps to gather (a
    # transposed one's by stride phases); its grid's second axis (groups by tiles of 8 channels at least) under 65536,
    # its taps along W and the group's channels unrolled
    few = cg <= ''' + str(DIRECT_CHANNELS) + ''' and ocg <= CONV_DIRECT_OUTPUTS and KW * cg <= 64
    if few and groups * triton.cdiv(ocg, 8) < 65536:
        settings = (KD, KH, KW), _three(stride, 1), _three(padding, 0), _three(dilation, 1), groups
        if transposed:
            return conv_direct_t(x, wg, bias, out, *settings, 4 * CONV_BLOCK_M, CONV_BLOCK_N)
        return conv_direct(x, wg, bias, out, *settings, 4 * CONV_BLOCK_M, CONV_BLOCK_N, CONV_DIRECT_RUN)
    cg_pow = triton.next_power_of_2(cg)  # a group of fewer channels than a K step: several offsets a step
    strides = _three(stride, 1)
    phases = strides[0] * strides[1] * strides[2] if transposed else 1  # a strided transposed one's output phases
    # by phases a step visits 1/phases of the offsets; packed, a step takes BLOCK_K / cg_pow of them: the fewer steps
    phases = phases if cg_pow * phases >= CONV_BLOCK_K else 1
    q = [triton.cdiv(o, s) for o, s in zip((OD, OH, OW), strides, strict=True)] if phases > 1 else [OD, OH, OW]
    mq = x.shape[0] * q[0] * q[1] * q[2]
    grid = (phases * triton.cdiv(mq, CONV_BLOCK_M), triton.cdiv(ocg, block_n), groups)
    conv_igemm_kernel[grid](
        x, wg, bias if bias is not None else x, out,
        OD, OH, OW, *_three(x.shape[2:], 1), KD, KH, KW, M, cg, ocg,
        x.stride(0), x.stride(1), *_three(x.stride()[2:], 0),
        out.stride(0), out.stride(1), *_three(out.stride()[2:], 0),
        *_three(stride, 1), *_three(padding, 0), *_three(dilation, 1),
        mq, *q,
        TRANSPOSED=bool(transposed), HAS_BIAS=bias is not None, IS_FP32=x.dtype == torch.float32,
        WIDE=_wide(x, out),
        BLOCK_M=CONV_BLOCK_M, BLOCK_N=block_n, BLOCK_K=CONV_BLOCK_K,
        CG_POW=cg_pow if cg_pow < CONV_BLOCK_K and phases == 1 else 0, PHASED=phases > 1, num_warps=4, num_stages=3,
    )
    return out
'''

CONVOLUTION = "extern_kernels.convolution"
_SETTINGS = ("stride", "padding", "dilation", "transposed", "output_padding", "groups")
_DEFAULTS = {"stride": "(1,)", "padding": "(0,)", "dilation": "(1,)", "transposed": "False",
             "output_padding": "(0,)", "groups": "1"}


def convolution_lines(target: str, call: ast.Call, layout: tuple[str, str] | None, device: str) -> list[str]:
    """`target = extern_kernels.convolution(x, w, stride=..., ..., bias=b)` as the seed's lines:
    the output allocated at the layout Inductor asserts for it (its later kernels index it so),
    then `conv_triton` into it."""
    named = {k.arg: ast.unparse(k.value) for k in call.keywords if k.arg}
    positional = [ast.unparse(a) for a in call.args]
    x, weight = positional[0], positional[1]
    order = ("bias", *_SETTINGS)  # aten.convolution's own order after the two tensors
    for name, value in zip(order, positional[2:], strict=False):
        named.setdefault(name, value)
    settings = ", ".join(named.get(name, _DEFAULTS[name]) for name in _SETTINGS)
    bias = named.get("bias", "None")
    if layout is None:
        return [f"{target} = conv_triton({x}, {weight}, {bias}, None, {settings})"]
    size, stride = layout
    return [f"{target} = torch.empty_strided({size}, {stride}, dtype={x}.dtype, device={device})",
            f"conv_triton({x}, {weight}, {bias}, {target}, {settings})"]
