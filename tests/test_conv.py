"""The Triton convolution (seed/conv.py): the compiler seed's stand-in for the cuDNN call Inductor
keeps, and the convolution family's structural move. Under the interpreter it computes
aten.convolution for every kind the call takes, at every tile the sweep may set, into an output of
any layout; the move keeps the reference's constructor and passes the verifier."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
import triton
import triton.language as tl

from kernelopt.harness.guards import check_kernel_source
from kernelopt.harness.problem import import_file
from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.offline.moves import structural_moves
from kernelopt.offline.moves.family import trace_family
from kernelopt.offline.tuner import knob_values, with_config
from kernelopt.seed.conv import CONV_HELPER

# (input shape, weight shape, bias, stride, padding, dilation, transposed, output_padding, groups)
CASES = {
    "conv1d strided dilated": ((2, 3, 11), (5, 3, 3), True, (2,), (1,), (2,), False, (0,), 1),
    "conv2d grouped": ((2, 4, 7, 9), (6, 2, 3, 2), False, (1, 2), (1, 0), (1, 1), False, (0, 0), 2),
    "conv2d depthwise": ((2, 4, 7, 9), (4, 1, 3, 3), True, (1, 1), (1, 1), (1, 1), False, (0, 0), 4),
    "conv3d strided": ((1, 2, 5, 6, 7), (3, 2, 3, 3, 3), True, (2, 2, 2), (1, 1, 1), (1, 1, 1), False, (0, 0, 0), 1),
    "transposed 2d": ((2, 4, 5, 6), (4, 3, 3, 3), True, (2, 2), (1, 1), (1, 1), True, (1, 1), 2),
    "transposed 1d dilated": ((2, 3, 8), (3, 2, 3), False, (2,), (1,), (2,), True, (0,), 1),
    "transposed 3d": ((1, 2, 3, 4, 5), (2, 2, 2, 3, 2), True, (2, 1, 2), (0, 1, 1), (1, 1, 1), True, (1, 0, 0), 1),
    # a stride over the kernel's size: a phase of the three gathers nothing (its outputs are the bias)
    "transposed 1d stride 3": ((2, 2, 6), (2, 3, 2), True, (3,), (1,), (1,), True, (2,), 1),
}


def _helper(source: str = CONV_HELPER) -> dict[str, Any]:
    space: dict[str, Any] = {"torch": torch, "triton": triton, "tl": tl}
    exec(compile(source, "conv_helper", "exec"), space)  # noqa: S102  (the seed file's own text)
    return space


def _case(name: str) -> tuple[list[Any], torch.Tensor]:
    return aten_case(name, CASES[name])


def aten_case(name: str, case: tuple[Any, ...]) -> tuple[list[Any], torch.Tensor]:
    """A case's (shape, weight shape, bias?, stride, padding, dilation, transposed, output padding, groups) as random
    inputs seeded by its name, and aten.convolution's output of them: ([x, weight, bias, stride, ...], output)."""
    shape, weight_shape, has_bias, stride, padding, dilation, transposed, output_padding, groups = case
    torch.manual_seed(len(name))
    x, weight = torch.randn(shape), torch.randn(weight_shape)
    bias = torch.randn(weight_shape[1] * groups if transposed else weight_shape[0]) if has_bias else None
    want = torch.ops.aten.convolution(x, weight, bias, list(stride), list(padding), list(dilation), transposed,
                                      list(output_padding), groups)
    return [x, weight, bias, stride, padding, dilation, transposed, output_padding, groups], want


@pytest.mark.parametrize(("block_k", "direct"), [(32, 0), (1, 0), (32, 32)])
@pytest.mark.parametrize("name", list(CASES))
def test_the_triton_convolution_computes_atens_convolution(name: str, block_k: int, direct: int) -> None:
    # every case's groups have 1-4 channels: at a K step of 32 several kernel offsets share a step (CG_POW), at 1
    # a step is one channel of one offset (the path of groups of BLOCK_K channels or more); with the direct kernel
    # on (the seed's default), the groups of 1-4 channels take it instead (conv_direct_kernel, conv_direct_t_kernel),
    # but for the depthwise one, which the stencil takes
    args, want = _case(name)
    helper = _helper(with_config(CONV_HELPER, {"CONV_BLOCK_M": 16, "CONV_BLOCK_N": 16, "CONV_BLOCK_K": block_k,
                                               "CONV_DIRECT_OUTPUTS": direct}))
    got = helper["conv_triton"](*args[:3], None, *args[3:])
    assert got.shape == want.shape and got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("name", "stencil"), [("conv2d depthwise", True), ("conv2d grouped", False),
                                               ("transposed 2d", False)])
def test_a_depthwise_convolution_takes_the_stencil_and_the_others_the_implicit_gemm(name: str, stencil: bool) -> None:
    # one input channel and fewer than 16 output channels a group: the implicit GEMM's tile would hold that many
    # useful columns of its BLOCK_N, so the helper hands the convolution to conv_depthwise (conv_dw_kernel)
    space = _helper(with_config(CONV_HELPER, {"CONV_BLOCK_M": 16, "CONV_BLOCK_N": 16, "CONV_BLOCK_K": 16}))
    calls = []
    stencil_fn = space["conv_depthwise"]
    space["conv_depthwise"] = lambda *a: calls.append(a) or stencil_fn(*a)
    args, want = _case(name)
    got = space["conv_triton"](*args[:3], None, *args[3:])
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert bool(calls) == stencil


@pytest.mark.parametrize(("name", "block_n", "columns"), [("conv3d strided", 64, 16), ("conv2d grouped", 32, 16),
                                                        ("conv1d strided dilated", 16, 16)])
def test_the_tile_is_no_wider_than_a_groups_output_channels(name: str, block_n: int, columns: int) -> None:
    # 3 (or a group's 3) output channels: the seed's default 64-wide tile (or any the sweep sets) launches 16
    # columns, the least a product takes, one column program a group; the output is aten's either way
    space = _helper(with_config(CONV_HELPER, {"CONV_BLOCK_M": 16, "CONV_BLOCK_N": block_n, "CONV_BLOCK_K": 16,
                                              "CONV_DIRECT_OUTPUTS": 0}))
    launches: list[tuple[Any, dict[str, Any]]] = []
    kernel = space["conv_igemm_kernel"]

    class Recorded:
        def __getitem__(self, grid: Any) -> Any:
            def launch(*args: Any, **kwargs: Any) -> Any:
                launches.append((grid, kwargs))
                return kernel[grid](*args, **kwargs)
            return launch

    space["conv_igemm_kernel"] = Recorded()
    args, want = _case(name)
    got = space["conv_triton"](*args[:3], None, *args[3:])
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    [(grid, kwargs)] = launches
    assert kwargs["BLOCK_N"] == columns and grid[1] == 1


def test_it_writes_the_layout_it_is_given_and_its_tile_is_the_sweeps_to_turn() -> None:
    knobs = knob_values(CONV_HELPER)
    assert {"CONV_BLOCK_M": 64, "CONV_BLOCK_N": 64, "CONV_BLOCK_K": 32}.items() <= knobs.items()
    assert "BLOCK" not in knobs  # the weight layout's programs: a sweep of a convolution seed spends nothing there
    small = with_config(CONV_HELPER, {"CONV_BLOCK_M": 16, "CONV_BLOCK_N": 16, "CONV_BLOCK_K": 16})
    args, want = _case("conv2d grouped")
    out = torch.empty_like(want, memory_format=torch.channels_last)  # strides of another layout
    _helper(small)["conv_triton"](*args[:3], out, *args[3:])
    assert out.stride() == torch.empty_like(want, memory_format=torch.channels_last).stride()
    torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-4)


def test_a_kernel_file_with_it_passes_the_static_guards() -> None:
    header = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"
    model = ("\n\nclass ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
             "        self.weight = nn.Parameter(torch.randn(4, 2, 3, 3))\n\n"
             "    def forward(self, x):\n"
             "        return conv_triton(x, self.weight, None, None, (1, 1), (1, 1), (1, 1), False, (0, 0), 1)\n")
    assert check_kernel_source(header + CONV_HELPER + model) == []


CONV2D = Path(__file__).parent / "data" / "moves" / "conv2d.py"


def test_a_convolution_of_the_models_own_weight_is_the_conv_family() -> None:
    family = trace_family(import_file(CONV2D, "kernelopt_test_conv"))
    assert family.name == "conv" and family.state == ("conv2d.weight", "conv2d.bias")
    assert family.scalars[3:9] == ([2, 1], [1, 1], [1, 2], False, [0, 0], 2)
    relu = Path(__file__).parent / "data" / "conv" / "conv_transpose3d.py"  # a convolution and more: no template
    assert trace_family(import_file(relu, "kernelopt_test_conv_relu")).name == "other"


def test_a_convolution_of_a_view_of_the_input_is_not_the_conv_family(tmp_path: Path) -> None:
    # The template convolves the input itself: a view in front of it (here a reshape) leaves the
    # problem to the other families' moves, and tracing it must not fail.
    problem = tmp_path / "conv_of_view.py"
    problem.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.conv = nn.Conv1d(4, 6, 3)\n\n    def forward(self, x):\n"
        "        return self.conv(x.view(2, 4, 10))\n\n\ndef get_inputs():\n    return [torch.rand(80)]\n\n\n"
        "def get_init_inputs():\n    return []\n")
    assert trace_family(import_file(problem, "kernelopt_test_conv_view")).name == "other"
    assert not [m for m in structural_moves(problem).instances if m.name.startswith("conv.")]


def test_a_convolution_whose_model_class_is_an_alias_skips_the_template_with_why(tmp_path: Path) -> None:
    # The template copies Model's constructor from the file's text; a Model bound by assignment has
    # none there: the move is skipped, saying why, and planning goes on.
    problem = tmp_path / "conv_alias.py"
    problem.write_text(CONV2D.read_text().replace("class Model(", "class _Conv(") + "\n\nModel = _Conv\n")
    moves = structural_moves(problem)
    assert moves.family is not None and moves.family.name == "conv" and not moves.instances
    assert [s.name for s in moves.skipped] == ["conv.*"] and "no class Model" in moves.skipped[0].why


@pytest.mark.parametrize("move", ["conv.implicit_gemm", "conv.implicit_gemm_tf32x3"])
def test_each_convolution_move_passes_the_verifier(move: str, tmp_path: Path) -> None:
    instance = {m.name: m for m in structural_moves(CONV2D).instances}[move]
    assert "def __init__(self, in_channels, out_channels, kernel_size, groups=1, bias=False):" in instance.source
    assert "(2, 1), (1, 1), (1, 2), False, (0, 0), 2)" in instance.source  # the reference's own settings
    assert ('input_precision="tf32x3"' in instance.source) == move.endswith("tf32x3")
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(instance.source, {**instance.grid[0], "CONV_BLOCK_M": 16, "CONV_BLOCK_N": 16}))
    settings = HarnessSettings.detect(seeds=1, time_compile=False)
    verdict = Verifier(CONV2D, tmp_path / "harness", settings).verify(kernel, time=False)
    assert verdict.accepted, verdict.reason


def test_a_groups_few_output_channels_cut_the_tiles_columns() -> None:
    # conv2d.py: 6 output channels in 2 groups, 3 a group: every tile 16 columns wide (a tensor-core product's
    # least), the repeats gone; 55's 128 a group keep the table as it is
    from kernelopt.offline.moves.conv import TILES, tiles

    family = trace_family(import_file(CONV2D, "kernelopt_test_conv_tiles"))
    cut = tiles(TILES, family)
    assert {c["CONV_BLOCK_N"] for c in cut} == {16} and len(cut) == len({tuple(c.items()) for c in cut}) < len(TILES)
    assert [(c["CONV_BLOCK_M"], c["CONV_BLOCK_K"]) for c in cut][:2] == [(64, 32), (128, 32)]
    wide = Path(__file__).resolve().parents[1] / "benchmarks" / "kernelbench" / "families"
    family = trace_family(import_file(next(wide.glob("55_*.py")), "kernelopt_test_conv_tiles55"))
    assert [tuple(c.values()) for c in tiles(TILES, family)] == list(TILES)
    # a transposed convolution's weight is (in, out / groups, ...): its second size is a group's outputs
    transposed = replace(family, weight_shape=(64, 8, 3, 3), scalars=(*family.scalars[:6], True, *family.scalars[7:]))
    assert {c["CONV_BLOCK_N"] for c in tiles(TILES, transposed)} == {16}


def test_a_strided_transposed_convolutions_phases_gather_from_their_own_kernel_offsets() -> None:
    # conv_phase_taps(phase, stride, padding, dilation, K) -> (first offset, step, count) of the offsets k with
    # phase + padding - k * dilation a multiple of the stride, checked against every such case by brute force
    probe = _helper(CONV_HELPER + """

@triton.jit
def phase_probe(out_ptr, p, s, pad, dil, K):
    first, step, count = conv_phase_taps(p, s, pad, dil, K)
    tl.store(out_ptr, first)
    tl.store(out_ptr + 1, step)
    tl.store(out_ptr + 2, count)
""")["phase_probe"]

    for s, pad, dil, k in ((2, 1, 1, 3), (2, 1, 2, 3), (3, 2, 2, 7), (4, 0, 2, 5), (2, 0, 1, 1), (3, 1, 3, 4)):
        for p in range(s):
            want = [t for t in range(k) if (p + pad - t * dil) % s == 0]
            out = torch.zeros(3, dtype=torch.int32)
            probe[(1,)](out, p, s, pad, dil, k)
            first, step, count = out.tolist()
            assert count == len(want), (s, pad, dil, k, p)
            assert [first + i * step for i in range(count)] == want, (s, pad, dil, k, p)
