"""The matmul family's split-fp16 template (`split_f16`): an fp32 product at fp32's accuracy as three fp16
products on the tensor cores, at twice TF32's rate and half its operand bytes.

fp16 keeps as many mantissa bits as TF32 (10 stored, 11 with the implicit one); what it lacks is range. A
part-and-remainder split needs the remainder (about 2^-11 of its value) to stay a normal number, and fp16's
normals stop at 2^-14. So each row of A (and each column of B, a row of the K-major copy) is scaled first by
the power of two that puts its largest magnitude in [2^14, 2^15): every value down to 2^-14 of it has a
normal fp16 part, and a remainder's rounding (fp16's subnormal spacing) is 2^-38 of the row's largest, far
under fp32's 2^-24. The scales are powers of two, so scaling is exact, and the product is unscaled exactly
in its epilogue. As in `split_tf32` (matmul_split.py), the parts are written once, K-major and padded to
whole tiles, and each K step's three products (`lo*hi + hi*lo + hi*hi`) start from zero and are added to the
running fp32 sum by the CUDA cores.

On the H200 at 4096^3 (benchmarks/h200/f16_split_probe.py; RESULTS.md (am)): 0.90 ms with the split passes,
0.76 ms for the product alone, against the TF32 split's 1.54 and cuBLAS SGEMM's 2.68, at 0.15x SGEMM's error
from a float64 product (torch.rand; randn 0.14x). The verifier measures such products (16-bit operands on
fp32 data: harness/sandbox/precision.py).
"""

from __future__ import annotations

from kernelopt.offline.moves import matmul, matmul_split

SPLIT_KERNELS = '''

@triton.jit
def row_max_kernel(src_ptr, big_ptr, rows, cols, s_b, s_r, s_c, rows_p, row_blocks,
                   block_r: tl.constexpr, block_c: tl.constexpr):
    # big[i, r] = the bits of max |src[i, r, :]| over its finite values (an int32 max orders non-negative floats as
    # floats do): an inf would scale the row's finite values to zeros; it lies whole in its remainder (split_kernel)
    batch = (tl.program_id(0) // row_blocks).to(tl.int64)
    r = (tl.program_id(0) % row_blocks) * block_r + tl.arange(0, block_r)
    c = tl.program_id(1) * block_c + tl.arange(0, block_c)
    src = src_ptr + batch * s_b + r[:, None].to(tl.int64) * s_r + c[None, :].to(tl.int64) * s_c
    x = tl.abs(tl.load(src, mask=(r[:, None] < rows) & (c[None, :] < cols), other=0.0))
    big = tl.max(tl.where(x < float("inf"), x, 0.0), axis=1).to(tl.int32, bitcast=True)
    tl.atomic_max(big_ptr + batch * rows_p + r, big, mask=r < rows)


@triton.jit
def split_kernel(src_ptr, hi_ptr, lo_ptr, big_ptr, inv_ptr, rows, cols, s_b, s_r, s_c, rows_p, ld, row_blocks,
                 block_r: tl.constexpr, block_c: tl.constexpr):
    # src[i] (rows x cols, any strides) scaled row by row by 2^(14 - floor(log2 max|row|)) as hi[i] + lo[i] in
    # fp16, each rows_p x ld row-major, zeros past rows and cols; inv[i, r] the row's scale inverted (exact).
    batch = (tl.program_id(0) // row_blocks).to(tl.int64)
    r = (tl.program_id(0) % row_blocks) * block_r + tl.arange(0, block_r)
    c = tl.program_id(1) * block_c + tl.arange(0, block_c)
    src = src_ptr + batch * s_b + r[:, None].to(tl.int64) * s_r + c[None, :].to(tl.int64) * s_c
    x = tl.load(src, mask=(r[:, None] < rows) & (c[None, :] < cols), other=0.0)
    exponent = (tl.load(big_ptr + batch * rows_p + r, mask=r < rows_p, other=0) >> 23) & 255
    scale = (tl.minimum(tl.maximum(268 - exponent, 1), 253) << 23).to(tl.float32, bitcast=True)
    y = x * scale[:, None]
    # a non-finite value whole in the remainder, its part 0: it meets only the other operand's part (inf * 0 = NaN)
    finite = tl.abs(y) < float("inf")
    hi = tl.where(finite, y, 0.0).to(tl.float16)
    lo = tl.where(finite, y - hi.to(tl.float32), y).to(tl.float16)
    dst = batch * rows_p * ld + r[:, None].to(tl.int64) * ld + c[None, :]
    inside = (r[:, None] < rows_p) & (c[None, :] < ld)
    tl.store(hi_ptr + dst, hi, mask=inside)
    tl.store(lo_ptr + dst, lo, mask=inside)
    if tl.program_id(1) == 0:
        tl.store(inv_ptr + batch * rows_p + r, 1.0 / scale, mask=r < rows_p)
'''

UNSCALE = '''

@triton.jit
def _unscale(acc, ia, ib):
    # acc * ia[:, None] * ib[None, :] where ia and ib are powers of two (2^-126..2^126): exact. Their product 2^E
    # is applied as two halves, 2^(E // 2) then 2^(E - E // 2), each a normal number: no step overflows or
    # underflows where the output itself does not (a row of 2^110 against a column of 2^-110, or two of 2^-61,
    # whose inverses' product alone is past fp32's range)
    e = ((ia.to(tl.int32, bitcast=True) >> 23) - 127)[:, None] + ((ib.to(tl.int32, bitcast=True) >> 23) - 127)[None, :]
    half = e >> 1
    first = ((half + 127) << 23).to(tl.float32, bitcast=True)
    return acc * first * ((e - half + 127) << 23).to(tl.float32, bitcast=True)
'''

_KERNELS = SPLIT_KERNELS + matmul_split.PRODUCT.replace(', input_precision="tf32"', '') + UNSCALE + '''

@triton.jit
def _unscaled(acc, inv_a_ptr, inv_b_ptr, pid_m, pid_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # the scales' inverses cover the padded rows too
    ia = tl.load(inv_a_ptr + pid_m * BLOCK_M + tl.arange(0, BLOCK_M))
    ib = tl.load(inv_b_ptr + pid_n * BLOCK_N + tl.arange(0, BLOCK_N))
    return _unscale(acc, ia, ib)
'''

_MATMUL = '''

@triton.jit
def split_matmul_kernel(ah_ptr, al_ptr, bh_ptr, bl_ptr, ia_ptr, ib_ptr, c_ptr, M, N, Kp, scm, scn,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = _tile_ids(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = _split_product(ah_ptr, al_ptr, bh_ptr, bl_ptr, Kp, pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K)
    acc = _unscaled(acc, ia_ptr, ib_ptr, pid_m, pid_n, BLOCK_M, BLOCK_N)
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))

''' + matmul.FORWARD_HEAD + '''        Kp = triton.cdiv(K, BLOCK_K) * BLOCK_K
        a_hi, a_lo, a_inv = _split(a[None], triton.cdiv(M, BLOCK_M) * BLOCK_M, Kp)
        b_hi, b_lo, b_inv = _split(b.T[None], triton.cdiv(N, BLOCK_N) * BLOCK_N, Kp)
        c = torch.empty((M, N), device=a.device, dtype=a.dtype)
        grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
        split_matmul_kernel[grid](a_hi, a_lo, b_hi, b_lo, a_inv, b_inv, c, M, N, Kp, c.stride(0), c.stride(1),
                                  BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, num_warps=8,
                                  num_stages=3)
        return c
'''

_BMM = '''

@triton.jit
def split_bmm_kernel(ah_ptr, al_ptr, bh_ptr, bl_ptr, ia_ptr, ib_ptr, c_ptr, M, N, Mp, Np, Kp, scb, scm, scn,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # Program p: output tile p % tiles of batch p // tiles (batches one after another on one axis).
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    pid = tl.program_id(0)
    batch = (pid // tiles).to(tl.int64)
    pid_m, pid_n = _tile_ids(pid % tiles, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    a_at = batch * Mp * Kp
    b_at = batch * Np * Kp
    acc = _split_product(ah_ptr + a_at, al_ptr + a_at, bh_ptr + b_at, bl_ptr + b_at, Kp, pid_m, pid_n,
                         BLOCK_M, BLOCK_N, BLOCK_K)
    acc = _unscaled(acc, ia_ptr + batch * Mp, ib_ptr + batch * Np, pid_m, pid_n, BLOCK_M, BLOCK_N)
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    tl.store(c_ptr + batch * scb + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))

''' + matmul.BMM_FORWARD_HEAD + '''        Kp = triton.cdiv(K, BLOCK_K) * BLOCK_K
        Mp, Np = triton.cdiv(M, BLOCK_M) * BLOCK_M, triton.cdiv(N, BLOCK_N) * BLOCK_N
        a_hi, a_lo, a_inv = _split(a, Mp, Kp)
        b_hi, b_lo, b_inv = _split(b.transpose(1, 2), Np, Kp)
        c = torch.empty((batches, M, N), device=a.device, dtype=a.dtype)
        grid = (batches * triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
        split_bmm_kernel[grid](a_hi, a_lo, b_hi, b_lo, a_inv, b_inv, c, M, N, Mp, Np, Kp, c.stride(0), c.stride(1),
                               c.stride(2), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,
                               num_warps=8, num_stages=3)
        return c
'''

# The product through tensor descriptors (TMA): the parts are K-major, padded to whole tiles and 16-byte aligned,
# so a descriptor reads every tile whole with no address arithmetic; persistent programs walk the batches' tiles.
_TMA = '''

@triton.jit
def split_tma_kernel(ah_ptr, al_ptr, bh_ptr, bl_ptr, ia_ptr, ib_ptr, c_ptr, M, N, Mp, Np, Kp, batches, scb, scm,
                     scn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                     PROGRAMS: tl.constexpr, STORE_TMA: tl.constexpr):
    # The batches' parts lie one after another (batches * Mp rows of Kp, and batches * Np): one descriptor each.
    ah = tl.make_tensor_descriptor(ah_ptr, shape=[batches * Mp, Kp], strides=[Kp, 1], block_shape=[BLOCK_M, BLOCK_K])
    al = tl.make_tensor_descriptor(al_ptr, shape=[batches * Mp, Kp], strides=[Kp, 1], block_shape=[BLOCK_M, BLOCK_K])
    bh = tl.make_tensor_descriptor(bh_ptr, shape=[batches * Np, Kp], strides=[Kp, 1], block_shape=[BLOCK_N, BLOCK_K])
    bl = tl.make_tensor_descriptor(bl_ptr, shape=[batches * Np, Kp], strides=[Kp, 1], block_shape=[BLOCK_N, BLOCK_K])
    if STORE_TMA:  # C (batches x M x N, rows 16-byte aligned) written a whole tile at a time from shared memory
        cd = tl.make_tensor_descriptor(c_ptr, shape=[batches, M, N], strides=[scb, scm, 1],
                                       block_shape=[1, BLOCK_M, BLOCK_N])
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    for tile in range(tl.program_id(0), batches * tiles, PROGRAMS):
        batch = tile // tiles
        pid_m, pid_n = _tile_ids(tile % tiles, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        am = batch * Mp + pid_m * BLOCK_M
        bn = batch * Np + pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, Kp, BLOCK_K):
            a_hi = ah.load([am, k])
            a_lo = al.load([am, k])
            b_hi = bh.load([bn, k]).T
            b_lo = bl.load([bn, k]).T
            step = tl.dot(a_lo, b_hi)
            step = tl.dot(a_hi, b_lo, step)
            acc += tl.dot(a_hi, b_hi, step)
        acc = _unscaled(acc, ia_ptr + batch * Mp, ib_ptr + batch * Np, pid_m, pid_n, BLOCK_M, BLOCK_N)
        if STORE_TMA:  # the tile leaves through TMA while the program goes on to its next tile (edges clipped)
            cd.store([batch, pid_m * BLOCK_M, pid_n * BLOCK_N],
                     acc.to(c_ptr.dtype.element_ty).reshape(1, BLOCK_M, BLOCK_N))
        else:
            rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
            rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
            tl.store(c_ptr + batch.to(tl.int64) * scb + rm[:, None] * scm + rn[None, :] * scn,
                     acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def _workspace(size, alignment, stream):
    # global memory for the descriptors the programs build on the device
    return torch.empty(size, device="cuda", dtype=torch.int8)

'''

# forward's tail for the TMA product, after the operands are split (batches, a_*, b_*, Mp, Np, Kp, c set)
_TMA_LAUNCH = '''        if Kp == 0:  # no K: zeros (a descriptor of no columns is not made)
            return c.zero_()
        triton.set_allocator(_workspace)
        tiles = batches * triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)
        # C through a descriptor where TMA can describe it: rows and batches 16-byte aligned, columns contiguous
        aligned = c.stride(-1) == 1 and all(s * c.element_size() % 16 == 0 for s in (c_b, c.stride(-2)))
        split_tma_kernel[(max(1, min(PROGRAMS, tiles)),)](
            a_hi, a_lo, b_hi, b_lo, a_inv, b_inv, c, M, N, Mp, Np, Kp, batches, c_b, c.stride(-2), c.stride(-1),
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, PROGRAMS=PROGRAMS,
            STORE_TMA=bool(STORE_TMA) and aligned and c.data_ptr() % 16 == 0, num_warps=8, num_stages=3)
        return c
'''

_TMA_MATMUL = matmul.FORWARD_HEAD + '''        Kp = triton.cdiv(K, BLOCK_K) * BLOCK_K
        Mp, Np = triton.cdiv(M, BLOCK_M) * BLOCK_M, triton.cdiv(N, BLOCK_N) * BLOCK_N
        a_hi, a_lo, a_inv = _split(a[None], Mp, Kp)
        b_hi, b_lo, b_inv = _split(b.T[None], Np, Kp)
        c = torch.empty((M, N), device=a.device, dtype=a.dtype)
        batches, c_b = 1, M * N  # one batch: its stride only describes C to a descriptor
''' + _TMA_LAUNCH

_TMA_BMM = matmul.BMM_FORWARD_HEAD + '''        Kp = triton.cdiv(K, BLOCK_K) * BLOCK_K
        Mp, Np = triton.cdiv(M, BLOCK_M) * BLOCK_M, triton.cdiv(N, BLOCK_N) * BLOCK_N
        a_hi, a_lo, a_inv = _split(a, Mp, Kp)
        b_hi, b_lo, b_inv = _split(b.transpose(1, 2), Np, Kp)
        c = torch.empty((batches, M, N), device=a.device, dtype=a.dtype)
        c_b = c.stride(0)
''' + _TMA_LAUNCH

SPLIT_HELPER = '''

# after forward: the product's launch comes first, so its num_warps is the knob the sweep sets
def _split(x, rows, ld, block_r=32, block_c=128):
    # x (batches x R x C, any strides), each row scaled by a power of two, as fp16 parts and remainders, each
    # batches x rows x ld, zero-padded; and the scales' inverses, batches x rows. Programs of block_r x block_c
    batches = x.shape[0]
    big = torch.zeros((batches, rows), device=x.device, dtype=torch.int32)
    hi = torch.empty((batches, rows, ld), device=x.device, dtype=torch.float16)
    lo = torch.empty((batches, rows, ld), device=x.device, dtype=torch.float16)
    inv = torch.ones((batches, rows), device=x.device, dtype=torch.float32)  # K = 0: no split program writes it
    row_blocks = triton.cdiv(rows, block_r)
    row_max_kernel[(batches * row_blocks, triton.cdiv(x.shape[2], block_c))](
        x, big, x.shape[1], x.shape[2], x.stride(0), x.stride(1), x.stride(2), rows, row_blocks,
        block_r=block_r, block_c=block_c, num_warps=4)
    split_kernel[(batches * row_blocks, triton.cdiv(ld, block_c))](
        x, hi, lo, big, inv, x.shape[1], x.shape[2], x.stride(0), x.stride(1), x.stride(2), rows, ld, row_blocks,
        block_r=block_r, block_c=block_c, num_warps=4)
    return hi, lo, inv
'''

# The tiles the H200 ran the fp16 split product at best, fastest first (4096^3, the split passes included:
# 0.90, 1.06, 1.08, 1.08 ms), then a small tile for small products. fp16 tiles of BLOCK_K 64 are the bytes of
# TF32's at 32: four operand tiles a stage at three stages fit Hopper's shared memory.
TILES = ((128, 128, 64, 8, 3), (128, 128, 32, 8, 3), (64, 128, 64, 4, 4), (128, 64, 64, 4, 4), (64, 64, 64, 4, 3))


def split_f16(params: tuple[str, ...], operands: tuple[int, ...], transposed: tuple[bool, ...]) -> str:
    """The grouped matmul on A's rows and B's columns scaled by powers of two and split once into fp16 parts and
    remainders, K-major and padded."""
    body = matmul.filled(_MATMUL, params, operands, transposed)
    return _head("A's rows and B's columns scaled by powers of two and split once into fp16 parts and "
                 "remainders, three fp16 products a K step added in fp32, GROUP_M program order") + body + SPLIT_HELPER


def bmm_split_f16(params: tuple[str, ...], operands: tuple[int, ...], transposed: tuple[bool, ...]) -> str:
    """torch.bmm on each batch's A and B scaled and split once into fp16 parts and remainders, K-major, padded."""
    body = matmul.filled(_BMM, params, operands, transposed, batched=True)
    return _head("batched (torch.bmm), each batch's A rows and B columns scaled by powers of two and split once "
                 "into fp16 parts and remainders, three fp16 products a K step added in fp32, GROUP_M order per "
                 "batch") + body + SPLIT_HELPER


def split_f16_tma(params: tuple[str, ...], operands: tuple[int, ...], transposed: tuple[bool, ...], programs: int,
                  batched: bool = False) -> str:
    """`split_f16` (`bmm_split_f16` where `batched`) with its product's tiles loaded through tensor descriptors by
    `programs` persistent programs (the GPU's SM count)."""
    body = matmul.filled(_TMA + (_TMA_BMM if batched else _TMA_MATMUL), params, operands, transposed, batched)
    head = _head(("batched (torch.bmm), each batch's " if batched else "") + "A's rows and B's columns scaled by "
                 "powers of two and split once into fp16 parts and remainders, three fp16 products a K step added "
                 f"in fp32, their tiles loaded by TMA, persistent over {programs} programs")
    knobs = f"GROUP_M = 8\nPROGRAMS = {programs}\nSTORE_TMA = 0\n"  # STORE_TMA: C's tiles stored by TMA
    return head.replace("GROUP_M = 8\n", knobs, 1) + body + SPLIT_HELPER


def _head(what: str) -> str:
    return matmul.header(what) + matmul.TILE_IDS + _KERNELS
