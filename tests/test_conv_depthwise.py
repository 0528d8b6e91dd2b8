"""The depthwise convolution's direct stencil (`conv.depthwise`, offline/moves/conv_depthwise.py): every
convolution whose output channels each read one input channel (1-, 2- and 3-D, strided, padded or not, dilated,
two output channels an input channel, an input of another layout), at tiles cut to the plane, as aten.convolution;
offered first where it applies and skipped with why where not; a move file through the verifier."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from kernelopt.harness.guards import check_kernel_source
from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.offline.moves import conv_depthwise, structural_moves
from kernelopt.offline.tuner import with_config
from tests.test_conv import CONV2D, _helper, aten_case

PROBLEM = Path(__file__).parent / "data" / "moves" / "conv_depthwise.py"
# (input shape, weight shape, bias, stride, padding, dilation, groups)
CASES = {
    "1d strided dilated": ((2, 3, 29), (3, 1, 3), True, (2,), (1,), (2,), 3),
    "2d asymmetric kernel": ((2, 4, 9, 13), (4, 1, 3, 5), False, (1, 1), (0, 2), (1, 1), 4),
    "2d two outputs a channel": ((1, 3, 7, 10), (6, 1, 3, 3), True, (2, 1), (1, 1), (1, 2), 3),
    "3d strided": ((1, 2, 5, 6, 7), (2, 1, 3, 3, 3), True, (2, 1, 2), (1, 1, 0), (1, 1, 1), 2),
    # no padding (KernelBench's 82-85): the loads are masked by the tile's edge alone
    "2d unpadded strided dilated": ((2, 3, 11, 14), (3, 1, 3, 3), False, (1, 2), (0, 0), (2, 1), 3),
    "1d unpadded long kernel": ((1, 2, 40), (4, 1, 9), True, (1,), (0,), (1,), 2),
}


@pytest.mark.parametrize("tile", [(8, 64, 4), (1, 512, 4), (2, 4, 1)])
@pytest.mark.parametrize("name", list(CASES))
def test_the_stencil_computes_atens_convolution(name: str, tile: tuple[int, int, int]) -> None:
    shape, weight_shape, has_bias, stride, padding, dilation, groups = CASES[name]
    args, want = aten_case(name, (shape, weight_shape, has_bias, stride, padding, dilation, False, (0,) * len(stride),
                                  groups))
    x, weight, bias = args[:3]
    conv = _helper(with_config(conv_depthwise.HELPER, dict(zip(conv_depthwise.KEYS, tile, strict=True))))
    got = conv["conv_triton"](x, weight, bias, None, stride, padding, dilation, False, (0,) * len(stride), groups)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    if len(shape) == 4:  # an input of another layout, into an output of another layout
        out = torch.empty_like(want, memory_format=torch.channels_last)
        conv["conv_triton"](x.to(memory_format=torch.channels_last), weight, bias, out, stride, padding, dilation,
                            False, (0, 0), groups)
        torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)


def test_it_alone_is_offered_where_the_helper_hands_the_convolution_to_it_and_skipped_with_why_elsewhere(
        tmp_path: Path) -> None:
    # 2 outputs a group of one input channel: the implicit GEMM's helper itself runs the stencil (at its own tile),
    # so its four templates would time the same kernel again; each says so
    moves = structural_moves(PROBLEM)
    assert [m.name for m in moves.instances] == ["conv.depthwise"]
    depthwise = moves.instances[0]
    assert [tuple(c.values()) for c in depthwise.grid] == list(conv_depthwise.TILES)
    assert set(depthwise.cures) >= {"memory", "compute"} and check_kernel_source(depthwise.source) == []
    assert "hands this convolution to the depthwise stencil" in {s.name: s.why for s in moves.skipped}["conv.split_f16"]
    # 16 outputs a group: the implicit GEMM fills its least tile, so its templates are measured beside the stencil
    wide = tmp_path / "conv_depthwise_16.py"
    wide.write_text(PROBLEM.read_text().replace("2 * channels", "16 * channels"))
    # (and the direct kernel, which the helper takes at up to 32 outputs a group, after the stencils)
    assert [m.name for m in structural_moves(wide).instances][:4] == ["conv.depthwise", "conv.direct",
                                                                      "conv.implicit_gemm", "conv.split_f16"]
    grouped = structural_moves(CONV2D)  # 4 input channels in 2 groups
    assert "conv.depthwise" not in [m.name for m in grouped.instances]
    assert "4 input channels in 2 group(s)" in {s.name: s.why for s in grouped.skipped}["conv.depthwise"]
    family = grouped.family
    assert family is not None
    transposed = replace(family, scalars=(*family.scalars[:6], True, *family.scalars[7:]))
    assert "transposed" in (conv_depthwise.applies(transposed) or "")


def test_the_stencil_takes_64_bit_offsets_where_a_sample_is_wide() -> None:
    # WIDE (an offset within a sample past 2**31, as a channels-last sample of 2**31 values has) on a small case
    shape, weight_shape, has_bias, stride, padding, dilation, groups = CASES["3d strided"]
    torch.manual_seed(3)
    x, weight, bias = torch.randn(shape), torch.randn(weight_shape), torch.randn(weight_shape[0])
    want = torch.ops.aten.convolution(x, weight, bias, list(stride), list(padding), list(dilation), False,
                                      [0, 0, 0], groups)
    assert "WIDE=_wide(x, out)" in conv_depthwise.HELPER
    conv = _helper(conv_depthwise.HELPER.replace("WIDE=_wide(x, out)", "WIDE=True"))
    got = conv["conv_triton"](x, weight, bias, None, stride, padding, dilation, False, (0, 0, 0), groups)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_the_move_passes_the_verifier(tmp_path: Path) -> None:
    depthwise = {m.name: m for m in structural_moves(PROBLEM).instances}["conv.depthwise"]
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(depthwise.source, {"DW_BLOCK_H": 4, "DW_BLOCK_W": 8, "num_warps": 1}))
    verdict = Verifier(PROBLEM, tmp_path / "harness", HarnessSettings.detect(seeds=1, time_compile=False)).verify(
        kernel, time=False)
    assert verdict.accepted, verdict.reason
