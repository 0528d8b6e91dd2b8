"""The convolution on fp16 parts split once (`conv.split_f16`, offline/moves/conv_split.py): every kind of
convolution the template takes, as accurate as fp32 against float64 where one sample and one output channel lie
far from the others in magnitude, the move's file through the verifier with its products measured, offered for
fp32 only."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernelopt.harness.guards import check_kernel_source
from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.offline.moves import conv_split, structural_moves
from kernelopt.offline.moves.conv import tiles
from kernelopt.offline.tuner import kind_of, knob_values, with_config
from tests.test_conv import CASES, CONV2D, _case, _helper

SMALL = {"CONV_BLOCK_M": 16, "CONV_BLOCK_N": 16, "CONV_BLOCK_K": 16}


def _split_conv(small: bool = True, channels_last: int = 1) -> object:
    source = with_config(conv_split.helper(), {"CONV_CHANNELS_LAST": channels_last})
    return _helper(with_config(source, SMALL) if small else source)["conv_triton"]


def _error(got: torch.Tensor, args: list[object]) -> float:
    x, weight, bias = (a.double() if isinstance(a, torch.Tensor) else a for a in args[:3])
    exact = torch.ops.aten.convolution(x, weight, bias, *(list(a) if isinstance(a, tuple) else a for a in args[3:]))
    return float((got.double() - exact).abs().max())


@pytest.mark.parametrize("channels_last", [1, 0])
@pytest.mark.parametrize("name", list(CASES))
def test_the_split_convolution_computes_atens_convolution_at_fp32s_accuracy(name: str, channels_last: int) -> None:
    # the input's parts channels last (each position's channels contiguous) or as the input lies
    args, want = _case(name)
    got = _split_conv(channels_last=channels_last)(*args[:3], None, *args[3:])
    assert got.shape == want.shape and got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    # within a few times PyTorch's own fp32 error from float64 (one fp16 product of the same tiles: ~1e-3 off)
    assert _error(got, args) <= 4 * _error(want, args) + 1e-6


@pytest.mark.parametrize("name", ["conv2d grouped", "transposed 3d"])
def test_an_input_already_channels_last_is_split_as_it_lies(name: str) -> None:
    # an NCHW input's parts are written channels last by the split itself (split_cl_kernel); one laid out channels
    # last already is split in its own order (split_kernel), the parts' strides the input's
    args, want = _case(name)
    x = args[0].movedim(1, -1).contiguous().movedim(-1, 1)
    assert not x.is_contiguous()
    got = _split_conv()(x, *args[1:3], None, *args[3:])
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert "split_cl_kernel" in conv_split.helper() and "_split_channels_last(x)" in conv_split.helper()


def _regs_conv() -> object:  # conv.split_f16_regs' helper: the input split in registers, the weight once
    return _helper(with_config(conv_split.regs_helper(), SMALL))["conv_triton"]


@pytest.mark.parametrize("split", ["once", "in_registers"])
def test_each_sample_and_output_channel_keeps_its_own_scale(split: str) -> None:
    # a sample 2^40 larger than the other, an output channel 2^-30 smaller and one 2^30 larger than the rest: one
    # scale for the whole input or weight would leave the small ones' parts below fp16's smallest normal (lost)
    # and a product of the two inverses alone would overflow fp32
    args, _ = _case("conv2d grouped")
    x, weight = args[0].clone(), args[1].clone()
    x[1] *= 2.0 ** 40
    weight[0] *= 2.0 ** -30
    weight[3] *= 2.0 ** 30
    args = [x, weight, *args[2:]]
    want = torch.ops.aten.convolution(x, weight, None, *(list(a) if isinstance(a, tuple) else a for a in args[3:]))
    got = (_split_conv() if split == "once" else _regs_conv())(x, weight, None, None, *args[3:])
    assert torch.isfinite(got).all()
    for sample in range(2):
        for channel in range(weight.shape[0]):
            part, exact = got[sample, channel], want[sample, channel]
            assert float((part - exact).abs().max()) <= 1e-5 * float(exact.abs().max()), (sample, channel)


def test_the_move_passes_the_verifier_with_its_products_measured(tmp_path: Path) -> None:
    instance = {m.name: m for m in structural_moves(CONV2D).instances}["conv.split_f16"]
    assert "def __init__(self, in_channels, out_channels, kernel_size, groups=1, bias=False):" in instance.source
    family = structural_moves(CONV2D).family
    cut = tiles(conv_split.TILES, family)
    assert family is not None and instance.grid == (*({**t, "CONV_CHANNELS_LAST": 1} for t in cut),
                                                    *({**t, "CONV_CHANNELS_LAST": 0} for t in cut[:2]))
    # its knobs are the product's tile and launch and the parts' layout (a switch no sweep varies): the split
    # passes' blocks are no knob
    plain = {m.name: m for m in structural_moves(CONV2D).instances}["conv.implicit_gemm"]
    assert knob_values(instance.source) == {**knob_values(plain.source), "CONV_CHANNELS_LAST": 1}
    assert kind_of("CONV_CHANNELS_LAST") == "switch"
    assert check_kernel_source(instance.source) == []
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(instance.source, {**instance.grid[0], **SMALL}))
    verdict = Verifier(CONV2D, tmp_path / "harness", HarnessSettings.detect(seeds=1, time_compile=False)).verify(
        kernel, time=False)
    assert verdict.accepted, verdict.reason
    assert "low-precision products on fp32, their outputs measured at" in verdict.reason


def test_a_dropped_remainder_is_refused_by_the_verifier(tmp_path: Path) -> None:
    # the same file with one of the three products left out (hi*hi and hi*lo only): TF32's accuracy, no chain
    instance = {m.name: m for m in structural_moves(CONV2D).instances}["conv.split_f16"]
    broken = instance.source.replace("        step = tl.dot(a_lo, b)\n        step = tl.dot(a, b_lo, step)\n",
                                     "        step = tl.dot(a, b_lo)\n", 1)
    assert broken != instance.source
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(broken, {**instance.grid[0], **SMALL}))
    verdict = Verifier(CONV2D, tmp_path / "harness", HarnessSettings.detect(seeds=1, time_compile=False)).verify(
        kernel, time=False)
    assert not verdict.accepted and "outside a chain of 3" in verdict.reason


def test_only_fp32_takes_it_and_the_helper_it_edits_is_checked(tmp_path: Path) -> None:
    problem = tmp_path / "conv_half.py"
    problem.write_text(CONV2D.read_text().replace("torch.rand(batch_size, in_channels, height, width)",
                                                  "torch.rand(batch_size, in_channels, height, width).half()")
                       .replace("groups=groups, bias=bias)", "groups=groups, bias=bias).half()"))
    moves = structural_moves(problem)
    assert not {"conv.split_f16", "conv.split_tf32", "conv.split_f16_regs"} & {m.name for m in moves.instances}
    skipped = {s.name: s.why for s in moves.skipped}
    assert all("float16" in skipped[name] for name in ("conv.split_f16", "conv.split_tf32", "conv.split_f16_regs"))
    with pytest.raises(AssertionError, match="the convolution helper changed"):
        conv_split._replaced("no such text", (("a = tl.load(x_ptr", "b"),))


LEVEL2_CONV = "1_Conv2D_ReLU_BiasAdd"  # a recorded compiler seed: the seed's convolution, then Inductor's epilogue


def test_a_seeds_convolution_is_rewritten_on_split_parts_and_still_computes_the_reference(tmp_path: Path) -> None:
    from test_seed_translate import _run_both, problem_path, seed_text, shrunk_problem

    seed = seed_text("max_autotune_triton", LEVEL2_CONV)
    moves = structural_moves(problem_path(LEVEL2_CONV), 132, seed)
    rewrite = {m.name: m for m in moves.instances}["dot.conv_split_f16"]
    assert rewrite.source == conv_split.rewrite(seed) and rewrite.cures == ("compute", "memory", "other")
    assert rewrite.grid[:2] == ({}, {"CONV_CHANNELS_LAST": 0})
    assert [tuple(c.values()) for c in rewrite.grid[2:]] == list(conv_split.TILES)
    assert "dot.conv_split_f16 and dot.conv_split_tf32 apply" in {s.name: s.why for s in moves.skipped}["dot.f16x3"]
    assert check_kernel_source(rewrite.source) == []
    problem = shrunk_problem(problem_path(LEVEL2_CONV), tmp_path / f"{LEVEL2_CONV}.py")
    # as the seed left it, and after dot.tf32x3 gave its product three TF32 products: the same split either way
    tf32x3 = {m.name: m for m in moves.instances}["dot.tf32x3"].source
    assert "input_precision='tf32x3'" in tf32x3 and conv_split.rewrite(tf32x3) == rewrite.source
    kernel = tmp_path / "kernel.py"
    for layout in rewrite.grid[:2]:  # the input's parts channels last, then as the input lies
        kernel.write_text(with_config(rewrite.source, {**SMALL, **layout}))
        expected, got = _run_both(problem, kernel)
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    # (not through the verifier: the recorded seed reads one size for the equal height and width, which the
    # verifier's derived cases set apart; the family's template above goes through it)


def test_a_convolution_split_in_registers_or_a_family_template_takes_no_seed_rewrite() -> None:
    from test_seed_translate import problem_path, seed_text

    from kernelopt.offline.moves.dot_f16x3 import to_f16x3

    seed = seed_text("max_autotune_triton", LEVEL2_CONV)
    in_registers = to_f16x3(seed)
    assert in_registers is not None and conv_split.rewrite(in_registers) is None
    moves = structural_moves(problem_path(LEVEL2_CONV), 132, in_registers)
    assert "not the seed's as written" in {s.name: s.why for s in moves.skipped}["dot.conv_split_f16"]
    assert conv_split.rewrite(conv_split.rewrite(seed) or "") is None  # its names are taken: split once only
    old = structural_moves(problem_path(LEVEL2_CONV), 132, seed, capability="7.5")
    assert "no tensor-core products" in {s.name: s.why for s in old.skipped}["dot.conv_split_f16"]
    family = {m.name: m for m in structural_moves(CONV2D).instances}
    assert "dot.conv_split_f16" not in [m.name for m in structural_moves(
        CONV2D, 132, family["conv.implicit_gemm"].source).instances]  # the conv family's own move does it


@pytest.mark.parametrize("split", ["once", "in_registers"])
def test_an_infinity_in_a_sample_leaves_its_other_outputs_exact_and_a_spike_costs_what_the_scale_says(
        split: str) -> None:
    # the sample's scale is taken over its finite values: an inf lies whole in its remainder and reaches only the
    # outputs whose window holds it (an inf in the scale made the sample's finite values zeros)
    conv = _split_conv() if split == "once" else _regs_conv()
    torch.manual_seed(5)
    x, weight = torch.randn(1, 2, 8, 8), torch.randn(3, 2, 3, 3)
    settings = ((1, 1), (1, 1), (1, 1), False, (0, 0), 1)
    x[0, 0, 0, 0] = float("inf")
    want = torch.ops.aten.convolution(x, weight, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    got = conv(x, weight, None, None, *settings)
    finite = torch.isfinite(want)
    assert bool((torch.isfinite(got) == finite).all()) and int((~finite).sum()) > 0
    torch.testing.assert_close(got[finite], want[finite], rtol=1e-5, atol=1e-5)
    # one value 2^20 above the rest: the sample's scale puts it in fp16's range, so an output whose window misses it
    # keeps the parts' rounding of 2^-38 of it (about 2^-18 here), not of its own window (the split's limit: a
    # spread past 2^14 in one sample errs more than fp32 on the outputs far from its largest value)
    x[0, 0, 0, 0] = 2.0 ** 20
    exact = torch.ops.aten.convolution(x.double(), weight.double(), None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    far = torch.zeros_like(want, dtype=torch.bool)
    far[..., 3:, 3:] = True
    error = float((conv(x, weight, None, None, *settings).double() - exact)[far].abs().max())
    assert 0 < error <= 2.0 ** 20 * 2.0 ** -38 * float(weight.abs().sum(dim=(1, 2, 3)).max())


def test_the_in_register_split_stays_for_products_beside_the_convolution() -> None:
    from test_seed_translate import seed_text

    conv = seed_text("max_autotune_triton", LEVEL2_CONV)
    bmm = seed_text("max_autotune_triton", "3_Batched_matrix_multiplication")
    assert not conv_split.products_beside(conv) and conv_split.products_beside(bmm)


@pytest.mark.parametrize("block_k", [16, 1])
@pytest.mark.parametrize("name", list(CASES))
def test_the_tf32_split_convolution_computes_atens_convolution(name: str, block_k: int) -> None:
    # conv.split_tf32's helper: the interpreter's TF32 products are exact fp32, so this checks that the input tile's
    # parts add up to it, that the weight's K-major parts are read where the template's layout had it (several kernel
    # offsets a step at 16, one channel a step at 1) and that the remainders' product is the only term left out
    args, want = _case(name)
    conv = _helper(with_config(conv_split.tf32_helper(), {**SMALL, "CONV_BLOCK_K": block_k}))["conv_triton"]
    got = conv(*args[:3], None, *args[3:])
    assert got.shape == want.shape and got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_the_tf32_split_move_is_offered_after_the_fp16_split_and_passes_the_verifier(tmp_path: Path) -> None:
    moves = {m.name: m for m in structural_moves(CONV2D).instances}
    names = list(moves)
    split = names.index("conv.split_tf32")
    assert names.index("conv.split_f16") + 1 == split < names.index("conv.implicit_gemm_tf32x3")
    move = moves["conv.split_tf32"]
    assert check_kernel_source(move.source) == [] and "compute" in move.cures
    assert "(2, 1), (1, 1), (1, 2), False, (0, 0), 2)" in move.source  # the reference's own settings
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(move.source, {**move.grid[0], **SMALL}))
    settings = HarnessSettings.detect(seeds=1, time_compile=False)
    verdict = Verifier(CONV2D, tmp_path / "harness", settings).verify(kernel, time=False)
    assert verdict.accepted, verdict.reason


def test_a_seeds_convolution_is_rewritten_on_tf32_parts_and_still_computes_the_reference(tmp_path: Path) -> None:
    from test_seed_translate import _run_both, problem_path, seed_text, shrunk_problem

    seed = seed_text("max_autotune_triton", LEVEL2_CONV)
    moves = {m.name: m for m in structural_moves(problem_path(LEVEL2_CONV), 132, seed).instances}
    rewrite = moves["dot.conv_split_tf32"]
    assert rewrite.source == conv_split.rewrite(seed, tf32=True) and "compute" in rewrite.cures
    assert rewrite.grid[0] == {} and len(rewrite.grid) > 1 and check_kernel_source(rewrite.source) == []
    assert "a_hi = ((a.to(tl.uint32" in rewrite.source and "CONV_CHANNELS_LAST" not in rewrite.source
    # after dot.tf32x3 gave the seed's product three TF32 products: the same rewrite
    assert conv_split.rewrite(moves["dot.tf32x3"].source, tf32=True) == rewrite.source
    assert conv_split.rewrite(rewrite.source, tf32=True) is None  # its names are taken: not rewritten twice
    problem = shrunk_problem(problem_path(LEVEL2_CONV), tmp_path / f"{LEVEL2_CONV}.py")
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(rewrite.source, SMALL))
    expected, got = _run_both(problem, kernel)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("block_k", [16, 1])
@pytest.mark.parametrize("name", list(CASES))
def test_the_register_split_convolution_computes_atens_convolution_at_fp32s_accuracy(name: str, block_k: int) -> None:
    # conv.split_f16_regs' helper: the gathered tile's rows scaled by their samples' powers of two and split into fp16
    # parts in registers (several kernel offsets a step at 16, one channel a step at 1), the weight's fp16 parts read
    # where split_f16 lays them out; the interpreter's fp16 products are exact, the split's three terms are not all
    args, want = _case(name)
    conv = _helper(with_config(conv_split.regs_helper(), {**SMALL, "CONV_BLOCK_K": block_k}))["conv_triton"]
    got = conv(*args[:3], None, *args[3:])
    assert got.shape == want.shape and got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_the_register_split_move_is_offered_after_the_tf32_split_and_passes_the_verifier(
        tmp_path: Path, settings: HarnessSettings) -> None:
    moves = {m.name: m for m in structural_moves(CONV2D).instances}
    names = list(moves)
    assert names.index("conv.split_tf32") + 1 == names.index("conv.split_f16_regs")
    move = moves["conv.split_f16_regs"]
    assert check_kernel_source(move.source) == [] and "memory" in move.cures and "CONV_CHANNELS_LAST" not in move.source
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(move.source, {**move.grid[0], **SMALL}))
    verdict = Verifier(CONV2D, tmp_path / "harness", settings).verify(kernel, time=False)
    assert verdict.accepted, verdict.reason
    assert "low-precision products on fp32, their outputs measured at" in verdict.reason
    # one of the three products left out: no chain of three, refused
    three = "step_sum = tl.dot(a_lo, b)\n        step_sum = tl.dot(a_hi, b_lo, step_sum)\n"
    assert three in move.source
    kernel.write_text(with_config(move.source.replace(three, "step_sum = tl.dot(a_hi, b_lo)\n"),
                                  {**move.grid[0], **SMALL}))
    verdict = Verifier(CONV2D, tmp_path / "harness2", settings).verify(kernel, time=False)
    assert not verdict.accepted and "outside a chain of 3" in verdict.reason
