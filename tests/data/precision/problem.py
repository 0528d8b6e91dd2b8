"""A product that runs at TF32 under PyTorch's defaults, as a cuDNN convolution does on a GPU
(`torch.backends.cudnn.allow_tf32` is on unless turned off): each operand keeps 10 of fp32's 23
mantissa bits. With reduced precision off (as the verifier's yardstick is computed) it is exact fp32."""

import torch
import torch.nn as nn


def _tf32(t: torch.Tensor) -> torch.Tensor:
    return (t.contiguous().view(torch.int32) & -8192).view(torch.float32)


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        if torch.backends.cudnn.allow_tf32 and x.dtype == torch.float32:
            return _tf32(x) @ _tf32(w)
        return x @ w


def get_inputs():
    return [torch.randn(64, 256), torch.randn(256, 32)]


def get_init_inputs():
    return []
