"""fuse.conv_rows (offline/moves/conv_reduce.py): a compiler seed's reduction over its convolution's output channels
computed where the convolution stores, on torch 2.13's CPU graphs of two level-2 shapes (tests/data/conv/): a minimum
over the channels then two tanh, and a transposed convolution's softmax over the channels (written back in place for
a later kernel) then a bias and a sigmoid."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from test_conv_epilogue import outputs_without
from test_seed_translate import cpu_made_seed, problem_path

from kernelopt.harness.guards import check_kernel_source
from kernelopt.offline.moves import conv_epilogue, conv_reduce, conv_split, structural_moves
from kernelopt.offline.tuner import with_config
from kernelopt.seed.kernel_text import REWRITES

SMALL = {"CONV_BLOCK_M": 16, "CONV_BLOCK_N": 16, "CONV_BLOCK_K": 16}  # the interpreter reduces a tile value by value


def _outputs(problem: Path, kernel: Path, text: str) -> tuple[torch.Tensor, ...]:
    """The reference's output and the kernel text's (at SMALL), its own launches of reduction kernels made to fail."""
    kernel.write_text(with_config(text, SMALL))
    return outputs_without(problem, kernel, "triton_per_")


@pytest.mark.parametrize(("name", "rewrites"), [("conv_channel_min", REWRITES), ("conv_channel_softmax", REWRITES),
                                               ("conv_channel_softmax", ())])
def test_the_reduction_over_the_channels_runs_in_the_convolutions_store_and_computes_the_reference(
        name: str, rewrites: tuple[str, ...], numpy_libdevice: object, tmp_path: Path) -> None:
    # (the seed's kernels as the compiler wrote them, `rewrites` empty, keep its mask `xmask = xindex < xnumel`: the
    # strided transposed convolution pads its tile's rows with positions of the next row, which that mask lets through)
    seed = cpu_made_seed(name, rewrites)
    moves = structural_moves(problem_path(name), 132, seed)
    move = {m.name: m for m in moves.instances}[conv_reduce.NAME]
    assert move.cures[0] == "memory" and move.grid[0] == {} and check_kernel_source(move.source) == []
    assert "def conv_rows_epilogue(" in move.source and "epi_rows=" in move.source
    # (conv_channel_min: 3 input channels, where the helper would take its direct kernel, whose store knows no
    # epilogue: the implicit GEMM takes it)
    expected, got = _outputs(problem_path(name), tmp_path / "fused.py", move.source)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    if not rewrites:  # the seed as the compiler wrote it: its fused output is the case; the checks below are alike
        return
    # the seed as it was launches its reduction: the check above can fail
    with pytest.raises(AssertionError, match="not fused"):
        _outputs(problem_path(name), tmp_path / "seed.py", seed)
    # the rows numbered otherwise than the reduction numbers them (the positions column-major, each within bounds):
    # other outputs
    transposed = move.source.replace("(((nb * OD + od) * OH + oh) * OW + ow)[:, None]",
                                     "(((nb * OD + od) * OW + ow) * OH + oh)[:, None]")
    assert transposed != move.source
    expected, got = _outputs(problem_path(name), tmp_path / "transposed.py", transposed)
    assert not torch.allclose(got, expected, rtol=1e-3, atol=1e-3)


def test_the_split_rewrites_take_a_fused_reduction_and_it_takes_a_split_convolution(numpy_libdevice: object,
                                                                                   tmp_path: Path) -> None:
    # 20 channels in a tile of 32 while CONV_BLOCK_N is 16 (SMALL): the split's weight is padded to the wide tile
    name = "conv_channel_min"
    seed = cpu_made_seed(name)
    for text in (conv_split.rewrite(conv_reduce.rewrite(seed)), conv_reduce.rewrite(conv_split.rewrite(seed))):
        assert text is not None and "epi_rows=32" in text
        expected, got = _outputs(problem_path(name), tmp_path / "split.py", text)
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("edit", "why"), [
    # the buffer read again after a kernel that does not write it back: its values are needed
    (("        return buf5\n", "        return buf5 + buf2.sum()\n"), "read again after its reduction"),
    # a reduction over fewer channels than the convolution's least tile
    (("R0_BLOCK: tl.constexpr = 32", "R0_BLOCK: tl.constexpr = 8"), "the convolution's tile is 16 wide"),
    # a looped reduction (triton_red_): its channels are not held whole in one tile
    (("triton_per_fused", "triton_red_fused"), "other than one launch of an Inductor reduction kernel"),
    # a grouped convolution: a group's channels are not the output's
    (("(0, 0), 1)\n", "(0, 0), 2)\n"), "grouped"),
    # more channels than the widest tile holds (the compiler keeps such reductions persistent along contiguous memory)
    (("R0_BLOCK: tl.constexpr = 32", "R0_BLOCK: tl.constexpr = 512"), "256 wide at most"),
    # one row a program, its channels along the first axis: not the tile's layout
    (("r0_index = tl.arange(0, R0_BLOCK)[None, :]", "r0_index = tl.arange(0, R0_BLOCK)[:]"), "its second axis"),
])
def test_a_reduction_that_cannot_be_held_in_one_tile_keeps_its_kernel_and_says_why(edit: tuple[str, str],
                                                                                    why: str) -> None:
    seed = cpu_made_seed("conv_channel_min")
    edited = seed.replace(*edit)
    assert edited != seed
    with pytest.raises(conv_epilogue.NotFused, match=why):
        conv_reduce.rewrite(edited)
    skipped = {s.name: s.why for s in structural_moves(problem_path("conv_channel_min"), 132, edited).skipped}
    assert why in skipped[conv_reduce.NAME]


def test_a_fused_reduction_is_not_fused_again_nor_given_a_pointwise_epilogue() -> None:
    fused = conv_reduce.rewrite(cpu_made_seed("conv_channel_min"))
    for module in (conv_reduce, conv_epilogue):
        with pytest.raises(conv_epilogue.NotFused, match="already computes an epilogue"):
            module.rewrite(fused)


def test_a_rewrite_measured_on_the_seed_is_measured_again_on_the_structure_that_beat_it() -> None:
    # round 1 measured the fusion and the split on the seed, and the split won: round 2 offers the fusion of the split
    # kernel under a name of its own (a move's name is measured once a run), cured as the fusion is; the problem's own
    # templates keep their names
    from kernelopt.offline.structures import measured_moves, move_plans, on_structure

    seed = cpu_made_seed("conv_channel_min")
    first = structural_moves(problem_path("conv_channel_min"), 132, seed)
    assert {conv_reduce.NAME, "dot.conv_split_f16"} <= first.rewrites
    tables = [{"rows": [{"move": m.name} for m in first.instances]}]
    split = conv_split.rewrite(seed)
    second = on_structure(structural_moves(problem_path("conv_channel_min"), 132, split), "dot.conv_split_f16")
    composed = {m.name: m for m in second.instances}[f"dot.conv_split_f16+{conv_reduce.NAME}"]
    assert composed.cures == {m.name: m for m in first.instances}[conv_reduce.NAME].cures
    planned = move_plans(second.instances, measured_moves(tables), 8)
    assert [p.move for p in planned] == [composed.name] * len(composed.grid[:8])
    assert "def conv_rows_epilogue(" in planned[0].source and "xl_ptr" in planned[0].source
    # without a move behind the best kernel (the seed's own structure) the rewrites keep their names
    assert on_structure(first, "") is first
