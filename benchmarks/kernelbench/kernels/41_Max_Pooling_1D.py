"""MaxPool1d: one program per (batch, channel) row and BLOCK outputs, the window unrolled.

The KernelBench input (64, 192, 65536) has 12,288 rows; each output o is the max of
x[o * stride - padding + j * dilation] for j < kernel_size, positions outside the row counting as
-inf (PyTorch's implicit padding for max pooling). kernel_size, stride, padding and dilation are
compile-time constants, so the window loop unrolls into kernel_size masked loads of BLOCK
contiguous values (for stride 1); the overlapping windows hit L1, so DRAM traffic is about one
read and one write. BLOCK = 1024 gives 12,288 x 64 = 786,432 programs.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def max_pool1d_kernel(
    y_ptr, x_ptr, length, out_length, n_out_blocks,
    KERNEL_SIZE: tl.constexpr, STRIDE: tl.constexpr, PADDING: tl.constexpr, DILATION: tl.constexpr,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    row = (pid // n_out_blocks).to(tl.int64)
    outs = (pid % n_out_blocks) * BLOCK + tl.arange(0, BLOCK)
    out_mask = outs < out_length
    x_row = x_ptr + row * length
    best = tl.full((BLOCK,), float("-inf"), tl.float32)
    for j in tl.static_range(KERNEL_SIZE):
        pos = outs * STRIDE - PADDING + j * DILATION
        mask = out_mask & (pos >= 0) & (pos < length)
        x = tl.load(x_row + pos, mask=mask, other=float("-inf")).to(tl.float32)
        best = tl.maximum(best, x)
    tl.store(y_ptr + row * out_length + outs, best, mask=out_mask)


class ModelNew(nn.Module):
    def __init__(
        self, kernel_size: int, stride: int | None = None, padding: int = 0, dilation: int = 1,
        return_indices: bool = False,
    ) -> None:
        super().__init__()
        if return_indices:
            raise ValueError("this kernel returns the pooled values only; construct it with return_indices=False")
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding
        self.dilation = dilation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        block = 1024
        length = x.shape[-1]
        span = self.dilation * (self.kernel_size - 1) + 1
        out_length = (length + 2 * self.padding - span) // self.stride + 1
        y = torch.empty(x.shape[:-1] + (out_length,), device=x.device, dtype=x.dtype)
        n_out_blocks = triton.cdiv(out_length, block)
        max_pool1d_kernel[(x.numel() // length * n_out_blocks,)](
            y, x, length, out_length, n_out_blocks,
            KERNEL_SIZE=self.kernel_size, STRIDE=self.stride, PADDING=self.padding, DILATION=self.dilation,
            BLOCK=block, num_warps=4,
        )
        return y
