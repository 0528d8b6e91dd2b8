"""The matmul family's K-major templates: each operand copied so that K is its contiguous dimension
and its rows start a multiple of 16 elements apart, then the grouped product (`k_major`), the
split-K product for a long K with few output tiles (`k_major_split_k`), or each batch's product
(`bmm_k_major`).

On Hopper, Triton multiplies fp32 at "tf32x3" with wgmma, and a TF32 wgmma takes both operands
K-major from shared memory. A B stored row-major (K x N, N contiguous: `A @ B`), or an A stored
transposed, has its tiles transposed on the way in, every K step of every program. On the H200
the same fp32 product (2048 x 8192 by 8192 x 4096) took 2.61 ms with B row-major and 1.62 ms
with B stored transposed (`A @ B.T`). A copy of B as B.T (one read and one write of B: 0.06 ms
for that B at the datasheet bandwidth) gives the product the layout it wants.

A K no multiple of 16 (2949) leaves the loads along K masked at a boundary Triton cannot prove
aligned, so they go element by element; then both operands are copied with K padded with zeros
to a multiple of 16 (the zeros add nothing), and the product runs over the padded K, unmasked in
effect. A copied operand's rows start a multiple of 16 elements apart.
The copy moves a tile at a time (read along the source's rows, written along the copy's rows;
Triton takes the tile through shared memory between the two). The product is the grouped or
split-K template's kernels with the copies' strides. For a long K the copy weighs more: 6_Matmul's
256 x 524288 by 524288 x 256 copies a 512 MB B (about 0.2 ms) before a product that took 1.27 ms
on B's transposed tiles.
"""

from __future__ import annotations

from kernelopt.offline.moves import matmul

_COPY_KERNEL = '''

@triton.jit
def k_major_kernel(src_ptr, dst_ptr, rows, cols, s_r, s_c, ld, block_r: tl.constexpr, block_c: tl.constexpr):
    # dst (cols x ld, row-major) = src (rows x cols, any strides) transposed, zeros past rows
    blocks_r = tl.cdiv(ld, block_r)
    pid = tl.program_id(0)
    r = (pid % blocks_r) * block_r + tl.arange(0, block_r)
    c = (pid // blocks_r) * block_c + tl.arange(0, block_c)
    inside = (r[:, None] < rows) & (c[None, :] < cols)
    tile = tl.load(src_ptr + r[:, None].to(tl.int64) * s_r + c[None, :].to(tl.int64) * s_c, mask=inside, other=0.0)
    tl.store(dst_ptr + c[:, None].to(tl.int64) * ld + r[None, :].to(tl.int64), tl.trans(tile),
             mask=(c[:, None] < cols) & (r[None, :] < ld))

'''

# forward's first lines after FORWARD_HEAD: A and B replaced by K-major copies where their K is strided
_TO_K_MAJOR = '''        # K contiguous in both, rows 16 elements apart, as the TF32 products take them; a
        # K no multiple of 16 is padded with zeros in both (they add nothing): no load along K is cut short
        Kp = triton.cdiv(K, 16) * 16
        if K > 1 and (Kp != K or a.stride(1) != 1 or (M > 1 and a.stride(0) % 16) or a.data_ptr() % 16):
            a = _transposed(a.T)
        if K > 1 and (Kp != K or b.stride(0) != 1 or (N > 1 and b.stride(1) % 16) or b.data_ptr() % 16):
            b = _transposed(b).T
        K = a.shape[1]
        c = torch.empty((M, N), device=a.device, dtype=a.dtype)
        precision = "ieee" if a.dtype == torch.float32 else "tf32"
'''

_COPY_HELPER = '''        return c


# after forward: the product's launch comes first, so its num_warps is the knob the sweep sets
def _transposed(x):
    # x (rows x cols) copied as x.T with rows padded with zeros to a multiple of 16 (64 x 64 values a program)
    ld = triton.cdiv(x.shape[0], 16) * 16
    out = torch.empty((x.shape[1], ld), device=x.device, dtype=x.dtype)
    block_r, block_c, warps = 64, 64, 4
    k_major_kernel[(triton.cdiv(ld, block_r) * triton.cdiv(x.shape[1], block_c),)](
        x, out, x.shape[0], x.shape[1], x.stride(0), x.stride(1), ld, block_r=block_r, block_c=block_c,
        num_warps=warps)
    return out
'''

_K_MAJOR = _COPY_KERNEL + matmul.FORWARD_HEAD + _TO_K_MAJOR + matmul.GROUPED_LAUNCH + _COPY_HELPER
_SPLIT_K_MAJOR = _COPY_KERNEL + matmul.FORWARD_HEAD + _TO_K_MAJOR + matmul.SPLIT_LAUNCH + _COPY_HELPER


def k_major(params: tuple[str, ...], operands: tuple[int, ...], transposed: tuple[bool, ...]) -> str:
    """The grouped matmul on copies of A and B with K contiguous (only those not already so)."""
    head, _ = matmul.grouped(params, operands, transposed).split("\nclass ModelNew", 1)
    body = matmul.filled(_K_MAJOR, params, operands, transposed)
    head = head.replace("grouped (GROUP_M) program order", "operands copied K-major, then GROUP_M program order", 1)
    return head.rstrip() + "\n" + body


def k_major_split_k(params: tuple[str, ...], operands: tuple[int, ...], transposed: tuple[bool, ...]) -> str:
    """The split-K matmul on copies of A and B with K contiguous (only those not already so)."""
    head, _ = matmul.split_k(params, operands, transposed).split("\nclass ModelNew", 1)
    body = matmul.filled(_SPLIT_K_MAJOR, params, operands, transposed)
    head = head.replace("split-K over SPLIT_K slices of K", "operands copied K-major, then split-K over SPLIT_K "
                        "slices of K", 1)
    return head.rstrip() + "\n" + body


_BMM_K_MAJOR = '''

@triton.jit
def k_major_kernel(src_ptr, dst_ptr, rows, cols, s_b, s_r, s_c, ld, d_b, block_r: tl.constexpr,
                   block_c: tl.constexpr):
    # dst[i] (cols x ld, row-major) = src[i] (rows x cols, any strides) transposed, zeros past rows; the
    # batches one after another on the program axis
    blocks_r = tl.cdiv(ld, block_r)
    blocks = blocks_r * tl.cdiv(cols, block_c)
    pid = tl.program_id(0)
    batch = (pid // blocks).to(tl.int64)
    r = (pid % blocks % blocks_r) * block_r + tl.arange(0, block_r)
    c = (pid % blocks // blocks_r) * block_c + tl.arange(0, block_c)
    inside = (r[:, None] < rows) & (c[None, :] < cols)
    src = src_ptr + batch * s_b + r[:, None].to(tl.int64) * s_r + c[None, :].to(tl.int64) * s_c
    tile = tl.load(src, mask=inside, other=0.0)
    tl.store(dst_ptr + batch * d_b + c[:, None].to(tl.int64) * ld + r[None, :].to(tl.int64), tl.trans(tile),
             mask=(c[:, None] < cols) & (r[None, :] < ld))

''' + matmul.BMM_FORWARD_HEAD + '''\
        # K contiguous in both, rows and batches 16 elements apart, as the TF32 products take them; a K
        # no multiple of 16 is padded with zeros in both (they add nothing): no load along K is cut short
        Kp = triton.cdiv(K, 16) * 16
        if K > 1 and (Kp != K or a.stride(2) != 1 or (M > 1 and a.stride(1) % 16) or (batches > 1 and a.stride(0) % 16)
                      or a.data_ptr() % 16):
            a = _transposed(a.transpose(1, 2))
        if K > 1 and (Kp != K or b.stride(1) != 1 or (N > 1 and b.stride(2) % 16) or (batches > 1 and b.stride(0) % 16)
                      or b.data_ptr() % 16):
            b = _transposed(b).transpose(1, 2)
        K = a.shape[2]
        c = torch.empty((batches, M, N), device=a.device, dtype=a.dtype)
        precision = "ieee" if a.dtype == torch.float32 else "tf32"
        grid = (batches * triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
        bmm_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), a.stride(2), b.stride(0), b.stride(1),
                         b.stride(2), c.stride(0), c.stride(1), c.stride(2), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                         BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, PRECISION=precision, num_warps=8, num_stages=3)
        return c


# after forward: the product's launch comes first, so its num_warps is the knob the sweep sets
def _transposed(x):
    # x (batches x rows x cols) copied as each batch's transpose, rows padded with zeros to a multiple of 16
    ld = triton.cdiv(x.shape[1], 16) * 16
    out = torch.empty((x.shape[0], x.shape[2], ld), device=x.device, dtype=x.dtype)
    block_r, block_c, warps = 64, 64, 4
    grid = (x.shape[0] * triton.cdiv(ld, block_r) * triton.cdiv(x.shape[2], block_c),)
    k_major_kernel[grid](x, out, x.shape[1], x.shape[2], x.stride(0), x.stride(1), x.stride(2), ld, out.stride(0),
                         block_r=block_r, block_c=block_c, num_warps=warps)
    return out
'''


def bmm_k_major(params: tuple[str, ...], operands: tuple[int, ...], transposed: tuple[bool, ...]) -> str:
    """The batched matmul on copies of A and B with K contiguous in each batch (only those not already so)."""
    head, _ = matmul.batched(params, operands, transposed).split("\nclass ModelNew", 1)
    body = matmul.filled(_BMM_K_MAJOR, params, operands, transposed, batched=True)
    head = head.replace("GROUP_M order per batch", "operands copied K-major, GROUP_M order per batch", 1)
    return head.rstrip() + "\n" + body
