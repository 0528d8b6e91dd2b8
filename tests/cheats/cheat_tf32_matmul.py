"""Cheat: an fp32 matmul at one TF32 product (Triton's default precision). Caught by: runtime: one TF32 product.

tl.dot without input_precision multiplies fp32 at TF32 (10 mantissa bits, ~1e-3 relative): on
inputs of one sign the sums average that down within fp32's tolerance, so the tolerance alone cannot
be relied on. The compiled TTIR names the precision; the outputs, measured against float64, are
then over a hundred times the problem's own fp32 error (the candidate's interpreter reads TF32
operands as the tensor cores do).
(One product over the whole of K, no loop: the interpreter's host compile of TTIR takes no loop.)

Problem: problem_matmul.py.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK: tl.constexpr, BLOCK_K: tl.constexpr):
    # One program per BLOCK x BLOCK tile of C; the whole of K (BLOCK_K >= K) in one product, masked.
    rm = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    rn = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    rk = tl.arange(0, BLOCK_K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
    acc = tl.dot(a, b)
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
