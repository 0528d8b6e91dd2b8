"""Triplet margin loss (p = 2, mean): one program per row for its loss, then one program for the mean.

The KernelBench anchors, positives and negatives are (32768, 8192) fp32 each (1.1 GB apiece).
`row_loss_kernel` runs one program per row (about 248 per SM) and walks the three 32 KB rows in
blocks of BLOCK = 2048 (8 warps, 8 values per thread), summing (a - p + eps)**2 and
(a - n + eps)**2 in fp32: PyTorch's pairwise distance adds eps = 1e-6 to each difference. It
writes max(d(a, p) - d(a, n) + margin, 0). `mean_kernel`, a single program, sums the row losses in
fixed order (deterministic) and divides by the row count. Traffic: one read of the three inputs.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_loss_kernel(loss_ptr, a_ptr, p_ptr, n_ptr, n_cols, margin, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row.to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK)
    pos_sq = tl.zeros((BLOCK,), tl.float32)
    neg_sq = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        mask = offs < n_cols
        a = tl.load(a_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
        p = tl.load(p_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
        n = tl.load(n_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
        dp = tl.where(mask, a - p + eps, 0.0)
        dn = tl.where(mask, a - n + eps, 0.0)
        pos_sq += dp * dp
        neg_sq += dn * dn
    d_pos = tl.sqrt(tl.sum(pos_sq, axis=0))
    d_neg = tl.sqrt(tl.sum(neg_sq, axis=0))
    tl.store(loss_ptr + row, tl.maximum(d_pos - d_neg + margin, 0.0))


@triton.jit
def mean_kernel(out_ptr, loss_ptr, n_rows, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_rows, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(loss_ptr + offs, mask=offs < n_rows, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / n_rows)


class ModelNew(nn.Module):
    def __init__(self, margin: float = 1.0) -> None:
        super().__init__()
        self.margin = margin
        self.eps = 1e-6

    def forward(self, anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor) -> torch.Tensor:
        n_rows = anchor.shape[0]
        n_cols = anchor.numel() // max(n_rows, 1)
        losses = torch.empty(n_rows, device=anchor.device, dtype=torch.float32)
        out = torch.empty((), device=anchor.device, dtype=anchor.dtype)
        row_loss_kernel[(n_rows,)](
            losses, anchor, positive, negative, n_cols, self.margin, self.eps, BLOCK=2048, num_warps=8
        )
        mean_kernel[(1,)](out, losses, n_rows, BLOCK=1024, num_warps=4)
        return out
