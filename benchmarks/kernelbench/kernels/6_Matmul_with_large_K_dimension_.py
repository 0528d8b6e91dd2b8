"""C = A @ B with a large K, A (M, K) and B (K, N) fp32: split-K, one program per 64 x 64 tile of C
and K_CHUNK slice of K writing an fp32 partial tile, then one program per tile summing them;
fp32 products with IEEE precision (no TF32).

At the KernelBench size (M = N = 256, K = 524,288: A and B 537 MB each) C has only 16 tiles of
64 x 64, far too few programs for 132 SMs. So K is cut into chunks of K_CHUNK = 8192: 64 chunks x
16 tiles = 1024 programs, each walking its chunk in steps of BLOCK_K = 32 with
tl.dot(..., input_precision="ieee") (full fp32 mantissa; TF32 would be ~1e-3 off) into an fp32
accumulator, and storing it to a (chunks, M, N) fp32 buffer (16 MB). `sum_kernel` then adds the
chunks of each tile in fixed order (deterministic) and writes C. Traffic: one read of A and B,
plus the 16 MB of partials written and read. 4 warps per 64 x 64 tile is 32 accumulators a
thread; no autotuning.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def partial_matmul_kernel(
    p_ptr, a_ptr, b_ptr, M, N, K, n_tiles_n, n_tiles,
    stride_am, stride_ak, stride_bk, stride_bn,
    K_CHUNK: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid = tl.program_id(0)
    chunk = pid // n_tiles
    tile = pid % n_tiles
    rm = (tile // n_tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = (tile % n_tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    k_start = chunk * K_CHUNK
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    k_end = tl.minimum(k_start + K_CHUNK, K)
    for k in range(k_start, k_end, BLOCK_K):
        a_mask = (rm[:, None] < M) & ((k + rk)[None, :] < K)
        b_mask = ((k + rk)[:, None] < K) & (rn[None, :] < N)
        a_offs = rm.to(tl.int64)[:, None] * stride_am + (k + rk).to(tl.int64)[None, :] * stride_ak
        b_offs = (k + rk).to(tl.int64)[:, None] * stride_bk + rn[None, :] * stride_bn
        a = tl.load(a_ptr + a_offs, mask=a_mask, other=0.0)
        b = tl.load(b_ptr + b_offs, mask=b_mask, other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    p_offs = chunk.to(tl.int64) * M * N + rm[:, None] * N + rn[None, :]
    tl.store(p_ptr + p_offs, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def sum_kernel(c_ptr, p_ptr, M, N, n_chunks, stride_cm, stride_cn, n_tiles_n,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    rm = (pid // n_tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = (pid % n_tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    partial_ptrs = p_ptr + rm[:, None] * N + rn[None, :]
    for _ in range(0, n_chunks):
        acc += tl.load(partial_ptrs, mask=mask, other=0.0)
        partial_ptrs += M * N
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        block_m, block_n, k_chunk = 64, 64, 8192
        M, K = A.shape
        N = B.shape[1]
        n_tiles_n = triton.cdiv(N, block_n)
        n_tiles = triton.cdiv(M, block_m) * n_tiles_n
        n_chunks = triton.cdiv(K, k_chunk)
        partials = torch.empty((n_chunks, M, N), device=A.device, dtype=torch.float32)
        C = torch.empty((M, N), device=A.device, dtype=A.dtype)
        partial_matmul_kernel[(n_chunks * n_tiles,)](
            partials, A, B, M, N, K, n_tiles_n, n_tiles,
            A.stride(0), A.stride(1), B.stride(0), B.stride(1),
            K_CHUNK=k_chunk, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=32, num_warps=4, num_stages=2,
        )
        sum_kernel[(n_tiles,)](
            C, partials, M, N, n_chunks, C.stride(0), C.stride(1), n_tiles_n,
            BLOCK_M=block_m, BLOCK_N=block_n, num_warps=4,
        )
        return C
