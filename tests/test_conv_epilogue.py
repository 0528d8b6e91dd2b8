"""fuse.conv_epilogue (offline/moves/conv_epilogue.py): a compiler seed's pointwise kernel computed where its
convolution stores, on the recorded seed of level 2's 1_Conv2D_ReLU_BiasAdd (the seed's convolution into a buffer,
then Inductor's kernel adding the conv's bias and the module's, with a ReLU between)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from test_seed_translate import _load, _run_both, cpu_made_seed, problem_path, seed_text, shrunk_problem

from kernelopt.harness.guards import check_kernel_source
from kernelopt.offline.moves import conv_epilogue, conv_split, structural_moves
from kernelopt.offline.tuner import with_config

NAME = "1_Conv2D_ReLU_BiasAdd"
POINTWISE = "triton_poi_fused_add_convolution_relu_threshold_backward_0"
SMALL = {"CONV_BLOCK_M": 16, "CONV_BLOCK_N": 16, "CONV_BLOCK_K": 16}


@pytest.fixture(scope="module")
def seed() -> str:
    return seed_text("max_autotune_triton", NAME)


class _NotLaunched:
    def __init__(self, name: str) -> None:
        self.name = name

    def __getitem__(self, grid: object) -> object:
        raise AssertionError(f"{self.name} was launched: it is not fused")


def outputs_without(problem: Path, kernel: Path, prefix: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The reference's output and the kernel file's, its own launches of the kernels named `prefix...` made to fail."""
    module = _load(kernel, f"fused_under_test_{kernel.stem}")
    for name in [n for n in vars(module) if n.startswith(prefix)]:
        setattr(module, name, _NotLaunched(name))
    torch.manual_seed(0)
    reference = _load(problem).Model(*_load(problem).get_init_inputs())
    torch.manual_seed(0)
    candidate = module.ModelNew(*_load(problem).get_init_inputs())
    torch.manual_seed(1)
    inputs = _load(problem).get_inputs()
    with torch.no_grad():
        return reference(*inputs), candidate(*inputs)


def _fused_outputs(problem: Path, kernel: Path) -> tuple[torch.Tensor, torch.Tensor]:
    return outputs_without(problem, kernel, POINTWISE)


def test_the_seeds_pointwise_kernel_runs_in_the_convolutions_store_and_computes_the_reference(
        seed: str, tmp_path: Path) -> None:
    moves = structural_moves(problem_path(NAME), 132, seed)
    move = {m.name: m for m in moves.instances}[conv_epilogue.NAME]
    assert move.cures[0] == "memory" and move.grid[0] == {} and check_kernel_source(move.source) == []
    assert "def conv_epilogue(" in move.source and "EPI=epi is not None" in move.source
    problem = shrunk_problem(problem_path(NAME), tmp_path / f"{NAME}.py")
    kernel = tmp_path / "fused.py"
    kernel.write_text(with_config(move.source, SMALL))
    expected, got = _fused_outputs(problem, kernel)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    # the seed as it was launches the pointwise kernel: the check above can fail
    kernel.write_text(with_config(seed, SMALL))
    with pytest.raises(AssertionError, match="not fused"):
        _fused_outputs(problem, kernel)
    # 3 input channels, where the helper would take its direct kernel (whose store knows no epilogue): fused, the
    # implicit GEMM takes it (the direct kernel's output was never written, its pointwise kernel never launched)
    rgb = tmp_path / "rgb.py"
    rgb.write_text(problem.read_text().replace("in_channels = 64", "in_channels = 3"))
    kernel.write_text(with_config(move.source, {**SMALL, "CONV_DIRECT_OUTPUTS": 128}))
    expected, got = _fused_outputs(rgb, kernel)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_the_split_rewrites_take_a_fused_convolution_and_the_fusion_takes_a_split_one(
        seed: str, tmp_path: Path) -> None:
    fused = conv_epilogue.rewrite(seed)
    split_after = conv_split.rewrite(fused)
    assert split_after is not None and conv_split.rewrite(fused, tf32=True) is not None
    assert conv_epilogue.NAME in {m.name for m in structural_moves(problem_path(NAME), 132,
                                                                   conv_split.rewrite(seed)).instances}
    problem = shrunk_problem(problem_path(NAME), tmp_path / f"{NAME}.py")
    kernel = tmp_path / "split_fused.py"
    kernel.write_text(with_config(split_after, SMALL))
    expected, got = _fused_outputs(problem, kernel)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_an_in_place_kernel_on_an_output_laid_out_channels_last_is_fused_at_the_buffers_own_offsets(
        numpy_libdevice: object, tmp_path: Path) -> None:
    # torch 2.13's CPU graph of a convolution then Mish twice (tests/data/conv/conv_mish.py): the convolution into
    # buf2 laid out channels last, `buf3 = buf2`, the first Mish in place on buf3 (in_out_ptr0, walked as it lies),
    # then a kernel reading buf3 into the contiguous output. Fused, the first Mish is the convolution's store, at
    # buf2's own offsets (epi_dense=False): read at contiguous offsets its values would land on other positions
    seed = cpu_made_seed("conv_mish")
    fused = conv_epilogue.rewrite(seed)
    assert "epi=(buf3, ), epic=(triton_poi_fused_mish_2_xnumel, ), epi_dense=False)" in fused
    assert check_kernel_source(fused) == []
    kernel = tmp_path / "fused.py"
    kernel.write_text(with_config(fused, SMALL))
    expected, got = _run_both(problem_path("conv_mish"), kernel)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    kernel.write_text(with_config(fused.replace("epi_dense=False)", "epi_dense=True)"), SMALL))
    expected, got = _run_both(problem_path("conv_mish"), kernel)
    assert not torch.allclose(got, expected, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize(("edit", "why"), [
    # the buffer read again after its pointwise kernel: its values are needed, so it must be written
    (("        return buf1\n", "        return buf1 + buf0.sum()\n"), "read again after its pointwise kernel"),
    # a reduction reads it (Inductor's triton_red_/triton_per_ kernels): only an elementwise epilogue is fused
    (("triton_poi_fused", "triton_red_fused"), "other than one launch of an Inductor pointwise kernel"),
    # the pointwise kernel reads the buffer through a value it computed (an offset Python cannot work out)
    (("    tmp1 = tl.load(in_ptr1 + (x2)", "    tmp1 = tl.load(in_ptr0 + (tl.abs(x2))"), "other than by one load"),
])
def test_a_convolution_whose_output_is_read_otherwise_keeps_its_pointwise_kernel_and_says_why(
        seed: str, edit: tuple[str, str], why: str) -> None:
    edited = seed.replace(*edit)
    assert edited != seed
    with pytest.raises(conv_epilogue.NotFused, match=why):
        conv_epilogue.rewrite(edited)
    skipped = {s.name: s.why for s in structural_moves(problem_path(NAME), 132, edited).skipped}
    assert why in skipped[conv_epilogue.NAME]


def test_a_fused_kernel_is_not_fused_again_and_a_kernel_without_a_convolution_hears_nothing(seed: str) -> None:
    fused = conv_epilogue.rewrite(seed)
    with pytest.raises(conv_epilogue.NotFused, match="already computes an epilogue"):
        conv_epilogue.rewrite(fused)
    softmax = seed_text("default", "23_Softmax")
    moves = structural_moves(problem_path("23_Softmax"), 132, softmax)
    assert conv_epilogue.NAME not in {m.name for m in moves.instances} | {s.name for s in moves.skipped}


def test_two_loads_of_one_element_are_fused_where_their_offsets_agree_at_run_time(numpy_libdevice: object,
                                                                                   seed: str, tmp_path: Path) -> None:
    # torch 2.13's CPU graph of a Conv3d, Mish and tanh (tests/data/conv/conv3d_mish_tanh.py): its in-place kernel
    # loads the buffer at two spellings of one offset, which the launch's sizes make one. Fused: both loads are the
    # tile's value, forward having checked the offsets agree (conv_loads.py), and the pointwise kernel never runs
    two = cpu_made_seed("conv3d_mish_tanh")
    fused = conv_epilogue.rewrite(two)
    assert "def conv_epilogue_offsets(" in fused and "all(len(conv_epilogue_offsets(" in fused
    assert check_kernel_source(fused) == []  # the offsets' arithmetic is on sizes, not torch's (the H100 refused it)
    kernel = tmp_path / "two_loads.py"
    kernel.write_text(with_config(fused, SMALL))
    expected, got = outputs_without(problem_path("conv3d_mish_tanh"), kernel, "triton_poi_fused_mish_tanh")
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    # a second load of a neighbour's value (level 2's 1 with its bias read from the buffer at the channel's index):
    # the offsets disagree at run time, so forward keeps the unfused pair, whose output is the seed's own (fused,
    # the neighbour's values would be the tile's own)
    neighbour = seed.replace("    tmp1 = tl.load(in_ptr1 + (x2)", "    tmp1 = tl.load(in_ptr0 + (x2)")
    assert neighbour != seed
    problem = shrunk_problem(problem_path(NAME), tmp_path / f"{NAME}.py")
    kernel.write_text(with_config(conv_epilogue.rewrite(neighbour), SMALL))
    _, unfused = outputs_without(problem, kernel, "no kernel")
    kernel.write_text(with_config(neighbour, SMALL))
    _, plain = outputs_without(problem, kernel, "no kernel")
    torch.testing.assert_close(unfused, plain)
