"""AvgPool2d (count_include_pad, as PyTorch's default): one program per (batch, channel) plane and
BLOCK outputs of it, one window row per step.

The KernelBench input (16, 64, 2048, 2048) has 1024 planes; with kernel 11 and stride 11 (stride
None means the kernel size) and no padding each output plane is 186 x 186. A program takes BLOCK =
256 consecutive outputs of its plane (flattened, so one or two output rows) and, for each of the
kernel_size window rows, loads a (BLOCK, KERNEL_PAD) tile: the window row's kernel_size
consecutive values for every output (KERNEL_PAD = 16, the next power of two, lanes past the
window masked off), summing them in fp32. Positions in the padding count as 0 and the sum is
divided by kernel_size**2 (padding included in the count; without ceil_mode no window reaches
past the padding). A tile is 4096 values, 32 a thread with 4 warps; each window row of an output
is 44 contiguous bytes, so loads are fairly coalesced. 1024 x 136 = 139,264 programs; the input
(17 GB) is read once, the output is small.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def avg_pool2d_kernel(
    y_ptr, x_ptr, height, width, out_height, out_width, n_out_blocks,
    KERNEL_SIZE: tl.constexpr, KERNEL_PAD: tl.constexpr, STRIDE: tl.constexpr, PADDING: tl.constexpr,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    plane = (pid // n_out_blocks).to(tl.int64)
    outs = (pid % n_out_blocks) * BLOCK + tl.arange(0, BLOCK)
    out_mask = outs < out_height * out_width
    oh = outs // out_width
    ow = outs % out_width
    j = tl.arange(0, KERNEL_PAD)
    w = (ow * STRIDE - PADDING)[:, None] + j[None, :]
    col_ok = out_mask[:, None] & (j < KERNEL_SIZE)[None, :] & (w >= 0) & (w < width)
    x_plane = x_ptr + plane * height * width
    total = tl.zeros((BLOCK, KERNEL_PAD), tl.float32)
    for i in range(KERNEL_SIZE):
        h = oh * STRIDE - PADDING + i
        mask = col_ok & ((h >= 0) & (h < height))[:, None]
        total += tl.load(x_plane + h[:, None] * width + w, mask=mask, other=0.0).to(tl.float32)
    avg = tl.sum(total, axis=1) / (KERNEL_SIZE * KERNEL_SIZE)
    tl.store(y_ptr + plane * out_height * out_width + outs, avg, mask=out_mask)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int | None = None, padding: int = 0) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        block = 256
        height, width = x.shape[-2], x.shape[-1]
        out_height = (height + 2 * self.padding - self.kernel_size) // self.stride + 1
        out_width = (width + 2 * self.padding - self.kernel_size) // self.stride + 1
        y = torch.empty(x.shape[:-2] + (out_height, out_width), device=x.device, dtype=x.dtype)
        n_out_blocks = triton.cdiv(out_height * out_width, block)
        avg_pool2d_kernel[(x.numel() // (height * width) * n_out_blocks,)](
            y, x, height, width, out_height, out_width, n_out_blocks,
            KERNEL_SIZE=self.kernel_size, KERNEL_PAD=triton.next_power_of_2(self.kernel_size),
            STRIDE=self.stride, PADDING=self.padding, BLOCK=block, num_warps=4,
        )
        return y
