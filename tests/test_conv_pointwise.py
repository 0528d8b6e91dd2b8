"""The 1 x 1 convolution as a product per sample (`conv.pointwise`, offline/moves/conv_pointwise.py): every 1 x 1
convolution at unit stride (1-, 2- and 3-D, grouped, dilated, with a bias or not, whole tiles and cut ones, an input
of another layout, 64-bit offsets) computes aten.convolution; the move and its fp32 twins are offered first where it
applies and skipped with why where not; its files pass the verifier."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from kernelopt.harness.guards import check_kernel_source
from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.offline.moves import conv_pointwise, structural_moves
from kernelopt.offline.tuner import with_config
from tests.test_conv import CONV2D, _helper, aten_case

PROBLEM = Path(__file__).parent / "data" / "moves" / "conv_pointwise.py"
NAMES = ["conv.pointwise", "conv.pointwise_split", "conv.pointwise_tf32x3", "conv.pointwise_f16x3"]
# (input shape, weight shape, bias, dilation, groups): stride 1 and no padding, as the move is offered
CASES = {
    "1d": ((2, 5, 37), (7, 5, 1), True, (1,), 1),
    "2d whole tiles": ((2, 16, 8, 8), (32, 16, 1, 1), False, (1, 1), 1),
    "2d grouped dilated": ((1, 6, 5, 7), (4, 3, 1, 1), True, (2, 3), 2),
    "3d": ((1, 3, 3, 4, 5), (17, 3, 1, 1, 1), True, (1, 1, 1), 1),
}


def _tile(co: int, p: int, c: int) -> dict[str, int]:
    return {"PW_BLOCK_CO": co, "PW_BLOCK_P": p, "PW_BLOCK_K": c, "num_warps": 4, "num_stages": 2}


@pytest.mark.parametrize("helper", ["ieee", "split"])
@pytest.mark.parametrize("tile", [(16, 16, 16), (32, 64, 16)])
@pytest.mark.parametrize("name", list(CASES))
def test_the_product_computes_atens_convolution(name: str, tile: tuple[int, int, int], helper: str) -> None:
    # the product at fp32 (ieee) and on TF32 parts (split: the interpreter's TF32 products are exact fp32, so this
    # checks the parts add up to each operand and the transposed product's offsets; the GPU test checks its accuracy)
    shape, weight_shape, has_bias, dilation, groups = CASES[name]
    zeros, ones = (0,) * len(dilation), (1,) * len(dilation)
    args, want = aten_case(name, (shape, weight_shape, has_bias, ones, zeros, dilation, False, zeros, groups))
    x, weight, bias = args[:3]
    conv = _helper(with_config(conv_pointwise.helper("float32", helper), _tile(*tile)))
    got = conv["conv_triton"](x, weight, bias, None, ones, zeros, dilation, False, zeros, groups)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    if len(shape) == 4:  # an input of another layout
        got = conv["conv_triton"](x.to(memory_format=torch.channels_last), weight, bias, None, ones, zeros, dilation,
                                  False, zeros, groups)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("precision", ["ieee", "split"])
def test_the_product_takes_64_bit_offsets_where_a_sample_is_wide(precision: str) -> None:
    helper = conv_pointwise.helper("float32", precision)
    args, want = aten_case("wide", ((2, 6, 5, 7), (4, 3, 1, 1), True, (1, 1), (0, 0), (1, 1), False, (0, 0), 2))
    marker = "WIDE=wide,"
    assert marker in helper
    conv = _helper(with_config(helper, _tile(16, 16, 16)).replace(marker, "WIDE=True,"))
    got = conv["conv_triton"](*args[:3], None, *args[3:])
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_the_weights_tf32_parts_add_up_to_it_and_the_first_keeps_ten_mantissa_bits() -> None:
    conv = _helper(conv_pointwise.SPLIT_HELPER)
    torch.manual_seed(0)
    w = torch.randn(37, 5) * torch.logspace(-20, 20, 37)[:, None]
    w[0, :3] = torch.tensor([0.0, -0.0, 1 + 2.0**-11 + 2.0**-12])  # the last rounds up to TF32's 1 + 2**-10
    hi, lo = conv["tf32_parts"](w)
    assert torch.equal(hi + lo, w)
    assert not (hi.view(torch.int32) & 0x1FFF).any()  # TF32: the low 13 mantissa bits are zero
    assert (lo.abs() <= hi.abs() * 2.0**-11).all()  # rounded to nearest, not truncated
    assert hi[0, 2] == 1 + 2.0**-10


def test_it_is_offered_first_for_a_1x1_convolution_and_skipped_with_why_elsewhere(tmp_path: Path) -> None:
    moves = structural_moves(PROBLEM)
    names = [m.name for m in moves.instances]
    assert names[:4] == NAMES and "conv.implicit_gemm" in names[4:]
    for move in moves.instances[:4]:
        assert check_kernel_source(move.source) == [] and "compute" in move.cures and "memory" in move.cures
        # each block cut to the convolution's own sizes (40 output channels, 24 input channels: 64 and 32 at most)
        assert all(c["PW_BLOCK_CO"] <= 64 and c["PW_BLOCK_K"] <= 32 for c in move.grid)
    assert 'input_precision="tf32x3"' in moves.instances[2].source
    assert "conv_pw_split_kernel[grid]" in moves.instances[1].source
    # a 3 x 3 kernel, a stride, a transposed convolution, a depthwise 1 x 1: each says why not
    grouped = structural_moves(CONV2D)
    assert not set(NAMES) & {m.name for m in grouped.instances}
    assert "a 3 x 3 kernel" in {s.name: s.why for s in grouped.skipped}["conv.pointwise"]
    family = structural_moves(PROBLEM).family
    assert family is not None
    strided = replace(family, scalars=(*family.scalars[:3], [2, 2], *family.scalars[4:]))
    assert "stride (2, 2)" in (conv_pointwise.applies(strided) or "")
    transposed = replace(family, scalars=(*family.scalars[:6], True, *family.scalars[7:]))
    assert "transposed" in (conv_pointwise.applies(transposed) or "")
    depthwise = tmp_path / "pointwise_depthwise.py"
    depthwise.write_text(PROBLEM.read_text().replace("padding=0, bias=bias)", "padding=0, bias=bias, groups=24)")
                         .replace("out_channels = 40", "out_channels = 24"))
    skipped = {s.name: s.why for s in structural_moves(depthwise).skipped}
    assert "reads one input channel" in skipped["conv.pointwise"]


@pytest.mark.parametrize("name", ["conv.pointwise", "conv.pointwise_split", "conv.pointwise_f16x3"])
def test_the_move_passes_the_verifier(name: str, tmp_path: Path) -> None:
    move = {m.name: m for m in structural_moves(PROBLEM).instances}[name]
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(move.source, _tile(32, 32, 16)))
    verdict = Verifier(PROBLEM, tmp_path / "harness", HarnessSettings.detect(seeds=1, time_compile=False)).verify(
        kernel, time=False)
    assert verdict.accepted, verdict.reason
