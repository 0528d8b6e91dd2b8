"""Fused QKV: weights concatenated once in __init__, one matmul into a (M, 3D) buffer, q/k/v are
its column views.

Problem: problem_qkv.py.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(x_ptr, w_ptr, y_ptr, M, N, K, sxm, sxk, swn, swk, sym, syn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + rk
        a = tl.load(x_ptr + rm[:, None] * sxm + kk[None, :] * sxk,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * swn + kk[:, None] * swk,
                    mask=(rn[None, :] < N) & (kk[:, None] < K), other=0.0)
        acc += tl.dot(a, w, input_precision="ieee")
    tl.store(y_ptr + rm[:, None] * sym + rn[None, :] * syn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        q = nn.Linear(dim, dim, bias=False)
        k = nn.Linear(dim, dim, bias=False)
        v = nn.Linear(dim, dim, bias=False)
        self.w_qkv = nn.Parameter(torch.cat([q.weight, k.weight, v.weight], dim=0).detach().clone())
        self.dim = dim

    def forward(self, x: torch.Tensor):
        x = x.contiguous()
        M, K = x.shape
        N = self.w_qkv.shape[0]
        qkv = torch.empty((M, N), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
        matmul_kernel[grid](x, self.w_qkv, qkv, M, N, K, x.stride(0), x.stride(1),
                            self.w_qkv.stride(0), self.w_qkv.stride(1), qkv.stride(0), qkv.stride(1),
                            BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
        q, k, v = qkv.split(self.dim, dim=1)
        return q, k, v
