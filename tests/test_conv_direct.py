"""The seed convolution's direct kernel (seed/direct.py) for groups of few input and output channels, and the
convolution family's `conv.direct` move: under the interpreter it computes aten.convolution where the helper takes it,
the helper takes it exactly there (a transposed convolution a stride phase at a time), and the implicit GEMM's
templates never do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from helpers import assert_computes_the_reference
from test_conv import _helper, aten_case

from kernelopt.offline.moves import structural_moves
from kernelopt.offline.moves.conv_direct import gemm_only
from kernelopt.offline.tuner import kind_of, knob_values, with_config
from kernelopt.seed.conv import CONV_HELPER

# (input shape, weight shape, bias, stride, padding, dilation, transposed, output padding, groups), direct or not
CASES = {
    "rgb 3d to 16": (((2, 3, 5, 6, 7), (16, 3, 3, 3, 3), True, (1, 1, 1), (0, 0, 0), (1, 1, 1), False, (0, 0, 0), 1),
                     True),
    "rgb 2d strided padded dilated to 24": (((2, 3, 11, 13), (24, 3, 3, 5), False, (2, 1), (1, 2), (1, 2), False,
                                             (0, 0), 1), True),
    "grouped, 2 channels a group": (((2, 4, 7, 9), (6, 2, 3, 2), True, (1, 2), (1, 0), (1, 1), False, (0, 0), 2), True),
    "1d, one channel to 20": (((3, 1, 40), (20, 1, 5), True, (1,), (2,), (1,), False, (0,), 1), True),
    # a run's window with columns no tap reads (3 * j + kw: 2, 5, 8 never), its last run cut (13 outputs)
    "1d stride 3 over a kernel of 2": (((2, 3, 40), (8, 3, 2), True, (3,), (1,), (1,), False, (0,), 1), True),
    "five input channels": (((1, 5, 6, 6), (8, 5, 3, 3), True, (1, 1), (1, 1), (1, 1), False, (0, 0), 1), False),
    "33 output channels": (((1, 3, 6, 6), (33, 3, 3, 3), True, (1, 1), (0, 0), (1, 1), False, (0, 0), 1), False),
    # transposed: a stride phase at a time, each phase's own kernel offsets (3-D at stride 2: 1/8 of the offsets)
    "transposed 2d": (((1, 3, 4, 5), (3, 8, 3, 3), True, (2, 2), (1, 1), (1, 1), True, (1, 1), 1), True),
    "transposed 3d rgb to 16, output padding": (((2, 3, 3, 4, 5), (3, 16, 3, 3, 3), True, (2, 2, 2), (1, 1, 1),
                                                 (1, 1, 1), True, (1, 1, 1), 1), True),
    "transposed 1d stride 3 over a kernel of 2, dilated": (((2, 2, 6), (2, 3, 2), False, (3,), (1,), (2,), True,
                                                           (2,), 1), True),
    "transposed grouped, unit stride": (((2, 4, 5, 6), (4, 5, 2, 3), True, (1, 1), (0, 1), (1, 1), True, (0, 0), 2),
                                        True),
    "transposed, 40 output channels": (((1, 3, 4, 5), (3, 40, 3, 3), True, (2, 2), (1, 1), (1, 1), True, (1, 1), 1),
                                       False),
}


class Recorded:
    """Kernels' launches recorded in one list, then run: `Recorded(space, names)` stands in for each named kernel."""

    def __init__(self, space: dict[str, Any], *names: str) -> None:
        self.launches: list[tuple[Any, dict[str, Any]]] = []
        for name in names:
            space[name] = self._stand_in(space[name])

    def _stand_in(self, kernel: Any) -> Any:
        recorded = self

        class StandIn:
            def __getitem__(self, grid: Any) -> Any:
                def launch(*args: Any, **kwargs: Any) -> Any:
                    recorded.launches.append((grid, kwargs))
                    return kernel[grid](*args, **kwargs)
                return launch
        return StandIn()


def _run(name: str, config: dict[str, int]) -> tuple[Recorded, Recorded, torch.Tensor, torch.Tensor]:
    space = _helper(with_config(CONV_HELPER, config))
    direct, gemm = Recorded(space, "conv_direct_kernel", "conv_direct_t_kernel"), Recorded(space, "conv_igemm_kernel")
    args, want = aten_case(name, CASES[name][0])
    return direct, gemm, space["conv_triton"](*args[:3], None, *args[3:]), want


@pytest.mark.parametrize("run", [1, 4])  # one output a thread (the seed's), runs of 4 along W sharing their inputs
@pytest.mark.parametrize("name", list(CASES))
def test_few_input_and_output_channels_a_group_take_the_direct_kernel_and_compute_atens_convolution(
        name: str, run: int) -> None:
    direct, gemm, got, want = _run(name, {"CONV_BLOCK_M": 16, "CONV_BLOCK_N": 64, "CONV_DIRECT_RUN": run})
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert (len(direct.launches), len(gemm.launches)) == ((1, 0) if CASES[name][1] else (0, 1))


def test_the_direct_tile_is_cut_to_the_convolution_and_the_bound_turns_it_off() -> None:
    # 4 * CONV_BLOCK_M outputs (64) a tile in runs of CONV_DIRECT_RUN along W: at runs of 4, 16 runs, of a sample's
    # 3 x 4 rows of 5 outputs two runs a row (the second cut to one output): 24 runs, two tiles; by a group's 16
    # channels of 64; a run's window is 4 + 3 - 1 columns, each read
    direct, _, got, want = _run("rgb 3d to 16", {"CONV_BLOCK_M": 16, "CONV_BLOCK_N": 64, "CONV_DIRECT_RUN": 4})
    [(grid, kwargs)] = direct.launches
    assert (kwargs["BLOCK_R"], kwargs["RUN"], kwargs["BLOCK_OC"], kwargs["CG"], kwargs["KW"]) == (16, 4, 16, 3, 3)
    assert kwargs["USED"] == 0b111111 and grid == (2 * 2, 1)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    direct, _, got, want = _run("rgb 3d to 16", {"CONV_BLOCK_M": 16})  # the seed's runs of 1: 60 outputs, one tile
    [(grid, kwargs)] = direct.launches
    assert (kwargs["BLOCK_R"], kwargs["RUN"], kwargs["USED"]) == (64, 1, 0b111) and grid == (2, 1)
    # a narrower CONV_BLOCK_N splits the group's channels over the grid's second axis; runs of 2 at a dilation of
    # 2 along W read every other column of the window: 2 outputs by 5 taps, columns j + 2 * kw
    direct, _, got, want = _run("rgb 2d strided padded dilated to 24",
                                {"CONV_BLOCK_M": 64, "CONV_BLOCK_N": 8, "CONV_DIRECT_RUN": 2})
    [(grid, kwargs)] = direct.launches
    assert kwargs["BLOCK_OC"] == 8 and grid[1] == 3 and kwargs["BLOCK_R"] == 32  # 6 rows of 5 runs: 30
    assert kwargs["RUN"] == 2 and kwargs["USED"] == 0b11_1111_1111
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    # one output a thread (the seed's): each tap's column its own
    direct, _, got, want = _run("rgb 2d strided padded dilated to 24", {"CONV_DIRECT_RUN": 1})
    [(grid, kwargs)] = direct.launches
    assert kwargs["RUN"] == 1 and kwargs["USED"] == 0b101010101
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    direct, gemm, got, want = _run("rgb 3d to 16", {"CONV_BLOCK_M": 16, "CONV_DIRECT_OUTPUTS": 0})
    assert not direct.launches and len(gemm.launches) == 1
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_a_half_precision_input_sums_in_fp32_and_writes_its_own_dtype() -> None:
    space = _helper(with_config(CONV_HELPER, {"CONV_BLOCK_M": 16}))
    args, want = aten_case("rgb 3d to 16", CASES["rgb 3d to 16"][0])
    x, weight, bias = (t.half() for t in args[:3])
    got = space["conv_triton"](x, weight, bias, None, *args[3:])
    assert got.dtype == torch.float16
    torch.testing.assert_close(got.float(), want, rtol=2e-2, atol=2e-2)


def test_the_bound_is_a_choice_no_sweep_turns_and_gemm_rewrites_set_it_off() -> None:
    assert knob_values(CONV_HELPER)["CONV_DIRECT_OUTPUTS"] == 32 and kind_of("CONV_DIRECT_OUTPUTS") == "switch"
    assert knob_values(gemm_only(CONV_HELPER))["CONV_DIRECT_OUTPUTS"] == 0
    # a rewrite of the helper's own product turns it off; one that left the helper's kernel as it was does not
    rewritten = CONV_HELPER.replace('input_precision="ieee"', 'input_precision="tf32x3"')
    assert knob_values(gemm_only(rewritten, CONV_HELPER))["CONV_DIRECT_OUTPUTS"] == 0
    beside = CONV_HELPER + "\n\n@triton.jit\ndef other_kernel(x):\n    pass\n"
    assert knob_values(gemm_only(beside, CONV_HELPER))["CONV_DIRECT_OUTPUTS"] == 32


RGB = Path(__file__).parent / "data" / "conv" / "conv3d_rgb.py"


def test_the_family_offers_the_direct_move_first_and_its_gemm_templates_never_take_it(tmp_path: Path) -> None:
    problem = tmp_path / "rgb.py"  # the project's first-layer problem shrunk, its convolution alone
    problem.write_text(RGB.read_text().replace("return torch.nn.functional.hardswish(self.conv(x)).amax(dim=1)",
                                               "return self.conv(x)").replace("16, 64, 64", "4, 6, 7")
                       .replace("batch_size = 16", "batch_size = 2"))
    moves = structural_moves(problem)
    names = [m.name for m in moves.instances]
    assert names[0] == "conv.direct" and "conv.implicit_gemm" in names
    for move in moves.instances:
        bound = knob_values(move.source)["CONV_DIRECT_OUTPUTS"]
        assert (bound > 32) if move.name == "conv.direct" else (bound == 0), move.name
    direct = next(m for m in moves.instances if m.name == "conv.direct")
    assert {c["CONV_BLOCK_N"] for c in direct.grid} == {8, 16}  # cut to the group's 16 channels
    kernel = tmp_path / "direct.py"
    kernel.write_text(with_config(direct.source, direct.grid[0]))
    assert_computes_the_reference(problem, kernel, "kernelopt_test_conv_direct")


def test_the_family_says_why_the_direct_move_does_not_apply(tmp_path: Path) -> None:
    many = tmp_path / "many.py"
    many.write_text(RGB.read_text().replace("in_channels = 3", "in_channels = 8").replace("16, 64, 64", "4, 6, 7")
                    .replace("return torch.nn.functional.hardswish(self.conv(x)).amax(dim=1)", "return self.conv(x)"))
    why = {s.name: s.why for s in structural_moves(many).skipped}
    assert "8 input channels a group" in why["conv.direct"]


def test_a_transposed_convolutions_phases_each_take_their_own_offsets() -> None:
    # 3-D at stride 2: 8 phases of the outputs, a program's outputs all of one phase (the grid's first axis: samples
    # by phases by tiles), and the sums aten's
    direct, _, got, want = _run("transposed 3d rgb to 16, output padding", {"CONV_BLOCK_M": 16, "CONV_BLOCK_N": 64})
    [(grid, kwargs)] = direct.launches
    out = want.shape[2:]  # (6, 8, 10): each phase 3 x 4 x 5 = 60 outputs, a tile of 64
    assert kwargs["BLOCK_P"] == 64 and grid == (2 * 8 * 1, 1) and tuple(out) == (6, 8, 10)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["rgb 3d to 16", "transposed 3d rgb to 16, output padding"])
def test_64_bit_offsets_compute_the_same_and_are_taken_where_strides_reach_past_2_31(name: str) -> None:
    # WIDE on a small case (the int64 path), then the rule: an offset's reach as the strides lay the tensor
    text = with_config(CONV_HELPER, {"CONV_BLOCK_M": 16})
    assert text.count("WIDE=_wide(x, out, wg)") == 2
    space = _helper(text.replace("WIDE=_wide(x, out, wg)", "WIDE=True"))
    args, want = aten_case(name, CASES[name][0])
    torch.testing.assert_close(space["conv_triton"](*args[:3], None, *args[3:]), want, rtol=1e-4, atol=1e-4)
    wide = _helper(CONV_HELPER)["_wide"]
    small = torch.empty_strided((2, 3), (3, 1), device="meta")
    spread = torch.empty_strided((2, 3), (2**31, 1), device="meta")  # 6 elements, the second row 2**31 on
    assert not wide(small) and wide(spread) and wide(small, spread)
    assert not wide(torch.empty(0, device="meta"))
