"""The matmul family's fp16 split with the larger operand split in registers (`split_f16_regs`): an fp32 product at
fp32's accuracy as three fp16 products, where only the smaller operand takes `split_f16`'s passes.

`split_f16` (matmul_split_f16.py) splits both operands once before the product: for each, a pass for its rows' largest
values and a pass writing its fp16 parts, 12 bytes an element before the product reads 4. On torch.bmm's 128 x 512 x
1024 x 2048 (B four times A) those passes were about 40% of 2.6 ms on the H200 (RESULTS.md (am)). Splitting both
operands' tiles in registers instead (`f16x3`, matmul_f16x3.py) lost there (7.30 ms): wgmma reads its B operand from
shared memory only, so each K step's split B tile went back to shared memory and each product waited for it.

Here the product is taken so that the larger operand is wgmma's A, which it reads from registers: out = x @ y with x
the larger (A, or B transposed, when out is C transposed) and y the smaller. x's rows' largest values are found by one
read before the launch (split_f16's `row_max_kernel`); then x is read as it lies, each K step's tile scaled by its rows'
powers of two (split_f16's: the row's largest in [2^14, 2^15)) and split into fp16 parts in registers. No reduction
happens in the loop: one there (f16x3's tile scales) moved the tile out of the layout wgmma reads A in and back
through shared memory. y is split once by `split_f16`'s passes (each row of y transposed scaled over the whole of K,
K-major, padded to whole tiles), its parts wgmma's B as loaded. No operand goes back to shared memory inside the loop
(sm_90 TTGIR: tests/test_moves_ptx.py). Each step's three products start from zero and their sum is added to the
running fp32 sum; the epilogue undoes both scales exactly (`_unscale`). The ranges are split_f16's for both operands.
The verifier measures the outputs (16-bit operands on fp32 data: harness/sandbox/precision.py).

x's tiles are split again for every output tile that reads them (out's columns over BLOCK_N), so the move is offered
where y is at most half of x: the passes it saves weigh more than the splits it adds. On the H100 at 3_Batched's size
(benchmarks/h200/kernel_times.py, RESULTS.md (bi)): 2.62 ms against split_f16's 3.11 (1.19x); the product took 1.86
ms against 1.57 on parts made before it, and the passes 0.65 against 1.40.
"""

from __future__ import annotations

from kernelopt.offline.moves import matmul, matmul_split_f16

# A tile's rows scaled by powers of two and split into fp16 parts in registers, with no reduction: the parts stay in
# the layout wgmma reads its A operand in (conv_split.py's split_f16_regs takes it too)
SCALED_PARTS = '''

@triton.jit
def _line_scales(big):
    # the power of two that puts a line's largest finite magnitude (big: its bits, from row_max_kernel) in
    # [2^14, 2^15), split_kernel's scale, and its inverse (both exact)
    shift = tl.minimum(tl.maximum(268 - ((big >> 23) & 255), 1), 253)
    return (shift << 23).to(tl.float32, bitcast=True), ((254 - shift) << 23).to(tl.float32, bitcast=True)


@triton.jit
def _scaled_parts(x, scale):
    # x's rows times scale (powers of two, exact) as fp16 parts and remainders; a non-finite value whole in the
    # remainder, its part 0, so that it meets only the other operand's part, never a remainder of 0 (inf * 0 = NaN)
    x = x * scale[:, None]
    finite = tl.abs(x) < float("inf")
    hi = tl.where(finite, x, 0.0).to(tl.float16)
    return hi, tl.where(finite, x - hi.to(tl.float32), x).to(tl.float16)
'''

_KERNEL = SCALED_PARTS + '''

@triton.jit
def regs_split_kernel(x_ptr, bx_ptr, yh_ptr, yl_ptr, iy_ptr, c_ptr, P, Q, K, Pp, Qp, Kp, sxb, sxp, sxk, scb, scp,
                      scq, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_M: tl.constexpr, EVEN: tl.constexpr):
    # Program p: tile p % tiles of batch p // tiles of out = x @ y (P x Q, strides scp, scq: C, or C transposed).
    # x (fp32, any strides) is the tensor cores' A operand, each K step's tile scaled and split in registers; y's
    # parts (Qp rows of Kp per batch, K contiguous, zeros past Q and K; iy the rows' scales inverted) are B, K-major
    # in shared memory as loaded. EVEN: x's tiles lie whole inside it.
    tiles = tl.cdiv(P, BLOCK_M) * tl.cdiv(Q, BLOCK_N)
    pid = tl.program_id(0)
    batch = (pid // tiles).to(tl.int64)
    pid_m, pid_n = _tile_ids(pid % tiles, P, Q, BLOCK_M, BLOCK_N, GROUP_M)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    # each row of x scaled as split_kernel scales y's: its parts and remainders are then normal fp16 numbers
    scale, inv_x = _line_scales(tl.load(bx_ptr + batch * Pp + rm))
    x_ptrs = x_ptr + batch * sxb + rm[:, None].to(tl.int64) * sxp + rk[None, :].to(tl.int64) * sxk
    y_off = batch * Qp * Kp + rk[:, None] + rn[None, :].to(tl.int64) * Kp
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        if EVEN:
            x = tl.load(x_ptrs)
        else:
            x = tl.load(x_ptrs, mask=(rm[:, None] < P) & (k + rk < K)[None, :], other=0.0)
        y_hi = tl.load(yh_ptr + y_off)
        y_lo = tl.load(yl_ptr + y_off)
        x_hi, x_lo = _scaled_parts(x, scale)
        step = tl.dot(x_lo, y_hi)
        step = tl.dot(x_hi, y_lo, step)
        acc += tl.dot(x_hi, y_hi, step)
        x_ptrs += BLOCK_K * sxk
        y_off += BLOCK_K
    acc = _unscale(acc, inv_x, tl.load(iy_ptr + batch * Qp + rn))
    out = c_ptr + batch * scb + rm[:, None].to(tl.int64) * scp + rn[None, :].to(tl.int64) * scq
    tl.store(out, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < P) & (rn[None, :] < Q))

'''

_MATMUL = _KERNEL + matmul.FORWARD_HEAD + '''        c = torch.empty((M, N), device=a.device, dtype=a.dtype)
        _product(a[None], b[None], c[None], 1, M, N, K)
        return c
'''

_BMM = _KERNEL + matmul.BMM_FORWARD_HEAD + '''        c = torch.empty((batches, M, N), device=a.device, dtype=a.dtype)
        _product(a, b, c, batches, M, N, K)
        return c
'''

# after forward (a function of its own, so that forward's return is the templates' `return c`, which the views of
# more dims rewrite), before the split's helpers: the product's launch comes first, so its num_warps is the knob the
# sweep sets
_PRODUCT = '''

def _product(a, b, c, batches, M, N, K):
    # c (batches x M x N) = a @ b: the larger operand x split in registers, the smaller split once (y^T's rows: B's
    # columns, or A's rows where x is B and the product C transposed)
    if c.numel() == 0:
        return
    if a[0].numel() < b[0].numel():  # out = C^T = B^T A^T
        x, yt, P, Q, scp, scq = b.transpose(1, 2), a, N, M, c.stride(2), c.stride(1)
    else:
        x, yt, P, Q, scp, scq = a, b.transpose(1, 2), M, N, c.stride(1), c.stride(2)
    Kp = triton.cdiv(K, BLOCK_K) * BLOCK_K
    Pp, Qp = triton.cdiv(P, BLOCK_M) * BLOCK_M, triton.cdiv(Q, BLOCK_N) * BLOCK_N
    y_hi, y_lo, y_inv = _split(yt, Qp, Kp)
    x_big = _row_max(x, Pp)
    grid = (batches * triton.cdiv(P, BLOCK_M) * triton.cdiv(Q, BLOCK_N),)
    regs_split_kernel[grid](x, x_big, y_hi, y_lo, y_inv, c, P, Q, K, Pp, Qp, Kp, x.stride(0), x.stride(1), x.stride(2),
                            c.stride(0), scp, scq, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,
                            EVEN=P % BLOCK_M == 0 and K % BLOCK_K == 0, num_warps=8, num_stages=3)
'''

# fp16 tiles (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages): x's fp32 tile and y's two fp16 parts a stage (64 KB
# at 128 x 128 x 64, three stages in a Hopper's shared memory); split_f16's first tiles otherwise
TILES = ((128, 128, 64, 8, 3), (128, 128, 32, 8, 3), (128, 64, 64, 4, 4), (64, 128, 64, 4, 4))
WHAT = ("the larger operand's tiles scaled by powers of two and split into fp16 parts in registers, where the tensor "
        "cores read them, the smaller split once (rows scaled, K-major, padded to whole tiles): three fp16 products "
        "a K step added in fp32, no operand written back to shared memory")


def split_f16_regs(params: tuple[str, ...], operands: tuple[int, ...], transposed: tuple[bool, ...],
                   batched: bool = False) -> str:
    """The grouped product (each batch's for torch.bmm, `batched`) with the larger operand split in registers and the
    smaller split once into fp16 parts."""
    body = matmul.filled(_BMM if batched else _MATMUL, params, operands, transposed, batched)
    head = matmul.header(("batched (torch.bmm), each batch's product: " if batched else "") + WHAT)
    return (head + matmul.TILE_IDS + matmul_split_f16.SPLIT_KERNELS + matmul_split_f16.UNSCALE + body + _PRODUCT
            + matmul_split_f16.SPLIT_HELPER.replace("\n# after forward: the product's launch comes first, so its "
                                                    "num_warps is the knob the sweep sets\n", "\n") + ROW_MAX)


ROW_MAX = '''

def _row_max(x, rows, block_r=32, block_c=128):
    # the bits of each row's largest finite magnitude of x (batches x R x C, any strides), batches x rows (0 past R);
    # block_c grows so that the grid's second axis stays under 65535
    big = torch.zeros((x.shape[0], rows), device=x.device, dtype=torch.int32)
    block_c = max(block_c, triton.next_power_of_2(triton.cdiv(x.shape[2], 65535)))
    row_blocks = triton.cdiv(rows, block_r)
    if x.shape[2]:
        row_max_kernel[(x.shape[0] * row_blocks, triton.cdiv(x.shape[2], block_c))](
            x, big, x.shape[1], x.shape[2], x.stride(0), x.stride(1), x.stride(2), rows, row_blocks,
            block_r=block_r, block_c=block_c, num_warps=4)
    return big
'''
def applies(a_elements: int, b_elements: int) -> str:
    """Why not ("" where it applies): the smaller operand must be at most half the larger (a batch's, for bmm)."""
    small, large = sorted((a_elements, b_elements))
    if 2 * small <= large:
        return ""
    return (f"A's and B's {a_elements} and {b_elements} elements are within 2x of each other: splitting the larger in "
            "registers, again for every output tile that reads it, saves less than split_f16's passes over it cost")
