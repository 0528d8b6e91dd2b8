"""The matmul family's split-TF32 template (`split_tf32`): an fp32 product at fp32's accuracy on the tensor
cores, each operand split once, beforehand, instead of every K step.

Triton's `input_precision="tf32x3"` splits both operand tiles into a TF32 part and a remainder in registers
on every K step; on Hopper the split B tile goes back to shared memory before the tensor cores read it, and
each step waits for it. Here one pass writes A's and B's TF32 parts (rounded to nearest) and remainders as
K-major buffers (K contiguous, zeros past K, M and N padded to whole tiles), and the product multiplies
`lo*hi + hi*lo + hi*hi` a K step at a time with three plain TF32 products on the tiles as loaded.

Each step's three products go into an accumulator of their own, started at zero, and the CUDA cores add it
to the running fp32 sum. The tensor cores' accumulator keeps only the bits at its largest addend's scale: run
over the whole of K it lost 6.6x cuBLAS SGEMM's error at 4096^3, against 0.19x with a step's sum added in fp32,
which is `tf32x3`'s own accuracy (benchmarks/h200/tf32_split_probe.py; RESULTS.md (al)). On the H200 at
4096^3 the split product took 1.55 ms against `tf32x3`'s best 2.47 and SGEMM's 2.67 (the split pass included).

The three products run at TF32, which the verifier measures (harness/sandbox/precision.py): the outputs'
error against float64 must stay within a small multiple of the problem's own fp32 error.
"""

from __future__ import annotations

from kernelopt.offline.moves import matmul

SPLIT_KERNEL = '''

@triton.jit
def split_kernel(src_ptr, hi_ptr, lo_ptr, rows, cols, s_b, s_r, s_c, rows_p, ld, row_blocks,
                 block_r: tl.constexpr, block_c: tl.constexpr):
    # src[i] (rows x cols, any strides; batch i at i * s_b) as hi[i] + lo[i], each rows_p x ld, row-major, batch
    # after batch; zeros past rows and cols. hi: src rounded to TF32 (10 mantissa bits, to nearest); lo = src - hi,
    # exact in fp32. Axis 0 walks the batches' row blocks (no 65535-batch limit).
    batch = (tl.program_id(0) // row_blocks).to(tl.int64)
    r = (tl.program_id(0) % row_blocks) * block_r + tl.arange(0, block_r)
    c = tl.program_id(1) * block_c + tl.arange(0, block_c)
    r64 = r[:, None].to(tl.int64)
    c64 = c[None, :].to(tl.int64)
    src = src_ptr + batch * s_b + r64 * s_r + c64 * s_c
    x = tl.load(src, mask=(r[:, None] < rows) & (c[None, :] < cols), other=0.0)
    bits = x.to(tl.int32, bitcast=True)
    near = ((bits + 4096) & -8192).to(tl.float32, bitcast=True)
    # rounding up past fp32's largest: the top 19 bits as they are; a non-finite value whole in the remainder, its
    # part 0, so that it meets only the other operand's part, never a remainder of 0 (inf * 0 = NaN)
    finite = tl.abs(x) < float("inf")
    hi = tl.where(tl.abs(near) <= 3.4028234663852886e38, near, (bits & -8192).to(tl.float32, bitcast=True))
    hi = tl.where(finite, hi, 0.0)
    lo = tl.where(finite, x - hi, x)
    dst = batch * rows_p * ld + r64 * ld + c64
    inside = (r[:, None] < rows_p) & (c[None, :] < ld)
    tl.store(hi_ptr + dst, hi, mask=inside)
    tl.store(lo_ptr + dst, lo, mask=inside)
'''

# The product loop on the split parts (matmul_split_f16.py's too, its operands fp16)
PRODUCT = '''

@triton.jit
def _split_product(ah_ptr, al_ptr, bh_ptr, bl_ptr, Kp, pid_m, pid_n,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # A's and B's parts are K-major (rows Kp apart, Kp a multiple of BLOCK_K) and padded to whole tiles: no
    # load needs a mask. Each K step's three products start from zero; the step's sum is added in fp32.
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_off = rm[:, None].to(tl.int64) * Kp + rk[None, :]
    b_off = rk[:, None] + rn[None, :].to(tl.int64) * Kp
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, Kp, BLOCK_K):
        a_hi = tl.load(ah_ptr + a_off)
        a_lo = tl.load(al_ptr + a_off)
        b_hi = tl.load(bh_ptr + b_off)
        b_lo = tl.load(bl_ptr + b_off)
        step = tl.dot(a_lo, b_hi, input_precision="tf32")
        step = tl.dot(a_hi, b_lo, step, input_precision="tf32")
        acc += tl.dot(a_hi, b_hi, step, input_precision="tf32")
        a_off += BLOCK_K
        b_off += BLOCK_K
    return acc
'''

_MATMUL = '''

@triton.jit
def split_matmul_kernel(ah_ptr, al_ptr, bh_ptr, bl_ptr, c_ptr, M, N, Kp, scm, scn,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = _tile_ids(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = _split_product(ah_ptr, al_ptr, bh_ptr, bl_ptr, Kp, pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K)
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))

''' + matmul.FORWARD_HEAD + '''        Kp = triton.cdiv(K, BLOCK_K) * BLOCK_K
        a_hi, a_lo = _split(a[None], triton.cdiv(M, BLOCK_M) * BLOCK_M, Kp)
        b_hi, b_lo = _split(b.T[None], triton.cdiv(N, BLOCK_N) * BLOCK_N, Kp)
        c = torch.empty((M, N), device=a.device, dtype=a.dtype)
        grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
        split_matmul_kernel[grid](a_hi, a_lo, b_hi, b_lo, c, M, N, Kp, c.stride(0), c.stride(1), BLOCK_M=BLOCK_M,
                                  BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, num_warps=8, num_stages=3)
        return c
'''

_BMM = '''

@triton.jit
def split_bmm_kernel(ah_ptr, al_ptr, bh_ptr, bl_ptr, c_ptr, M, N, Mp, Np, Kp, scb, scm, scn,
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
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    tl.store(c_ptr + batch * scb + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))

''' + matmul.BMM_FORWARD_HEAD + '''        Kp = triton.cdiv(K, BLOCK_K) * BLOCK_K
        Mp, Np = triton.cdiv(M, BLOCK_M) * BLOCK_M, triton.cdiv(N, BLOCK_N) * BLOCK_N
        a_hi, a_lo = _split(a, Mp, Kp)
        b_hi, b_lo = _split(b.transpose(1, 2), Np, Kp)
        c = torch.empty((batches, M, N), device=a.device, dtype=a.dtype)
        grid = (batches * triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
        split_bmm_kernel[grid](a_hi, a_lo, b_hi, b_lo, c, M, N, Mp, Np, Kp, c.stride(0), c.stride(1), c.stride(2),
                               BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, num_warps=8,
                               num_stages=3)
        return c
'''

SPLIT_HELPER = '''

# after forward: the product's launch comes first, so its num_warps is the knob the sweep sets
def _split(x, rows, ld):
    # x (batches x R x C, any strides) as its TF32 part and remainder, each batches x rows x ld, zero-padded
    hi = torch.empty((x.shape[0], rows, ld), device=x.device, dtype=torch.float32)
    lo = torch.empty((x.shape[0], rows, ld), device=x.device, dtype=torch.float32)
    block_r, block_c = 32, 128
    row_blocks = triton.cdiv(rows, block_r)
    split_kernel[(x.shape[0] * row_blocks, triton.cdiv(ld, block_c))](
        x, hi, lo, x.shape[1], x.shape[2], x.stride(0), x.stride(1), x.stride(2), rows, ld, row_blocks,
        block_r=block_r, block_c=block_c, num_warps=4)
    return hi, lo
'''

# The tiles the H200 ran the split product at best, fastest first (4096^3: 1.55, 1.82, 1.85 ms at the first
# three), then a K tile of 16 and a small tile for small products. A deeper K tile holds four operand tiles a
# stage in shared memory: 128 x 64 x 64 at 3 stages ran slower than all three.
TILES = ((128, 128, 32, 8, 3), (64, 128, 32, 4, 4), (128, 64, 32, 4, 4), (128, 128, 16, 8, 4), (64, 64, 32, 4, 4))


def split_tf32(params: tuple[str, ...], operands: tuple[int, ...], transposed: tuple[bool, ...]) -> str:
    """The grouped matmul on A and B split once into TF32 parts and remainders, K-major and padded."""
    body = matmul.filled(_MATMUL, params, operands, transposed)
    return _head("A and B split once into TF32 parts and remainders, three TF32 products a K step added in "
                 "fp32, GROUP_M program order") + body + SPLIT_HELPER


def bmm_split_tf32(params: tuple[str, ...], operands: tuple[int, ...], transposed: tuple[bool, ...]) -> str:
    """torch.bmm on each batch's A and B split once into TF32 parts and remainders, K-major and padded."""
    body = matmul.filled(_BMM, params, operands, transposed, batched=True)
    return _head("batched (torch.bmm), each batch's A and B split once into TF32 parts and remainders, three TF32 "
                 "products a K step added in fp32, GROUP_M order per batch") + body + SPLIT_HELPER


def _head(what: str) -> str:
    return matmul.header(what) + matmul.TILE_IDS + SPLIT_KERNEL + PRODUCT
