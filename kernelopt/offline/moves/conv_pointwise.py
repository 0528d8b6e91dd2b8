"""The convolution family's template for 1 x 1 convolutions at unit stride (`conv.pointwise`: KernelBench's 87, the
1 x 1 layers of bottleneck, inverted-residual and dense blocks).

Such a convolution is a product per sample: out[n] (C_OUT x P) = W (C_OUT x C_IN) @ x[n] (C_IN x P), P the
sample's positions, contiguous in both x and out. The implicit GEMM (seed/conv.py) gets there too, but it finds each
row's input position by dividing its flat index by the output's sizes, gathers its A tile through offsets the
compiler cannot prove contiguous (element by element, no vector loads) and masks every load for padding that a
1 x 1 convolution never has. Here a program takes BLOCK_CO output channels by BLOCK_P positions of one sample and
group: its x tile is BLOCK_K channel rows of BLOCK_P contiguous positions (16-byte loads), its output tile is stored
the same way, and a tile that lies whole inside the tensor is read and written with no mask. fp32 products at the
problem's precision ("ieee": FMAs, as the reference's own), or at 3xTF32 for a twin, or split in registers.

`conv.pointwise_split` (SPLIT_HELPER) takes the product transposed, out[n]^T = x[n]^T W^T: x's tile is then the
tensor cores' A operand, which wgmma reads from registers, so it is split into two TF32 parts there; the weight,
split once a call, is a K-major B read from shared memory as the loads left it. A TF32 product needs both operands
K-major in shared memory, and x's tile (positions contiguous) is not: the 3xTF32 twin splits it in registers and
writes both parts back to shared memory every K step, waiting on each product (sm_90 TTGIR, tests/test_moves_ptx.py).
On the H100 at the public 87's size (benchmarks/h200/kernel_times.py, RESULTS.md (bi)) it took 5.31 ms at 128 x 64 x
32 (4 warps) and 6.46 at 128 x 128 x 32, where `conv.pointwise` at ieee was the outside pass's best at 7.08 ms and
cuDNN's TF32 kernel (the reference, at reduced precision) took 4.59.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernelopt.offline.moves.family import Family

# the text both helpers share: a program's sample, group, positions, channels and input tile (its pids first), and the
# launch's output and blocks
_PROGRAM = '''    n = ng // G
    g = ng % G
    rp = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    rco = pid_co * BLOCK_CO + tl.arange(0, BLOCK_CO)
    rc = tl.arange(0, BLOCK_C)
    rp = tl.max_contiguous(tl.multiple_of(rp, BLOCK_P), BLOCK_P)
    if WIDE:  # a sample's offsets may pass 2**31
        rp = rp.to(tl.int64)
        rco = rco.to(tl.int64)
        rc = rc.to(tl.int64)
    x_tile = x_ptr + n.to(tl.int64) * sxn + (g * CG).to(tl.int64) * sxc
'''
_OUT = '''    n, c_in = x.shape[:2]
    c_out = weight.shape[0]
    x = x.contiguous()  # positions contiguous, channels P apart
    p = x[0, 0].numel() if n and c_in else 0
    out = torch.empty((n, c_out, *x.shape[2:]), device=x.device, dtype=x.dtype)
    if out.numel() == 0:
        return out
'''
_BLOCKS = '''    cg, ocg = c_in // groups, c_out // groups
    # each block cut to its dimension (16 at least: a tensor-core product's least side)
    block_co = max(16, min(block_co, triton.next_power_of_2(ocg)))
    block_c = max(16, min(block_c, triton.next_power_of_2(cg)))
    block_p = max(16, min(block_p, triton.next_power_of_2(p)))
    even = p % block_p == 0 and cg % block_c == 0 and ocg % block_co == 0
    wide = (max(c_in, c_out) + 256) * (p + 256) >= 2**31  # a sample's offsets, a masked tile's overhang included
'''

HELPER = '''

# conv_pw_kernel's tile: output channels by positions, and the input channels of a K step (the offline sweep's knobs;
# each cut to the convolution's own sizes at launch)
PW_BLOCK_CO = 128
PW_BLOCK_P = 128
PW_BLOCK_K = 32


@triton.jit
def conv_pw_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, P, CG, OCG, G, sxn, sxc, son, soc,
    HAS_BIAS: tl.constexpr, EVEN: tl.constexpr, WIDE: tl.constexpr,
    BLOCK_CO: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr,
):
    # Program: BLOCK_CO output channels of one group by BLOCK_P positions of one sample. EVEN: every tile lies whole
    # inside the tensors (P, CG and OCG multiples of the blocks): no mask.
    pid_p = tl.program_id(0)
    pid_co = tl.program_id(1)
    ng = tl.program_id(2)
''' + _PROGRAM + '''    w_tile = w_ptr + (g * OCG).to(tl.int64) * CG
    acc = tl.zeros((BLOCK_CO, BLOCK_P), dtype=tl.float32)
    for c0 in range(0, CG, BLOCK_C):
        c = c0 + rc
        w_off = rco[:, None] * CG + c[None, :]
        x_off = c[:, None] * sxc + rp[None, :]
        if EVEN:
            w = tl.load(w_tile + w_off)
            a = tl.load(x_tile + x_off)
        else:
            w = tl.load(w_tile + w_off, mask=(rco < OCG)[:, None] & (c < CG)[None, :], other=0.0)
            a = tl.load(x_tile + x_off, mask=(c < CG)[:, None] & (rp < P)[None, :], other=0.0)
        acc = tl.dot(w, a, acc, input_precision="ieee")
    if HAS_BIAS:
        acc += tl.load(b_ptr + g * OCG + rco, mask=rco < OCG, other=0.0).to(tl.float32)[:, None]
    out_off = n.to(tl.int64) * son + (g * OCG).to(tl.int64) * soc + rco[:, None] * soc + rp[None, :]
    if EVEN:
        tl.store(out_ptr + out_off, acc.to(out_ptr.dtype.element_ty))
    else:
        tl.store(out_ptr + out_off, acc.to(out_ptr.dtype.element_ty), mask=(rco < OCG)[:, None] & (rp < P)[None, :])


def conv_pointwise(x, weight, bias, groups, block_co, block_p, block_c):
    """torch's 1 x 1 convolution at unit stride and no padding (any dilation: one tap has no spacing) of x (N, C, ...)
    on `conv_pw_kernel`: a product of a group's weight rows and a sample's positions a tile."""
''' + _OUT + '''    w = weight.reshape(c_out, -1).contiguous()
''' + _BLOCKS + '''    grid = (triton.cdiv(p, block_p), triton.cdiv(ocg, block_co), n * groups)
    conv_pw_kernel[grid](
        x, w, bias if bias is not None else w, out, p, cg, ocg, groups, x.stride(0), x.stride(1),
        out.stride(0), out.stride(1), HAS_BIAS=bias is not None, EVEN=even, WIDE=wide,
        BLOCK_CO=block_co, BLOCK_P=block_p, BLOCK_C=block_c, num_warps=8, num_stages=3,
    )
    return out


def conv_triton(x, weight, bias, out, stride, padding, dilation, transposed, output_padding, groups):
    # a 1 x 1 convolution at unit stride with no padding (the move is offered only so): the product at the swept tile
    return conv_pointwise(x, weight, bias, groups, PW_BLOCK_CO, PW_BLOCK_P, PW_BLOCK_K)
'''

# a weight's two TF32 parts, made once a call before the product: the kernel, then its host function (conv_split.py's
# split_tf32 shares them)
TF32_PARTS_KERNEL = '''@triton.jit
def tf32_parts_kernel(w_ptr, hi_ptr, lo_ptr, numel, BLOCK: tl.constexpr):
    # w = hi + lo exactly: hi is w rounded to TF32 (10 mantissa bits), lo the rest
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < numel
    w = tl.load(w_ptr + offs, mask=inside, other=0.0)
    hi = ((w.to(tl.uint32, bitcast=True) + 0x1000) & 0xFFFFE000).to(tl.float32, bitcast=True)
    tl.store(hi_ptr + offs, hi, mask=inside)
    tl.store(lo_ptr + offs, w - hi, mask=inside)


'''
TF32_PARTS = '''def tf32_parts(w):
    """(hi, lo), w's two TF32 parts (hi + lo == w, each exact in fp32), in w's shape."""
    w = w.contiguous()
    hi, lo = torch.empty_like(w), torch.empty_like(w)
    if w.numel():
        tf32_parts_kernel[(triton.cdiv(w.numel(), 1024),)](w, hi, lo, w.numel(), BLOCK=1024)
    return hi, lo


'''
SPLIT_HELPER = '''

# conv_pw_split_kernel's tile: output channels by positions, and the input channels of a K step (the offline sweep's
# knobs; each cut to the convolution's own sizes at launch)
PW_BLOCK_CO = 128
PW_BLOCK_P = 128
PW_BLOCK_K = 32


''' + TF32_PARTS_KERNEL + '''@triton.jit
def conv_pw_split_kernel(
    x_ptr, wh_ptr, wl_ptr, b_ptr, out_ptr, P, CG, OCG, G, CO_TILES, sxn, sxc, son, soc,
    HAS_BIAS: tl.constexpr, EVEN: tl.constexpr, WIDE: tl.constexpr,
    BLOCK_CO: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr,
):
    # out[n]^T = x[n]^T W^T: a program takes BLOCK_P positions of one sample by BLOCK_CO output channels of one group.
    # x's tile (positions by channels) is the tensor cores' A operand, read from registers, where it is split into two
    # TF32 parts; the weight, split once before the launch, is B, K-major in shared memory: three TF32 products
    # (xh wh + xl wh + xh wl), no operand written back to shared memory. A position tile's output-channel tiles are
    # neighbouring programs (x read once from DRAM). EVEN: every tile lies whole inside the tensors: no mask.
    pid = tl.program_id(0)
    ng = tl.program_id(1)
    pid_co = pid % CO_TILES
    pid_p = pid // CO_TILES
''' + _PROGRAM + '''    w_off0 = (g * OCG).to(tl.int64) * CG
    acc = tl.zeros((BLOCK_P, BLOCK_CO), dtype=tl.float32)
    for c0 in range(0, CG, BLOCK_C):
        c = c0 + rc
        w_off = w_off0 + rco[None, :] * CG + c[:, None]
        x_off = c[None, :] * sxc + rp[:, None]
        if EVEN:
            wh = tl.load(wh_ptr + w_off)
            wl = tl.load(wl_ptr + w_off)
            xt = tl.load(x_tile + x_off)
        else:
            w_in = (c < CG)[:, None] & (rco < OCG)[None, :]
            wh = tl.load(wh_ptr + w_off, mask=w_in, other=0.0)
            wl = tl.load(wl_ptr + w_off, mask=w_in, other=0.0)
            xt = tl.load(x_tile + x_off, mask=(rp < P)[:, None] & (c < CG)[None, :], other=0.0)
        xh = ((xt.to(tl.uint32, bitcast=True) + 0x1000) & 0xFFFFE000).to(tl.float32, bitcast=True)
        xl = xt - xh
        acc = tl.dot(xl, wh, acc, input_precision="tf32")
        acc = tl.dot(xh, wl, acc, input_precision="tf32")
        acc = tl.dot(xh, wh, acc, input_precision="tf32")
    if HAS_BIAS:
        acc += tl.load(b_ptr + g * OCG + rco, mask=rco < OCG, other=0.0).to(tl.float32)[None, :]
    out_off = n.to(tl.int64) * son + (g * OCG).to(tl.int64) * soc + rco[None, :] * soc + rp[:, None]
    if EVEN:
        tl.store(out_ptr + out_off, acc.to(out_ptr.dtype.element_ty))
    else:
        tl.store(out_ptr + out_off, acc.to(out_ptr.dtype.element_ty), mask=(rp < P)[:, None] & (rco < OCG)[None, :])


''' + TF32_PARTS + '''def conv_pointwise_split(x, weight, bias, groups, block_co, block_p, block_c):
    """torch's fp32 1 x 1 convolution at unit stride and no padding of x (N, C, ...) as three TF32 products a tile
    on `conv_pw_split_kernel` (x split in registers, the weight once here)."""
''' + _OUT + '''    wh, wl = tf32_parts(weight.reshape(c_out, -1))
''' + _BLOCKS + '''    co_tiles = triton.cdiv(ocg, block_co)
    grid = (triton.cdiv(p, block_p) * co_tiles, n * groups)
    conv_pw_split_kernel[grid](
        x, wh, wl, bias if bias is not None else wh, out, p, cg, ocg, groups, co_tiles, x.stride(0), x.stride(1),
        out.stride(0), out.stride(1), HAS_BIAS=bias is not None, EVEN=even, WIDE=wide,
        BLOCK_CO=block_co, BLOCK_P=block_p, BLOCK_C=block_c, num_warps=8, num_stages=3,
    )
    return out


def conv_triton(x, weight, bias, out, stride, padding, dilation, transposed, output_padding, groups):
    # a 1 x 1 convolution at unit stride with no padding (the move is offered only so): the product at the swept tile
    return conv_pointwise_split(x, weight, bias, groups, PW_BLOCK_CO, PW_BLOCK_P, PW_BLOCK_K)
'''

HEADER = '''"""conv.$name: the reference's 1 x 1 convolution as a product per sample and group (kernelopt's
template): output channels by contiguous positions a program, whole tiles read and written with no mask."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
'''

# (PW_BLOCK_CO, PW_BLOCK_P, PW_BLOCK_K, num_warps, num_stages): a tile of all of a 128-channel group's outputs first
TILES = ((128, 128, 32, 8, 3), (128, 64, 32, 4, 3), (64, 128, 32, 4, 3), (128, 256, 16, 8, 3), (64, 64, 64, 4, 3),
         (128, 128, 64, 8, 2), (32, 256, 32, 4, 3), (64, 256, 32, 8, 3))
KEYS = ("PW_BLOCK_CO", "PW_BLOCK_P", "PW_BLOCK_K", "num_warps", "num_stages")


def applies(family: Family) -> str | None:
    """None where the convolution is 1 x 1 at unit stride with no padding (not transposed), else why not."""
    _, _, _, stride, padding, _, transposed, _, _ = family.scalars[:9]
    kernel = tuple(family.weight_shape[2:])
    if transposed:
        return "a transposed convolution: its outputs gather from input positions a stride apart"
    if not kernel or any(k != 1 for k in kernel):
        return f"a {' x '.join(map(str, kernel)) or '?'} kernel: each output reads a window, not one position"
    if any(s != 1 for s in stride) or any(p != 0 for p in padding):
        return f"stride {tuple(stride)}, padding {tuple(padding)}: the outputs' positions are not the inputs'"
    return None


def tiles(family: Family) -> tuple[dict[str, int], ...]:
    """TILES for this convolution: each block cut to its own dimension as the launch cuts it (16 at least), in order,
    without repeats."""
    weight = family.weight_shape
    groups = max(int(family.scalars[8]), 1)
    sizes = {"PW_BLOCK_CO": weight[0] // groups, "PW_BLOCK_K": weight[1]}
    out: list[dict[str, int]] = []
    for tile in TILES:
        config = dict(zip(KEYS, tile, strict=True))
        for key, size in sizes.items():
            config[key] = max(16, min(config[key], 1 << max(size - 1, 0).bit_length()))
        if config not in out:
            out.append(config)
    return tuple(out)


def helper(dtype: str, precision: str = "ieee") -> str:
    """HELPER with its fp32 products at `precision` ("ieee", "tf32x3"; "split": SPLIT_HELPER's, three TF32 products of
    operands split in registers and once before); a 16-bit problem's products are the tensor cores' own (no precision
    named)."""
    if precision == "split":
        return SPLIT_HELPER
    if dtype != "float32":
        return HELPER.replace(', input_precision="ieee"', "")
    return HELPER.replace('input_precision="ieee"', f'input_precision="{precision}"')


def source(family: Family, problem_source: str, precision: str = "ieee") -> str:
    """The kernel file: the helper at `precision`, then ModelNew with the reference's constructor calling it."""
    from kernelopt.seed.writer import reference_init, state_expression

    weight, bias = family.state
    x = family.input_names[0]
    call = (f"conv_triton({x}, {state_expression(weight)}, {state_expression(bias) if bias else 'None'}, None, "
            f"None, None, None, False, None, {int(family.scalars[8])})")
    name = "pointwise" + {"ieee": "", "tf32x3": "_tf32x3", "split": "_split"}[precision]
    return (HEADER.replace("$name", name) + helper(family.dtype, precision) + "\n\nclass ModelNew(nn.Module):\n"
            + reference_init(problem_source) + f"\n    def forward(self, {x}):\n        return {call}\n")
