"""The matmul family's split-K product on B's TF32 parts (`split_k_parts`): an fp32 product at fp32's accuracy for a
long K over few output tiles, with A read once, as it lies, and never written back to shared memory.

A TF32 wgmma reads its B operand K-major from shared memory and its A operand from registers. The 3xTF32 products
(`split_k_tf32x3`, `k_major_split_k_tf32x3`) split both tiles in registers every K step, so B's parts go back to
shared memory before each product, which waits for them: 6_Matmul (256 x 524288 by 524288 x 256) took 1.04 ms at
the K-major copy's split-K on the H200, moving 2 GB in that time where its floor moves 1 GB (RESULTS.md (ai)). Here B
is split once, before the product, into its TF32 part (rounded to nearest) and the remainder, laid out K-major and
padded to whole tiles (matmul_split.py's split pass, on B.T): those parts are the wgmma's B as loaded. A's tile is
split in registers, where wgmma reads it: `a_lo*b_hi + a_hi*b_lo + a_hi*b_hi`, three plain TF32 products a step,
started from zero, the step's sum added to the running one in fp32 (the accuracy `split_tf32` measured; the verifier
measures it again: harness/sandbox/precision.py). Program (tile, slice) writes its slice's sum; a second kernel adds
the SPLIT_K slices (matmul.py's).

The bytes: B read once and its parts written (12 bytes an element), A once (4); against the K-major copy's 8 and 4
per element of B and A, plus the split product's in-register work on B. It pays where the split-K products wait on
that work, not on memory. On the H100 at 6's size (benchmarks/h200/kernel_times.py, RESULTS.md (bi)) they did not:
the product took 0.74 ms against the K-major copy's 0.76, and B's split pass 0.59 against the copy's 0.37, so 1.41 ms
in all against 1.19. It stays a move, measured where split-K applies, and cures no "memory" diagnosis (cures.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelopt.hardware.ncu import capability_major
from kernelopt.offline.moves import MoveInstance, Skipped, matmul, matmul_split

if TYPE_CHECKING:
    from kernelopt.offline.moves.family import Family

_PARTIAL = '''

@triton.jit
def parts_partial_kernel(a_ptr, bh_ptr, bl_ptr, p_ptr, M, N, K, sam, sak, ldb, k_per_split,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                         EVEN: tl.constexpr):
    # Program (tile, slice): C's tile summed over one slice of K into partial[slice] (M x N, contiguous). A's tile
    # (any strides) is the tensor cores' A operand, split in registers into two TF32 parts; B's parts (N padded rows
    # of ldb, K contiguous, zeros past N and K) are B, K-major in shared memory as loaded. EVEN: A's tiles whole.
    pid_m, pid_n = _tile_ids(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    first = tl.program_id(1) * k_per_split
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_off = rm[:, None].to(tl.int64) * sam + (first + rk)[None, :].to(tl.int64) * sak
    b_off = (first + rk)[:, None].to(tl.int64) + rn[None, :].to(tl.int64) * ldb
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(first, tl.minimum(first + k_per_split, K), BLOCK_K):
        if EVEN:
            a = tl.load(a_ptr + a_off)
        else:
            a = tl.load(a_ptr + a_off, mask=(rm[:, None] < M) & (k + rk < K)[None, :], other=0.0)
        b_hi = tl.load(bh_ptr + b_off)
        b_lo = tl.load(bl_ptr + b_off)
        # A's TF32 part, rounded to nearest (past fp32's largest: its top 19 bits); a non-finite value whole in the
        # remainder, its part 0, so that it meets only B's part, never a remainder of 0 (inf * 0 = NaN)
        bits = a.to(tl.uint32, bitcast=True)
        near = ((bits + 0x1000) & 0xFFFFE000).to(tl.float32, bitcast=True)
        a_hi = tl.where(tl.abs(near) <= 3.4028234663852886e38, near, (bits & 0xFFFFE000).to(tl.float32, bitcast=True))
        finite = tl.abs(a) < float("inf")
        a_hi = tl.where(finite, a_hi, 0.0)
        a_lo = tl.where(finite, a - a_hi, a)
        step = tl.dot(a_lo, b_hi, input_precision="tf32")
        step = tl.dot(a_hi, b_lo, step, input_precision="tf32")
        acc += tl.dot(a_hi, b_hi, step, input_precision="tf32")
        a_off += BLOCK_K * sak
        b_off += BLOCK_K
    out = tl.program_id(1).to(tl.int64) * M * N + rm[:, None].to(tl.int64) * N + rn[None, :]
    tl.store(p_ptr + out, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))

''' + matmul.FORWARD_HEAD + '''        c = torch.empty((M, N), device=a.device, dtype=a.dtype)
        if M == 0 or N == 0:
            return c
        Kp = triton.cdiv(K, BLOCK_K) * BLOCK_K
        b_hi, b_lo = _split(b.T[None], triton.cdiv(N, BLOCK_N) * BLOCK_N, Kp)
        partial = torch.empty((SPLIT_K, M, N), device=a.device, dtype=torch.float32)
        k_per_split = triton.cdiv(triton.cdiv(K, SPLIT_K), BLOCK_K) * BLOCK_K
        grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N), SPLIT_K)
        parts_partial_kernel[grid](a, b_hi, b_lo, partial, M, N, K, a.stride(0), a.stride(1), Kp, k_per_split,
                                   BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,
                                   EVEN=M % BLOCK_M == 0 and K % BLOCK_K == 0, num_warps=8, num_stages=3)
''' + matmul.SUM_LAUNCH + '''        return c
'''

WHAT = ("B split once into TF32 parts and remainders (K-major, padded to whole tiles), A's tiles split in registers "
        "where the tensor cores read them: three TF32 products a step added in fp32, no operand written back to "
        "shared memory")


def split_k_parts(params: tuple[str, ...], operands: tuple[int, ...], transposed: tuple[bool, ...]) -> str:
    """The split-K matmul on B's TF32 parts (split once, K-major) and A's tiles split in registers."""
    head = matmul.header("split-K over SPLIT_K slices of K, " + WHAT) + matmul.SPLIT_KNOBS + matmul.TILE_IDS
    body = matmul.filled(matmul_split.SPLIT_KERNEL + _PARTIAL + matmul_split.SPLIT_HELPER, params, operands,
                         transposed)
    return head + matmul.SUM_SPLITS + body


def offered(family: Family, out: list[MoveInstance], skipped: list[Skipped],
            capability: str) -> tuple[list[MoveInstance], list[Skipped]]:
    """`matmul.split_k_parts` where split-K applies (`matmul.split_k` among `out`) on a GPU with TF32 tensor cores,
    at split_k's grid (fp32 tiles of BLOCK_K 32: A's tile and B's two parts a stage fit shared memory)."""
    name = "matmul.split_k_parts"
    if (capability_major(capability) or 99) < 8:
        return out, [*skipped, Skipped(name, f"the GPU (compute capability {capability}) has no TF32 tensor cores "
                                       "(sm_80 and later)")]
    found = next((m for m in out if m.name == "matmul.split_k"), None)
    if found is None:
        why = next((s.why for s in skipped if s.name == "matmul.split_k"), "matmul.split_k does not apply")
        return out, [*skipped, Skipped(name, why)]
    source = split_k_parts(family.input_names, family.operands, family.transposed)
    return [*out, MoveInstance(name, f"{found.why}; {WHAT}", source, found.grid)], skipped
