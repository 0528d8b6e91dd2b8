"""Every convolution kernel's 64-bit offsets (WIDE) are taken where a tensor's strides reach past 2**31, not where its
count of elements does: an input that is a view of a larger buffer, or an output with padded strides, holds few
elements and still has offsets an int32 cannot hold. The seed helper's implicit GEMM, its direct kernels (plain and
transposed) and its depthwise stencil, and the `conv.depthwise_rows` walk, each launched on meta tensors (nothing is
allocated or run) with its launch's WIDE recorded."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from test_conv import _helper
from test_conv_rows import _family

from kernelopt.offline.moves import conv_rows
from kernelopt.seed.conv import CONV_HELPER

WEIGHT_LAYOUT = "conv_weight_kernel"
# name: (helper, kernel, x shape, weight shape, stride, transposed, groups)
CASES = {
    "implicit GEMM": ("seed", "conv_igemm_kernel", (2, 8, 6, 6), (16, 8, 3, 3), (1, 1), False, 1),
    "direct": ("seed", "conv_direct_kernel", (2, 3, 6, 6), (16, 3, 3, 3), (1, 1), False, 1),
    "transposed direct": ("seed", "conv_direct_t_kernel", (2, 3, 4, 5), (3, 8, 3, 3), (2, 2), True, 1),
    "depthwise stencil": ("seed", "conv_dw_kernel", (2, 4, 6, 6), (4, 1, 3, 3), (1, 1), False, 4),
    "rows walk": ("rows", "conv_dw_rows_kernel", (2, 6, 6, 6), (6, 1, 3, 3), (1, 1), False, 6),
}


def _settings(name: str) -> tuple[torch.Tensor, tuple[Any, ...]]:
    """The case's weight (meta) and its convolution's settings in aten.convolution's order after the bias."""
    _, _, _, weight_shape, stride, transposed, groups = CASES[name]
    return torch.empty(weight_shape, device="meta"), (stride, (1, 1), (1, 1), transposed,
                                                      (1, 1) if transposed else (0, 0), groups)


def _launches(name: str, x: torch.Tensor, out: torch.Tensor | None) -> list[dict[str, Any]]:
    """The case's conv_triton on `x`, into `out` (None: allocated by the helper): the keyword arguments of its
    kernel's launches, the kernels stood in for and never run."""
    helper, kernel, _, weight_shape, *_ = CASES[name]
    space = _helper(CONV_HELPER if helper == "seed" else conv_rows.helper(_family(*weight_shape[2:])))
    launches: list[dict[str, Any]] = []

    class StandIn:
        def __init__(self, record: bool) -> None:
            self.record = record

        def __getitem__(self, grid: Any) -> Any:
            return lambda *args, **kwargs: launches.append(kwargs) if self.record else None

    space[kernel] = StandIn(record=True)
    if WEIGHT_LAYOUT in space:
        space[WEIGHT_LAYOUT] = StandIn(record=False)
    weight, settings = _settings(name)
    space["conv_triton"](x, weight, None, out, *settings)
    return launches


@pytest.mark.parametrize("name", list(CASES))
def test_64_bit_offsets_follow_the_strides_reach_not_the_count_of_elements(name: str) -> None:
    shape = CASES[name][2]
    compact = torch.empty(shape, device="meta")
    [launch] = _launches(name, compact, None)
    assert launch["WIDE"] is False
    # the same few elements, each sample 2**31 apart (a view of a larger buffer): the second sample's offsets pass
    # what an int32 holds (a count of elements took them as 32-bit)
    spread = torch.empty_strided(shape, (2**31, *compact.stride()[1:]), device="meta")
    assert spread.numel() == compact.numel() < 2**31
    [launch] = _launches(name, spread, None)
    assert launch["WIDE"] is True
    # an output with padded strides: its channels 2**30 apart
    weight, settings = _settings(name)
    out = torch.ops.aten.convolution(compact, weight, None, *(list(v) if isinstance(v, tuple) else v
                                                              for v in settings))
    padded = torch.empty_strided(out.shape, (out.shape[1] * 2**30, 2**30, *out.stride()[2:]), device="meta")
    [launch] = _launches(name, compact, padded)
    assert launch["WIDE"] is True
    [launch] = _launches(name, compact, torch.empty(out.shape, device="meta"))
    assert launch["WIDE"] is False
