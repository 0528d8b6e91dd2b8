"""The direct convolution the seed's Triton convolution (seed/conv.py) hands a group of few input channels and few
output channels to: a first layer's RGB input to 16 or 24 channels (13 of KernelBench's level-2 problems start with
a convolution of 3 input channels).

The implicit GEMM packs such a group's (channel, kernel offset) pairs into K steps of BLOCK_K columns and gathers
each element of a [BLOCK_M, BLOCK_K] tile with its own position and masks: a 3-channel 3 x 3 x 3 kernel is 81 columns
padded to 128, each worked out a row, and at 16 output channels a row multiplies them by 16 columns only, on the
CUDA cores at fp32. (A public level-2 Conv3d of 3 to 16 channels spent 0.95 ms of its 1.08 there on the H200.)
Here a program takes output positions of one sample (depth, height and width flattened, so a tile runs along the
rows) by BLOCK_OC output channels of a group: each (kernel offset, input channel) loads the tile's inputs once, a
position's address and masks worked out once per offset, and adds their outer product with the offset's weights
(the layout `conv_weight_kernel` writes: group, kernel offset, input channel, output channel) to every channel's
sums, BLOCK_OC FMAs a load. fp32 sums of the same terms as the reference.

A thread of `conv_direct_kernel` takes a run of RUN outputs along a row (`CONV_DIRECT_RUN` in the helper): the run's
inputs for all of a row's KW taps are one window of (RUN - 1) * stride + (KW - 1) * dilation + 1 columns, each
loaded once and used by every tap and output it feeds, and each weight vector loaded once for RUN outputs. At one
output a thread the kernel spends as many instructions on loads and addresses as on FMAs (sm_90 SASS of a 3 x 3 x 3
convolution of 3 to 16 channels: 532 instructions a row of taps, 288 of them FMAs); at runs of 4, 801 for 576
(`benchmarks/sm90_compile.py ... --sass`). Yet on the H100 runs of 4 were slower (a run's window loads are 16 bytes
apart across a warp: four times the L1 wavefronts of one output a thread's), runs of 2 7% faster on that 3-D
convolution and slower on 2-D ones (RESULTS.md (bd)): the seed keeps one output a thread and the sweep may try
runs. A transposed convolution (`conv_direct_t_kernel`) goes a stride phase at
a time, one output a thread: a phase's tap lands on input `q + (phase + pad - k * dilation) / stride`, one division
a tap and program. Text written into kernel files (no import).
"""

# The most input channels a group the direct kernel takes (the group's channels are unrolled).
DIRECT_CHANNELS = 4

DIRECT = '''

@triton.jit
def conv_direct_kernel(
    x_ptr, wg_ptr, b_ptr, out_ptr, R, TILES_R, OC_TILES, OCG, OH, OW, OWR, D, H, W, KD, KH,
    sxn, sxc, sxd, sxh, sxw, son, soc, sod, soh, sow,
    std, sth, pdd, pdh, pdw, dld, dlh,
    KW: tl.constexpr, CG: tl.constexpr, STW: tl.constexpr, DLW: tl.constexpr, RUN: tl.constexpr,
    USED: tl.constexpr, HAS_BIAS: tl.constexpr, WIDE: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_OC: tl.constexpr,
):
    # Program: BLOCK_R runs of RUN outputs along W (od, oh and the run flattened) of sample n by BLOCK_OC output
    # channels of group g. A run's inputs for every tap along W are one window of SPAN columns (output j, tap kw:
    # column j * STW + kw * DLW), each loaded once a (kd, kh, channel): the columns USED marks, a bit a column.
    n = tl.program_id(0) // TILES_R
    r = (tl.program_id(0) % TILES_R) * BLOCK_R + tl.arange(0, BLOCK_R)
    g = tl.program_id(1) // OC_TILES
    oc = (tl.program_id(1) % OC_TILES) * BLOCK_OC + tl.arange(0, BLOCK_OC)
    if WIDE:  # an offset may pass 2**31
        n, g, r = n.to(tl.int64), g.to(tl.int64), r.to(tl.int64)
    r_ok = r < R
    oc_ok = oc < OCG
    ow = (r % OWR) * RUN
    t = r // OWR
    oh = t % OH
    od = t // OH
    w0 = ow * STW - pdw
    x_g = x_ptr + n * sxn + (g * CG) * sxc + w0 * sxw
    w_g = wg_ptr + g * (KD * KH * KW * CG * OCG) + oc
    SPAN: tl.constexpr = (RUN - 1) * STW + (KW - 1) * DLW + 1
    accs = ()
    for j in tl.static_range(RUN):
        accs = accs + (tl.zeros((BLOCK_OC, BLOCK_R), dtype=tl.float32),)
    for kd in range(KD):
        i_d = od * std - pdd + kd * dld
        d_ok = r_ok & (i_d >= 0) & (i_d < D)
        for kh in range(KH):
            i_h = oh * sth - pdh + kh * dlh
            h_ok = d_ok & (i_h >= 0) & (i_h < H)
            row = x_g + i_d * sxd + i_h * sxh
            w_row = w_g + (kd * KH + kh) * (KW * CG * OCG)
            for c in tl.static_range(CG):
                xs = ()
                for k in tl.static_range(SPAN):
                    if (USED >> k) & 1:
                        ok = h_ok & (w0 + k >= 0) & (w0 + k < W)
                        xs = xs + (tl.load(row + c * sxc + k * sxw, mask=ok, other=0.0).to(tl.float32),)
                    else:  # a column no output's tap reads (strided or dilated): a placeholder, never used
                        xs = xs + (0.0,)
                for kw in tl.static_range(KW):
                    wv = tl.load(w_row + (kw * CG + c) * OCG, mask=oc_ok, other=0.0).to(tl.float32)[:, None]
                    summed = ()
                    for j in tl.static_range(RUN):
                        summed = summed + (accs[j] + wv * xs[j * STW + kw * DLW][None, :],)
                    accs = summed
    bias = tl.zeros((BLOCK_OC,), dtype=tl.float32)
    if HAS_BIAS:
        bias = tl.load(b_ptr + g * OCG + oc, mask=oc_ok, other=0.0).to(tl.float32)
    o = out_ptr + n * son + ((g * OCG + oc) * soc)[:, None] + (od * sod + oh * soh + ow * sow)[None, :]
    for j in tl.static_range(RUN):
        ok = oc_ok[:, None] & (r_ok & (ow + j < OW))[None, :]
        tl.store(o + j * sow, (accs[j] + bias[:, None]).to(out_ptr.dtype.element_ty), mask=ok)


@triton.jit
def conv_direct_t_kernel(
    x_ptr, wg_ptr, b_ptr, out_ptr, QP, TILES_P, OC_TILES, OCG, OD, OH, OW, QH, QW, D, H, W, KD, KH, KW,
    sxn, sxc, sxd, sxh, sxw, son, soc, sod, soh, sow,
    std, sth, stw, pdd, pdh, pdw, dld, dlh, dlw,
    CG: tl.constexpr, HAS_BIAS: tl.constexpr, WIDE: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_OC: tl.constexpr,
):
    # A transposed convolution's outputs a stride phase at a time (o = q * stride + phase, as the implicit GEMM's
    # PHASED steps): a phase's outputs gather from the same kernel offsets (conv_phase_taps, a dim at a time), each
    # landing on an input position exactly, so the loop visits those offsets alone. Program: BLOCK_P outputs of one
    # phase of sample n by BLOCK_OC output channels of group g.
    phases = std * sth * stw
    n = tl.program_id(0) // (phases * TILES_P)
    phase = (tl.program_id(0) // TILES_P) % phases
    q = (tl.program_id(0) % TILES_P) * BLOCK_P + tl.arange(0, BLOCK_P)
    g = tl.program_id(1) // OC_TILES
    oc = (tl.program_id(1) % OC_TILES) * BLOCK_OC + tl.arange(0, BLOCK_OC)
    if WIDE:  # an offset may pass 2**31
        n, g, q = n.to(tl.int64), g.to(tl.int64), q.to(tl.int64)
    p_d = phase // (sth * stw)
    p_h = (phase // stw) % sth
    p_w = phase % stw
    qw = q % QW
    t = q // QW
    qd = t // QH
    qh = t % QH
    od = qd * std + p_d
    oh = qh * sth + p_h
    ow = qw * stw + p_w
    p_ok = (q < QP) & (od < OD) & (oh < OH) & (ow < OW)
    oc_ok = oc < OCG
    fd, sd, nd = conv_phase_taps(p_d, std, pdd, dld, KD)
    fh, sh, nh = conv_phase_taps(p_h, sth, pdh, dlh, KH)
    fw, sw, nw = conv_phase_taps(p_w, stw, pdw, dlw, KW)
    x_g = x_ptr + n * sxn + (g * CG) * sxc
    w_g = wg_ptr + g * (KD * KH * KW * CG * OCG) + oc
    acc = tl.zeros((BLOCK_OC, BLOCK_P), dtype=tl.float32)
    for jd in range(nd):
        kd = fd + jd * sd
        i_d = qd + (p_d + pdd - kd * dld) // std  # exact (a phase's tap lands on an input): one division a tap
        d_ok = p_ok & (i_d >= 0) & (i_d < D)
        for jh in range(nh):
            kh = fh + jh * sh
            i_h = qh + (p_h + pdh - kh * dlh) // sth
            h_ok = d_ok & (i_h >= 0) & (i_h < H)
            row = x_g + i_d * sxd + i_h * sxh
            for jw in range(nw):
                kw = fw + jw * sw
                i_w = qw + (p_w + pdw - kw * dlw) // stw
                ok = h_ok & (i_w >= 0) & (i_w < W)
                w_tap = w_g + ((kd * KH + kh) * KW + kw) * (CG * OCG)
                for c in tl.static_range(CG):
                    xv = tl.load(row + i_w * sxw + c * sxc, mask=ok, other=0.0).to(tl.float32)
                    wv = tl.load(w_tap + c * OCG, mask=oc_ok, other=0.0).to(tl.float32)
                    acc += wv[:, None] * xv[None, :]
    if HAS_BIAS:
        acc += tl.load(b_ptr + g * OCG + oc, mask=oc_ok, other=0.0).to(tl.float32)[:, None]
    o = out_ptr + n * son + ((g * OCG + oc) * soc)[:, None] + (od * sod + oh * soh + ow * sow)[None, :]
    tl.store(o, acc.to(out_ptr.dtype.element_ty), mask=oc_ok[:, None] & p_ok[None, :])


def conv_direct(x, wg, bias, out, kernel, stride, padding, dilation, groups, block_p, block_oc, run):
    """A (not transposed) convolution of few input channels a group on `conv_direct_kernel`, into `out`: its weight
    laid out as `wg` (group, kernel offset, input channel, output channel), `kernel` its (KD, KH, KW) and the
    settings 3-D; tiles of block_p outputs in runs of `run` along W (a run cut to a row, a tile to a sample's runs)
    by block_oc output channels (cut to a group's): a run's taps share their inputs."""
    OD, OH, OW = _three(out.shape[2:], 1)
    KD, KH, KW = kernel
    ocg = wg.shape[3]
    run = max(1, min(run, OW))
    used = 0  # the window's columns some output's tap reads
    for j in range(run):
        for kw in range(KW):
            used |= 1 << (j * stride[2] + kw * dilation[2])
    owr = triton.cdiv(OW, run)
    R = OD * OH * owr
    block_r = min(max(1, block_p // run), max(16, triton.next_power_of_2(R)))
    block_oc = min(block_oc, triton.next_power_of_2(ocg))
    tiles_r, oc_tiles = triton.cdiv(R, block_r), triton.cdiv(ocg, block_oc)
    conv_direct_kernel[(x.shape[0] * tiles_r, groups * oc_tiles)](
        x, wg, bias if bias is not None else x, out, R, tiles_r, oc_tiles, ocg, OH, OW, owr, *_three(x.shape[2:], 1),
        KD, KH, x.stride(0), x.stride(1), *_three(x.stride()[2:], 0),
        out.stride(0), out.stride(1), *_three(out.stride()[2:], 0),
        *stride[:2], *padding, *dilation[:2],
        KW=KW, CG=wg.shape[2], STW=stride[2], DLW=dilation[2], RUN=run, USED=used, HAS_BIAS=bias is not None,
        WIDE=_wide(x, out, wg), BLOCK_R=block_r, BLOCK_OC=block_oc, num_warps=4,
    )
    return out


def conv_direct_t(x, wg, bias, out, kernel, stride, padding, dilation, groups, block_p, block_oc):
    """A transposed convolution of few input channels a group on `conv_direct_t_kernel`, as `conv_direct` takes
    a convolution: block_p outputs of one stride phase (cut to a phase's) by block_oc output channels."""
    OD, OH, OW = _three(out.shape[2:], 1)
    ocg = wg.shape[3]
    q = [triton.cdiv(o, s) for o, s in zip((OD, OH, OW), stride, strict=True)]
    QP = q[0] * q[1] * q[2]
    block_p = min(block_p, max(16, triton.next_power_of_2(QP)))
    block_oc = min(block_oc, triton.next_power_of_2(ocg))
    tiles_p, oc_tiles = triton.cdiv(QP, block_p), triton.cdiv(ocg, block_oc)
    phases = stride[0] * stride[1] * stride[2]
    conv_direct_t_kernel[(x.shape[0] * phases * tiles_p, groups * oc_tiles)](
        x, wg, bias if bias is not None else x, out, QP, tiles_p, oc_tiles, ocg, OD, OH, OW, q[1], q[2],
        *_three(x.shape[2:], 1), *kernel,
        x.stride(0), x.stride(1), *_three(x.stride()[2:], 0),
        out.stride(0), out.stride(1), *_three(out.stride()[2:], 0),
        *stride, *padding, *dilation,
        CG=wg.shape[2], HAS_BIAS=bias is not None, WIDE=_wide(x, out, wg),
        BLOCK_P=block_p, BLOCK_OC=block_oc, num_warps=4,
    )
    return out
'''
