"""AvgPool2d (count_include_pad, as PyTorch's default): one program per (batch, channel) plane and
BLOCK outputs of it, the window unrolled.

The KernelBench input (16, 64, 2048, 2048) has 1024 planes; with kernel 11 and stride 11 (stride
None means the kernel size) and no padding each output plane is 186 x 186. A program takes BLOCK =
1024 consecutive outputs of its plane (flattened, about five output rows), and sums the
kernel_size**2 window of each, positions in the padding counting as 0, dividing by kernel_size**2
(padding included in the count; without ceil_mode no window reaches past the padding). The
settings are compile-time constants, so the window unrolls into 121 masked loads; a load's values
lie `stride` apart, so each 32-byte sector fetched serves one or two of them, and neighbouring
programs re-fetch through L2. Sums are fp32. 1024 x 34 = 34,816 programs.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def avg_pool2d_kernel(
    y_ptr, x_ptr, height, width, out_height, out_width, n_out_blocks,
    KERNEL_SIZE: tl.constexpr, STRIDE: tl.constexpr, PADDING: tl.constexpr, BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    plane = (pid // n_out_blocks).to(tl.int64)
    outs = (pid % n_out_blocks) * BLOCK + tl.arange(0, BLOCK)
    out_mask = outs < out_height * out_width
    oh = outs // out_width
    ow = outs % out_width
    x_plane = x_ptr + plane * height * width
    total = tl.zeros((BLOCK,), tl.float32)
    for i in tl.static_range(KERNEL_SIZE):
        h = oh * STRIDE - PADDING + i
        row_ok = out_mask & (h >= 0) & (h < height)
        for j in tl.static_range(KERNEL_SIZE):
            w = ow * STRIDE - PADDING + j
            mask = row_ok & (w >= 0) & (w < width)
            total += tl.load(x_plane + h * width + w, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + plane * out_height * out_width + outs, total / (KERNEL_SIZE * KERNEL_SIZE), mask=out_mask)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int | None = None, padding: int = 0) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        block = 1024
        height, width = x.shape[-2], x.shape[-1]
        out_height = (height + 2 * self.padding - self.kernel_size) // self.stride + 1
        out_width = (width + 2 * self.padding - self.kernel_size) // self.stride + 1
        y = torch.empty(x.shape[:-2] + (out_height, out_width), device=x.device, dtype=x.dtype)
        n_out_blocks = triton.cdiv(out_height * out_width, block)
        avg_pool2d_kernel[(x.numel() // (height * width) * n_out_blocks,)](
            y, x, height, width, out_height, out_width, n_out_blocks,
            KERNEL_SIZE=self.kernel_size, STRIDE=self.stride, PADDING=self.padding, BLOCK=block, num_warps=4,
        )
        return y
