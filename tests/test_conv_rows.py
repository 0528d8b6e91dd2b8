"""The depthwise convolution's rolling-rows stencil (`conv.depthwise_rows`, offline/moves/conv_rows.py): 2-D
depthwise convolutions at unit stride and dilation along H (padded or not, strided and dilated along W, two output
channels an input channel, asymmetric kernels, other layouts), strips that do not divide the plane, as
aten.convolution; offered beside the tile stencil where it applies and skipped with why where not; a move file through
the verifier."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from kernelopt.harness.guards import check_kernel_source
from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.offline.moves import conv_rows, structural_moves
from kernelopt.offline.tuner import with_config
from tests.test_conv import _helper, aten_case

DEPTHWISE = Path(__file__).parent / "data" / "moves" / "conv_depthwise.py"  # dilation 2 along H
# (input shape, weight shape, bias, stride, padding, dilation, groups)
CASES = {
    "padded, strided and dilated along W": ((2, 3, 11, 19), (6, 1, 3, 5), True, (1, 2), (1, 2), (1, 2), 3),
    "unpadded 3 x 3 (82)": ((1, 4, 13, 21), (4, 1, 3, 3), False, (1, 1), (0, 0), (1, 1), 4),
    "asymmetric 3 x 7 (85)": ((1, 2, 9, 23), (2, 1, 3, 7), True, (1, 1), (0, 0), (1, 1), 2),
    "tall 5 x 2 kernel, padded past it": ((1, 2, 7, 6), (2, 1, 5, 2), False, (1, 1), (3, 1), (1, 1), 2),
}


def _conv(tile: tuple[int, int, int], kh: int, kw: int) -> dict:
    family = _family(kh, kw)
    text = conv_rows.helper(family)
    return _helper(with_config(text, dict(zip(conv_rows.KEYS, tile, strict=True))))


def _family(kh: int, kw: int):
    moves = structural_moves(DEPTHWISE)
    assert moves.family is not None
    scalars = list(moves.family.scalars)
    scalars[3], scalars[5] = [1, 1], [1, 1]
    return replace(moves.family, weight_shape=(6, 1, kh, kw), scalars=tuple(scalars))


@pytest.mark.parametrize("tile", [(4, 8, 1), (16, 512, 8), (3, 4, 2)])
@pytest.mark.parametrize("name", list(CASES))
def test_the_walk_computes_atens_convolution(name: str, tile: tuple[int, int, int]) -> None:
    shape, weight_shape, has_bias, stride, padding, dilation, groups = CASES[name]
    args, want = aten_case(name, (shape, weight_shape, has_bias, stride, padding, dilation, False, (0,) * len(stride),
                                  groups))
    x, weight, bias = args[:3]
    conv = _conv(tile, *weight_shape[2:])
    got = conv["conv_triton"](x, weight, bias, None, stride, padding, dilation, False, (0, 0), groups)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    # an input of another layout, into an output of another layout
    out = torch.empty_like(want, memory_format=torch.channels_last)
    conv["conv_triton"](x.to(memory_format=torch.channels_last), weight, bias, out, stride, padding, dilation, False,
                        (0, 0), groups)
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)


def test_it_is_offered_beside_the_tile_stencil_where_rows_feed_consecutive_outputs_and_skipped_with_why_elsewhere(
        tmp_path: Path) -> None:
    unit = tmp_path / "conv_depthwise_unit.py"
    unit.write_text(DEPTHWISE.read_text().replace("dilation=(2, 1)", "dilation=(1, 1)"))
    moves = structural_moves(unit)
    assert [m.name for m in moves.instances] == ["conv.depthwise", "conv.depthwise_rows"]
    rows = moves.instances[1]
    assert [tuple(c.values()) for c in rows.grid] == list(conv_rows.TILES)
    assert check_kernel_source(rows.source) == [] and "s2 = tl.zeros([BLOCK_W], tl.float32)" in rows.source
    assert {"memory", "compute"} <= set(rows.cures)  # the judger's diagnosis of the tile stencil puts it first
    # dilation 2 along H (the data problem), a stride along H, a kernel of one row, a 3-D or a wide kernel: why not
    assert "dilation 2 along H" in {s.name: s.why for s in structural_moves(DEPTHWISE).skipped}["conv.depthwise_rows"]
    family = moves.family
    assert family is not None
    strided = replace(family, scalars=(*family.scalars[:3], [2, 1], *family.scalars[4:]))
    assert "stride 2" in (conv_rows.rows_applies(strided) or "")
    assert "one row" in (conv_rows.rows_applies(replace(family, weight_shape=(6, 1, 1, 5))) or "")
    assert "3-D" in (conv_rows.rows_applies(replace(family, weight_shape=(6, 1, 3, 3, 3))) or "")
    assert "registers" in (conv_rows.rows_applies(replace(family, weight_shape=(6, 1, 13, 13))) or "")
    grouped = replace(family, scalars=(*family.scalars[:8], 1))
    assert "group(s)" in (conv_rows.rows_applies(grouped) or "")


def test_the_move_passes_the_verifier(tmp_path: Path) -> None:
    problem = tmp_path / "problem.py"
    problem.write_text(DEPTHWISE.read_text().replace("dilation=(2, 1)", "dilation=(1, 1)"))
    rows = {m.name: m for m in structural_moves(problem).instances}["conv.depthwise_rows"]
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(rows.source, {"DW_ROWS": 8, "DW_ROW_W": 16, "num_warps": 1}))  # both cut at the edge
    verdict = Verifier(problem, tmp_path / "harness", HarnessSettings.detect(seeds=1, time_compile=False)).verify(
        kernel, time=False)
    assert verdict.accepted, verdict.reason


def test_the_walk_takes_64_bit_offsets_where_a_sample_is_wide() -> None:
    # WIDE (an offset within a sample past 2**31, as a channels-last sample of 2**31 values has) on a small case
    shape, weight_shape, has_bias, stride, padding, dilation, groups = CASES["padded, strided and dilated along W"]
    torch.manual_seed(5)
    x, weight, bias = torch.randn(shape), torch.randn(weight_shape), torch.randn(weight_shape[0])
    want = torch.ops.aten.convolution(x, weight, bias, list(stride), list(padding), list(dilation), False, [0, 0],
                                      groups)
    text = conv_rows.helper(_family(*weight_shape[2:]))
    assert "WIDE=_wide(x, out)" in text
    conv = _helper(with_config(text.replace("WIDE=_wide(x, out)", "WIDE=True"),
                               {"DW_ROWS": 4, "DW_ROW_W": 8, "num_warps": 1}))
    got = conv["conv_triton"](x, weight, bias, None, stride, padding, dilation, False, (0, 0), groups)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
