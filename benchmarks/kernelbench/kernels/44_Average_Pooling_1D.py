"""AvgPool1d (count_include_pad, as PyTorch's default): one program per (batch, channel) row and
BLOCK outputs, the window unrolled.

The KernelBench input (64, 128, 65536) has 8192 rows; with kernel 8, stride 1 and padding 4 each
output row is 65,537 long. Output o is the sum of x[o * stride - padding + j] for j < kernel_size,
positions in the padding counting as 0, divided by kernel_size (padding included in the count;
without ceil_mode no window reaches past the padding). The settings are compile-time constants,
so the window unrolls into kernel_size masked loads of BLOCK consecutive values (for stride 1); the
overlapping windows hit L1, so DRAM traffic is about one read and one write. Sums are fp32.
BLOCK = 1024 gives 8192 x 65 = 532,480 programs.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def avg_pool1d_kernel(
    y_ptr, x_ptr, length, out_length, n_out_blocks,
    KERNEL_SIZE: tl.constexpr, STRIDE: tl.constexpr, PADDING: tl.constexpr, BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    row = (pid // n_out_blocks).to(tl.int64)
    outs = (pid % n_out_blocks) * BLOCK + tl.arange(0, BLOCK)
    out_mask = outs < out_length
    x_row = x_ptr + row * length
    total = tl.zeros((BLOCK,), tl.float32)
    for j in tl.static_range(KERNEL_SIZE):
        pos = outs * STRIDE - PADDING + j
        mask = out_mask & (pos >= 0) & (pos < length)
        total += tl.load(x_row + pos, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * out_length + outs, total / KERNEL_SIZE, mask=out_mask)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int = 1, padding: int = 0) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        block = 1024
        length = x.shape[-1]
        out_length = (length + 2 * self.padding - self.kernel_size) // self.stride + 1
        y = torch.empty(x.shape[:-1] + (out_length,), device=x.device, dtype=x.dtype)
        n_out_blocks = triton.cdiv(out_length, block)
        avg_pool1d_kernel[(x.numel() // length * n_out_blocks,)](
            y, x, length, out_length, n_out_blocks,
            KERNEL_SIZE=self.kernel_size, STRIDE=self.stride, PADDING=self.padding, BLOCK=block, num_warps=4,
        )
        return y
