"""MaxPool2d: one program per (batch, channel) plane and BLOCK outputs of it, the window unrolled.

The KernelBench input (32, 64, 512, 512) has 2048 planes; with kernel 4, stride 1, padding 1 and
dilation 1 each output plane is 511 x 511. A program takes BLOCK = 1024 consecutive outputs of
its plane (flattened, so about two output rows), finds each output's row and column, and takes
the max over x[oh * stride - padding + i * dilation, ow * stride - padding + j * dilation] for
i, j < kernel_size, positions outside the plane counting as -inf (PyTorch's implicit padding for
max pooling). The pooling settings are compile-time constants, so the window unrolls into
kernel_size**2 masked loads, each of consecutive values for stride 1; the overlapping windows hit
L1, so DRAM traffic is about one read and one write. 2048 x 256 = 524,288 programs.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def max_pool2d_kernel(
    y_ptr, x_ptr, height, width, out_height, out_width, n_out_blocks,
    KERNEL_SIZE: tl.constexpr, STRIDE: tl.constexpr, PADDING: tl.constexpr, DILATION: tl.constexpr,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    plane = (pid // n_out_blocks).to(tl.int64)
    outs = (pid % n_out_blocks) * BLOCK + tl.arange(0, BLOCK)
    out_mask = outs < out_height * out_width
    oh = outs // out_width
    ow = outs % out_width
    x_plane = x_ptr + plane * height * width
    best = tl.full((BLOCK,), float("-inf"), tl.float32)
    for i in tl.static_range(KERNEL_SIZE):
        h = oh * STRIDE - PADDING + i * DILATION
        row_ok = out_mask & (h >= 0) & (h < height)
        for j in tl.static_range(KERNEL_SIZE):
            w = ow * STRIDE - PADDING + j * DILATION
            mask = row_ok & (w >= 0) & (w < width)
            x = tl.load(x_plane + h * width + w, mask=mask, other=float("-inf")).to(tl.float32)
            best = tl.maximum(best, x)
    tl.store(y_ptr + plane * out_height * out_width + outs, best, mask=out_mask)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int, dilation: int) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        block = 1024
        height, width = x.shape[-2], x.shape[-1]
        span = self.dilation * (self.kernel_size - 1) + 1
        out_height = (height + 2 * self.padding - span) // self.stride + 1
        out_width = (width + 2 * self.padding - span) // self.stride + 1
        y = torch.empty(x.shape[:-2] + (out_height, out_width), device=x.device, dtype=x.dtype)
        n_out_blocks = triton.cdiv(out_height * out_width, block)
        max_pool2d_kernel[(x.numel() // (height * width) * n_out_blocks,)](
            y, x, height, width, out_height, out_width, n_out_blocks,
            KERNEL_SIZE=self.kernel_size, STRIDE=self.stride, PADDING=self.padding, DILATION=self.dilation,
            BLOCK=block, num_warps=4,
        )
        return y
