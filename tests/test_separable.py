"""The depthwise-separable family (`separable.fused`, offline/moves/separable.py): a depthwise convolution and the
1 x 1 convolution of its output read as one family, and only such a pair; the fused kernel (the intermediate never
written) and its fp16-split product through the verifier on a small problem (two middle channels an input channel,
strided, dilated and padded, both biases), at tiles cut to the row and to the channels."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from helpers import assert_computes_the_reference

from kernelopt.harness.guards import check_kernel_source
from kernelopt.harness.problem import import_file
from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.offline.moves import separable, structural_moves
from kernelopt.offline.moves.family import trace_family
from kernelopt.offline.tuner import with_config

ROOT = Path(__file__).resolve().parents[1]
PROBLEM = ROOT / "tests" / "data" / "moves" / "separable.py"
KB86 = ROOT / "benchmarks" / "kernelbench" / "families" / "86_conv_depthwise_separable_2D.py"


def test_a_depthwise_convolution_then_a_1x1_convolution_of_it_is_the_separable_family(tmp_path: Path) -> None:
    family = trace_family(import_file(KB86, "kernelopt_sep86"))
    assert family.name == "separable" and family.weight_shape == (64, 1, 3, 3)
    assert family.pointwise_shape == (128, 64, 1, 1)
    assert family.state == ("depthwise.weight", "", "pointwise.weight", "")
    small = trace_family(import_file(PROBLEM, "kernelopt_sep_small"))
    assert small.state == ("depthwise.weight", "depthwise.bias", "pointwise.weight", "pointwise.bias")
    # not a pair the template computes: a 3 x 3 second convolution, a strided 1 x 1, a grouped first, the 1 x 1 first
    text = PROBLEM.read_text()
    for name, edit in {"3x3 after": ("2 * channels, out_channels, 1,", "2 * channels, out_channels, 3,"),
                       "strided 1x1": ("out_channels, 1, bias=True", "out_channels, 1, stride=2, bias=True"),
                       "grouped first": ("groups=channels", "groups=1"),
                       "1x1 first": ("return self.pointwise(self.depthwise(x))",
                                     "return self.depthwise(self.pointwise2(x))")}.items():
        path = tmp_path / f"{name.replace(' ', '_')}.py"
        path.write_text(text.replace(*edit).replace(
            "        self.pointwise = ", "        self.pointwise2 = nn.Conv2d(channels, channels, 1)\n"
            "        self.pointwise = "))
        assert trace_family(import_file(path, f"kernelopt_sep_{len(name)}")).name == "other", name


@pytest.mark.parametrize("move", ["separable.fused", "separable.fused_f16x3"])
def test_the_fused_pair_passes_the_verifier(move: str, tmp_path: Path) -> None:
    moves = {m.name: m for m in structural_moves(PROBLEM).instances}
    assert list(moves) == ["separable.fused_f16x3", "separable.fused"]
    fused = moves[move]
    assert [tuple(c.values()) for c in fused.grid] == list(separable.TILES) and check_kernel_source(fused.source) == []
    assert {"memory", "compute"} <= set(fused.cures)
    # 37 columns at stride 2: 19 outputs a row, a tile of 16 and one cut to the row (32); 18 middle channels in K
    # steps of 16 (two) or one cut to them (32); 20 output channels in products of 16 (two) or one of 32
    # the tiles cut short through the verifier (every derived case); the ones cut to the row and the channels
    # against the reference at the problem's size (the verifier's derived cases cost 10 s more under the interpreter)
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(fused.source, {"SEP_BLOCK_M": 16, "SEP_BLOCK_N": 16, "SEP_BLOCK_K": 16,
                                                 "num_warps": 1}))
    verdict = Verifier(PROBLEM, tmp_path / "harness", HarnessSettings.detect(seeds=1, time_compile=False)).verify(
        kernel, time=False)
    assert verdict.accepted, verdict.reason
    kernel.write_text(with_config(fused.source, {"SEP_BLOCK_M": 64, "SEP_BLOCK_N": 32, "SEP_BLOCK_K": 64}))
    assert_computes_the_reference(PROBLEM, kernel, f"kernelopt_sep_{len(move)}")


def test_any_number_of_middle_channels_is_offered_and_16_bit_inputs_take_their_own_product() -> None:
    family = trace_family(import_file(KB86, "kernelopt_sep86_wide"))
    wide = separable.separable_moves(replace(family, weight_shape=(512, 1, 3, 3)), KB86.read_text())
    assert [m.name for m in wide[0]] == ["separable.two_pass", "separable.two_pass_pointwise",
                                         "separable.two_pass_f16x3", "separable.fused_f16x3", "separable.fused"]
    half, skipped = separable.separable_moves(replace(family, dtype="float16"), KB86.read_text())
    assert [m.name for m in half] == ["separable.two_pass", "separable.two_pass_pointwise", "separable.fused"]
    assert "float16" in skipped[0].why and "input_precision" not in half[1].source
    assert "tl.dot(a, b, acc, input_precision=\"ieee\")" in half[0].source  # the product left as the seed wrote it


UNDILATED = ("dilation=(2, 1)", "dilation=(1, 1)")


def test_the_two_pass_pair_passes_the_verifier_with_each_kernel_at_its_own_warps(tmp_path: Path) -> None:
    # The same small problem undilated along H (the rows stencil's condition), with six middle channels: 6 rows in
    # strips of 4 (the second cut short), 19 outputs a row at stride 2 along W. The GEMM's tile and warps leave the
    # stencil's strip and its DW_WARPS as they were.
    dilated = structural_moves(PROBLEM)
    pairs = ("separable.two_pass", "separable.two_pass_pointwise", "separable.two_pass_f16x3")
    assert not set(pairs) & {m.name for m in dilated.instances}
    assert all("dilation 2 along H" in next(s.why for s in dilated.skipped if s.name == name) for name in pairs)
    problem = tmp_path / "undilated.py"  # and of three input channels: 24 programs of the interpreter's stencil, not 72
    problem.write_text(PROBLEM.read_text().replace(*UNDILATED).replace("channels = 9", "channels = 3"))
    moves = {m.name: m for m in structural_moves(problem).instances}
    assert list(moves) == [*pairs, "separable.fused_f16x3", "separable.fused"]
    ieee, split = moves["separable.two_pass"], moves["separable.two_pass_f16x3"]
    assert "_fp16_parts" not in ieee.source and 'input_precision="ieee"' in ieee.source
    assert "_fp16_parts" in split.source and split.source.startswith('"""separable.two_pass_f16x3:')
    assert {"compute", "memory"} <= set(split.cures) and ieee.cures[0] == "memory"
    small = {"DW_ROWS": 4, "DW_ROW_W": 32, "DW_WARPS": 1, "CONV_BLOCK_M": 64, "CONV_BLOCK_N": 32, "CONV_BLOCK_K": 32,
             "num_warps": 2, "num_stages": 1}
    verifier = Verifier(problem, tmp_path / "harness", HarnessSettings.detect(seeds=1, time_compile=False))
    for move, products in ((ieee, "correct on"), (split, "low-precision products on fp32")):
        assert check_kernel_source(move.source) == []
        assert all(c["CONV_BLOCK_N"] == 32 for c in move.grid)  # cut to the 20 output channels
        text = with_config(move.source, small)
        assert "DW_WARPS = 1" in text and "BLOCK_W=block_w, num_warps=DW_WARPS," in text
        kernel = tmp_path / f"{move.name}.py"
        kernel.write_text(text)
        verdict = verifier.verify(kernel, time=False)
        assert verdict.accepted and products in verdict.reason, (move.name, verdict.reason)
    # the pair with its product per sample: the product's own tile beside the stencil's strip and warps
    pointwise = moves["separable.two_pass_pointwise"]
    assert check_kernel_source(pointwise.source) == [] and "conv_pw_kernel" in pointwise.source
    assert all(c["PW_BLOCK_CO"] <= 32 for c in pointwise.grid)  # cut to the 20 output channels
    kernel = tmp_path / "pointwise.py"
    kernel.write_text(with_config(pointwise.source, {"DW_ROWS": 4, "DW_ROW_W": 32, "DW_WARPS": 1, "PW_BLOCK_CO": 32,
                                                     "PW_BLOCK_P": 64, "PW_BLOCK_K": 16, "num_warps": 2}))
    verdict = verifier.verify(kernel, time=False)
    assert verdict.accepted and "correct on" in verdict.reason, verdict.reason
