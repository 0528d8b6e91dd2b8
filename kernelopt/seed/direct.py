"""The direct convolution the seed's Triton convolution (seed/conv.py) hands a group of few input channels and few
output channels to: a first layer's RGB input to 16 or 24 channels (13 of KernelBench's level-2 problems start with
a convolution of 3 input channels).

The implicit GEMM packs such a group's (channel, kernel offset) pairs into K steps of BLOCK_K columns and gathers
each element of a [BLOCK_M, BLOCK_K] tile with its own position and masks: a 3-channel 3 x 3 x 3 kernel is 81 columns
padded to 128, each worked out a row, and at 16 output channels a row multiplies them by 16 columns only, on the
CUDA cores at fp32. (A public level-2 Conv3d of 3 to 16 channels spent 0.95 ms of its 1.08 there on the H200.)
Here a program takes BLOCK_P output positions of one sample (depth, height and width flattened, so a tile runs
along the rows) by BLOCK_OC output channels of a group: each (kernel offset, input channel) loads the tile's inputs
once, a position's address and masks worked out once per offset, and adds their outer product with the offset's
weights (the layout `conv_weight_kernel` writes: group, kernel offset, input channel, output channel) to every
channel's sums, BLOCK_OC FMAs a load. fp32 sums of the same terms as the reference. Text written into kernel files
(no import).
"""

# The most input channels a group the direct kernel takes (the group's channels are unrolled).
DIRECT_CHANNELS = 4

DIRECT = '''

@triton.jit
def conv_direct_kernel(
    x_ptr, wg_ptr, b_ptr, out_ptr, P, TILES_P, OC_TILES, OCG, OH, OW, D, H, W, KD, KH,
    sxn, sxc, sxd, sxh, sxw, son, soc, sod, soh, sow,
    std, sth, stw, pdd, pdh, pdw, dld, dlh, dlw,
    KW: tl.constexpr, CG: tl.constexpr, HAS_BIAS: tl.constexpr, WIDE: tl.constexpr,
    BLOCK_P: tl.constexpr, BLOCK_OC: tl.constexpr,
):
    # Program: BLOCK_P output positions of sample n (od, oh, ow flattened) by BLOCK_OC output channels of group g.
    n = tl.program_id(0) // TILES_P
    p = (tl.program_id(0) % TILES_P) * BLOCK_P + tl.arange(0, BLOCK_P)
    g = tl.program_id(1) // OC_TILES
    oc = (tl.program_id(1) % OC_TILES) * BLOCK_OC + tl.arange(0, BLOCK_OC)
    if WIDE:  # an offset may pass 2**31
        n, g, p = n.to(tl.int64), g.to(tl.int64), p.to(tl.int64)
    p_ok = p < P
    oc_ok = oc < OCG
    ow = p % OW
    t = p // OW
    oh = t % OH
    od = t // OH
    x_g = x_ptr + n * sxn + (g * CG) * sxc
    w_g = wg_ptr + g * (KD * KH * KW * CG * OCG) + oc
    acc = tl.zeros((BLOCK_OC, BLOCK_P), dtype=tl.float32)
    for kd in range(KD):
        i_d = od * std - pdd + kd * dld
        d_ok = p_ok & (i_d >= 0) & (i_d < D)
        for kh in range(KH):
            i_h = oh * sth - pdh + kh * dlh
            h_ok = d_ok & (i_h >= 0) & (i_h < H)
            row = x_g + i_d * sxd + i_h * sxh
            for kw in tl.static_range(KW):
                i_w = ow * stw - pdw + kw * dlw
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
    od = (t // QH) * std + p_d
    oh = (t % QH) * sth + p_h
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
        i_d = (od + pdd - kd * dld) // std  # an exact multiple of the stride: no rounding either way
        d_ok = p_ok & (i_d >= 0) & (i_d < D)
        for jh in range(nh):
            kh = fh + jh * sh
            i_h = (oh + pdh - kh * dlh) // sth
            h_ok = d_ok & (i_h >= 0) & (i_h < H)
            row = x_g + i_d * sxd + i_h * sxh
            for jw in range(nw):
                kw = fw + jw * sw
                i_w = (ow + pdw - kw * dlw) // stw
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


def _wide(*tensors):
    """Whether an offset into any of the tensors may pass 2**31: its furthest element's, as its strides lay it (a
    view of a larger buffer, an output with padded strides), not its count of elements."""
    return any(sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride(), strict=True)) >= 2**31 - 1
               for t in tensors if t.numel())


def conv_direct(x, wg, bias, out, kernel, stride, padding, dilation, groups, block_p, block_oc):
    """A (not transposed) convolution of few input channels a group on `conv_direct_kernel`, into `out`: its weight
    laid out as `wg` (group, kernel offset, input channel, output channel), `kernel` its (KD, KH, KW) and the
    settings 3-D; tiles of block_p positions (cut to a sample's) by block_oc output channels (cut to a group's)."""
    OD, OH, OW = _three(out.shape[2:], 1)
    KD, KH, KW = kernel
    ocg = wg.shape[3]
    P = OD * OH * OW
    block_p = min(block_p, max(16, triton.next_power_of_2(P)))
    block_oc = min(block_oc, triton.next_power_of_2(ocg))
    tiles_p, oc_tiles = triton.cdiv(P, block_p), triton.cdiv(ocg, block_oc)
    conv_direct_kernel[(x.shape[0] * tiles_p, groups * oc_tiles)](
        x, wg, bias if bias is not None else x, out, P, tiles_p, oc_tiles, ocg, OH, OW, *_three(x.shape[2:], 1), KD, KH,
        x.stride(0), x.stride(1), *_three(x.stride()[2:], 0),
        out.stride(0), out.stride(1), *_three(out.stride()[2:], 0),
        *stride, *padding, *dilation,
        KW=KW, CG=wg.shape[2], HAS_BIAS=bias is not None, WIDE=_wide(x, out, wg),
        BLOCK_P=block_p, BLOCK_OC=block_oc, num_warps=4,
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
