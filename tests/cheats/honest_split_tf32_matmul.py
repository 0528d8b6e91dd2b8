"""Honest: an fp32 matmul at one TF32 product a term, on operands split into TF32 parts and remainders.

Each operand is split in the kernel into hi (rounded to TF32's 10 mantissa bits) and lo = x - hi, and the
product is lo*hi + hi*lo + hi*hi: three tl.dot at Triton's default TF32, which the compiled TTIR shows as
one-TF32 products on fp32. Measured against float64 its outputs are about as far off as PyTorch's own
fp32 product, so the verifier accepts it (a single TF32 product, cheat_tf32_matmul.py, is refused).
(One product over the whole of K, no loop, as in the cheat: the interpreter's host TTIR compile is kept simple.)

Problem: problem_matmul.py.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _split(x):
    bits = x.to(tl.int32, bitcast=True)
    hi = ((bits + 4096) & -8192).to(tl.float32, bitcast=True)  # to the nearest TF32
    return hi, x - hi


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK: tl.constexpr, BLOCK_K: tl.constexpr):
    # One program per BLOCK x BLOCK tile of C; the whole of K (BLOCK_K >= K) in one product, masked.
    rm = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    rn = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    rk = tl.arange(0, BLOCK_K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
    a_hi, a_lo = _split(a)
    b_hi, b_lo = _split(b)
    acc = tl.dot(a_lo, b_hi)
    acc = tl.dot(a_hi, b_lo, acc)
    acc = tl.dot(a_hi, b_hi, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a, b = a.contiguous(), b.contiguous()
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty((M, N), device=a.device, dtype=a.dtype)
        block_k = max(16, triton.next_power_of_2(K))
        matmul_kernel[(triton.cdiv(M, 16), triton.cdiv(N, 16))](a, b, c, M, N, K, BLOCK=16, BLOCK_K=block_k)
        return c
