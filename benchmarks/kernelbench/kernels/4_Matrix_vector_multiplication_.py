"""C = A @ B for A (M, K) and a column B (K, 1), fp32: one program per row of A, a dot product in
fp32.

At the KernelBench size (M 2048, K 1,048,576: A 8.6 GB, B 4 MB) the work is reading A once: 2048
programs (about 15 per SM) each walk their 4 MB row in blocks of BLOCK = 4096 (8 warps, four
128-bit loads of A per thread per step), each lane keeping its own fp32 partial sum of a * b,
folded together at the end. B is read by every program, but its 4 MB stay in L2. Row offsets are
64-bit (A holds 2**31 values).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matvec_kernel(c_ptr, a_ptr, b_ptr, K, stride_am, stride_bk, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    a_row = a_ptr + row * stride_am
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, K, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < K
        a = tl.load(a_row + offs, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + offs.to(tl.int64) * stride_bk, mask=mask, other=0.0).to(tl.float32)
        acc += a * b
    tl.store(c_ptr + row, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        M, K = A.shape
        C = torch.empty((M, 1), device=A.device, dtype=A.dtype)
        matvec_kernel[(M,)](C, A, B, K, A.stride(0), B.stride(0), BLOCK=4096, num_warps=8)
        return C
