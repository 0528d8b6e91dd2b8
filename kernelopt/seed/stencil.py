"""The direct stencil the seed's Triton convolution (seed/conv.py) hands a depthwise convolution to, and the
`conv.depthwise` move instantiates (offline/moves/conv_depthwise.py): where each output channel reads one input
channel, an implicit GEMM's tile holds one useful column, so a program computes a BLOCK_H x BLOCK_W tile of one
(sample, output channel, output depth) plane instead, its KD x KH x KW taps unrolled. Text written into kernel files
(no import): the kernels and `conv_depthwise`, its host function.
"""

CONV_OUT = '''

def _conv_out(x, weight, stride, padding, dilation):
    """A convolution's output (not a transposed one's), allocated."""
    sizes = [(i + 2 * p - d * (k - 1) - 1) // s + 1 for i, s, p, d, k in
             zip(x.shape[2:], stride, padding, dilation, weight.shape[2:], strict=True)]
    return torch.empty((x.shape[0], weight.shape[0], *sizes), dtype=x.dtype, device=x.device)


def _wide(*tensors):
    """Whether an offset into any of the tensors may pass 2**31: its furthest element's, as its strides lay it (a
    view of a larger buffer, an output with padded strides), not its count of elements."""
    return any(sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride(), strict=True)) >= 2**31 - 1
               for t in tensors if t.numel())
'''

DEPTHWISE = '''

@triton.jit
def conv_dw_taps(
    x_tile, w_taps, out_ok, od, oh, ow, D, H, W, sxd, sxh, sxw, std, sth, stw, pdd, pdh, pdw, dld, dlh, dlw,
    KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, MASKED: tl.constexpr,
    BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr,
):
    # A tile's sum over its taps, unrolled (KD, KH, KW are the kernel's own sizes): a kernel row's taps lie at
    # scalar steps from the row's first (constant steps at unit dilation and stride along W). MASKED: a tap may
    # fall in the padding; else only the tile's edge is masked (every output's window lies inside the input).
    lo = od * 0  # a scalar zero of the offsets' width (int64 where WIDE)
    acc = tl.zeros((BLOCK_H, BLOCK_W), dtype=tl.float32)
    for kd in tl.static_range(KD):
        i_d = od * std - pdd + kd * dld
        d_ok = (oh * 0 + i_d >= 0) & (oh * 0 + i_d < D)  # a vector: the interpreter takes no scalar in a mask
        for kh in tl.static_range(KH):
            i_h = oh * sth - pdh + kh * dlh
            h_ok = d_ok & (i_h >= 0) & (i_h < H)
            x_row = x_tile + ((lo + kd * dld) * sxd + (lo + kh * dlh) * sxh)
            for kw in tl.static_range(KW):
                ok = out_ok
                if MASKED:
                    i_w = ow * stw - pdw + kw * dlw
                    ok = out_ok & h_ok[:, None] & ((i_w >= 0) & (i_w < W))[None, :]
                x = tl.load(x_row + (lo + kw * dlw) * sxw, mask=ok, other=0.0)
                acc += x.to(tl.float32) * tl.load(w_taps + (kd * KH + kh) * KW + kw).to(tl.float32)
    return acc


@triton.jit
def conv_dw_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, TILES_W, TILES, C_OUT, OD, OH, OW, D, H, W, OCG,
    sxn, sxc, sxd, sxh, sxw, son, soc, sod, soh, sow,
    std, sth, stw, pdd, pdh, pdw, dld, dlh, dlw,
    KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, PADDED: tl.constexpr,
    HAS_BIAS: tl.constexpr, WIDE: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr,
):
    # Program: a BLOCK_H x BLOCK_W tile of one (sample, output channel, output depth) plane; output channel oc
    # reads input channel oc // OCG (OCG output channels a group, one input channel each)
    pid = tl.program_id(0)
    row = pid // TILES
    tile = pid % TILES
    od = row % OD
    t = row // OD
    oc = t % C_OUT
    n = (t // C_OUT).to(tl.int64)
    oh0 = (tile // TILES_W) * BLOCK_H
    ow0 = (tile % TILES_W) * BLOCK_W
    oh = oh0 + tl.arange(0, BLOCK_H)
    ow = ow0 + tl.arange(0, BLOCK_W)
    if WIDE:  # an offset within a sample may pass 2**31 (a channels-last layout spans the sample)
        od, oh, ow = od.to(tl.int64), oh.to(tl.int64), ow.to(tl.int64)
    out_ok = (oh[:, None] < OH) & (ow[None, :] < OW)
    # the tile's first tap, an address an output
    x_tile = (x_ptr + n * sxn + (oc // OCG).to(tl.int64) * sxc + (od * std - pdd) * sxd
              + (oh * sth - pdh)[:, None] * sxh + (ow * stw - pdw)[None, :] * sxw)
    w_taps = w_ptr + oc * (KD * KH * KW)
    # a tile whose whole window lies inside the input (every tile without padding; most of a large plane's with it)
    # takes no per-tap masks
    inside = True
    if PADDED:
        inside = ((od * std - pdd >= 0) & (od * std - pdd + (KD - 1) * dld < D)
                  & (oh0 * sth - pdh >= 0) & ((tl.minimum(oh0 + BLOCK_H, OH) - 1) * sth - pdh + (KH - 1) * dlh < H)
                  & (ow0 * stw - pdw >= 0) & ((tl.minimum(ow0 + BLOCK_W, OW) - 1) * stw - pdw + (KW - 1) * dlw < W))
    if inside:
        acc = conv_dw_taps(x_tile, w_taps, out_ok, od, oh, ow, D, H, W, sxd, sxh, sxw, std, sth, stw,
                           pdd, pdh, pdw, dld, dlh, dlw, KD, KH, KW, False, BLOCK_H, BLOCK_W)
    else:
        acc = conv_dw_taps(x_tile, w_taps, out_ok, od, oh, ow, D, H, W, sxd, sxh, sxw, std, sth, stw,
                           pdd, pdh, pdw, dld, dlh, dlw, KD, KH, KW, True, BLOCK_H, BLOCK_W)
    if HAS_BIAS:
        acc += tl.load(b_ptr + oc).to(tl.float32)
    o = out_ptr + n * son + oc.to(tl.int64) * soc + od * sod + oh[:, None] * soh + ow[None, :] * sow
    tl.store(o, acc.to(out_ptr.dtype.element_ty), mask=out_ok)



def _three(values, fill):
    """A 1- or 2-D convolution's sizes, strides or settings as 3-D ones (leading `fill`s)."""
    values = tuple(values)
    return (fill,) * (3 - len(values)) + values

''' + CONV_OUT + '''

def conv_depthwise(x, weight, bias, out, stride, padding, dilation, groups, block_h, block_w):
    """torch's convolution where each output channel reads one input channel (groups = input channels; not a
    transposed one) on `conv_dw_kernel`, tiles of block_h x block_w (each cut to the plane), into `out`
    (allocated here when None)."""
    spatial = x.dim() - 2
    stride, padding, dilation = (tuple(v) * (spatial if len(v) == 1 else 1) for v in (stride, padding, dilation))
    out = _conv_out(x, weight, stride, padding, dilation) if out is None else out
    OD, OH, OW = _three(out.shape[2:], 1)
    KD, KH, KW = _three(weight.shape[2:], 1)
    taps = weight.reshape(weight.shape[0], -1).contiguous()
    # a tile wider than the plane's rows is cut to them and grows down the plane by as much (a 1-D convolution's
    # plane is one row): the outputs a thread stay as the launch chose them (82 on the H200: 1.06 ms at two a thread,
    # 1.43 at four, 1.82 at one)
    cut = min(block_w, triton.next_power_of_2(OW))
    block_h, block_w = min(block_h * (block_w // cut), triton.next_power_of_2(OH)), cut
    tiles_w = triton.cdiv(OW, block_w)
    tiles = triton.cdiv(OH, block_h) * tiles_w
    conv_dw_kernel[(x.shape[0] * out.shape[1] * OD * tiles,)](
        x, taps, bias if bias is not None else taps, out, tiles_w, tiles, out.shape[1], OD, OH, OW,
        *_three(x.shape[2:], 1), out.shape[1] // groups,
        x.stride(0), x.stride(1), *_three(x.stride()[2:], 0),
        out.stride(0), out.stride(1), *_three(out.stride()[2:], 0),
        *_three(stride, 1), *_three(padding, 0), *_three(dilation, 1),
        KD=KD, KH=KH, KW=KW, PADDED=any(padding), HAS_BIAS=bias is not None,
        WIDE=_wide(x, out), BLOCK_H=block_h, BLOCK_W=block_w, num_warps=8,
    )
    return out
'''

# A group of one input channel and fewer outputs than this goes to the stencil (conv_depthwise), in the helper and in
# the moves' plans alike: the implicit GEMM's tile would hold that many useful columns of its BLOCK_N (16 at least).
DEPTHWISE_OUTPUTS = 16
